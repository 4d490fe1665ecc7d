"""Event -> text, byte for byte as ``mariadb-binlog`` (10.11) prints it.

:class:`Printer` mirrors the client's ``PRINT_EVENT_INFO`` plus the printing
half of ``process_event`` (``client/mysqlbinlog.cc``) and the ``print()``
methods of ``sql/log_event_client.cc``: the ``# at N`` lines, the
``#YYMMDD HH:MM:SS server id ...`` header comments, the session ``SET``
statements a Query event prints only when they changed, the ``BINLOG '...'``
base64 blocks of row events, ``# Number of rows: N`` and the rest.

The tool keeps three caches per dump, as the C code does, because their
interplay is visible in the output: row event headers accumulate in the
*head* cache, their base64 in the *body* cache and their ``###`` lines in the
*tail* cache until the statement's last row event (STMT_END_F) flushes all
three; most other events write through the head cache and flush it at once.

Speed: the caller hands in the raw event bytes (an mmap) and offsets; the
printer parses only what it prints with precompiled structs, formats with
``bytes %`` templates and appends to a list that :meth:`Printer.drain` joins
and writes in large chunks.  Table maps are decoded once per distinct body
and their row-size plan is cached with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...codec.events import (
    CREATE_FILE_EVENT,
    EXEC_LOAD_EVENT,
    APPEND_BLOCK_EVENT,
    ANNOTATE_ROWS_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_CRC32,
    EXECUTE_LOAD_QUERY_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    IGNORABLE_LOG_EVENT,
    INCIDENT_EVENT,
    INTVAR_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    checkpoint_name,
    intvar_fields,
    rand_seeds,
    rotate_fields,
    START_ENCRYPTION_EVENT,
    START_EVENT_V3,
    STOP_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from ...errors import DecodeError
from .base import (
    _fast,
    BASE64_DECODE_ROWS,
    _base64_lines,
    BASE64_NEVER,
    DELIM,
    _event_description,
    EventView,
    PrintContext,
    PrintOptions,
)
from .gtid import GtidFamily
from .query import QueryFamily
from .rows import ROW_EVENT_TYPES, RowsFamily


#: The one incident an Incident event may report (sql/rpl_constants.h INCIDENT_LOST_EVENTS).
INCIDENT_LOST_EVENTS = 1

#: MySQL 8's Transaction_payload (binlog_transaction_compression), which MariaDB refuses.
MYSQL_TRANSACTION_PAYLOAD_EVENT = 40

#: MySQL's GTID events, which the tool reads as Ignorable whatever their flags say.
MYSQL_IGNORED_EVENTS = frozenset((33, 34, 35))
#: How the tool names the events it prints as Ignorable (``Log_event::get_type_str``).
IGNORABLE_NAMES: dict[int, bytes] = {
    IGNORABLE_LOG_EVENT: b"Ignorable log event",
    29: b"MySQL Rows_query",
    33: b"MySQL Gtid",
    34: b"MySQL Anonymous_Gtid",
    35: b"MySQL Previous_gtids",
    36: b"Transaction_context",
    37: b"View_change",
    39: b"MySQL Update_rows_partial",
    41: b"MySQL Heartbeat",
}


def _shared(name: str, doc: str) -> Any:
    """A Printer attribute that is its PrintContext's ``name``."""
    return property(
        lambda self: getattr(self.pc, name),
        lambda self, value: setattr(self.pc, name, value),
        doc=doc,
    )


class Printer:
    """Renders events as ``mariadb-binlog`` does; one instance per dump (all files).

    The event families are objects of their own, each owning its state: the GTID family
    (:class:`~.gtid.GtidFamily`), the statement family (:class:`~.query.QueryFamily`) and
    the rows family (:class:`~.rows.RowsFamily`).  What they share (the output lists, the
    options, the header comment, the current file's decoding state) is one
    :class:`~.base.PrintContext`, ``self.pc``.  One dispatch table maps each event type to
    its family's handler; the Printer itself prints Format_description and the events
    without a family (:meth:`other`).

    Per-file state (the tool's ``PRINT_EVENT_INFO``, re-created for every file
    on the command line) is reset by :meth:`begin_file`.  It is the dumper's
    text sink (see :mod:`mariabinlog.tools.dump.sink` for the others).
    """

    text_frame = True
    record_positions = False

    def __init__(
        self,
        write: Callable[[bytes], Any],
        options: PrintOptions,
        writelines: Callable[[list[bytes]], Any] | None = None,
    ) -> None:
        self._write = write
        #: Writes the pending pieces without joining them first (large pieces go out as they are).
        self._writelines = writelines or (lambda items: write(b"".join(items)))
        self.opt = options
        pc = self.pc = PrintContext(options)
        # The shared lists are never replaced: the dumper appends to ``out`` directly.
        self.out = pc.out
        self.head = pc.head
        self.header = pc.header
        self._gtid = GtidFamily(pc)
        self._query = QueryFamily(pc)
        self._rows = RowsFamily(pc)
        self._build_dispatch()

    # The shared state the dumper (and the ibb reader, the CLI) set or read from outside.
    ctx = _shared("ctx", "The current file's DecodeContext.")
    checksum_alg = _shared("checksum_alg", "The current file's checksum algorithm.")
    options_written = _shared("options_written", "The Q_FLAGS2 bits the file's server writes.")
    fallback_fd = _shared(
        "fallback_fd",
        "Format_description printed (as BINLOG only) when base64 output needs one and the file"
        " has none (`.ibb` files after the first); None = that is an error.",
    )
    schema = _shared(
        "schema",
        "Opt-in (``--schema-metadata``): a SchemaTracker that fills what a Table_map lacks for"
        " ``--print-table-metadata`` as FULL metadata would; None keeps the tool's text.",
    )
    flashback_events = _shared("flashback_events", "--flashback: whole event outputs, printed reversed at the end.")
    flashback_stop = _shared("flashback_stop", "--flashback: the Stop event's output, printed last.")

    # ------------------------------------------------------------------ state / output

    def reset_state(self) -> None:
        """A fresh PRINT_EVENT_INFO (the tool makes one per input file)."""
        self.pc.reset()
        self._gtid.reset()
        self._query.reset()
        self._rows.reset()

    def drain(self) -> None:
        """Write what is pending in the direct output list."""
        if self.out:
            self._writelines(self.out)
            self.out.clear()

    def drop_event(self, position: int) -> None:
        """Forget what was printed of the event at ``position`` (from its ``# at`` line on):
        the tool fails to read such an event before printing anything of it."""
        line = b"# at %d\n" % position
        out = self.out
        for i in range(len(out) - 1, max(len(out) - 64, -1), -1):
            if out[i] == line:
                del out[i:]
                break
        self.head.clear()

    # ------------------------------------------------------------------ events

    def at(self, pos: int) -> None:
        """The ``# at N`` line process_event writes straight to the output."""
        self.out.append(b"# at %d\n" % pos)

    def print_event(self, ev: EventView) -> None:
        """process_event's printing part for one event that passed every filter."""
        if self._positions:
            self.out.append(b"# at %d\n" % ev.position)
        handler = self._dispatch.get(ev.type_code)
        if handler is not None:
            handler(ev)
        else:
            self.pc.skip_replication_statement(ev.flags)
            self.other(ev)

    def print_groups(
        self,
        data: Any,
        pos: int,
        limit: int,
        soft: int,
        verify: bool,
        accept: Callable[[int, int, int], bool],
        at: int = -1,
    ) -> tuple[int, bool]:
        """Print whole ordinary groups (GTID, Annotate_rows, Table_map, rows events, Xid) from
        ``pos`` in compiled code, as :meth:`print_event` prints them event by event; groups
        must end by ``limit`` and none starts at or past ``soft``.  ``accept(domain, server,
        seq)`` sees each group's GTID before it is printed and says whether reading goes on.
        ``at`` is the ``# at`` position of every event (an `.ibb` group's), -1 for their own
        offsets.  Returns the position reached (``pos`` when the group there is for
        :meth:`print_event`) and whether ``accept`` stopped the reading."""
        cfg = self._group_cfg(verify, at)
        if cfg is None:
            return pos, False
        rows = self._rows
        session = self._gtid.session()
        done, text, stopped = _fast.print_groups(
            data, pos, limit, soft, cfg, session, rows.table_cache, rows.table_maps, self.pc.timestamp, accept
        )
        if done != pos:
            self.out.append(text)
            self._gtid.set_session(session)
        return done, stopped

    def _group_cfg(self, verify: bool, at: int) -> tuple[Any, ...] | None:
        """print_groups' settings, or None when the printer's options or
        state need the event-by-event path (filters, flashback, hexdump, a pending statement ...)."""
        if _fast is None:
            return None
        opt, pc, rows = self.opt, self.pc, self._rows
        ctx = pc.ctx
        if (
            opt.short_form or opt.flashback or opt.hexdump or opt.print_table_metadata or opt.rewrite_db
            or opt.database is not None or opt.table is not None or opt.base64_mode == BASE64_NEVER
            or pc.schema is not None or pc.skip_replication or (pc.encoded and not pc.printed_fd_event)
            or ctx.binlog_version != 4 or ctx.header_len != 19
            or pc.head or pc.body or pc.tail or rows.annotate is not None or rows.row_events or rows.ignored_maps
        ):
            return None
        return (
            pc.checksum_alg == CHECKSUM_CRC32,
            verify,
            self._positions,
            pc.encoded,
            opt.verbose,
            opt.print_row_count,
            opt.skip_annotate,
            ctx.rows_post_header_lengths(),
            at,
        )

    def _build_dispatch(self) -> None:
        """The one table from event type to its family's handler (bound once, here)."""
        opt = self.opt
        self._positions = (
            not opt.short_form and not opt.flashback and opt.print_row_event_positions
        )
        gtid, query, rows = self._gtid, self._query, self._rows
        dispatch: dict[int, Callable[[EventView], None]] = {
            code: rows.rows_event for code in ROW_EVENT_TYPES
        }
        dispatch[TABLE_MAP_EVENT] = rows.table_map
        dispatch[ANNOTATE_ROWS_EVENT] = rows.annotate_rows
        dispatch[GTID_EVENT] = gtid.gtid_event
        dispatch[XID_EVENT] = gtid.xid_event
        dispatch[XA_PREPARE_LOG_EVENT] = gtid.xa_prepare
        dispatch[QUERY_EVENT] = query.query
        dispatch[QUERY_COMPRESSED_EVENT] = query.query
        dispatch[EXECUTE_LOAD_QUERY_EVENT] = query.query
        dispatch[USER_VAR_EVENT] = query.user_var_event
        dispatch[BEGIN_LOAD_QUERY_EVENT] = query.load_block
        dispatch[APPEND_BLOCK_EVENT] = query.load_block
        dispatch[CREATE_FILE_EVENT] = query.create_file
        dispatch[EXEC_LOAD_EVENT] = query.exec_load
        dispatch[FORMAT_DESCRIPTION_EVENT] = self.format_description
        dispatch[START_EVENT_V3] = self.format_description
        self._dispatch = dispatch

    # -- Format_description

    def format_description(self, ev: EventView) -> None:
        opt = self.opt
        fd = ev.decoded()
        h = self.head
        if not opt.short_form:
            self.header(ev, h)
            h.append(
                b"\tStart: binlog v %d, server v %s created %s%s\n"
                % (
                    fd.binlog_version,
                    fd.server_version.encode("latin-1", "replace"),
                    self.pc.timestamp(ev.when),
                    b" at startup" if fd.create_timestamp else b"",
                )
            )
            if ev.flags & LOG_EVENT_BINLOG_IN_USE_F:
                h.append(
                    b"# Warning: this binlog is either in use or was not closed properly.\n"
                )
        if not ev.flags & LOG_EVENT_ARTIFICIAL_F and fd.create_timestamp:
            h.append(b"ROLLBACK%s\n" % DELIM)
        if opt.base64_mode != BASE64_NEVER and not opt.short_form:
            if opt.base64_mode != BASE64_DECODE_ROWS:
                h.append(b"BINLOG '\n")
                _base64_lines(ev.raw(), h)
                h.append(b"'%s\n" % DELIM)
            self.pc.printed_fd_event = True
        self.pc.flush_head()

    # -- everything else

    def other(self, ev: EventView) -> None:
        """The events without a printer room of their own (file control, Incident, MySQL's)."""
        opt = self.opt
        code = ev.type_code
        h = self.head
        short = opt.short_form
        if code == MYSQL_TRANSACTION_PAYLOAD_EVENT:
            # MariaDB cannot read MySQL 8's compressed transactions: a read error, as in the tool.
            raise DecodeError(
                "Found incompatible MySQL 8.0 TRANSACTION_PAYLOAD_EVENT event (binlog_transaction_compression)",
                offset=ev.position,
                expected="an event MariaDB can read",
            )
        if code == ROTATE_EVENT:
            if short:
                return
            self.header(ev, h)
            pos, next_file = rotate_fields(ev.buf, ev.body_pos, ev.body_end)
            h.append(b"\tRotate to %s  pos: %d\n" % (next_file, pos))
        elif code == GTID_LIST_EVENT:
            if short:
                return
            gl = ev.decoded()
            self.header(ev, h)
            items = sorted(gl.gtids, key=lambda g: (g[0], g[2]))
            h.append(
                b"\tGtid list ["
                + b",\n# ".join(b"%d-%d-%d" % g for g in items)
                + b"]\n"
            )
        elif code == BINLOG_CHECKPOINT_EVENT:
            if short:
                return
            name = checkpoint_name(ev.buf, ev.body_pos, ev.body_end)
            self.header(ev, h)
            h.append(b"\tBinlog checkpoint " + name + b"\n")
        elif code == INTVAR_EVENT:
            if not short:
                self.header(ev, h)
                h.append(b"\tIntvar\n")
            kind, value = intvar_fields(ev.buf, ev.body_pos, ev.body_end)
            name = (
                b"LAST_INSERT_ID"
                if kind == 1
                else b"INSERT_ID"
                if kind == 2
                else b"INVALID_INT"
            )
            if value >= 1 << 63:
                value -= 1 << 64
            h.append(b"SET %s=%d%s\n" % (name, value, DELIM))
        elif code == RAND_EVENT:
            if not short:
                self.header(ev, h)
                h.append(b"\tRand\n")
            s1, s2 = rand_seeds(ev.buf, ev.body_pos, ev.body_end)
            h.append(b"SET @@RAND_SEED1=%d, @@RAND_SEED2=%d%s\n" % (s1, s2, DELIM))
        elif code == STOP_EVENT:
            if short:
                return
            self.header(ev, h)
            h.append(b"\tStop\n")
            if self.opt.flashback:
                self.pc.flashback_stop = b"".join(h)
                h.clear()
            else:
                self.pc.flush_head()
            return
        elif code == INCIDENT_EVENT:
            inc = ev.decoded()
            if inc.incident != INCIDENT_LOST_EVENTS:
                # Incident_log_event::is_valid: LOST_EVENTS is the only incident there is.
                raise DecodeError(
                    f"invalid Incident event: incident {inc.incident}", offset=ev.position, expected="incident 1"
                )
            if short:
                return
            self.header(ev, h)
            description = {0: b"NONE", 1: b"LOST_EVENTS"}.get(inc.incident, b"UNKNOWN")
            h.append(
                b"\n# Incident: %s\nRELOAD DATABASE; # Shall generate syntax error\n"
                % description
            )
        elif code == START_ENCRYPTION_EVENT:
            se = ev.decoded()
            h.append(
                b"# Encryption scheme: %d, key_version: %d, nonce: %s\n# The rest of the binlog is encrypted!\n"
                % (se.crypto_scheme, se.key_version, se.nonce.hex().encode())
            )
        elif code == HEARTBEAT_LOG_EVENT:
            if short:
                return
            self.header(ev, h)
            h.append(b"\n# Unknown event\n")
        elif ev.flags & LOG_EVENT_IGNORABLE_F or code == IGNORABLE_LOG_EVENT or code in MYSQL_IGNORED_EVENTS:
            if short:
                return
            self.header(ev, h)
            h.append(
                b"\tIgnorable\n# Ignorable event type %d (%s)\n"
                % (code, IGNORABLE_NAMES.get(code) or _event_description(code))
            )
        else:
            if short:
                return
            self.header(ev, h)
            h.append(b"\n# Unknown event\n")
        self.pc.flush_head()


    # ------------------------------------------------------------------ file boundaries

    def begin_file(self, name: str = "") -> None:
        """dump_log_entries: a fresh PRINT_EVENT_INFO and ``DELIMITER /*!*/;``."""
        self.pc.schema_file = name.rsplit("/", 1)[-1]
        self.reset_state()
        self.out.append(b"DELIMITER /*!*/;\n")

    def end_file(self) -> None:
        """dump_log_entries' closing ``DELIMITER ;`` (not with --flashback)."""
        if not self.opt.flashback:
            self.out.append(b"DELIMITER ;\n")

    def finish(self, complete: bool) -> None:
        """The run is over: nothing more to print (the dumper wrote the epilogue)."""
