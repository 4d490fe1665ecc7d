"""What every printer room shares: options, the event view over raw bytes, delimiters,
the session option bits and small formatting helpers.
"""

from __future__ import annotations

import binascii
import re
import time
from typing import Any

from ...codec.events import (
    CHECKSUM_OFF,
    decode_event,
    DecodeContext,
    DEFAULT_CONTEXT,
    event_type_name,
    FORMAT_DESCRIPTION_EVENT,
    header_fields,
    LOG_EVENT_SKIP_REPLICATION_F,
    ROTATE_EVENT,
    START_EVENT_V3,
)
from ...codec.events.session import (  # noqa: F401 - the Q_FLAGS2 bits, re-exported for the printer
    FLAGS2_VERSIONED,
    OPTION_AUTO_IS_NULL,
    OPTION_EXPLICIT_DEF_TIMESTAMP,
    OPTION_IF_EXISTS,
    OPTION_INSERT_HISTORY,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_NOT_AUTOCOMMIT,
    OPTION_RELAXED_UNIQUE_CHECKS,
)
from ...codec.native import load_fast
from ...errors import MissingFormatDescription
from ...codec.events.stream import footer_len, stored_crc


#: Bump with FAST_VERSION in ``_dumpfast.c`` whenever its plans or signatures change.
_FAST_VERSION = 6


def _load_fast() -> Any:
    """The compiled fast paths, or None (not built, stale, or MARIABINLOG_PURE_PYTHON=1)."""
    return load_fast("mariabinlog.tools.printer._dumpfast", "FAST_VERSION", _FAST_VERSION, "tools/printer")


#: ``mariabinlog.tools.printer._dumpfast`` (base64 lines, row counts, ``###`` lines in C) or None.
_fast = _load_fast()

# --base64-output modes (the tool's enum order: NEVER, AUTO, UNSPEC, DECODE-ROWS).
BASE64_NEVER = 0
BASE64_AUTO = 1
BASE64_DECODE_ROWS = 3

DELIM = b"/*!*/;"
_START_TRANSACTION = b"START TRANSACTION\n/*!*/;\n"
_COMMIT_DELIM = b"COMMIT\n/*!*/;\n"


_EPOCH_CACHE_MAX = 4096


def _backtick(name: bytes) -> bytes:
    """``%`s``: an identifier in backticks, inner backticks doubled."""
    return b"`" + name.replace(b"`", b"``") + b"`"


def _base64_lines(data: bytes | memoryview, out: list[bytes]) -> None:
    """my_base64_encode + "\\n": 76-character lines, as ``base64.encodebytes``."""
    if _fast is not None:
        out.append(_fast.base64_lines(data))
        return
    b2a = binascii.b2a_base64
    n = len(data)
    if n <= 57:
        out.append(b2a(data))
        return
    for i in range(0, n, 57):
        out.append(b2a(data[i : i + 57]))


# --------------------------------------------------------------------------- printer


class PrintOptions:
    """The printing-related command-line options of ``mariadb-binlog``."""

    __slots__ = (
        "base64_mode",
        "database",
        "flashback",
        "hexdump",
        "local_load",
        "print_row_count",
        "print_row_event_positions",
        "print_table_metadata",
        "rewrite_db",
        "short_form",
        "skip_annotate",
        "table",
        "verbose",
    )

    def __init__(
        self,
        *,
        short_form: bool = False,
        verbose: int = 0,
        base64_mode: int = BASE64_AUTO,
        hexdump: bool = False,
        print_row_count: bool = True,
        print_row_event_positions: bool = True,
        print_table_metadata: bool = False,
        skip_annotate: bool = False,
        flashback: bool = False,
        database: bytes | None = None,
        table: bytes | None = None,
        rewrite_db: dict[bytes, bytes] | None = None,
        local_load: str | None = None,
    ) -> None:
        self.short_form = short_form
        self.verbose = 0 if short_form else verbose
        self.base64_mode = base64_mode
        self.hexdump = hexdump
        self.print_row_count = print_row_count and not short_form
        self.print_row_event_positions = print_row_event_positions and not short_form
        self.print_table_metadata = print_table_metadata
        self.skip_annotate = skip_annotate
        self.flashback = flashback
        self.database = database
        self.table = table
        self.rewrite_db = rewrite_db or {}
        #: --local-load: where LOAD DATA files are rebuilt (None: $TMPDIR or /tmp).
        self.local_load = local_load


def _event_description(code: int) -> bytes:
    """The event type's name as the tool prints it in comments."""
    return event_type_name(code).encode()


def _format_g14(value: float) -> bytes:
    """C's ``%.14g``."""
    return b"%.14g" % value


# --------------------------------------------------------------------------- event views


class EventView:
    """One framed event inside a buffer: header fields, offsets, lazy decoding.

    ``position`` is what ``# at`` prints, ``body_pos``/``body_end`` delimit
    the post-header and body (CRC excluded), ``crc`` is the stored footer
    (None without checksums), ``hexdump_from`` the offset --hexdump shows.
    """

    __slots__ = (
        "_decoded",
        "body_end",
        "body_pos",
        "buf",
        "crc",
        "ctx",
        "flags",
        "hexdump_from",
        "length",
        "log_pos",
        "position",
        "server_id",
        "start",
        "type_code",
        "when",
    )

    def __init__(
        self,
        buf: Any,
        start: int,
        position: int,
        when: int,
        type_code: int,
        server_id: int,
        length: int,
        log_pos: int,
        flags: int,
        body_end: int,
        crc: int | None,
        ctx: DecodeContext,
    ) -> None:
        self.buf = buf
        self.start = start
        self.position = position
        self.hexdump_from = position
        self.when = when
        self.type_code = type_code
        self.server_id = server_id
        self.length = length
        self.log_pos = log_pos
        self.flags = flags
        self.body_pos = start + (19 if type_code == FORMAT_DESCRIPTION_EVENT else ctx.header_len)
        self.body_end = body_end
        self.crc = crc
        self.ctx = ctx
        self._decoded: Any = None

    def raw(self) -> bytes | memoryview:
        """The whole event (CRC included), as base64 and --hexdump show it."""
        return self.buf[self.start : self.start + self.length]

    def body(self) -> bytes:
        """Post-header and body bytes (CRC excluded)."""
        return bytes(self.buf[self.body_pos : self.body_end])

    def decoded(self) -> Any:
        """The codec's event object (decoded once, on demand)."""
        if self._decoded is None:
            self._decoded = decode_event(self.buf, self.start, self.body_end, self.ctx)
        return self._decoded


def view_at(
    buf: Any, start: int, position: int, crc_len: int, ctx: DecodeContext
) -> EventView:
    """The EventView of the event whose header is at ``start`` (``crc_len`` 4 with CRC32 footers).

    A Format_description's own algorithm byte says whether it ends with a CRC.
    """
    when, code, server_id, length, log_pos, flags = header_fields(buf, start)
    end = start + length
    if code == FORMAT_DESCRIPTION_EVENT:
        crc = stored_crc(buf, end) if footer_len(buf, start, length, CHECKSUM_OFF) else None
        body_end = end
    elif crc_len:
        crc = stored_crc(buf, end)
        body_end = end - 4
    else:
        crc = None
        body_end = end
    return EventView(
        buf,
        start,
        position,
        when,
        code,
        server_id,
        length,
        log_pos,
        flags,
        body_end,
        crc,
        ctx,
    )


def options_written(server_version: str) -> int:
    """Format_description_log_event::deduct_options_written_to_bin_log."""
    base = (
        OPTION_AUTO_IS_NULL
        | OPTION_NOT_AUTOCOMMIT
        | OPTION_NO_FOREIGN_KEY_CHECKS
        | OPTION_RELAXED_UNIQUE_CHECKS
    )
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", server_version)
    if m is None or "MariaDB" not in server_version:
        # MySQL and servers before MariaDB 10.5.2 only mask the two options that
        # 10.5.2 added: the insert-history bit is printed, as the tool does.
        return base | OPTION_INSERT_HISTORY
    v = tuple(int(x) for x in m.groups())
    if v < (10, 5, 2):
        return base | OPTION_INSERT_HISTORY
    base |= OPTION_IF_EXISTS
    if v[0] == 10:
        limits = (99, 99, 99, 99, 99, 17, 9, 5, 4, 2)
        if v[1] < 10 and v[2] < limits[v[1]]:
            return base
    base |= OPTION_EXPLICIT_DEF_TIMESTAMP
    if v >= (10, 11, 0):
        base |= OPTION_INSERT_HISTORY
    return base


# --------------------------------------------------------------------------- the shared context


class PrintContext:
    """What the printer's event families really share, and nothing else: the options, the
    output lists, the decoding state of the current file, the header comment, and the few
    facts one family sets and another reads.

    * output: ``out`` (written by :meth:`Printer.drain`), and the tool's three caches
      ``head`` (most events), ``body`` (row events' base64) and ``tail`` (``###`` lines);
      the lists are never replaced, so a family may keep references to them;
    * the file: ``ctx`` (its DecodeContext), ``checksum_alg``, ``options_written`` (the
      Q_FLAGS2 bits its server writes), set by the reader at each Format_description;
    * base64 output: ``printed_fd_event`` (a Format_description's BINLOG was printed),
      ``fallback_fd`` (the one to print where a file has none; None: an error);
    * --flashback: ``flashback_events`` (whole event outputs, printed reversed at the end),
      ``flashback_stop``;
    * transaction facts: ``skip_replication`` (the last ``SET skip_replication`` printed),
      ``gtid_flags2``/``gtid_flags_extra`` (the GTID family's last GTID: the query family
      reads them for XA and ALTER phases);
    * ``--schema-metadata``: ``schema`` (a SchemaTracker or None), ``schema_gtid``, ``schema_file``.
    """

    __slots__ = (
        "_ts_cache",
        "body",
        "checksum_alg",
        "common_header_len",
        "ctx",
        "encoded",
        "fallback_fd",
        "flashback_events",
        "flashback_stop",
        "gtid_flags2",
        "gtid_flags_extra",
        "head",
        "hexdump",
        "opt",
        "options_written",
        "out",
        "printed_fd_event",
        "schema",
        "schema_file",
        "schema_gtid",
        "skip_replication",
        "tail",
    )

    def __init__(self, options: PrintOptions) -> None:
        self.opt = options
        self.out: list[bytes] = []
        self.head: list[bytes] = []
        self.body: list[bytes] = []
        self.tail: list[bytes] = []
        self._ts_cache: dict[int, bytes] = {}
        #: Base64 output without --short-form or decode-rows: BINLOG blocks are printed.
        self.encoded = (
            options.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS) and not options.short_form
        )
        self.hexdump = options.hexdump
        self.fallback_fd: bytes | None = None
        self.flashback_events: list[bytes] = []
        self.flashback_stop = b""
        self.schema: Any = None
        self.schema_gtid: str | None = None
        self.schema_file = ""
        # Not reset per file (as before the families were split: it outlives a file).
        self.gtid_flags_extra = 0
        self.reset()

    def reset(self) -> None:
        """The shared part of a fresh PRINT_EVENT_INFO (one per input file)."""
        self.skip_replication = 0
        self.gtid_flags2 = 0
        self.printed_fd_event = False
        self.head.clear()
        self.body.clear()
        self.tail.clear()
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

    # ------------------------------------------------------------------ output

    def flush_head(self) -> None:
        if self.head:
            self.out.extend(self.head)
            self.head.clear()

    def release_owned(self) -> None:
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

    def skip_replication_statement(self, flags: int) -> None:
        """print_skip_replication_statement: only when the event flag changes."""
        value = 1 if flags & LOG_EVENT_SKIP_REPLICATION_F else 0
        if value != self.skip_replication:
            self.out.append(b"/*!50521 SET skip_replication=%d*/%s\n" % (value, DELIM))
            self.skip_replication = value

    def need_format_description(self, type_name: bytes) -> None:
        """Base64 output needs a Format_description first: the fallback one, else an error.

        `.ibb` files carry an FD only where the server (re)started, so a dump of
        a later file sets :attr:`fallback_fd` and gets its BINLOG statement
        printed before the first base64 event, which keeps the output replayable.
        """
        if self.fallback_fd is None:
            raise MissingFormatDescription(type_name)
        self.out.append(b"BINLOG '\n")
        _base64_lines(self.fallback_fd, self.out)
        self.out.append(b"'%s\n" % DELIM)
        self.printed_fd_event = True

    # ------------------------------------------------------------------ the header comment

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
        if self.hexdump:
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


class PrintFamily:
    """The start of an event family: its :class:`PrintContext` and, at hand, what of it is
    never replaced (the options, the output list, the head cache, the header comment)."""

    def __init__(self, pc: PrintContext) -> None:
        self.pc = pc
        self.opt = pc.opt
        self.out = pc.out
        self.head = pc.head
        self.header = pc.header
