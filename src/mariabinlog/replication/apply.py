"""Applying event groups to a target MariaDB server, crash-safe, one GTID domain per worker.

Seed 004's "event executor": what ``mariadb-binlog | mariadb`` does, without the text in
between and with the position kept in the target.

How a group is applied (:class:`TargetSession`):

* Row events go to the server as ``BINLOG '<base64>'`` statements (Table_map plus the rows
  events up to the one with ``STMT_END_F``), after the source's Format_description was
  given once per connection; the server applies them with its own row applier, so every
  column type is exact.
* Query events run as themselves after the session context their status variables
  describe (``SET TIMESTAMP``, ``sql_mode``, character sets, time zone, ``foreign_key_checks``
  ...; only what changed is sent), preceded by Intvar/Rand/User_var as ``SET`` statements.
* With ``preserve_gtids`` (default) the group keeps its GTID in the target's binlog
  (``gtid_domain_id``, ``server_id``, ``gtid_seq_no``), as replaying mariadb-binlog output does.
* Crash safety, like ``mysql.gtid_slave_pos``: a transactional group runs as ``BEGIN ...;
  <upsert of the domain's row in the position table>; COMMIT``, so data and position commit
  together.  A stand-alone group (DDL, which commits implicitly) first records a *pending*
  GTID, then runs, then records the GTID; after a crash between the two, the replica knows
  the DDL may have run: it checks the target's ``gtid_binlog_state`` (when the target logs
  with preserved GTIDs) or re-runs the DDL accepting "already done" errors.
* XA, as the server logs it: an ``XA PREPARE`` group (its GTID event carries the xid, there
  is no ``XA START`` event) runs as ``XA START <xid>; ...; XA END; XA PREPARE`` (or ``XA
  COMMIT ... ONE PHASE``), the ``XA COMMIT``/``XA ROLLBACK`` group as a stand-alone query.
  A prepared transaction holds its row locks until it completes, so the position is kept
  outside it like a stand-alone group's (pending, run, record); after a crash in between,
  ``XA RECOVER`` on the target tells whether the prepare happened, and a completion that
  finds its xid gone (``XAER_NOTA``) had already run.  XA groups are barriers across
  domains, like DDL: a prepare and its completion may be logged in different domains.
* Anything the applier cannot apply faithfully (unknown events, encrypted or damaged data)
  stops the replica with :class:`~mariabinlog.errors.UnsupportedError` naming the event
  and the group: never a silent skip.

:class:`Replicator` reads groups from a source, filters them (:mod:`.filters`), and hands
each GTID domain to one worker (``workers`` connections), so different domains apply in
parallel while each domain keeps its order.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import queue
from binascii import b2a_base64
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..codec import events as E
from ..codec.events.session import (
    FLAGS2_REPLAYED,
    collation_database_value,
    flags2_settings,
    session_context,
    time_zone_literal,
)
from ..codec.gtid import ConnectState, Gtid, GtidList
from ..errors import ApplyError, ConnectionLostError, OptionError, ReplicationError, ServerError, UnsupportedError
from .filters import Decision, GroupFilter
from ..codec.groups import EventGroup
from .net import Connection, ConnectionOptions, sql_string
from .progress import JobProgress
from .sources import GroupSource

#: Plain groups a worker sends in one packet at most (:meth:`TargetSession.apply_many`), and
#: their bytes at most.
BATCH_GROUPS = 64
BATCH_BYTES = 1 << 20
#: Most apply connections one run has (``--parallel``).  Connection ``i`` holds the channel's
#: named lock ``i`` (:meth:`PositionTable.lock`) while it applies, and a run starting waits for
#: every one of them to be free before it reads its position: a killed run's session goes on
#: applying the packet it was sent until the server sees the client gone, and a position read
#: before that session ends would have the next run apply those groups a second time.
MAX_WORKERS = 64
#: Seconds a run waits for those locks before it says another run holds the channel.
LOCK_WAIT = 60.0
#: Reconnects to the target after a lost connection before a run gives up (a bad network).
RETRIES = 5
#: Errors after which a group is simply retried (deadlock, lock wait timeout).
RETRYABLE = frozenset({1213, 1205})
#: Errors that mean "this DDL already ran" when re-running a pending stand-alone group
#: (1397 XAER_NOTA: the XA COMMIT/ROLLBACK being re-run had completed its xid).
ALREADY_DONE = frozenset({1007, 1008, 1050, 1051, 1054, 1060, 1061, 1091, 1146, 1304, 1305, 1360, 1397, 1449, 4031})
#: GTID flags of the two halves of an XA transaction.
XA_FLAGS = E.FL_PREPARED_XA | E.FL_COMPLETED_XA

_ROWS = frozenset(E.ROWS_KIND)
_INFLATED = E.UNCOMPRESSED_ROWS_TYPE
_SILENT = frozenset({E.ANNOTATE_ROWS_EVENT, E.IGNORABLE_LOG_EVENT})
#: Rows events a ``BINLOG`` statement takes as they are (compressed ones are inflated first).
_PLAIN_ROWS = frozenset(set(E.ROWS_KIND) - set(_INFLATED))
#: GTID flags of groups that are not plain transactions (stand-alone, XA).
_PLAIN_FLAGS = E.FL_STANDALONE | E.FL_PREPARED_XA | E.FL_COMPLETED_XA
_STMT_END = E.STMT_END_F & 0xFF

log = logging.getLogger(__name__)


def _reconnect_wait(err: ConnectionLostError, attempt: int, retries: int) -> None:
    """After the target connection broke on try ``attempt``: give up (raise ``err``) past
    ``retries``, else say so and wait a little longer each time before the next."""
    if attempt > retries:
        raise err
    delay = 0.2 * attempt
    log.warning("%s; reconnecting to the target in %.1f s (attempt %d of %d)", err, delay, attempt, retries)
    time.sleep(delay)


def _uncompressed(event: E.RowsEvent) -> bytes:
    """The plain rows event (types 23-25 / 30-32) carrying a compressed one's rows."""
    return E.RowsEvent(
        _INFLATED[event.type_code],
        table_id=event.table_id,
        width=event.width,
        present_before=event.present_before,
        present_after=event.present_after,
        rows_data=event.rows_data,
        rows_flags=event.rows_flags,
        extra_data=event.extra_data,
        timestamp=event.timestamp,
        server_id=event.server_id,
        log_pos=event.log_pos,
        flags=event.flags,
    ).encode()


def _unlogged(statement: bytes) -> list[bytes]:
    """``statement`` kept out of the target's binlog: a position-table write is local to the
    target, like ``mysql.gtid_slave_pos``, and must not take a GTID of its own."""
    return [b"SET @@session.sql_log_bin=0", statement, b"SET @@session.sql_log_bin=1"]


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class PositionTable:
    """Where a channel's applied GTID position lives in the target (one row per domain)."""

    database: str = "mariabinlog"
    table: str = "gtid_slave_pos"
    channel: str = "default"

    @property
    def name(self) -> str:
        """Qualified, quoted table name."""
        return f"{_ident(self.database)}.{_ident(self.table)}"

    def lock(self, worker: int) -> str:
        """The named lock (``GET_LOCK``) apply connection ``worker`` of this channel holds
        (names are at most 64 characters: the table and channel are hashed into it)."""
        key = hashlib.sha256(f"{self.database}.{self.table}/{self.channel}".encode()).hexdigest()[:32]
        return f"mariabinlog:{key}:{worker}"

    def create(self) -> list[str]:
        """Statements that create the table when missing (InnoDB: it must commit with the data)."""
        return [
            f"CREATE DATABASE IF NOT EXISTS {_ident(self.database)}",
            f"CREATE TABLE IF NOT EXISTS {self.name} ("
            " channel VARCHAR(64) NOT NULL, domain_id INT UNSIGNED NOT NULL,"
            " server_id INT UNSIGNED NOT NULL, seq_no BIGINT UNSIGNED NOT NULL,"
            " pending_server_id INT UNSIGNED NULL, pending_seq_no BIGINT UNSIGNED NULL,"
            " PRIMARY KEY (channel, domain_id)) ENGINE=InnoDB",
        ]

    def upsert(self, gtid: Gtid) -> bytes:
        """Record ``gtid`` as applied (clears a pending marker)."""
        return (
            f"INSERT INTO {self.name} (channel, domain_id, server_id, seq_no) VALUES"
            f" ({sql_string(self.channel)}, {gtid.domain}, {gtid.server}, {gtid.seq})"
            " ON DUPLICATE KEY UPDATE server_id=VALUES(server_id), seq_no=VALUES(seq_no),"
            " pending_server_id=NULL, pending_seq_no=NULL"
        ).encode()

    def mark_pending(self, gtid: Gtid) -> bytes:
        """Record that stand-alone group ``gtid`` is about to run (seq_no 0 when the domain is new)."""
        return (
            f"INSERT INTO {self.name} (channel, domain_id, server_id, seq_no, pending_server_id, pending_seq_no)"
            f" VALUES ({sql_string(self.channel)}, {gtid.domain}, {gtid.server}, 0, {gtid.server}, {gtid.seq})"
            " ON DUPLICATE KEY UPDATE pending_server_id=VALUES(pending_server_id), pending_seq_no=VALUES(pending_seq_no)"
        ).encode()

    def read(self, conn: Connection) -> tuple[ConnectState, dict[int, Gtid]]:
        """The recorded position and the pending stand-alone groups of the channel."""
        rows = conn.rows(
            f"SELECT domain_id, server_id, seq_no, pending_server_id, pending_seq_no FROM {self.name}"
            f" WHERE channel={sql_string(self.channel)} ORDER BY domain_id"
        )
        position = ConnectState()
        pending: dict[int, Gtid] = {}
        for domain, server, seq, p_server, p_seq in rows:
            assert domain is not None and server is not None and seq is not None
            if int(seq):
                position.update(Gtid(int(domain), int(server), int(seq)))
            if p_seq is not None and p_server is not None:
                pending[int(domain)] = Gtid(int(domain), int(p_server), int(p_seq))
        return position, pending

    def reset(self, conn: Connection) -> None:
        """Forget the channel's position."""
        conn.query(f"DELETE FROM {self.name} WHERE channel={sql_string(self.channel)}")


# --------------------------------------------------------------------------- one connection


class _Plan:
    """A group translated into what is sent: ASCII statement batches and raw query texts."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        # ("batch", [statements]) | ("query", text, expected error code, tolerate "already done")
        self.steps: list[tuple[Any, ...]] = []


class TargetSession:
    """One connection to the target that applies groups (see the module docstring)."""

    def __init__(
        self,
        options: ConnectionOptions,
        table: PositionTable,
        *,
        preserve_gtids: bool = True,
        retries: int = RETRIES,
        lock: str | None = None,
        lock_wait: float = LOCK_WAIT,
    ) -> None:
        self.options = options
        self.table = table
        self.preserve_gtids = preserve_gtids
        self.retries = retries
        #: The named lock this session's connection holds while it applies (a run's workers).
        self.lock = lock
        self.lock_wait = lock_wait
        self.conn: Connection | None = None
        self._fd_key: tuple[Any, ...] | None = None
        self._session: dict[str, bytes] = {}
        self._collations: dict[int, tuple[str, str]] = {}
        self._plain_fd: tuple[E.FormatDescriptionEvent, bool] | None = None

    # -- connection -----------------------------------------------------------------------------

    def connect(self) -> Connection:
        """Open the connection (again) and reset what the session knows."""
        self.close()
        conn = Connection.open(self.options)
        conn.query("SET @@session.pseudo_slave_mode=1, @@session.sql_log_bin=1")
        if self.lock is not None and conn.scalar(f"SELECT GET_LOCK({sql_string(self.lock)}, {self.lock_wait:g})") != b"1":
            conn.close()
            raise ReplicationError(
                f"another replicate is applying channel {self.table.channel!r} to {self.options.host}:"
                f"{self.options.port} (its connection holds {self.lock})"
            )
        self.conn = conn
        self._fd_key = None
        self._session = {}
        return conn

    def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _c(self) -> Connection:
        return self.conn if self.conn is not None else self.connect()

    # -- translation ----------------------------------------------------------------------------

    def _format_description(self, fd: E.FormatDescriptionEvent | None) -> bytes | None:
        """``BINLOG`` of the Format_description (checksums off) when the session lacks it."""
        if fd is None:
            fd = E.FormatDescriptionEvent(server_version="10.11.0-MariaDB")
        key = (fd.binlog_version, fd.server_version, fd.post_header_lengths)
        if key == self._fd_key:
            return None
        self._fd_key = key
        return E.format_description_statement(fd)

    def _set(self, name: str | bytes, value: bytes, out: list[bytes]) -> None:
        key = name if isinstance(name, str) else name.decode()
        if self._session.get(key) != value:
            self._session[key] = value
            out.append(b"@@session." + key.encode() + b"=" + value)

    def _context(self, event: E.QueryEvent) -> list[bytes]:
        """``SET`` (and ``USE``) statements for the session context of ``event``."""
        status = dict(event.status_vars)
        session = session_context(status)
        parts: list[bytes] = []
        sec_part = status.get(E.Q_HRNOW, 0)
        sec_part = sec_part if isinstance(sec_part, int) else 0
        stamp = b"%d.%06d" % (event.timestamp, sec_part) if sec_part else b"%d" % event.timestamp
        self._set("timestamp", stamp, parts)
        self._set("pseudo_thread_id", b"%d" % event.thread_id, parts)
        if E.Q_FLAGS2_CODE in status:
            for name, value in flags2_settings(session.flags2 or 0, FLAGS2_REPLAYED):
                self._set(name, value, parts)
        if session.sql_mode is not None:
            self._set("sql_mode", session.sql_mode, parts)
        increment, offset = session.auto_increment
        self._set("auto_increment_increment", b"%d" % increment, parts)
        self._set("auto_increment_offset", b"%d" % offset, parts)
        charset = session.charset
        if charset is not None:
            self._set("character_set_client", b"%d" % charset[0], parts)
            self._set("collation_connection", b"%d" % charset[1], parts)
            self._set("collation_server", b"%d" % charset[2], parts)
        if session.time_zone:
            self._set("time_zone", time_zone_literal(session.time_zone), parts)
        self._set("lc_time_names", b"%d" % session.lc_time_names, parts)
        self._set("collation_database", collation_database_value(session.charset_database), parts)
        collations = session.collations
        if collations:
            pairs = [
                f"{self._collation(collations[i])[1]}={self._collation(collations[i + 1])[0]}"
                for i in range(0, len(collations), 2)
            ]
            self._set("character_set_collations", sql_string(",".join(pairs)).encode(), parts)
        out = [b"SET " + b", ".join(parts)] if parts else []
        if event.database and not event.flags & E.LOG_EVENT_SUPPRESS_USE_F:
            if self._session.get("use") != event.database:
                self._session["use"] = event.database
                out.append(b"USE `" + event.database.replace(b"`", b"``") + b"`")
        return out

    def _collation(self, number: int) -> tuple[str, str]:
        """(collation name, character set name) of collation ``number``, from the target."""
        found = self._collations.get(number)
        if found is None:
            rows = self._c().rows(
                f"SELECT COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID={number}"
            )
            if not rows:
                raise UnsupportedError(f"the target does not know collation id {number}")
            found = (rows[0][0].decode(), rows[0][1].decode())  # type: ignore[union-attr]
            self._collations[number] = found
        return found

    def _user_var(self, event: E.UserVarEvent) -> bytes:
        name = b"@`" + event.var_name.replace(b"`", b"``") + b"`"
        if event.is_null:
            return b"SET " + name + b":=NULL"
        kind = event.value_type
        value = event.value
        decoded = event.decoded_value()
        if kind == E.USER_VAR_INT:
            return b"SET %s:=%d" % (name, decoded)
        if kind == E.USER_VAR_REAL:
            return b"SET %s:=%r" % (name, decoded)
        if kind == E.USER_VAR_DECIMAL:
            return b"SET %s:=%s" % (name, str(decoded).encode())
        if kind == E.USER_VAR_STRING:
            collation, charset = self._collation(event.charset)
            literal = b"X'" + value.hex().encode() + b"'"
            if charset == "binary":
                return b"SET %s:=%s" % (name, literal)
            return b"SET %s:=CONVERT(%s USING %s) COLLATE %s" % (name, literal, charset.encode(), collation.encode())
        raise UnsupportedError(f"User_var event with value type {kind}")

    def _plain_format(self, fd: E.FormatDescriptionEvent) -> bool:
        """Binlog v4 with 6-byte table ids: the layout :meth:`statements` reads."""
        if self._plain_fd is None or self._plain_fd[0] is not fd:
            plain = fd.binlog_version == 4 and fd.context().header_len == 19 and fd.context().post_header_len(
                E.TABLE_MAP_EVENT) == 8
            self._plain_fd = (fd, plain)
        return self._plain_fd[1]

    def statements(self, group: EventGroup) -> list[bytes] | None:
        """The statements of a plain row-based transaction (``BEGIN``, Table_map and rows events,
        ``COMMIT``/Xid), made from the events' bytes without decoding them: one ``BEGIN ...
        BINLOG ...; <position>; COMMIT`` run, as :meth:`plan` would make it.  None for any other
        group (stand-alone, XA, statements, compressed rows...): :meth:`plan` decodes those."""
        if group.flags2 & _PLAIN_FLAGS or group.fd is not None and not self._plain_format(group.fd):
            return None
        data, offsets = group.data(), group.offsets
        count = len(offsets) - 1
        if count < 3 or data[offsets[count - 1] + 4] != E.XID_EVENT:
            return None
        gtid = group.gtid
        rows: list[bytes] = []
        start = 0  # where the current statement's Table_map/rows events begin (0: none yet)
        for i in range(1, count - 1):
            at = offsets[i]
            code = data[at + 4]
            if code == E.TABLE_MAP_EVENT:
                if not start:
                    start = at
            elif code in _PLAIN_ROWS:
                if not start:
                    return None  # rows without their Table_map: the slow path says why
                if data[at + 25] & _STMT_END:
                    rows.append(b"BINLOG '" + b2a_base64(data[start : offsets[i + 1]], newline=False) + b"'")
                    start = 0
            elif code == E.QUERY_EVENT:
                if i != 1 or not data.endswith(b"\0BEGIN", at, offsets[i + 1]):
                    return None
            elif code not in _SILENT:
                return None
        if start:
            return None
        out: list[bytes] = []
        fd = self._format_description(group.fd)  # only now: the slow path must see it otherwise
        if fd is not None:
            out.append(fd)
        if self.preserve_gtids:
            out.append(b"SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=%d" % gtid)
        out.append(b"BEGIN")
        out += rows
        out += [self.table.upsert(gtid), b"COMMIT"]
        return out

    def apply_many(self, groups: list[EventGroup]) -> int:
        """Apply plain row-based groups (:meth:`statements`) in one multi-statement packet: one
        round trip for them all, each still one transaction with its position.  A group that is
        not plain, or the first that fails, ends the packet there (nothing after it ran): returns
        how many were applied; the caller applies the rest one by one (:meth:`apply`)."""
        plans: list[list[bytes]] = []
        for group in groups:
            statements = self.statements(group)
            if statements is None:
                break
            plans.append(statements)
        if not plans:
            return 0
        text = b";\n".join(b";\n".join(plan) for plan in plans)
        total = sum(map(len, plans))
        done: list[Any] = []
        try:
            # (Re)connecting is inside: a connection cut in its handshake is a lost one too.
            self._c().query(text, statements=total, results=done)
        except ServerError:
            self._rollback()  # the failed group's open transaction; the session is set anew
            ran = len(done)
            for index, plan in enumerate(plans):
                if ran < len(plan):
                    return index
                ran -= len(plan)
            return len(plans)
        except ConnectionLostError as err:
            log.warning("%s; reconnecting to the target to learn which of %d groups committed", err, len(plans))
            return self.committed(groups[: len(plans)])
        return len(plans)

    def committed(self, groups: list[EventGroup]) -> int:
        """How many of ``groups``, sent in this order on a connection that broke, the target
        committed.  The position table holds each domain's last committed GTID, so the last
        group whose GTID *is* its domain's position ends the committed prefix (none: nothing
        committed).  Equality, not "sequence number at or past it": a primary without strict
        mode logs lower sequence numbers after higher ones, and such a group must be neither
        skipped nor applied twice.  Reconnects, with retries, to read it; the connection's
        named lock first waits for the broken session to end on the server."""
        attempt = 0
        while True:
            attempt += 1
            self.close()
            try:
                position, _ = self.table.read(self._c())
                break
            except ConnectionLostError as err:
                _reconnect_wait(err, attempt, self.retries)
        applied = 0
        for index, group in enumerate(groups):
            if position.get(group.gtid.domain) == group.gtid:
                applied = index + 1
        return applied

    def plan(self, group: EventGroup, *, tolerant: bool = False) -> _Plan:
        """Translate ``group`` into statements (see the module docstring)."""
        plan = _Plan()
        gtid = group.gtid
        table = self.table
        head = group.gtid_event
        standalone = head.standalone
        xa_prepare = bool(head.flags2 & E.FL_PREPARED_XA)
        if xa_prepare and head.xa_format_id is None:
            raise UnsupportedError(f"GTID {gtid}: an XA PREPARE group without its xid")
        batch: list[bytes] = []
        fd = self._format_description(group.fd)
        if fd is not None:
            batch.append(fd)
        gtid_vars = (
            b"SET @@session.gtid_domain_id=%d, @@session.server_id=%d, @@session.gtid_seq_no=%d" % gtid
            if self.preserve_gtids
            else None
        )
        if standalone:
            batch += _unlogged(table.mark_pending(gtid))
        elif xa_prepare:
            assert head.xa_format_id is not None
            batch += _unlogged(table.mark_pending(gtid))
            if gtid_vars:
                batch.append(gtid_vars)
            batch.append(b"XA START " + E.serialize_xid(head.xa_format_id, head.xa_gtrid, head.xa_bqual))
        else:
            if gtid_vars:
                batch.append(gtid_vars)
            batch.append(b"BEGIN")
        rows: list[bytes] = []
        ended = False
        for event, raw in zip(group.events[1:], group.raw[1:], strict=True):
            code = event.type_code
            if ended:
                raise UnsupportedError(f"GTID {gtid}: {event.name} event after the end of its group")
            if code in _SILENT:
                continue
            if code == E.TABLE_MAP_EVENT:
                rows.append(raw)
                continue
            if code in _ROWS:
                assert isinstance(event, E.RowsEvent)
                # BINLOG statements refuse compressed rows events (ER 1730): send them inflated.
                rows.append(_uncompressed(event) if event.compressed else raw)
                if event.stmt_end:
                    batch.append(b"BINLOG '" + base64.b64encode(b"".join(rows)) + b"'")
                    rows = []
                continue
            if rows:
                raise UnsupportedError(f"GTID {gtid}: rows events without STMT_END_F before a {event.name} event")
            if code == E.INTVAR_EVENT:
                assert isinstance(event, E.IntvarEvent)
                name = b"INSERT_ID" if event.kind == E.INTVAR_INSERT_ID else b"LAST_INSERT_ID"
                batch.append(b"SET %s=%d" % (name, event.value))
            elif code == E.RAND_EVENT:
                assert isinstance(event, E.RandEvent)
                batch.append(b"SET @@RAND_SEED1=%d, @@RAND_SEED2=%d" % (event.seed1, event.seed2))
            elif code == E.USER_VAR_EVENT:
                assert isinstance(event, E.UserVarEvent)
                batch.append(self._user_var(event))
            elif code in (E.QUERY_EVENT, E.QUERY_COMPRESSED_EVENT):
                assert isinstance(event, E.QueryEvent)
                query = event.query
                if query == b"BEGIN" and not standalone:
                    continue
                if query == b"COMMIT" and not standalone:
                    batch += [table.upsert(gtid), b"COMMIT"]
                    ended = True
                    continue
                if query == b"ROLLBACK" and not standalone:
                    batch += [b"ROLLBACK", table.upsert(gtid)]
                    ended = True
                    continue
                batch += self._context(event)
                if standalone and gtid_vars:
                    batch.append(gtid_vars)
                plan.steps.append(("batch", batch))
                batch = []
                expected = event.error_code
                plan.steps.append(("query", query, expected, tolerant))
                if standalone:
                    batch += _unlogged(table.upsert(gtid))
                    ended = True
            elif code == E.XID_EVENT:
                batch += [table.upsert(gtid), b"COMMIT"]
                ended = True
            elif code == E.XA_PREPARE_LOG_EVENT and xa_prepare:
                assert isinstance(event, E.XaPrepareEvent)
                xid = E.serialize_xid(event.format_id, event.gtrid, event.bqual)
                batch.append(b"XA COMMIT " + xid + b" ONE PHASE" if event.one_phase else b"XA PREPARE " + xid)
                batch += _unlogged(table.upsert(gtid))
                ended = True
            else:
                raise UnsupportedError(
                    f"GTID {gtid}: cannot apply a {event.name} event (type {code}); refusing to skip it"
                )
        if rows:
            raise UnsupportedError(f"GTID {gtid}: the group ends inside a rows statement (no STMT_END_F)")
        if not ended:
            raise UnsupportedError(f"GTID {gtid}: incomplete event group (no COMMIT/XID/statement)")
        if batch:
            plan.steps.append(("batch", batch))
        return plan

    # -- execution ------------------------------------------------------------------------------

    def apply(self, group: EventGroup, *, tolerant: bool = False) -> None:
        """Apply ``group`` with its position; retries deadlocks and a lost connection."""
        attempt = 0
        while True:
            attempt += 1
            try:
                conn = self._c()
                if (tolerant or attempt > 1) and self._already_prepared(conn, group):
                    conn.query(b";\n".join(_unlogged(self.table.upsert(group.gtid))), statements=3)
                    return
                # After a lost connection a stand-alone group (DDL, XA COMMIT) may have run
                # without its position: re-run it accepting "already done".
                retry_tolerant = tolerant or (attempt > 1 and group.standalone)
                self._run(conn, self.plan(group, tolerant=retry_tolerant), group.gtid)
                return
            except ApplyError:
                self._rollback()
                raise
            except ServerError:  # only RETRYABLE ones get here
                self._rollback()
                if attempt > self.retries:
                    raise
                time.sleep(0.05 * attempt)
            except ConnectionLostError as err:
                self.close()
                _reconnect_wait(err, attempt, self.retries)
                if self.committed([group]):
                    return  # its COMMIT reached the target before the connection broke

    @staticmethod
    def _already_prepared(conn: Connection, group: EventGroup) -> bool:
        """Whether ``group`` is an XA PREPARE whose xid the target holds prepared already."""
        if not group.flags2 & E.FL_PREPARED_XA:
            return False
        head = group.gtid_event
        if head.xa_format_id is None:
            return False
        xid = (head.xa_format_id, len(head.xa_gtrid), len(head.xa_bqual), head.xa_gtrid + head.xa_bqual)
        for format_id, gtrid_length, bqual_length, data in conn.rows("XA RECOVER"):
            assert format_id is not None and gtrid_length is not None and bqual_length is not None
            if (int(format_id), int(gtrid_length), int(bqual_length), data) == xid:
                return True
        return False

    def _run(self, conn: Connection, plan: _Plan, gtid: Gtid) -> None:
        for step in plan.steps:
            if step[0] == "batch":
                statements = step[1]
                if not statements:
                    continue
                text = b";\n".join(statements)
                try:
                    conn.query(text, statements=len(statements))
                except ServerError as err:
                    if err.code in RETRYABLE:
                        raise
                    raise ApplyError(gtid, text, err) from err
            else:
                _, query, expected, tolerant = step
                try:
                    conn.query(query)
                except ServerError as err:
                    if err.code == expected or (tolerant and err.code in ALREADY_DONE):
                        continue
                    if err.code in RETRYABLE:
                        raise
                    raise ApplyError(gtid, query, err) from err

    def _rollback(self) -> None:
        # What the failed plan set in the session may not have run: send it all again.
        self._fd_key = None
        self._session = {}
        if self.conn is not None:
            try:
                self.conn.query("ROLLBACK")
            except (ServerError, ConnectionLostError):
                self.close()


# --------------------------------------------------------------------------- the replica


_DONE = object()


class _Worker(threading.Thread):
    """Applies the groups of the domains assigned to it, in order."""

    def __init__(self, index: int, replicator: Replicator) -> None:
        super().__init__(name=f"apply-{index}", daemon=True)
        self.replicator = replicator
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=replicator.queue_size)
        self.session = TargetSession(
            replicator.target, replicator.table, preserve_gtids=replicator.preserve_gtids,
            lock=replicator.table.lock(index), lock_wait=replicator.lock_wait,
        )
        self.error: BaseException | None = None

    def run(self) -> None:
        replicator = self.replicator
        try:
            while True:
                try:
                    item = self.queue.get(timeout=0.2)
                except queue.Empty:
                    if replicator.failed.is_set():
                        return
                    continue
                if item is _DONE:
                    return
                batch = [item]
                size = item.size
                while len(batch) < BATCH_GROUPS and size < BATCH_BYTES:
                    try:
                        item = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is _DONE:
                        self.queue.put(_DONE)  # seen again once the batch is applied
                        break
                    batch.append(item)
                    size += item.size
                self._apply(batch)
        except BaseException as err:  # reported by Replicator.run
            self.error = err
            replicator.failed.set()
        finally:
            self.session.close()

    def _apply(self, batch: list[EventGroup]) -> None:
        """The plain groups at the head of ``batch`` in one packet, the others one by one."""
        replicator = self.replicator
        while batch:
            pending = replicator.pending.get(batch[0].gtid.domain)
            done = 0 if pending is not None else self.session.apply_many(batch)
            if not done:
                group = batch[0]
                tolerant = pending is not None and pending == group.gtid
                self.session.apply(group, tolerant=tolerant)
                if tolerant:
                    replicator.pending.pop(group.gtid.domain, None)
                done = 1
            replicator.progress.done_many(batch[:done])
            replicator.applied(done)
            batch = batch[done:]


class Replicator:
    """Reads a source, filters, and applies to the target with ``workers`` connections."""

    def __init__(
        self,
        target: ConnectionOptions,
        *,
        table: PositionTable | None = None,
        workers: int = 1,
        preserve_gtids: bool = True,
        queue_size: int = 256,
        progress: JobProgress | None = None,
        lock_wait: float = LOCK_WAIT,
    ) -> None:
        if workers > MAX_WORKERS:
            raise OptionError(f"--parallel {workers}: at most {MAX_WORKERS} apply connections")
        self.target = target
        self.table = table or PositionTable()
        self.workers_wanted = max(1, workers)
        self.lock_wait = lock_wait
        self.preserve_gtids = preserve_gtids
        self.queue_size = queue_size
        self.progress = progress or JobProgress("replicate")
        self.failed = threading.Event()
        self.pending: dict[int, Gtid] = {}
        self._workers: list[_Worker] = []
        self._domains: dict[int, _Worker] = {}
        self._idle = threading.Condition()
        self._inflight = 0

    def prepare(self, start: ConnectState | None, *, reset: bool = False) -> ConnectState:
        """Create the position table, resolve pending stand-alone groups, return the start position.

        The recorded position wins; ``start`` is used when the channel has none (or with
        ``reset``, which forgets the recorded one).  First it waits until no session holds
        one of the channel's apply locks (:data:`MAX_WORKERS`): an earlier run's sessions
        may still be applying what that run sent before it was killed.  A lost connection is
        retried as the apply connections' are (every step can run again: nothing is applied yet).
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._prepare(start, reset)
            except ConnectionLostError as err:
                _reconnect_wait(err, attempt, RETRIES)

    def _prepare(self, start: ConnectState | None, reset: bool) -> ConnectState:
        with Connection.open(self.target) as conn:
            for worker in range(MAX_WORKERS):  # one at a time: the first held past the wait is the answer
                lock = sql_string(self.table.lock(worker))
                if conn.scalar(f"SELECT GET_LOCK({lock}, {self.lock_wait:g})") != b"1":
                    raise ReplicationError(
                        f"another replicate is applying channel {self.table.channel!r} to {self.target.host}:"
                        f"{self.target.port} (its apply lock {worker} is still held after {self.lock_wait:g} s)"
                    )
            conn.query("SELECT RELEASE_ALL_LOCKS()")
            exists = conn.rows(
                "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA="
                f"{sql_string(self.table.database)} AND TABLE_NAME={sql_string(self.table.table)}"
            )
            if not exists:
                conn.query(";".join(self.table.create()))
            if reset:
                self.table.reset(conn)
            position, pending = self.table.read(conn)
            if pending and self.preserve_gtids:
                logged = conn.text("SELECT IF(@@log_bin, @@gtid_binlog_state, '')") or ""
                # The last GTID each server logged in each domain: the pending group ran iff it
                # is that one (a lower sequence number may follow a higher one: no strict mode).
                binlog = {(g.domain, g.server): g.seq for g in GtidList.parse(logged)}
                for domain, gtid in list(pending.items()):
                    if binlog.get((gtid.domain, gtid.server)) == gtid.seq:
                        conn.query(self.table.upsert(gtid))
                        position.update(gtid)
                        del pending[domain]
            self.pending = pending
        if len(position) or not start:
            return position
        return start.copy()

    def _worker_for(self, domain: int) -> _Worker:
        worker = self._domains.get(domain)
        if worker is None:
            if len(self._workers) < self.workers_wanted:
                worker = _Worker(len(self._workers), self)
                self._workers.append(worker)
                worker.start()
            else:
                counts = {id(w): 0 for w in self._workers}
                for assigned in self._domains.values():
                    counts[id(assigned)] += 1
                worker = min(self._workers, key=lambda w: counts[id(w)])
            self._domains[domain] = worker
        return worker

    def queued(self) -> int:
        """Groups waiting in the workers' queues."""
        return sum(w.queue.qsize() for w in self._workers)

    def run(self, source: GroupSource, group_filter: GroupFilter) -> None:
        """Apply everything ``source`` yields until it ends, the stop position, or an error."""
        progress = self.progress
        progress.queued = self.queued
        progress.source_idle = lambda: source.idle
        progress.state = "running"
        try:
            self._dispatch(source, group_filter)
        except BaseException as exc:
            self._finish(source)
            for worker in self._workers:
                if worker.error is not None:
                    exc.add_note(f"an apply worker failed too: {worker.error}")
            raise
        self._finish(source)
        for worker in self._workers:
            if worker.error is not None:
                raise worker.error

    def _dispatch(self, source: GroupSource, group_filter: GroupFilter) -> None:
        for group in source.groups():
            if self.failed.is_set():
                return
            decision = group_filter.decide(group.gtid)
            if decision is Decision.STOP:
                return
            if decision is Decision.APPLY:
                # DDL is a barrier across domains: schema changes made in one domain are
                # usually what the others write into (tables created before the data).
                # So is XA: a prepare and its completion may be in different domains.
                ddl = bool(group.flags2 & (E.FL_DDL | E.FL_STANDALONE | XA_FLAGS))
                if ddl:
                    self._drain()
                worker = self._worker_for(group.gtid.domain)
                with self._idle:
                    self._inflight += 1
                while not self.failed.is_set():
                    try:
                        worker.queue.put(group, timeout=0.2)
                        break
                    except queue.Full:
                        pass
                if ddl:
                    self._drain()
            if group_filter.done:
                return

    def _drain(self) -> None:
        """Wait until every dispatched group is applied (or a worker failed)."""
        with self._idle:
            while self._inflight and not self.failed.is_set():
                self._idle.wait(0.2)

    def applied(self, count: int = 1) -> None:
        """A worker finished ``count`` groups."""
        with self._idle:
            self._inflight -= count
            if not self._inflight:
                self._idle.notify_all()

    def _finish(self, source: GroupSource) -> None:
        """Close the source, let the workers apply what is queued, wait for them."""
        source.close()
        for worker in self._workers:
            while worker.is_alive():
                try:
                    worker.queue.put(_DONE, timeout=0.2)
                    break
                except queue.Full:
                    if self.failed.is_set():
                        break
        for worker in self._workers:
            worker.join()
        self.progress.state = "failed" if self.failed.is_set() else "done"
