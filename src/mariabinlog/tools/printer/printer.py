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

import time
from collections.abc import Callable
from typing import Any

from ...codec.events import (
    CREATE_FILE_EVENT,
    EXEC_LOAD_EVENT,
    APPEND_BLOCK_EVENT,
    ANNOTATE_ROWS_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_OFF,
    DecodeContext,
    DEFAULT_CONTEXT,
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
    LOG_EVENT_SKIP_REPLICATION_F,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    checkpoint_name,
    intvar_fields,
    rand_seeds,
    rotate_fields,
    serialize_xid,
    START_ENCRYPTION_EVENT,
    START_EVENT_V3,
    STOP_EVENT,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    XA_PREPARE_LOG_EVENT,
    xa_prepare_fields,
    XID_EVENT,
)
from ...codec.events.session import FLAGS2_VERSIONED
from ...errors import DecodeError
from .base import (
    BASE64_DECODE_ROWS,
    _base64_lines,
    BASE64_NEVER,
    DELIM,
    _EPOCH_CACHE_MAX,
    _event_description,
    EventView,
    OPTION_AUTO_IS_NULL,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_NOT_AUTOCOMMIT,
    OPTION_RELAXED_UNIQUE_CHECKS,
    PrintOptions,
)
from .gtid import GtidPrinter
from .query import LoadFiles, QueryPrinter
from .rows import ROW_EVENT_TYPES, RowsPrinter, TableInfo

# Names callers use through this module (the rooms hold them).
from .base import (  # noqa: F401
    BASE64_AUTO,
    _backtick,
    _fast,
    view_at,
)
from .rows import (  # noqa: F401
    _COMMAND,
    _KIND_CODE,
    _verbose_plan,
)
from .rowsizes import row_counter  # noqa: F401


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


class Printer(GtidPrinter, QueryPrinter, RowsPrinter):
    """Renders events as ``mariadb-binlog`` does; one instance per dump (all files).

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
        self.out: list[bytes] = []
        self.head: list[bytes] = []
        self.body: list[bytes] = []
        self.tail: list[bytes] = []
        self._ts_cache: dict[int, bytes] = {}
        self._table_cache: dict[bytes, TableInfo] = {}
        self._status_cache: dict[bytes, tuple[dict[int, Any], Any]] = {}
        self.printed_fd_event = False
        #: Format_description printed (as BINLOG only) when base64 output needs one and
        #: the file has none (`.ibb` files after the first); None = that is an error.
        self.fallback_fd: bytes | None = None
        # Flashback keeps whole event outputs and prints them in reverse at the end.
        self.flashback_events: list[bytes] = []
        self.flashback_stop = b""
        #: The rows events of the current statement (raw bytes with their flags already
        #: rewritten), printed in reverse order at its last event.
        self.flashback_stmt: list[tuple[bytes, int, int]] = []
        #: Opt-in (``--schema-metadata``): a SchemaTracker that fills what a Table_map lacks
        #: for ``--print-table-metadata`` as FULL metadata would; None keeps the tool's text.
        self.schema: Any = None
        self.schema_gtid: str | None = None
        #: The base name of the file read, where the schema history places its DDL.
        self.schema_file = ""
        #: LOAD DATA files rebuilt from Begin_load_query/Append_block events (one set per dump).
        self.load_files = LoadFiles(options.local_load)
        #: Create_file events waiting for their Exec_load, by file id.
        self.load_events: dict[int, EventView] = {}
        self._build_dispatch()
        self.reset_state()

    # ------------------------------------------------------------------ state / output

    def reset_state(self) -> None:
        """A fresh PRINT_EVENT_INFO (the tool makes one per input file)."""
        self.db = b""
        self.charset: bytes | None = None
        self.time_zone = b""
        self.flags2: int | None = None
        self.sql_mode: bytes | None = None
        self.auto_increment = (0, 0)
        self.lc_time_names = -1
        self.charset_database = -1
        self.thread_id = 0
        self.thread_id_printed = False
        self.server_id = 0
        self.server_id_printed = False
        self.domain_id = 0
        self.domain_id_printed = False
        self.allow_parallel = True
        self.allow_parallel_printed = False
        self.gtid_flags2 = 0
        self.skip_replication = 0
        self.row_events = 0
        self.table_maps: dict[int, TableInfo] = {}
        self.ignored_maps: dict[int, TableInfo] = {}
        self.annotate: EventView | None = None
        self.printed_fd_event = False
        self.head.clear()
        self.body.clear()
        self.tail.clear()
        # Decoding state of the current file (set by the reader through set_format).
        self.checksum_alg = CHECKSUM_OFF
        self.ctx: DecodeContext = DEFAULT_CONTEXT
        self.options_written = (
            OPTION_AUTO_IS_NULL
            | OPTION_NOT_AUTOCOMMIT
            | OPTION_NO_FOREIGN_KEY_CHECKS
            | OPTION_RELAXED_UNIQUE_CHECKS
            | FLAGS2_VERSIONED
        )
        self.common_header_len = 19

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

    def _flush_head(self) -> None:
        if self.head:
            self.out.extend(self.head)
            self.head.clear()

    def _release_owned(self) -> None:
        """Write_on_release_cache(..., this): with --flashback the event keeps its output
        (printed in reverse order at the end), otherwise it goes out now."""
        h = self.head
        if self.opt.flashback:
            if h:
                self.flashback_events.append(b"".join(h))
                h.clear()
        else:
            self.out.extend(h)
            h.clear()

    # ------------------------------------------------------------------ framing helpers

    def timestamp(self, when: int) -> bytes:
        """``%02d%02d%02d %2d:%02d:%02d`` of localtime(when), cached."""
        text = self._ts_cache.get(when)
        if text is None:
            tm = time.localtime(when)
            text = b"%02d%02d%02d %2d:%02d:%02d" % (
                tm.tm_year % 100,
                tm.tm_mon,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min,
                tm.tm_sec,
            )
            if len(self._ts_cache) >= _EPOCH_CACHE_MAX:
                self._ts_cache.clear()
            self._ts_cache[when] = text
        return text

    def header(self, ev: EventView, dst: list[bytes], raw: bytes | None = None) -> None:
        """Log_event::print_header (plus the --hexdump block)."""
        ts = self._ts_cache.get(ev.when) or self.timestamp(ev.when)
        log_pos = ev.log_pos
        if self.ctx.binlog_version == 3:
            log_pos = self.ctx.end_log_pos(ev.type_code, log_pos, ev.length)
        if ev.crc is not None:
            dst.append(
                b"#%s server id %d  end_log_pos %d CRC32 0x%08x "
                % (ts, ev.server_id, log_pos, ev.crc)
            )
        else:
            dst.append(
                b"#%s server id %d  end_log_pos %d " % (ts, ev.server_id, log_pos)
            )
        if self._hexdump:
            self._print_hexdump(ev, dst, raw)

    def _print_hexdump(
        self, ev: EventView, dst: list[bytes], raw: bytes | None
    ) -> None:
        data = raw if raw is not None else ev.raw()
        pos = ev.hexdump_from
        dst.append(b"\n# Position\n")
        dst.append(
            b"#           |Timestamp   |Type |Master ID   |Size        |Master Pos  |Flags\n"
        )
        h = data[:19]
        dst.append(
            b"# %8x  |%02x %02x %02x %02x |%02x   |%02x %02x %02x %02x |%02x %02x %02x %02x |%02x %02x %02x %02x |%02x %02x\n"
            % ((pos,) + tuple(h))
        )
        dst.append(b"#\n")
        # The body after the whole common header (longer than 19 bytes in a few forks).
        # Without a Format_description (MySQL 4.x) the tool knows no common header length and
        # dumps whole events, except Start_v3 and Rotate, whose header length is fixed.
        if self.ctx.binlog_version == 3 and ev.type_code not in (START_EVENT_V3, ROTATE_EVENT):
            skip = 0
        else:
            skip = ev.body_pos - ev.start
        rest = data[skip:]
        offset = pos + skip
        for i in range(0, len(rest), 16):
            chunk = rest[i : i + 16]
            hexpart = b" ".join(b"%02x" % c for c in chunk[:8])
            if len(chunk) > 8:
                hexpart += b"  " + b" ".join(b"%02x" % c for c in chunk[8:])
            text = bytes(c if 32 <= c < 127 else 46 for c in chunk)
            if len(chunk) == 16:
                dst.append(b"# %8x  %s  |%s|\n" % (offset + i, hexpart, text))
            else:
                dst.append(b"# %8x  %-49s |%s|\n" % (offset + i, hexpart, text))
        if rest:
            dst.append(b"#\n")
        dst.append(b"# Event: ")

    # ------------------------------------------------------------------ events

    def at(self, pos: int) -> None:
        """The ``# at N`` line process_event writes straight to the output."""
        self.out.append(b"# at %d\n" % pos)

    def skip_replication_statement(self, flags: int) -> None:
        """print_skip_replication_statement: only when the event flag changes."""
        value = 1 if flags & LOG_EVENT_SKIP_REPLICATION_F else 0
        if value != self.skip_replication:
            self.out.append(b"/*!50521 SET skip_replication=%d*/%s\n" % (value, DELIM))
            self.skip_replication = value

    def print_event(self, ev: EventView) -> None:
        """process_event's printing part for one event that passed every filter."""
        if self._positions:
            self.out.append(b"# at %d\n" % ev.position)
        handler = self._dispatch.get(ev.type_code)
        if handler is not None:
            handler(ev)
        else:
            self.skip_replication_statement(ev.flags)
            self.other(ev)


    def _build_dispatch(self) -> None:
        opt = self.opt
        self._positions = (
            not opt.short_form and not opt.flashback and opt.print_row_event_positions
        )
        self._encoded = (
            opt.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS)
            and not opt.short_form
        )
        self._hexdump = opt.hexdump
        dispatch: dict[int, Callable[[EventView], None]] = {
            code: self.rows_event for code in ROW_EVENT_TYPES
        }
        dispatch[TABLE_MAP_EVENT] = self.table_map
        dispatch[GTID_EVENT] = self._gtid_event
        dispatch[XID_EVENT] = self._xid_event
        dispatch[ANNOTATE_ROWS_EVENT] = self._annotate_rows
        dispatch[QUERY_EVENT] = self.query
        dispatch[QUERY_COMPRESSED_EVENT] = self.query
        dispatch[EXECUTE_LOAD_QUERY_EVENT] = self.query
        dispatch[BEGIN_LOAD_QUERY_EVENT] = self.load_block
        dispatch[APPEND_BLOCK_EVENT] = self.load_block
        dispatch[CREATE_FILE_EVENT] = self.create_file
        dispatch[EXEC_LOAD_EVENT] = self.exec_load
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
                    self.timestamp(ev.when),
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
            self.printed_fd_event = True
        self._flush_head()

    # -- GTID


    # -- Xid

    # -- Query


    # -- Table_map


    # -- rows


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
            name = checkpoint_name(ev.buf, ev.body_pos)
            self.header(ev, h)
            h.append(b"\tBinlog checkpoint " + name + b"\n")
        elif code == INTVAR_EVENT:
            if not short:
                self.header(ev, h)
                h.append(b"\tIntvar\n")
            kind, value = intvar_fields(ev.buf, ev.body_pos)
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
            s1, s2 = rand_seeds(ev.buf, ev.body_pos)
            h.append(b"SET @@RAND_SEED1=%d, @@RAND_SEED2=%d%s\n" % (s1, s2, DELIM))
        elif code == USER_VAR_EVENT:
            self.user_var(ev, h)
        elif code == XA_PREPARE_LOG_EVENT:
            _one_phase, fmt, gtrid, bqual = xa_prepare_fields(ev.buf, ev.body_pos)
            xid = serialize_xid(fmt, gtrid, bqual)
            if not short:
                self.header(ev, h)
                h.append(b"\tXID = %s\n" % xid)
            h.append(b"XA PREPARE %s\n%s\n" % (xid, DELIM))
            self._release_owned()
            return
        elif code == STOP_EVENT:
            if short:
                return
            self.header(ev, h)
            h.append(b"\tStop\n")
            if self.opt.flashback:
                self.flashback_stop = b"".join(h)
                h.clear()
            else:
                self._flush_head()
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
        self._flush_head()


    # ------------------------------------------------------------------ file boundaries

    def begin_file(self, name: str = "") -> None:
        """dump_log_entries: a fresh PRINT_EVENT_INFO and ``DELIMITER /*!*/;``."""
        self.schema_file = name.rsplit("/", 1)[-1]
        self.reset_state()
        self.out.append(b"DELIMITER /*!*/;\n")

    def end_file(self) -> None:
        """dump_log_entries' closing ``DELIMITER ;`` (not with --flashback)."""
        if not self.opt.flashback:
            self.out.append(b"DELIMITER ;\n")

    def finish(self, complete: bool) -> None:
        """The run is over: nothing more to print (the dumper wrote the epilogue)."""
