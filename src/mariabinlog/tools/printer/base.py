"""What every printer room shares: options, the event view over raw bytes, delimiters,
the session option bits and small formatting helpers.
"""

from __future__ import annotations

import binascii
import re
from typing import Any

from ...codec.events import (
    CHECKSUM_OFF,
    decode_event,
    DecodeContext,
    event_type_name,
    FORMAT_DESCRIPTION_EVENT,
    header_fields,
)
from ...codec.events.session import (  # noqa: F401 - the Q_FLAGS2 bits, re-exported for the printer
    OPTION_AUTO_IS_NULL,
    OPTION_EXPLICIT_DEF_TIMESTAMP,
    OPTION_IF_EXISTS,
    OPTION_INSERT_HISTORY,
    OPTION_NO_CHECK_CONSTRAINT_CHECKS,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_NOT_AUTOCOMMIT,
    OPTION_RELAXED_UNIQUE_CHECKS,
)
from ...codec.native import load_fast
from ...codec.events.stream import footer_len, stored_crc


#: Bump with FAST_VERSION in ``_dumpfast.c`` whenever its plans or signatures change.
_FAST_VERSION = 1


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
