"""A GTID replication client: stream a MariaDB primary's binlog, resume after dropped connections.

:class:`BinlogClient` does what a replica's I/O thread does (protocol.md §1, §2, §5):
authenticate, declare itself checksum-aware (``@master_binlog_checksum``) and GTID-capable
(``@mariadb_slave_capability``), give its start position as ``@slave_connect_state``, ask
for heartbeats, register (COM_REGISTER_SLAVE) and send COM_BINLOG_DUMP.  It decodes the
stream with the format core and handles what the primary adds: the fake (artificial)
Rotate naming the file, the Format_description that sets the checksum algorithm, Gtid_list
events and heartbeats.  An engine-binlog primary (positions 0, artificial Format_description,
rotates only as file-change markers) needs nothing else: positions are then reported as 0.

Two ways to read:

* :meth:`BinlogClient.events`: every event as it arrives (one connection, no reconnect),
  with the primary's file name and offsets: what ``mariabinlog dump
  --read-from-remote-server`` prints.
* :meth:`BinlogClient.groups`: complete event groups only.  After each group the client's
  :attr:`~BinlogClient.position` advances; when the connection drops (or stays silent for
  two heartbeat periods) the client reconnects with that position as the connect state, so
  no group is lost or delivered twice.

A damaged stream is never taken for data.  The codec checks packet sequence ids and that
each event packet is as long as its event (:class:`~mariabinlog.errors.FramingError`: a
packet duplicated, lost, cut short or grown); here each event must end after the previous
one of its file (a repeated or reordered event, even with its sequence id rewritten), and
the CRC-32 is checked.  As MariaDB's I/O thread (``handle_slave_io``), :meth:`groups`
reconnects after a broken framing, a lost connection or a silence, and stops on a packet
over ``max_allowed_packet``.  A damaged event (checksum, undecodable bytes) stops MariaDB's
replica at once; here it is fetched once more from the last complete group, and stops the
client only when it comes back damaged at the same place: the primary's own binlog is bad
then, not the way to it.  Every error names the primary, its binlog file and the event's
offset there, and the last GTID received.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator

from ..codec.events import (
    CHECKSUM_CRC32,
    CHECKSUM_OFF,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    RotateEvent,
)
from ..codec.gtid import ConnectState
from ..codec.wire.protocol import (
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_SEND_ANNOTATE_ROWS_EVENT,
    MARIA_SLAVE_CAPABILITY_GTID,
    BinlogDump,
    EndOfStream,
    RegisterSlave,
)
from ..codec.events.stream import EventStreamDecoder, footer_len
from ..codec.framing import SCAN_CUT, SCAN_END, SCAN_MORE, Scanner, group_of, scanner_for
from ..codec.groups import CONTROL_EVENTS, EventGroup, GroupAssembler, strip_checksum
from ..codec.gtid import Gtid
from ..errors import ConnectionLostError, DecodeError, FramingError, OptionError, PacketTooLargeError, ReplicationError, ServerError
from .net import Connection, ConnectionOptions, sql_string

log = logging.getLogger(__name__)

#: Server errors after which reconnecting cannot help (bad position, auth, privileges).
FATAL_SERVER_ERRORS = frozenset({1236, 1045, 1044, 1227, 1142, 1064, 1193})


class StreamEvent:
    """One event of a dump: decoded ``event``, the bytes as received (CRC footer included when
    the primary sends one), the primary's file name and the event's start/end offsets there
    (0 for an engine-binlog primary, whose events have no offsets)."""

    __slots__ = ("event", "raw", "has_checksum", "file", "position", "end_position")

    def __init__(self, event: Event, raw: bytes, has_checksum: bool, file: str, position: int, end_position: int) -> None:
        self.event = event
        self.raw = raw
        self.has_checksum = has_checksum
        self.file = file
        self.position = position
        self.end_position = end_position

    def stripped(self) -> bytes:
        """The event bytes without the CRC footer."""
        return strip_checksum(self.raw) if self.has_checksum else self.raw

    def __repr__(self) -> str:
        return f"StreamEvent({self.event.name}, {self.file}:{self.position})"


def default_server_id() -> int:
    """A server id unlikely to clash with real servers (``COM_BINLOG_DUMP`` kills a dump of the same id)."""
    return 0x7F000000 | (os.getpid() & 0xFFFFFF)


class BinlogClient:
    """Replication client of one primary; see the module docstring.

    ``start`` is the connect state (last applied GTID per domain, ``""`` = from the start of
    the primary's binlog).  ``heartbeat`` is the heartbeat period in seconds (0 = none).
    Without any data for the options' ``read_timeout`` (``slave_net_timeout``) the connection
    counts as lost; a blocking stream, which gets a heartbeat whenever the primary waits,
    already after ``2 * heartbeat + 5`` s when that is shorter.
    ``blocking=False`` ends the stream when the primary has sent everything (EOF), like
    ``mariadb-binlog`` without ``--stop-never``.  ``checksum`` is what the client declares in
    ``@master_binlog_checksum``: ``"server"`` (the primary's own ``@@global.binlog_checksum``,
    as a replica does), ``"NONE"`` or ``"CRC32"``.  ``reconnect`` is how many consecutive
    failed attempts :meth:`groups` tolerates (0 = never reconnect).
    """

    def __init__(
        self,
        options: ConnectionOptions,
        *,
        start: ConnectState | str = "",
        server_id: int | None = None,
        heartbeat: float = 5.0,
        blocking: bool = True,
        annotate: bool = True,
        register: bool = True,
        strict: bool = False,
        capability: int = MARIA_SLAVE_CAPABILITY_GTID,
        checksum: str = "server",
        verify_checksum: bool = True,
        reconnect: int = 10,
        reconnect_delay: float = 0.5,
        until: ConnectState | str | None = None,
        binlog_file: str | None = None,
        binlog_position: int = 4,
    ) -> None:
        if checksum.upper() not in ("SERVER", "NONE", "CRC32"):
            raise OptionError(f"checksum must be server, NONE or CRC32, not {checksum!r}")
        self.options = options
        self.position = start.copy() if isinstance(start, ConnectState) else ConnectState.parse(start)
        self.server_id = default_server_id() if server_id is None else server_id
        self.heartbeat = heartbeat
        self.blocking = blocking
        self.annotate = annotate
        self.register = register
        self.strict = strict
        self.capability = capability
        self.checksum = checksum.upper()
        self.verify_checksum = verify_checksum
        self.reconnect = reconnect
        self.reconnect_delay = reconnect_delay
        self.until = until if until is None or isinstance(until, ConnectState) else ConnectState.parse(until)
        #: Dump by file name and offset (as ``mariadb-binlog -R`` does) instead of by GTID.
        self.binlog_file = binlog_file
        self.binlog_position = binlog_position
        #: Primary's file name and offset after the last event (offset 0 for engine binlogs).
        self.file = ""
        self.file_position = 0
        self.server_version = ""
        self.primary_server_id = 0
        #: ``time.time()`` minus the primary's ``UNIX_TIMESTAMP()`` at connect (for lag).
        self.clock_skew = 0.0
        #: ``time.monotonic()`` of the last heartbeat (the primary had nothing more to send).
        self.last_heartbeat = 0.0
        #: True while the last thing received was a heartbeat: the primary had nothing to send.
        self.idle = False
        self.connects = 0
        #: The last GTID event received (None before the first): names where an error happened.
        self.last_gtid: Gtid | None = None
        self.on_discard: Callable[[list[Event]], None] | None = None
        self._conn: Connection | None = None

    # -- connection -----------------------------------------------------------------------------

    def _set_up(self, conn: Connection) -> int:
        """Session variables of protocol.md §1; returns the checksum algorithm of fake events."""
        declared = "@@global.binlog_checksum" if self.checksum == "SERVER" else sql_string(self.checksum)
        statements = [f"SET @master_binlog_checksum= {declared}"]
        if self.heartbeat > 0:
            statements.append(f"SET @master_heartbeat_period= {int(self.heartbeat * 1e9)}")
        statements += [
            f"SET @mariadb_slave_capability= {self.capability}",
        ]
        if self.binlog_file is None:
            statements += [
                f"SET @slave_connect_state= {sql_string(str(self.position))}",
                f"SET @slave_gtid_strict_mode= {1 if self.strict else 0}",
                "SET @slave_gtid_ignore_duplicates= 0",
            ]
        if self.until is not None:
            statements.append(f"SET @slave_until_gtid= {sql_string(str(self.until))}")
        statements.append("SELECT @master_binlog_checksum, @@global.server_id, UNIX_TIMESTAMP(6)")
        rows = conn.rows(";".join(statements))
        if len(rows) != 1 or len(rows[0]) != 3:
            raise ReplicationError(
                f"{self.options.describe()} answered the set-up SELECT with {len(rows)} row(s)"
                f" of {len(rows[0]) if rows else 0} column(s), not one row of 3"
            )
        alg, server_id, now = rows[0]
        try:
            self.primary_server_id = int(server_id or 0)
            if now is not None:
                self.clock_skew = time.time() - float(now)
        except ValueError:
            raise ReplicationError(
                f"{self.options.describe()} sent a server id {server_id!r} or time {now!r} that is not a number"
            ) from None
        return CHECKSUM_CRC32 if (alg or b"").upper() == b"CRC32" else CHECKSUM_OFF

    def _connect(self) -> tuple[Connection, int]:
        conn = Connection.open(self.options)
        try:
            self.server_version = conn.server_version
            alg = self._set_up(conn)
            if self.register:
                conn.register_slave(RegisterSlave(self.server_id, user=self.options.user, port=0))
            flags = (BINLOG_SEND_ANNOTATE_ROWS_EVENT if self.annotate else 0) | (
                0 if self.blocking else BINLOG_DUMP_NON_BLOCK
            )
            if self.binlog_file is None:
                conn.start_dump(BinlogDump(self.server_id, 4, flags, b""))
            else:
                self.file = self.binlog_file
                conn.start_dump(BinlogDump(self.server_id, self.binlog_position, flags, self.binlog_file.encode()))
            if self.blocking and self.heartbeat > 0:
                silence = 2 * self.heartbeat + 5
                limit = self.options.read_timeout
                conn.settimeout(silence if limit is None else min(silence, limit))
        except BaseException:
            conn.close()
            raise
        self.connects += 1
        return conn, alg

    def close(self) -> None:
        """Close the current connection (a running iteration ends with ConnectionLostError)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort()
            conn.close()

    # -- streaming ------------------------------------------------------------------------------

    def events(self) -> Iterator[StreamEvent]:
        """Every event from :attr:`position` on, over one connection (see the module docstring).

        Errors name the primary, the binlog file and offset, and the last GTID received."""
        conn, alg = self._connect()
        conn.place = self.where
        self._conn = conn
        decoder = EventStreamDecoder(checksum_alg=alg, verify_checksum=self.verify_checksum)
        try:
            while True:
                packet = conn.read_dump()
                if isinstance(packet, EndOfStream):
                    self.idle = True
                    return
                yield self._decode(decoder, packet.data)
        except DecodeError as err:
            raise self._located(err, in_event=not isinstance(err, FramingError)) from None
        finally:
            if self._conn is conn:
                self._conn = None
            conn.close()

    def where(self) -> str:
        """Where the stream is: the binlog file and offset of the next event, the last GTID."""
        place = self.file or "no binlog file yet"
        if self.file_position:
            place += f" at {self.file_position}"
        return place if self.last_gtid is None else f"{place}, {self._last_gtid()}"

    def _last_gtid(self) -> str:
        return f"last GTID {self.last_gtid}"

    def _located(self, err: DecodeError, *, in_event: bool = True) -> DecodeError:
        """``err`` anchored in the stream: the primary, its binlog file and the offset there (the
        codec's offset is into the event being read, ``in_event``, which starts at
        :attr:`file_position`; else the stream's position), the last GTID received."""
        peer = self.options.describe()
        if in_event and self.file_position:
            context = None if self.last_gtid is None else self._last_gtid()
            return err.located(f"{peer} {self.file}", self.file_position, context)
        return err.located(f"{peer} {self.where()}", None)

    def _decode(self, decoder: EventStreamDecoder, data: bytes) -> StreamEvent:
        """One event packet's event, decoded and placed."""
        if len(data) < 19:
            raise DecodeError(
                f"event packet of {len(data)} bytes", offset=0, expected="at least a 19-byte event header"
            )
        code = data[4]
        has_crc = footer_len(data, 0, len(data), decoder.checksum_alg) > 0
        if code == START_ENCRYPTION_EVENT:
            raise DecodeError(
                "the primary sent a Start_encryption event; encrypted binlogs are sent decrypted by"
                " MariaDB, so this stream is damaged",
                offset=0,
                expected="unencrypted events",
            )
        event = decoder.decode(data, 0)
        return self._place(event, data, has_crc)

    def _place(self, event: Event, data: bytes, has_crc: bool) -> StreamEvent:
        """Track the primary's file and offset (protocol.md §3/§4) and wrap the event."""
        size = len(data)
        code = event.type_code
        log_pos = event.log_pos
        self.idle = False
        if code == ROTATE_EVENT:
            assert isinstance(event, RotateEvent)
            start = 0 if event.flags & LOG_EVENT_ARTIFICIAL_F else (log_pos - size if log_pos >= size else self.file_position)
            placed = StreamEvent(event, data, has_crc, self.file, start, log_pos)
            self.file = event.next_file.decode("utf-8", "replace")
            self.file_position = event.next_position
            return placed
        if code == HEARTBEAT_LOG_EVENT:
            self.last_heartbeat = time.monotonic()
            self.idle = True
            return StreamEvent(event, data, has_crc, self.file, log_pos, log_pos)
        if code == GTID_EVENT:
            assert isinstance(event, GtidEvent)
            self.last_gtid = Gtid(event.domain_id, event.server_id, event.seq_no)
        if log_pos:
            if log_pos <= self.file_position and code != FORMAT_DESCRIPTION_EVENT and not event.flags & LOG_EVENT_ARTIFICIAL_F:
                raise FramingError(
                    f"{event.name} event ends at {log_pos}, not after the previous event ({self.file_position})",
                    offset=0,
                    expected="each event after the previous one; this one is repeated or out of order",
                )
            start = log_pos - size if log_pos >= size else self.file_position
            self.file_position = log_pos
            return StreamEvent(event, data, has_crc, self.file, start, log_pos)
        if code == FORMAT_DESCRIPTION_EVENT or not self.file_position or event.flags & LOG_EVENT_ARTIFICIAL_F:
            # Artificial/first FD, other artificial events (not in the file), or an
            # engine-binlog primary: no offsets.
            return StreamEvent(event, data, has_crc, self.file, self.file_position, self.file_position)
        start = self.file_position
        self.file_position += size
        return StreamEvent(event, data, has_crc, self.file, start, self.file_position)

    def groups(self) -> Iterator[EventGroup]:
        """Complete event groups from :attr:`position` on, reconnecting after lost connections
        and damaged streams (see the module docstring for which damage stops it)."""
        position = self.position
        for batch in self._reconnecting():
            for group in batch:
                assert group.gtid is not None
                position.update(group.gtid)
                yield group

    def batches(self) -> Iterator[list[EventGroup]]:
        """:meth:`groups` in batches: every complete group the connection had delivered when the
        batch was cut (what an archiver writes and makes durable at once)."""
        position = self.position
        for batch in self._reconnecting():
            for group in batch:
                assert group.gtid is not None
                position.update(group.gtid)
            yield batch

    def _reconnecting(self) -> Iterator[list[EventGroup]]:
        """Batches of groups from :attr:`position` on, over as many connections as it takes (the
        caller moves :attr:`position` past each group it takes)."""
        failures = 0
        damaged: tuple[str, str | None, int | None] | None = None  # where a damaged event was met
        while True:
            try:
                for batch in self._groups_once():
                    failures = 0
                    damaged = None
                    yield batch
                return
            except (ConnectionLostError, ServerError, DecodeError) as err:
                if isinstance(err, ServerError) and err.code in FATAL_SERVER_ERRORS:
                    raise
                if isinstance(err, PacketTooLargeError):
                    raise
                if isinstance(err, DecodeError) and not isinstance(err, FramingError):
                    # A damaged event: once more from the last complete group; damaged at the
                    # same place again, it is the primary's binlog that is damaged.
                    here = (str(self.position), err.file, err.offset)
                    if damaged == here:
                        raise
                    damaged = here
                failures += 1
                if failures > self.reconnect:
                    raise
                delay = min(self.reconnect_delay * (2 ** (failures - 1)), 10.0)
                log.warning("%s; reconnecting in %.1f s from %s (attempt %d of %d)",
                            err, delay, self.position or "the start", failures, self.reconnect)
                time.sleep(delay)

    def _groups_once(self) -> Iterator[list[EventGroup]]:
        """The groups of one connection, in batches: whole groups straight from the received
        packets by the codec's :class:`~mariabinlog.codec.framing.Scanner`, and event by event
        (as :meth:`events` reads them) what it leaves: control events, errors, the end."""
        conn, alg = self._connect()
        conn.place = self.where
        self._conn = conn
        decoder = EventStreamDecoder(checksum_alg=alg, verify_checksum=self.verify_checksum)
        scanner = Scanner(checksum=alg == CHECKSUM_CRC32, verify=self.verify_checksum)
        fast = True
        assembler = GroupAssembler()
        assembler.on_discard = self.on_discard
        fd: FormatDescriptionEvent | None = None
        try:
            while True:
                if fast and not assembler.open:
                    found, stop = conn.dump_groups(scanner)
                    if found:
                        self.idle = False
                        batch = [group_of(item, fd, self.file) for item in found]
                        self._check_order(batch)
                        yield batch
                        continue
                    if stop == SCAN_CUT:  # a GTID event in the middle of a group: the primary crashed
                        self._discard(scanner.discard(), fd)
                        continue
                    if stop == SCAN_MORE or stop == SCAN_END:
                        conn.fill()
                        continue
                    partial = scanner.discard()
                    if partial is not None:  # the rest of this group goes the slow way
                        resumed = group_of(partial, fd, self.file)
                        if resumed.end_position:  # where the slow path's order check goes on from
                            self.file_position = resumed.end_position
                        assembler.resume(resumed)
                packet = conn.read_dump()
                if isinstance(packet, EndOfStream):
                    self.idle = True
                    return
                placed = self._decode(decoder, packet.data)
                event = placed.event
                code = event.type_code
                if code in CONTROL_EVENTS:
                    if code == FORMAT_DESCRIPTION_EVENT:
                        assert isinstance(event, FormatDescriptionEvent)
                        fd = event
                        if event.create_timestamp and assembler.open:
                            # The primary restarted in the middle of writing this group.
                            dropped = assembler.discard()
                            if self.on_discard is not None:
                                self.on_discard(dropped)
                        scanner = scanner_for(event.context(), checksum=decoder.checksum_alg == CHECKSUM_CRC32,
                                              verify=self.verify_checksum)
                        fast = scanner is not None  # (another format: event by event from here)
                    continue
                try:
                    group = assembler.feed(event, placed.stripped(), fd, placed.file, placed.end_position)
                except DecodeError as err:
                    raise self._located(err, in_event=False) from None
                if group is not None:
                    yield [group]
        except DecodeError as err:
            raise self._located(err, in_event=not isinstance(err, FramingError)) from None
        finally:
            if self._conn is conn:
                self._conn = None
            conn.close()

    def _check_order(self, batch: list[EventGroup]) -> None:
        """The fast path's share of :meth:`_place`: each group ends after the previous event of
        its file (a repeated or reordered group is a damaged stream), the last GTID and the
        file position follow the batch."""
        position = self.file_position
        for group in batch:
            end = group.end_position
            if end:
                if end <= position:
                    raise self._located(FramingError(
                        f"the event group {group.gtid} ends at {end}, not after the previous event ({position})",
                        offset=0,
                        expected="each event after the previous one; this one is repeated or out of order",
                    ), in_event=False)
                position = end
        self.file_position = position
        self.last_gtid = batch[-1].gtid

    def _discard(self, dropped: tuple[object, ...] | None, fd: FormatDescriptionEvent | None) -> None:
        """A group the fast path found cut off goes to :attr:`on_discard` as the slow path's do."""
        if dropped is not None and self.on_discard is not None:
            self.on_discard(group_of(dropped, fd, self.file).events)
