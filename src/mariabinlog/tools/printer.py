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

import binascii
import struct
import time
from collections.abc import Callable
from typing import Any

from ..codec import columns as C
from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_OFF,
    DEFAULT_CONTEXT,
    DELETE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    EXECUTE_LOAD_QUERY_EVENT,
    FL_ALLOW_PARALLEL,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_DDL,
    FL_EXTRA_THREAD_ID,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FL_TRANSACTIONAL,
    FL_WAITED,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER,
    HEARTBEAT_LOG_EVENT,
    IGNORABLE_LOG_EVENT,
    INCIDENT_EVENT,
    INTVAR_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    Q_AUTO_INCREMENT,
    Q_CHARACTER_SET_COLLATIONS,
    Q_CHARSET_CODE,
    Q_CHARSET_DATABASE_CODE,
    Q_FLAGS2_CODE,
    Q_HRNOW,
    Q_LC_TIME_NAMES_CODE,
    Q_SQL_MODE_CODE,
    Q_TIME_ZONE_CODE,
    Q_XID,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    ROWS_KIND,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
    TABLE_MAP_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_EVENT,
    UPDATE_ROWS_EVENT_V1,
    USER_VAR_DECIMAL,
    USER_VAR_EVENT,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_STRING,
    USER_VAR_UNSIGNED_F,
    WRITE_ROWS_COMPRESSED_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    DecodeContext,
    GtidEvent,
    QueryEvent,
    TableMapEvent,
    decode_event,
    decompress_block,
    reframe,
    serialize_xid,
)
from ..codec.native import load_fast
from ..errors import DecodeError, FlashbackError, MissingFormatDescription
from . import charsets

#: Bump with FAST_VERSION in ``_dumpfast.c`` whenever its plans or signatures change.
_FAST_VERSION = 1


def _load_fast() -> Any:
    """The compiled fast paths, or None (not built, stale, or MARIABINLOG_PURE_PYTHON=1)."""
    return load_fast("mariabinlog.tools._dumpfast", "FAST_VERSION", _FAST_VERSION, "printer.py")


#: ``mariabinlog.tools._dumpfast`` (base64 lines, row counts, ``###`` lines in C) or None.
_fast = _load_fast()

# --base64-output modes (the tool's enum order: NEVER, AUTO, UNSPEC, DECODE-ROWS).
BASE64_NEVER = 0
BASE64_AUTO = 1
BASE64_DECODE_ROWS = 3

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_Q_POST = struct.Struct("<IIBHH")
_GTID_BODY = struct.Struct("<QIB")
_XA_PREPARE = struct.Struct("<BIII")

DELIM = b"/*!*/;"
_START_TRANSACTION = b"START TRANSACTION\n/*!*/;\n"
_COMMIT_DELIM = b"COMMIT\n/*!*/;\n"

# Option bits of Query Q_FLAGS2 (sql_priv.h).
OPTION_AUTO_IS_NULL = 1 << 14
OPTION_NO_CHECK_CONSTRAINT_CHECKS = 1 << 15
OPTION_NOT_AUTOCOMMIT = 1 << 19
OPTION_IF_EXISTS = 1 << 28
OPTION_INSERT_HISTORY = 1 << 30
OPTION_NO_FOREIGN_KEY_CHECKS = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS = 1 << 27
OPTION_EXPLICIT_DEF_TIMESTAMP = 1 << 24

#: (bit, inverted, name) in the order print_query_header prints them.
_FLAGS2_VARS = (
    (OPTION_NO_FOREIGN_KEY_CHECKS, True, b"@@session.foreign_key_checks"),
    (OPTION_AUTO_IS_NULL, False, b"@@session.sql_auto_is_null"),
    (OPTION_RELAXED_UNIQUE_CHECKS, True, b"@@session.unique_checks"),
    (OPTION_NOT_AUTOCOMMIT, True, b"@@session.autocommit"),
    (OPTION_NO_CHECK_CONSTRAINT_CHECKS, True, b"@@session.check_constraint_checks"),
    (OPTION_IF_EXISTS, False, b"@@session.sql_if_exists"),
    (
        OPTION_EXPLICIT_DEF_TIMESTAMP,
        False,
        b"@@session.explicit_defaults_for_timestamp",
    ),
    (OPTION_INSERT_HISTORY, False, b"@@session.system_versioning_insert_history"),
)
_MASKED_FLAGS2 = (
    OPTION_IF_EXISTS | OPTION_EXPLICIT_DEF_TIMESTAMP | OPTION_INSERT_HISTORY
)

TM_BIT_HAS_TRIGGERS_F = 1 << 14
STMT_END_F = 1

_ROWS_NAMES = {
    WRITE_ROWS_EVENT_V1: b"Write_rows",
    UPDATE_ROWS_EVENT_V1: b"Update_rows",
    DELETE_ROWS_EVENT_V1: b"Delete_rows",
    WRITE_ROWS_EVENT: b"Write_rows",
    UPDATE_ROWS_EVENT: b"Update_rows",
    DELETE_ROWS_EVENT: b"Delete_rows",
    WRITE_ROWS_COMPRESSED_EVENT_V1: b"Write_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: b"Update_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT_V1: b"Delete_compressed_rows",
    WRITE_ROWS_COMPRESSED_EVENT: b"Write_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT: b"Update_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT: b"Delete_compressed_rows",
}
#: Flashback prints Write as Delete and vice versa.
_FLASHBACK_NAMES = {b"Write_rows": b"Delete_rows", b"Delete_rows": b"Write_rows"}
#: Compressed row event type -> the uncompressed type the tool re-encodes it as.
_UNCOMPRESSED_TYPE = {
    WRITE_ROWS_COMPRESSED_EVENT_V1: WRITE_ROWS_EVENT_V1,
    UPDATE_ROWS_COMPRESSED_EVENT_V1: UPDATE_ROWS_EVENT_V1,
    DELETE_ROWS_COMPRESSED_EVENT_V1: DELETE_ROWS_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT: WRITE_ROWS_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT: UPDATE_ROWS_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT: DELETE_ROWS_EVENT,
}
_V2_ROWS = frozenset(
    (
        WRITE_ROWS_EVENT,
        UPDATE_ROWS_EVENT,
        DELETE_ROWS_EVENT,
        WRITE_ROWS_COMPRESSED_EVENT,
        UPDATE_ROWS_COMPRESSED_EVENT,
        DELETE_ROWS_COMPRESSED_EVENT,
    )
)
_UPDATE_ROWS = frozenset(
    (
        UPDATE_ROWS_EVENT_V1,
        UPDATE_ROWS_EVENT,
        UPDATE_ROWS_COMPRESSED_EVENT_V1,
        UPDATE_ROWS_COMPRESSED_EVENT,
    )
)
_WRITE_ROWS = frozenset(
    (
        WRITE_ROWS_EVENT_V1,
        WRITE_ROWS_EVENT,
        WRITE_ROWS_COMPRESSED_EVENT_V1,
        WRITE_ROWS_COMPRESSED_EVENT,
    )
)
ROW_EVENT_TYPES = frozenset(_ROWS_NAMES)

_EPOCH_CACHE_MAX = 4096


def _is_trans_keyword(query: bytes, is_xa: bool) -> bool:
    """Query_log_event::is_trans_keyword (strncmp semantics, prefixes included)."""
    return (
        b"BEGIN".startswith(query)
        or b"COMMIT".startswith(query)
        or query[:9].upper() == b"SAVEPOINT"
        or query[:8].upper() == b"ROLLBACK"
        or (is_xa and query[:3].upper() == b"XA ")
    )


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


def _decimal_bin_size(precision: int, scale: int) -> int:
    """my_decimal_get_binary_size(precision, scale)."""
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    intg = precision - scale
    return (
        (intg // 9) * 4 + dig2bytes[intg % 9] + (scale // 9) * 4 + dig2bytes[scale % 9]
    )


def decimal_to_str(data: bytes, precision: int, scale: int) -> bytes:
    """bin2decimal + decimal2string of a binary DECIMAL(precision, scale)."""
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    size = _decimal_bin_size(precision, scale)
    raw = bytearray(data[:size])
    if len(raw) < size or not raw:
        return b"0"
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    intg = precision - scale
    pos = 0
    digits_int = []
    lead = intg % 9
    if lead:
        n = dig2bytes[lead]
        digits_int.append(str(int.from_bytes(raw[pos : pos + n], "big")).zfill(lead))
        pos += n
    for _ in range(intg // 9):
        digits_int.append(str(int.from_bytes(raw[pos : pos + 4], "big")).zfill(9))
        pos += 4
    digits_frac = []
    for _ in range(scale // 9):
        digits_frac.append(str(int.from_bytes(raw[pos : pos + 4], "big")).zfill(9))
        pos += 4
    trail = scale % 9
    if trail:
        n = dig2bytes[trail]
        digits_frac.append(str(int.from_bytes(raw[pos : pos + n], "big")).zfill(trail))
    int_part = "".join(digits_int).lstrip("0") or "0"
    text = int_part + ("." + "".join(digits_frac) if scale else "")
    if negative and any(c not in "0." for c in text):
        text = "-" + text
    return text.encode()


# --------------------------------------------------------------------------- table maps


class TableInfo:
    """What the printer needs of one Table_map: names, flags and the row-size plan.

    ``sizes`` has one entry per column for ``count_row_events``: a positive
    fixed byte size, ``-1``/``-2`` for a 1/2-byte length prefix (VARCHAR,
    CHAR), ``-10 - n`` for an ``n``-byte BLOB length prefix, and ``0`` where the
    tool's calc_field_event_length gives up (GEOMETRY, old DECIMAL, ...), which
    stops its row count there.
    """

    __slots__ = (
        "event",
        "flags",
        "full_sizes",
        "line",
        "raw_schema",
        "raw_table",
        "schema",
        "sizes",
        "table",
        "table_id",
        "verbose_plan",
    )

    def __init__(
        self, event: TableMapEvent, raw_schema: bytes, raw_table: bytes
    ) -> None:
        self.event = event
        self.table_id = event.table_id
        self.schema = raw_schema
        self.table = raw_table
        self.raw_schema = raw_schema
        self.raw_table = raw_table
        self.flags = event.map_flags
        self.sizes = tuple(
            _field_size_code(t, m)
            for t, m in zip(event.column_types, event.column_meta)
        )
        # table_def::calc_field_size measures GEOMETRY/JSON too (used by --flashback).
        self.full_sizes = tuple(
            (-10 - m if 1 <= m <= 4 else 0) if t in _BLOB_LIKE else size
            for t, m, size in zip(event.column_types, event.column_meta, self.sizes)
        )
        self.verbose_plan: object | None = None
        self.line: bytes | None = None


_BLOB_LIKE = frozenset(
    (
        C.MYSQL_TYPE_GEOMETRY,
        C.MYSQL_TYPE_JSON,
        C.MYSQL_TYPE_TINY_BLOB,
        C.MYSQL_TYPE_MEDIUM_BLOB,
        C.MYSQL_TYPE_LONG_BLOB,
    )
)


def _field_size_code(column_type: int, meta: int) -> int:
    """calc_field_event_length as a size code (see :class:`TableInfo`)."""
    rtype = C.real_type(column_type, meta)
    if rtype == C.MYSQL_TYPE_STRING:
        if meta >= 256:
            byte0, byte1 = meta >> 8, meta & 0xFF
            length = (
                byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
                if (byte0 & 0x30) != 0x30
                else byte1
            )
        else:
            length = meta
        return -1 if length < 256 else -2
    if rtype in (C.MYSQL_TYPE_LONG, C.MYSQL_TYPE_TIMESTAMP, C.MYSQL_TYPE_FLOAT):
        return 4
    if rtype in (C.MYSQL_TYPE_TINY, C.MYSQL_TYPE_YEAR):
        return 1
    if rtype == C.MYSQL_TYPE_SHORT:
        return 2
    if rtype in (
        C.MYSQL_TYPE_INT24,
        C.MYSQL_TYPE_TIME,
        C.MYSQL_TYPE_NEWDATE,
        C.MYSQL_TYPE_DATE,
    ):
        return 3
    if rtype in (C.MYSQL_TYPE_LONGLONG, C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_DOUBLE):
        return 8
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        if scale > precision or precision > 65:
            return 0
        return _decimal_bin_size(precision, scale)
    if rtype == C.MYSQL_TYPE_BIT:
        return ((meta >> 8) * 8 + (meta & 0xFF) + 7) // 8
    if rtype == C.MYSQL_TYPE_TIMESTAMP2:
        return 4 + (meta + 1) // 2
    if rtype == C.MYSQL_TYPE_DATETIME2:
        return 5 + (meta + 1) // 2
    if rtype == C.MYSQL_TYPE_TIME2:
        return 3 + (meta + 1) // 2
    if rtype == C.MYSQL_TYPE_ENUM:
        return meta & 0xFF if meta & 0xFF in (1, 2) else 0
    if rtype == C.MYSQL_TYPE_SET:
        return meta & 0xFF
    if rtype == C.MYSQL_TYPE_BLOB:
        return -10 - meta if 1 <= meta <= 4 else 0
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING):
        return -1 if meta < 256 else -2
    return 0


def _image_code(sizes: tuple[int, ...], present: bytes, indent: str) -> list[str]:
    """Source lines that advance ``pos`` over one row image (``break`` where the tool gives up)."""
    columns = [size for i, size in enumerate(sizes) if present[i >> 3] >> (i & 7) & 1]
    nbytes = (len(columns) + 7) >> 3
    lines = []
    if not columns:
        lines.append(f"{indent}break")
        return lines
    lines.append(f"{indent}if pos + {nbytes} > end: break")
    for k in range(nbytes):
        lines.append(f"{indent}b{k} = data[pos + {k}]")
    lines.append(f"{indent}pos += {nbytes}")
    for k, size in enumerate(columns):
        lines.append(f"{indent}if not b{k >> 3} & {1 << (k & 7)}:")
        inner = indent + "    "
        if size > 0:
            lines.append(f"{inner}pos += {size}")
        elif size == -1:
            lines.append(f"{inner}if pos >= end: break")
            lines.append(f"{inner}pos += data[pos] + 1")
        elif size == -2 or size == -12:
            lines.append(f"{inner}if pos + 2 > end: break")
            lines.append(f"{inner}pos += data[pos] + (data[pos + 1] << 8) + 2")
        elif size == -11:
            lines.append(f"{inner}if pos >= end: break")
            lines.append(f"{inner}pos += data[pos] + 1")
        elif size == -13:
            lines.append(f"{inner}if pos + 3 > end: break")
            lines.append(
                f"{inner}pos += data[pos] + (data[pos + 1] << 8) + (data[pos + 2] << 16) + 3"
            )
        elif size == -14:
            lines.append(f"{inner}if pos + 4 > end: break")
            lines.append(f"{inner}pos += u32(data, pos)[0] + 4")
        else:
            lines.append(f"{inner}break")
            continue
        lines.append(f"{inner}if pos > end: break")
    return lines


_COUNTERS: dict[tuple, Callable[[Any, int, int], int]] = {}


def row_counter(
    sizes: tuple[int, ...], width: int, cols: bytes, cols_ai: bytes | None
) -> Callable[[Any, int, int], int]:
    """A compiled Rows_log_event::count_row_events loop for one column layout.

    The tool increments the count before it measures a row and stops at the
    first row image it cannot measure (GEOMETRY, truncated data, ...); the
    generated code does exactly that, one straight line per column.
    """
    key = (sizes, width, cols, cols_ai)
    func = _COUNTERS.get(key)
    if func is not None:
        return func
    sizes = sizes[:width]
    lines = [
        "def count(data, pos, end):",
        "    n = 0",
        "    while pos < end:",
        "        n += 1",
    ]
    lines += _image_code(sizes, cols, "        ")
    if cols_ai is not None:
        lines += _image_code(sizes, cols_ai, "        ")
    lines.append("    return n")
    namespace: dict[str, Any] = {"u32": _U32.unpack_from}
    exec(compile("\n".join(lines), "<row counter>", "exec"), namespace)  # noqa: S102 - generated from sizes only
    func = namespace["count"]
    if len(_COUNTERS) > 4096:
        _COUNTERS.clear()
    _COUNTERS[key] = func
    return func


def count_rows(
    info: TableInfo,
    kind_update: bool,
    kind_write: bool,
    width: int,
    cols: bytes,
    cols_ai: bytes | None,
    data: Any,
    pos: int,
    end: int,
) -> int:
    """Rows_log_event::count_row_events for one event (its quirks included)."""
    if kind_write and pos == end:
        return 1
    if _fast is not None:
        return _fast.count_rows(  # type: ignore[no-any-return]
            data, pos, end, info.sizes, width, cols, cols_ai if kind_update else None
        )
    return row_counter(info.sizes, width, cols, cols_ai if kind_update else None)(
        data, pos, end
    )


_FLASHBACK_TYPE = {
    WRITE_ROWS_EVENT_V1: DELETE_ROWS_EVENT_V1,
    DELETE_ROWS_EVENT_V1: WRITE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT: DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT: WRITE_ROWS_EVENT,
}


def _image_fields(
    sizes: tuple[int, ...], present: bytes, data: Any, pos: int, end: int
) -> tuple[list, int]:
    """Per present column (index, value bytes or None for NULL) of one row image, and its end."""
    columns = [i for i in range(len(sizes)) if present[i >> 3] >> (i & 7) & 1]
    nulls = pos
    pos += (len(columns) + 7) >> 3
    fields: list[tuple[int, bytes | None]] = []
    for k, i in enumerate(columns):
        if data[nulls + (k >> 3)] >> (k & 7) & 1:
            fields.append((i, None))
            continue
        size = sizes[i]
        if size > 0:
            length = size
        elif size in (-1, -11):
            length = data[pos] + 1
        elif size in (-2, -12):
            length = data[pos] + (data[pos + 1] << 8) + 2
        elif size < -10:
            n = -10 - size
            length = int.from_bytes(bytes(data[pos : pos + n]), "little") + n
        else:
            raise DecodeError(
                "Error row length: 0",
                offset=pos,
                expected="a column the tool can measure",
            )
        if pos + length > end:
            raise DecodeError(
                "Error row length: 0", offset=pos, expected="a row inside the event"
            )
        fields.append((i, bytes(data[pos : pos + length])))
        pos += length
    return fields, pos


def _flashback_rows(
    info: TableInfo,
    update: bool,
    width: int,
    cols: bytes,
    cols_ai: bytes | None,
    data: Any,
    pos: int,
    end: int,
) -> bytes:
    """Rows_log_event::change_to_flashback_event of 10.11: rows reversed, update images swapped.

    The 10.11 tool measures an update's after image with the *before* image's
    column bitmap, so it only works on full row images; anything it cannot
    measure ends the program with "Error row length: 0" (:class:`FlashbackError`).
    """
    sizes = info.full_sizes[:width]
    rows = []
    try:
        while pos < end:
            row_start = pos
            _, pos = _image_fields(sizes, cols, data, pos, end)
            before_end = pos
            if update:
                _, pos = _image_fields(sizes, cols, data, pos, end)
                rows.append(
                    bytes(data[before_end:pos]) + bytes(data[row_start:before_end])
                )
            else:
                rows.append(bytes(data[row_start:pos]))
    except (DecodeError, IndexError):
        raise FlashbackError() from None
    return b"".join(reversed(rows))


# --------------------------------------------------------------------------- printer


class PrintOptions:
    """The printing-related command-line options of ``mariadb-binlog``."""

    __slots__ = (
        "base64_mode",
        "database",
        "flashback",
        "hexdump",
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


class _RowsForSql:
    """The RowsEventLike view :func:`rowsql.rows_sql` takes."""

    __slots__ = (
        "kind",
        "present_after",
        "present_before",
        "rows_data",
        "table_id",
        "width",
    )

    def __init__(
        self,
        table_id: int,
        width: int,
        before: bytes,
        after: bytes | None,
        data: bytes,
        kind: str,
    ) -> None:
        self.table_id = table_id
        self.width = width
        self.present_before = before
        self.present_after = after
        self.rows_data = data
        self.kind = kind


_KIND_CODE = {"insert": 0, "delete": 1, "update": 2}
_COMMAND = {"insert": b"INSERT INTO", "delete": b"DELETE FROM", "update": b"UPDATE"}


def render_rows(
    info: TableInfo,
    code: int,
    table_id: int,
    width: int,
    cols: bytes,
    cols_ai: bytes | None,
    data: Any,
    start: int,
    end: int,
    verbose: int,
    out: list[bytes],
) -> int:
    """Rows_log_event::print_verbose: append the ``###`` lines of ``data[start:end]``, return the rows printed."""
    kind = ROWS_KIND[code]
    header = b"### %s %s.%s\n" % (
        _COMMAND[kind],
        _backtick(info.event.schema.encode("utf-8", "surrogateescape")),
        _backtick(info.event.table.encode("utf-8", "surrogateescape")),
    )
    if _fast is not None and start < end:
        plan = info.verbose_plan
        if plan is None:
            plan = info.verbose_plan = _verbose_plan(info.event)
        if plan:
            done = _fast.verbose_rows(
                data, start, end, _KIND_CODE[kind], width, cols, cols_ai, plan, header, verbose
            )
            if done is not None:
                out.append(done[0])
                return done[1]  # type: ignore[no-any-return]
    from . import rowsql

    rows = bytes(data[start:end])
    text = rowsql.rows_sql(
        info.event,
        _RowsForSql(table_id, width, cols, cols_ai, rows, kind),
        verbose=verbose,
    )
    out.append(text)
    if kind == "insert" and not rows:
        return 1
    return text.count(header)


def _verbose_plan(event: TableMapEvent) -> tuple[tuple[Any, ...], ...] | bool:
    """The column plan of ``_dumpfast.verbose_rows`` for a table map, False when a column
    needs the Python printer (types and metadata the tool prints oddly or not at all)."""
    from . import rowsql

    plan = []
    nulls = event.null_bitmap
    for index, (ctype, meta) in enumerate(zip(event.column_types, event.column_meta)):
        op = _fast_op(ctype, meta)
        if op is None or rowsql._formatter(ctype, meta) is None:
            return False
        column = rowsql._Column(index, ctype, meta, bool(nulls[index >> 3] >> (index & 7) & 1))
        plan.append((*op, column.label, column.comment, column.null_comment))
    return tuple(plan)


def _fast_op(ctype: int, meta: int) -> tuple[int, int, int] | None:
    """(opcode, a, b) of one column for ``_dumpfast`` (see its V_* opcodes), None if it has none."""
    rtype = C.real_type(ctype, meta)
    size = C.INT_SIZES.get(rtype)
    if size is not None:
        return (1, size, 0)
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        return (2, precision, scale) if 0 < precision <= 65 and scale <= precision else None
    if rtype in _FAST_FIXED:
        return (_FAST_FIXED[rtype], 0, 0)
    if rtype == C.MYSQL_TYPE_BIT:
        return (5, C.bit_width(meta), 0) if 0 < C.bit_width(meta) <= 64 else None
    if rtype == C.MYSQL_TYPE_SET:
        return (6, meta & 0xFF, 0) if 1 <= meta & 0xFF <= 8 else None
    if rtype == C.MYSQL_TYPE_ENUM:
        return (7, meta & 0xFF, 0) if meta & 0xFF in (1, 2) else None
    if rtype in _FAST_FSP:
        return (_FAST_FSP[rtype], meta, 0) if 0 <= meta <= 6 else None
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VARCHAR_COMPRESSED):
        return (16, 1 if meta < 256 else 2, 0)
    if rtype == C.MYSQL_TYPE_STRING:
        return (16, 1 if C.string_max_length(meta) < 256 else 2, 0)
    if rtype in (C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_BLOB_COMPRESSED, C.MYSQL_TYPE_GEOMETRY):
        return (16, meta, 0) if 1 <= meta <= 4 else None
    return None


_FAST_FIXED = {
    C.MYSQL_TYPE_FLOAT: 3,
    C.MYSQL_TYPE_DOUBLE: 4,
    C.MYSQL_TYPE_TIMESTAMP: 8,
    C.MYSQL_TYPE_DATETIME: 10,
    C.MYSQL_TYPE_TIME: 12,
    C.MYSQL_TYPE_DATE: 14,
    C.MYSQL_TYPE_NEWDATE: 14,
    C.MYSQL_TYPE_YEAR: 15,
}
_FAST_FSP = {C.MYSQL_TYPE_TIMESTAMP2: 9, C.MYSQL_TYPE_DATETIME2: 11, C.MYSQL_TYPE_TIME2: 13}


class Printer:
    """Renders events as ``mariadb-binlog`` does; one instance per dump (all files).

    Per-file state (the tool's ``PRINT_EVENT_INFO``, re-created for every file
    on the command line) is reset by :meth:`begin_file`.  It is the dumper's
    text sink (see :mod:`mariabinlog.tools.sink` for the others).
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
        self._status_cache: dict[bytes, dict[int, Any]] = {}
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
        self._build_dispatch()
        self.reset_state()

    # ------------------------------------------------------------------ state / output

    def reset_state(self) -> None:
        """A fresh PRINT_EVENT_INFO (the tool makes one per input file)."""
        self.db = b""
        self.charset: bytes | None = None
        self.time_zone = b""
        self.flags2: int | None = None
        self.sql_mode: int | None = None
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
            | _MASKED_FLAGS2
        )
        self.common_header_len = 19

    def drain(self) -> None:
        """Write what is pending in the direct output list."""
        if self.out:
            self._writelines(self.out)
            self.out.clear()

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
        if ev.crc is not None:
            dst.append(
                b"#%s server id %d  end_log_pos %d CRC32 0x%08x "
                % (ts, ev.server_id, ev.log_pos, ev.crc)
            )
        else:
            dst.append(
                b"#%s server id %d  end_log_pos %d " % (ts, ev.server_id, ev.log_pos)
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
        rest = data[19:]
        offset = pos + 19
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

    def _annotate_rows(self, ev: EventView) -> None:
        if not self.opt.skip_annotate:
            self.annotate = ev  # kept until a Table_map is printed

    def _gtid_event(self, ev: EventView) -> None:
        if ev.flags & LOG_EVENT_SKIP_REPLICATION_F or self.skip_replication:
            self.skip_replication_statement(ev.flags)
        self.gtid(ev)

    def _xid_event(self, ev: EventView) -> None:
        if ev.flags & LOG_EVENT_SKIP_REPLICATION_F or self.skip_replication:
            self.skip_replication_statement(ev.flags)
        self.xid(ev)

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
        dispatch[FORMAT_DESCRIPTION_EVENT] = self.format_description
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

    def gtid(self, ev: EventView) -> None:
        seq_no, domain_id, flags2 = _GTID_BODY.unpack_from(ev.buf, ev.body_pos)
        bp = ev.body_pos
        if not flags2 & (FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA) and (
            ev.body_end <= bp + 13 or not ev.buf[bp + 13]
        ):
            # The common case: no commit id, no XA, no extra flags.
            opt = self.opt
            h = self.head
            if not opt.short_form and not opt.flashback:
                self.header(ev, h)
                h.append(
                    b"\tGTID %d-%d-%d%s%s%s\n"
                    % (
                        domain_id,
                        ev.server_id,
                        seq_no,
                        b" ddl" if flags2 & FL_DDL else b"",
                        b" trans" if flags2 & FL_TRANSACTIONAL else b"",
                        b" waited" if flags2 & FL_WAITED else b"",
                    )
                )
                self._gtid_session(h, flags2, domain_id, ev.server_id, seq_no)
            if not flags2 & FL_STANDALONE:
                h.append(_COMMIT_DELIM if opt.flashback else _START_TRANSACTION)
            self.gtid_flags2 = flags2
            self.gtid_flags_extra = 0
            if opt.flashback:
                self._release_owned()
            else:
                self.out.extend(h)
                h.clear()
            return
        self._gtid_full(ev)

    def _gtid_session(self, h: list[bytes], flags2: int, domain_id: int, server_id: int, seq_no: int) -> None:
        """The session variables a GTID event sets, each only when it changed (the tool's
        output cache): skip_parallel_replication, gtid_domain_id, server_id, gtid_seq_no."""
        allow = bool(flags2 & FL_ALLOW_PARALLEL)
        if not self.allow_parallel_printed or self.allow_parallel != allow:
            h.append(b"/*M!100101 SET @@session.skip_parallel_replication=%d*/%s\n" % (0 if allow else 1, DELIM))
            self.allow_parallel = allow
            self.allow_parallel_printed = True
        if not self.domain_id_printed or self.domain_id != domain_id:
            h.append(b"/*M!100001 SET @@session.gtid_domain_id=%d*/%s\n" % (domain_id, DELIM))
            self.domain_id = domain_id
            self.domain_id_printed = True
        if not self.server_id_printed or self.server_id != server_id:
            h.append(b"/*M!100001 SET @@session.server_id=%d*/%s\n" % (server_id, DELIM))
            self.server_id = server_id
            self.server_id_printed = True
        h.append(b"/*M!100001 SET @@session.gtid_seq_no=%d*/%s\n" % (seq_no, DELIM))

    def _gtid_full(self, ev: EventView) -> None:
        g: GtidEvent = ev.decoded()
        opt = self.opt
        h = self.head
        if not opt.short_form and not opt.flashback:
            self.header(ev, h)
            parts = [b"\tGTID %d-%d-%d" % (g.domain_id, ev.server_id, g.seq_no)]
            flags2 = g.flags2
            if flags2 & FL_GROUP_COMMIT_ID:
                parts.append(b" cid=%d" % (g.commit_id or 0))
            if flags2 & FL_DDL:
                parts.append(b" ddl")
            if flags2 & FL_TRANSACTIONAL:
                parts.append(b" trans")
            if flags2 & FL_WAITED:
                parts.append(b" waited")
            fe = g.flags_extra
            if fe & FL_START_ALTER_E1:
                parts.append(b" START ALTER")
            if fe & FL_COMMIT_ALTER_E1:
                parts.append(b" COMMIT ALTER id= %d" % (g.sa_seq_no or 0))
            if fe & FL_ROLLBACK_ALTER_E1:
                parts.append(b" ROLLBACK ALTER id= %d" % (g.sa_seq_no or 0))
            if fe & FL_EXTRA_THREAD_ID:
                parts.append(b" thread_id=%d" % (g.thread_id or 0))
            parts.append(b"\n")
            h.append(b"".join(parts))
            self._gtid_session(h, flags2, g.domain_id, ev.server_id, g.seq_no)
        if g.flags2 & FL_PREPARED_XA and not opt.flashback:
            h.append(
                b"XA START %s%s\n"
                % (serialize_xid(g.xa_format_id or 0, g.xa_gtrid, g.xa_bqual), DELIM)
            )
        elif not g.flags2 & FL_STANDALONE:
            h.append(
                b"COMMIT\n%s\n" % DELIM
                if opt.flashback
                else b"START TRANSACTION\n%s\n" % DELIM
            )
        self.gtid_flags2 = g.flags2
        self.gtid_flags_extra = g.flags_extra
        self._release_owned()

    # -- Xid

    def xid(self, ev: EventView) -> None:
        h = self.head
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tXid = %d\n" % _U64.unpack_from(ev.buf, ev.body_pos)[0])
        if self.opt.flashback:
            h.append(b"START TRANSACTION%s\n" % DELIM)
            self._release_owned()
        else:
            h.append(b"COMMIT/*!*/;\n")
            self.out.extend(h)
            h.clear()

    # -- Query

    def query_parts(self, ev: EventView) -> _QueryParts:
        """Post-header, status variables (cached by their bytes), database and text of a Query."""
        buf = ev.buf
        bp = ev.body_pos
        code = ev.type_code
        post = self.ctx.post_header_len(code)
        if bp + max(post, 13) <= ev.body_end:
            thread_id, exec_time, db_len, error_code, status_len = _Q_POST.unpack_from(
                buf, bp
            )
            s = bp + post
            d = s + status_len
            q = d + db_len + 1
            if q <= ev.body_end and buf[q - 1] == 0:
                key = bytes(buf[s:d])
                status = self._status_cache.get(key)
                if status is not None:
                    db = bytes(buf[d : q - 1])
                    if code == QUERY_COMPRESSED_EVENT:
                        text = decompress_block(buf, q, ev.body_end)
                    else:
                        text = bytes(buf[q : ev.body_end])
                    return _QueryParts(
                        thread_id, exec_time, error_code, status, db, text
                    )
        decoded: QueryEvent = ev.decoded()
        status = dict(decoded.status_vars)
        if len(self._status_cache) > 4096:
            self._status_cache.clear()
        p = bp + post
        self._status_cache[bytes(buf[p : p + _Q_POST.unpack_from(buf, bp)[4]])] = status
        return _QueryParts(
            decoded.thread_id,
            decoded.exec_time,
            decoded.error_code,
            status,
            decoded.database,
            decoded.query,
        )

    def query(self, ev: EventView) -> None:
        q = self.query_parts(ev)
        opt = self.opt
        is_xa = bool(self.gtid_flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA))
        flags = ev.flags
        query = q.query
        if not _is_trans_keyword(query, is_xa):
            if opt.database is not None and q.database != opt.database:
                return
        else:
            flags |= LOG_EVENT_SUPPRESS_USE_F
        # print_use_stmt: the rewritten database gets its own USE here.
        db = q.database
        if (
            not flags & LOG_EVENT_SUPPRESS_USE_F
            and self.db != db
            and db in opt.rewrite_db
        ):
            self.out.append(b"use %s%s\n" % (_backtick(opt.rewrite_db[db]), DELIM))
            self.db = db
        self.skip_replication_statement(flags)
        h = self.head
        self.query_header(ev, q, flags, is_xa, h)
        gtid_extra = getattr(self, "gtid_flags_extra", 0)
        if not opt.flashback:
            if gtid_extra & (
                FL_START_ALTER_E1 | FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1
            ):
                encoded = (
                    opt.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS)
                    and not opt.short_form
                )
                comment = encoded and gtid_extra & (
                    FL_START_ALTER_E1 | FL_ROLLBACK_ALTER_E1
                )
                if comment:
                    h.append(b"/*!100600 ")
                if encoded:
                    h.append(b"BINLOG '\n")
                    _base64_lines(ev.raw(), h)
                    h.append(b"' */%s\n" % DELIM if comment else b"'%s\n" % DELIM)
                if opt.verbose:
                    h.append(b"### " + query + b"\n")
            else:
                h.append(query)
                h.append(b"\n%s\n" % DELIM)
        else:
            if query == b"BEGIN":
                h.append(b"COMMIT\n%s\n" % DELIM)
            elif query == b"COMMIT":
                h.append(b"START TRANSACTION\n%s\n" % DELIM)
        self._release_owned()

    def query_header(
        self, ev: EventView, q: _QueryParts, flags: int, is_xa: bool, h: list[bytes]
    ) -> None:
        """Query_log_event::print_query_header: header comment and the changed session SETs."""
        opt = self.opt
        status = q.status
        if not opt.short_form:
            self.header(ev, h)
            h.append(
                b"\t%s\tthread_id=%d\texec_time=%d\terror_code=%d\txid=%d\n"
                % (
                    b"Query_compressed"
                    if ev.type_code == QUERY_COMPRESSED_EVENT
                    else b"Query",
                    q.thread_id,
                    q.exec_time,
                    q.error_code,
                    status.get(Q_XID, 0),
                )
            )
        if flags & LOG_EVENT_SUPPRESS_USE_F:
            if not _is_trans_keyword(q.query, is_xa):
                self.db = b""
        else:
            db = q.database
            if self.db != db:
                self.db = db
                if db:
                    h.append(b"use %s%s\n" % (_backtick(db), DELIM))
        sec_part = status.get(Q_HRNOW)
        if sec_part:
            h.append(b"SET TIMESTAMP=%d.%06d%s\n" % (ev.when, sec_part, DELIM))
        else:
            h.append(b"SET TIMESTAMP=%d%s\n" % (ev.when, DELIM))
        if not self.thread_id_printed or (
            flags & LOG_EVENT_THREAD_SPECIFIC_F and q.thread_id != self.thread_id
        ):
            h.append(
                b"SET @@session.pseudo_thread_id=%d%s\n"
                % (999999999 if opt.short_form else q.thread_id, DELIM)
            )
            self.thread_id = q.thread_id
            self.thread_id_printed = True
        flags2 = status.get(Q_FLAGS2_CODE)
        if flags2 is not None:
            changed = 0xFFFFFFFF if self.flags2 is None else (self.flags2 ^ flags2)
            if changed:
                mask = self.options_written
                parts = []
                for bit, inverted, name in _FLAGS2_VARS:
                    if bit & _MASKED_FLAGS2 and not mask & bit:
                        continue
                    if changed & bit:
                        value = flags2 & bit
                        parts.append(
                            b"%s=%d"
                            % (
                                name,
                                (0 if value else 1)
                                if inverted
                                else (1 if value else 0),
                            )
                        )
                h.append(b"SET " + b", ".join(parts) + b"%s\n" % DELIM)
                self.flags2 = flags2
        sql_mode = status.get(Q_SQL_MODE_CODE)
        if sql_mode is not None and sql_mode != self.sql_mode:
            h.append(b"SET @@session.sql_mode=%d%s\n" % (sql_mode, DELIM))
            self.sql_mode = sql_mode
        auto_inc = status.get(Q_AUTO_INCREMENT, (1, 1))
        if auto_inc != self.auto_increment:
            h.append(
                b"SET @@session.auto_increment_increment=%d, @@session.auto_increment_offset=%d%s\n"
                % (auto_inc[0], auto_inc[1], DELIM)
            )
            self.auto_increment = auto_inc
        charset = status.get(Q_CHARSET_CODE)
        if charset is not None and charset != self.charset:
            cs_name = charsets.charset_name(charset[0])
            if cs_name is not None:
                h.append(b"/*!\\C %s */%s\n" % (cs_name.encode(), DELIM))
            else:
                h.append(b"# Ignored (Unknown charset) ")
            h.append(
                b"SET @@session.character_set_client=%s,@@session.collation_connection=%d,"
                b"@@session.collation_server=%d%s\n"
                % ((cs_name or "Unknown").encode(), charset[1], charset[2], DELIM)
            )
            self.charset = charset
        collations = status.get(Q_CHARACTER_SET_COLLATIONS)
        if collations:
            pairs = []
            ok = True
            for i in range(0, len(collations), 2):
                cs = charsets.charset_name(collations[i])
                coll = charsets.collation_name(collations[i + 1])
                if cs is None or coll is None:
                    ok = False
                    break
                pairs.append(f"{cs}={coll}".encode())
            if ok:
                h.append(
                    b"SET @@session.character_set_collations='%s'%s\n"
                    % (b",".join(pairs), DELIM)
                )
            else:
                h.append(
                    b"/* SET @@session.character_set_collations='<format not recognized>' */\n"
                )
        tz = status.get(Q_TIME_ZONE_CODE)
        if tz and tz != self.time_zone:
            h.append(b"SET @@session.time_zone='%s'%s\n" % (tz, DELIM))
            self.time_zone = tz
        lc = status.get(Q_LC_TIME_NAMES_CODE, 0)
        if lc != self.lc_time_names:
            h.append(b"SET @@session.lc_time_names=%d%s\n" % (lc, DELIM))
            self.lc_time_names = lc
        cdb = status.get(Q_CHARSET_DATABASE_CODE, 0)
        if cdb != self.charset_database:
            if cdb:
                h.append(b"SET @@session.collation_database=%d%s\n" % (cdb, DELIM))
            else:
                h.append(b"SET @@session.collation_database=DEFAULT%s\n" % DELIM)
            self.charset_database = cdb

    # -- Table_map

    def table_info(self, ev: EventView) -> TableInfo:
        """The (cached) TableInfo of a Table_map event."""
        key = bytes(ev.buf[ev.body_pos : ev.body_end])
        info = self._table_cache.get(key)
        if info is None:
            tm = ev.decoded()
            p = ev.body_pos + self.ctx.post_header_len(TABLE_MAP_EVENT)
            n = ev.buf[p]
            raw_schema = bytes(ev.buf[p + 1 : p + 1 + n])
            p += n + 2
            n = ev.buf[p]
            raw_table = bytes(ev.buf[p + 1 : p + 1 + n])
            info = TableInfo(tm, raw_schema, raw_table)
            if len(self._table_cache) > 10000:
                self._table_cache.clear()
            self._table_cache[key] = info
        return info

    def table_map(self, ev: EventView) -> None:
        opt = self.opt
        info = self.table_info(ev)
        if (opt.database is not None and info.raw_schema != opt.database) or (
            opt.table is not None and info.raw_table != opt.table
        ):
            self.ignored_maps[info.table_id] = info
            return
        # The kept Annotate_rows is printed with the first Table_map that is printed.
        if self.annotate is not None:
            self.annotate.hexdump_from = ev.position
            self._print_annotate()
        raw = None
        schema = info.raw_schema
        if schema in opt.rewrite_db:
            schema = opt.rewrite_db[schema]
            raw = self._rewrite_table_map(ev, schema)
        if (
            not self.printed_fd_event
            and not opt.short_form
            and opt.base64_mode not in (BASE64_DECODE_ROWS, BASE64_NEVER)
        ):
            self._need_format_description(b"Table_map")
        h = self.head
        if not opt.short_form:
            self.header(ev, h)
            line = info.line if raw is None else None
            if line is None:
                line = b"\tTable_map: %s.%s mapped to number %d%s\n" % (
                    _backtick(schema),
                    _backtick(info.raw_table),
                    info.table_id,
                    b" (has triggers)" if info.flags & TM_BIT_HAS_TRIGGERS_F else b"",
                )
                if raw is None:
                    info.line = line
            h.append(line)
        if not opt.short_form or opt.print_row_count:
            if opt.print_table_metadata:
                self._print_table_metadata(info, h)
            encoded = (
                opt.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS)
                and not opt.short_form
            )
            if encoded:
                _base64_lines(raw if raw is not None else ev.raw(), self.body)
            if opt.verbose or opt.print_row_count or opt.flashback:
                self.table_maps[info.table_id] = info
            self._flush_head()

    def _need_format_description(self, type_name: bytes) -> None:
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

    def _rewrite_table_map(self, ev: EventView, new_db: bytes) -> bytes:
        """Table_map_log_event::rewrite_db on the raw event (the old CRC bytes are kept)."""
        raw = bytes(ev.raw())
        p = 19 + self.ctx.post_header_len(TABLE_MAP_EVENT)
        old_len = raw[p]
        return reframe(raw[:p] + bytes((len(new_db),)) + new_db + b"\0" + raw[p + 2 + old_len :])

    def _print_annotate(self) -> None:
        view = self.annotate
        assert view is not None
        self.annotate = None
        h = self.head
        if not self.opt.short_form:
            self.header(view, h)
            h.append(b"\tAnnotate_rows:\n")
        else:
            h.append(b"# Annotate_rows:\n")
        text = view.body()
        if b"\n" not in text and b"\r" not in text:
            if text:
                h.append(b"#Q> " + text + b"\n")
            return
        for line in text.replace(b"\r", b"\n").split(b"\n"):
            if line:
                h.append(b"#Q> " + line + b"\n")

    def _print_table_metadata(self, info: TableInfo, h: list[bytes]) -> None:
        """Table_map_log_event::print_columns and print_primary_key."""
        tm = info.event
        om = tm.optional_metadata or C.OptionalMetadata()
        types = tm.column_types
        metas = tm.column_meta
        signed_bits = om.signedness or b""
        numeric_index = 0
        char_it = _charset_iter(om.default_charset, om.column_charsets)
        enum_it = _charset_iter(
            om.enum_and_set_default_charset, om.enum_and_set_column_charsets
        )
        names = om.column_names or ()
        set_values = iter(om.set_str_values or ())
        enum_values = iter(om.enum_str_values or ())
        geometry_types = iter(om.geometry_types or ())
        n_signed = len(signed_bits) * 8
        parts = [b"# Columns("]
        ncols = len(types)
        for i in range(ncols):
            ctype = types[i]
            meta = metas[i]
            raw_meta0 = (
                meta >> 8
                if ctype in (C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET)
                else None
            )
            rtype = ctype
            if ctype == C.MYSQL_TYPE_STRING and raw_meta0 in (
                C.MYSQL_TYPE_ENUM,
                C.MYSQL_TYPE_SET,
            ):
                rtype = raw_meta0
            cs = None
            if rtype in C.CHARACTER_TYPES:
                cs = next(char_it, None)
            elif rtype in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET):
                cs = next(enum_it, None)
            if i < len(names):
                parts.append(
                    _pretty_identifier(names[i].encode("utf-8", "surrogateescape"))
                    + b" "
                )
            geometry_type = 0
            if rtype == C.MYSQL_TYPE_GEOMETRY:
                geometry_type = next(geometry_types, 0)
            type_name = _meta_type_name(rtype, ctype, meta, cs, geometry_type)
            if not type_name:
                parts.append(b"INVALID_TYPE(%d)" % rtype)
                # The tool's `continue` skips the separator too.
                continue
            parts.append(type_name)
            if rtype in C.NUMERIC_TYPES and numeric_index < n_signed:
                if signed_bits[numeric_index >> 3] & (0x80 >> (numeric_index & 7)):
                    parts.append(b" UNSIGNED")
                numeric_index += 1
            if not tm.null_bitmap[i >> 3] & (1 << (i & 7)):
                parts.append(b" NOT NULL")
            values = None
            if rtype == C.MYSQL_TYPE_ENUM:
                values = next(enum_values, None)
            elif rtype == C.MYSQL_TYPE_SET:
                values = next(set_values, None)
            if values is not None:
                sep = b"("
                for v in values:
                    parts.append(sep + _pretty_str(v))
                    sep = b","
                parts.append(b")")
            if cs is not None and (
                rtype in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET)
                or cs != C.BINARY_COLLATION
            ):
                entry = charsets.COLLATIONS.get(cs)
                if entry is not None:
                    parts.append(
                        b" CHARSET %s COLLATE %s"
                        % (entry[0].encode(), entry[1].encode())
                    )
            if i != ncols - 1:
                parts.append(b",\n#         ")
        parts.append(b")\n")
        h.append(b"".join(parts))
        pk: list[tuple[int, int]] = []
        if om.simple_primary_key:
            pk = [(c, 0) for c in om.simple_primary_key]
        elif om.primary_key_with_prefix:
            pk = list(om.primary_key_with_prefix)
        if pk:
            items = []
            for col, prefix in pk:
                item = (
                    names[col].encode("utf-8", "surrogateescape")
                    if col < len(names)
                    else b"%d" % col
                )
                if prefix:
                    item += b"(%d)" % prefix
                items.append(item)
            h.append(b"# Primary Key(" + b", ".join(items) + b")\n")

    # -- rows

    def rows_event(self, ev: EventView) -> None:
        """print_row_event: ignored tables, --flashback statement reversal, then printing."""
        code = ev.type_code
        buf = ev.buf
        p = ev.body_pos
        post = self.ctx.post_header_len(code)
        if post == 6:
            table_id = _U32.unpack_from(buf, p)[0]
            flags_at = p + 4
        else:
            table_id = _U32.unpack_from(buf, p)[0] | (
                _U16.unpack_from(buf, p + 4)[0] << 32
            )
            flags_at = p + 6
        rows_flags = _U16.unpack_from(buf, flags_at)[0]
        stmt_end = bool(rows_flags & STMT_END_F)
        ignored = table_id in self.ignored_maps
        if self.opt.flashback:
            # The last event of the statement is printed first, the first one last
            # (and carries STMT_END_F), as Rows_log_event::update_flags rewrites them.
            new_flags = rows_flags & ~STMT_END_F if stmt_end else rows_flags
            if not self.flashback_stmt:
                new_flags |= STMT_END_F
            raw = bytearray(ev.raw())
            _U16.pack_into(raw, flags_at - ev.start, new_flags)
            self.flashback_stmt.append(
                (bytes(raw), ev.position, ev.crc if ev.crc is not None else -1)
            )
        if stmt_end:
            self.ignored_maps.clear()
            self.annotate = None
            if ignored:
                if self.body:
                    self.body.append(b"'%s\n" % DELIM)
                self._flush_head()
                self.out.extend(self.body)
                self.body.clear()
                self.out.extend(self.tail)
                self.tail.clear()
                self.row_events = 0
        if ignored:
            return
        if not self.opt.flashback:
            self._print_rows(ev, code, post, table_id, rows_flags)
            return
        if stmt_end:
            events = self.flashback_stmt
            self.flashback_stmt = []
            for raw_event, position, crc in reversed(events):
                view = view_at(raw_event, 0, position, 0 if crc < 0 else 4, self.ctx)
                if crc >= 0:
                    view.crc = crc
                view.hexdump_from = ev.position
                code_i = view.type_code
                p_i = view.body_pos
                flags_i = _U16.unpack_from(raw_event, p_i + (4 if post == 6 else 6))[0]
                table_i = _U32.unpack_from(raw_event, p_i)[0]
                if post != 6:
                    table_i |= _U16.unpack_from(raw_event, p_i + 4)[0] << 32
                self._print_rows(view, code_i, post, table_i, flags_i)
            if self.opt.print_row_count:
                self.out.append(b"# Number of rows: %d\n" % self.row_events)
            self.row_events = 0

    def _print_rows(
        self, ev: EventView, code: int, post: int, table_id: int, rows_flags: int
    ) -> None:
        """Rows_log_event::print_helper (with print_base64's --flashback conversion)."""
        opt = self.opt
        buf = ev.buf
        p = ev.body_pos
        stmt_end = bool(rows_flags & STMT_END_F)
        encoded = self._encoded
        if encoded and not self.printed_fd_event:
            self._need_format_description(_ROWS_NAMES[code])
        name = _ROWS_NAMES[code]
        if opt.flashback:
            name = _FLASHBACK_NAMES.get(name, name)
        raw: bytes | None = None
        # Row layout: width, present bitmaps, rows.
        q = p + post
        if code in _V2_ROWS:
            q += _U16.unpack_from(buf, q)[0]
        width, q = _lenenc(buf, q)
        nb = (width + 7) >> 3
        cols = bytes(buf[q : q + nb])
        q += nb
        cols_ai = None
        if code in _UPDATE_ROWS:
            cols_ai = bytes(buf[q : q + nb])
            q += nb
        data: Any = buf
        start, end = q, ev.body_end
        if code in _UNCOMPRESSED_TYPE:
            try:
                rows = decompress_block(buf, q, end)
            except DecodeError:
                self.head.append(b"ERROR: uncompress %s failed\n" % name.lower())
                return
            # The tool re-encodes the event uncompressed (type, length and CRC fixed).
            prefix = bytearray(buf[ev.start : q])
            prefix[4] = _UNCOMPRESSED_TYPE[code]
            body = bytes(prefix) + rows
            raw = reframe(body, checksum=ev.crc is not None)
            code = _UNCOMPRESSED_TYPE[code]
            data, start, end = rows, 0, len(rows)
        info = self.table_maps.get(table_id)
        if opt.flashback:
            # Log_event::print_base64: Write <-> Delete, rows in reverse order, the
            # images of each updated row swapped; the CRC bytes are left as they were.
            if raw is None:
                raw = bytes(ev.raw())
            code = _FLASHBACK_TYPE.get(code, code)
            if info is not None and not (code in _WRITE_ROWS and start == end):
                rows = _flashback_rows(
                    info, code in _UPDATE_ROWS, width, cols, cols_ai, data, start, end
                )
                offset = (
                    len(raw) - (ev.start + ev.length - start)
                    if data is buf
                    else len(raw) - len(data) - (4 if ev.crc is not None else 0)
                )
                raw = raw[:offset] + rows + raw[offset + len(rows) :]
                data, start, end = rows, 0, len(rows)
            raw = raw[:4] + bytes((code,)) + raw[5:]
        if not opt.short_form:
            h = self.head
            self.header(ev, h, raw)
            h.append(
                b"\t%s: table id %d%s\n"
                % (name, table_id, b" flags: STMT_END_F" if stmt_end else b"")
            )
        if not opt.short_form or opt.print_row_count:
            if encoded:
                _base64_lines(raw if raw is not None else ev.raw(), self.body)
            if opt.verbose:
                if info is None:
                    self.tail.append(b"### Row event for unknown table #%d" % table_id)
                else:
                    self.row_events += render_rows(
                        info,
                        code,
                        table_id,
                        width,
                        cols,
                        cols_ai,
                        data,
                        start,
                        end,
                        opt.verbose,
                        self.tail,
                    )
            elif info is not None:
                self.row_events += count_rows(
                    info,
                    code in _UPDATE_ROWS,
                    code in _WRITE_ROWS,
                    width,
                    cols,
                    cols_ai,
                    data,
                    start,
                    end,
                )
        if stmt_end:
            if opt.flashback:
                h = self.head
                if encoded:
                    h.append(b"\nBINLOG '\n")
                    h.extend(self.body)
                    h.append(b"'%s\n" % DELIM)
                else:
                    h.extend(self.body)
                h.extend(self.tail)
                self.body.clear()
                self.tail.clear()
                self.flashback_events.append(b"".join(h))
                h.clear()
                return
            self._flush_head()
            if encoded:
                self.out.append(b"\nBINLOG '\n")
                self.out.extend(self.body)
                self.out.append(b"'%s\n" % DELIM)
            else:
                self.out.extend(self.body)
            self.body.clear()
            self.out.extend(self.tail)
            self.tail.clear()
            if opt.print_row_count:
                self.out.append(b"# Number of rows: %d\n" % self.row_events)
            self.row_events = 0

    # -- everything else

    def other(self, ev: EventView) -> None:
        opt = self.opt
        code = ev.type_code
        h = self.head
        short = opt.short_form
        if code == ROTATE_EVENT:
            if short:
                return
            self.header(ev, h)
            pos = _U64.unpack_from(ev.buf, ev.body_pos)[0]
            h.append(
                b"\tRotate to %s  pos: %d\n"
                % (bytes(ev.buf[ev.body_pos + 8 : ev.body_end]), pos)
            )
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
            n = _U32.unpack_from(ev.buf, ev.body_pos)[0]
            self.header(ev, h)
            h.append(
                b"\tBinlog checkpoint "
                + bytes(ev.buf[ev.body_pos + 4 : ev.body_pos + 4 + n])
                + b"\n"
            )
        elif code == INTVAR_EVENT:
            if not short:
                self.header(ev, h)
                h.append(b"\tIntvar\n")
            kind = ev.buf[ev.body_pos]
            value = _U64.unpack_from(ev.buf, ev.body_pos + 1)[0]
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
            s1, s2 = struct.unpack_from("<QQ", ev.buf, ev.body_pos)
            h.append(b"SET @@RAND_SEED1=%d, @@RAND_SEED2=%d%s\n" % (s1, s2, DELIM))
        elif code == USER_VAR_EVENT:
            self.user_var(ev, h)
        elif code == XA_PREPARE_LOG_EVENT:
            _one_phase, fmt, glen, blen = _XA_PREPARE.unpack_from(ev.buf, ev.body_pos)
            q = ev.body_pos + 13
            xid = serialize_xid(
                fmt,
                bytes(ev.buf[q : q + glen]),
                bytes(ev.buf[q + glen : q + glen + blen]),
            )
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
            if short:
                return
            inc = ev.decoded()
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
                % (se.crypto_scheme, se.key_version, se.nonce.hex().upper().encode())
            )
        elif code == HEARTBEAT_LOG_EVENT or code in (
            BEGIN_LOAD_QUERY_EVENT,
            EXECUTE_LOAD_QUERY_EVENT,
        ):
            if short:
                return
            self.header(ev, h)
            h.append(b"\n# Unknown event\n")
        elif ev.flags & LOG_EVENT_IGNORABLE_F or code == IGNORABLE_LOG_EVENT:
            if short:
                return
            self.header(ev, h)
            h.append(
                b"\tIgnorable\n# Ignorable event type %d (%s)\n"
                % (code, _event_description(code))
            )
        else:
            if short:
                return
            self.header(ev, h)
            h.append(b"\n# Unknown event\n")
        self._flush_head()

    def user_var(self, ev: EventView, h: list[bytes]) -> None:
        uv = ev.decoded()
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tUser_var\n")
        h.append(b"SET @" + _backtick(uv.var_name))
        if uv.is_null:
            h.append(b":=NULL%s\n" % DELIM)
            return
        vt = uv.value_type
        val = uv.value
        if vt == USER_VAR_REAL:
            value = struct.unpack_from("<d", val.ljust(8, b"\0"))[0]
            h.append(b":=%s%s\n" % (_format_g14(value), DELIM))
        elif vt == USER_VAR_INT:
            number = int.from_bytes(val[:8].ljust(8, b"\0"), "little")
            if not (uv.var_flags or 0) & USER_VAR_UNSIGNED_F and number >= 1 << 63:
                number -= 1 << 64
            h.append(b":=%d%s\n" % (number, DELIM))
        elif vt == USER_VAR_DECIMAL:
            h.append(b":=%s%s\n" % (decimal_to_str(val[2:], val[0], val[1]), DELIM))
        elif vt == USER_VAR_STRING:
            hexed = b"X'" + val.hex().upper().encode() + b"'" if val else b"''"
            entry = charsets.COLLATIONS.get(uv.charset)
            if entry is None:
                h.append(b":=???%s\n" % DELIM)
            else:
                h.append(
                    b":=_%s %s COLLATE `%s`%s\n"
                    % (entry[0].encode(), hexed, entry[1].encode(), DELIM)
                )

    # ------------------------------------------------------------------ file boundaries

    def begin_file(self, name: str = "") -> None:
        """dump_log_entries: a fresh PRINT_EVENT_INFO and ``DELIMITER /*!*/;``."""
        self.reset_state()
        self.out.append(b"DELIMITER /*!*/;\n")

    def end_file(self) -> None:
        """dump_log_entries' closing ``DELIMITER ;`` (not with --flashback)."""
        if not self.opt.flashback:
            self.out.append(b"DELIMITER ;\n")

    def finish(self, complete: bool) -> None:
        """The run is over: nothing more to print (the dumper wrote the epilogue)."""


class _QueryParts:
    """What the printer reads of a Query event."""

    __slots__ = ("database", "error_code", "exec_time", "query", "status", "thread_id")

    def __init__(
        self,
        thread_id: int,
        exec_time: int,
        error_code: int,
        status: dict[int, Any],
        database: bytes,
        query: bytes,
    ) -> None:
        self.thread_id = thread_id
        self.exec_time = exec_time
        self.error_code = error_code
        self.status = status
        self.database = database
        self.query = query


def _event_description(code: int) -> bytes:
    from ..codec.events import event_type_name

    return event_type_name(code).encode()


def _format_g14(value: float) -> bytes:
    """C's ``%.14g``."""
    return b"%.14g" % value


def _lenenc(buf: Any, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        return buf[pos + 1] | buf[pos + 2] << 8, pos + 3
    if first == 253:
        return buf[pos + 1] | buf[pos + 2] << 8 | buf[pos + 3] << 16, pos + 4
    if first == 254:
        return _U64.unpack_from(buf, pos + 1)[0], pos + 9
    return 0, pos + 1


def _charset_iter(default: C.DefaultCharset | None, per_column: tuple[int, ...] | None):
    if default is not None:
        return default.iter_collations()
    return iter(per_column or ())


def _pretty_str(value: bytes, quote: bytes = b"'") -> bytes:
    """pretty_print_str: quoted, with \\n \\r \\\\ \\b \\t \\' \\0 escaped."""
    out = bytearray(quote)
    for c in value:
        if c == 10:
            out += b"\\n"
        elif c == 13:
            out += b"\\r"
        elif c == 92:
            out += b"\\\\"
        elif c == 8:
            out += b"\\b"
        elif c == 9:
            out += b"\\t"
        elif c == 39:
            out += b"\\'"
        elif c == 0:
            out += b"\\0"
        else:
            out.append(c)
    out += quote
    return bytes(out)


def _pretty_identifier(name: bytes) -> bytes:
    return _pretty_str(name, b"`")


_GEOMETRY_NAMES = (
    b"GEOMETRY",
    b"POINT",
    b"LINESTRING",
    b"POLYGON",
    b"MULTIPOINT",
    b"MULTILINESTRING",
    b"MULTIPOLYGON",
    b"GEOMETRYCOLLECTION",
)


def _meta_type_name(
    rtype: int, ctype: int, meta: int, cs: int | None, geometry_type: int
) -> bytes:
    """get_type_name of log_event_client.cc (--print-table-metadata)."""
    binary = cs is None or cs == C.BINARY_COLLATION
    if rtype == C.MYSQL_TYPE_LONG:
        return b"INT"
    if rtype == C.MYSQL_TYPE_TINY:
        return b"TINYINT"
    if rtype == C.MYSQL_TYPE_SHORT:
        return b"SMALLINT"
    if rtype == C.MYSQL_TYPE_INT24:
        return b"MEDIUMINT"
    if rtype == C.MYSQL_TYPE_LONGLONG:
        return b"BIGINT"
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        return b"DECIMAL(%d,%d)" % (meta >> 8, meta & 0xFF)
    if rtype == C.MYSQL_TYPE_FLOAT:
        return b"FLOAT"
    if rtype == C.MYSQL_TYPE_DOUBLE:
        return b"DOUBLE"
    if rtype == C.MYSQL_TYPE_BIT:
        return b"BIT(%d)" % ((meta & 0xFF) + (meta >> 8) * 8)
    if rtype == C.MYSQL_TYPE_TIMESTAMP2:
        return b"TIMESTAMP(%d)" % meta if meta else b"TIMESTAMP"
    if rtype == C.MYSQL_TYPE_DATETIME2:
        return b"DATETIME(%d)" % meta if meta else b"DATETIME"
    if rtype == C.MYSQL_TYPE_TIME2:
        return b"TIME(%d)" % meta if meta else b"TIME"
    if rtype in (C.MYSQL_TYPE_NEWDATE, C.MYSQL_TYPE_DATE):
        return b"DATE"
    if rtype == C.MYSQL_TYPE_YEAR:
        return b"YEAR"
    if rtype == C.MYSQL_TYPE_ENUM:
        return b"ENUM"
    if rtype == C.MYSQL_TYPE_SET:
        return b"SET"
    if rtype == C.MYSQL_TYPE_BLOB:
        kind = b"BLOB" if binary else b"TEXT"
        if meta == 0 or meta > 4:
            return b"INVALID_%s(%d)" % (kind, meta)
        return (b"TINY", b"", b"MEDIUM", b"LONG")[meta - 1] + kind
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING):
        if not binary:
            return b"VARCHAR(%d)" % (meta // charsets.mbmaxlen(cs))  # type: ignore[arg-type]
        return b"VARBINARY(%d)" % meta
    if rtype == C.MYSQL_TYPE_STRING:
        byte0, byte1 = meta >> 8, meta & 0xFF
        length = (((byte0 & 0x30) ^ 0x30) << 4) | byte1
        if not binary:
            return b"CHAR(%d)" % (length // charsets.mbmaxlen(cs))  # type: ignore[arg-type]
        return b"BINARY(%d)" % length
    if rtype == C.MYSQL_TYPE_GEOMETRY:
        if geometry_type < 8:
            return _GEOMETRY_NAMES[geometry_type]
        return b"INVALID_GEOMETRY_TYPE(%d)" % geometry_type
    return b""


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
        self.body_pos = start + 19
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
    when, code, server_id, length, log_pos, flags = HEADER.unpack_from(buf, start)
    end = start + length
    if code == FORMAT_DESCRIPTION_EVENT:
        alg = buf[end - 5] if length >= 19 + 57 + 5 else CHECKSUM_OFF
        crc = (
            _U32.unpack_from(buf, end - 4)[0]
            if alg not in (CHECKSUM_OFF, 255)
            else None
        )
        body_end = end
    elif crc_len:
        crc = _U32.unpack_from(buf, end - 4)[0]
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
