"""The ``###`` pseudo-SQL of ``mariadb-binlog -v`` / ``-vv`` for rows events, byte for byte.

``mariadb-binlog`` (``Rows_log_event::print_verbose``, ``log_event_print_value``
in ``sql/log_event_client.cc``) prints each row as::

    ### UPDATE `db`.`t`
    ### WHERE
    ###   @1=1 /* INT meta=0 nullable=0 is_null=0 */
    ### SET
    ###   @2='x' /* VARSTRING(40) meta=40 nullable=1 is_null=0 */

(the ``/* ... */`` comments only with ``-vv``).  Values are printed from the
stored bytes whatever the column's charset: strings quoted with bytes below
0x20 as ``\\xNN`` (quote and backslash are *not* escaped), integers signed with
the unsigned reading in parentheses when negative, DATE as ``'YYYY:MM:DD'``,
TIMESTAMP as a bare number, BIT and SET as ``b'0101'``, ENUM as its index,
FLOAT as ``%-20g`` and DOUBLE as ``%.20g``.  Columns missing from a MINIMAL
image are skipped; ``@N`` keeps the column number.  Output is ``bytes`` so that
non-UTF-8 data passes through unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from ...codec import columns as C
from ...codec.rows import ABSENT, RowsEventLike, TableMapLike, row_decoder
from ...codec.rows.packed import bit_image, uint_image
from ...errors import DecodeError

_Formatter = Callable[[Any], bytes]

_CONTROL = re.compile(rb"[\x00-\x1f]")
_HEX = {bytes((i,)): b"\\x%02x" % i for i in range(32)}


def quote_bytes(data: bytes) -> bytes:
    """``my_b_write_quoted``: quote ``data``, bytes below 0x20 as ``\\xNN``, everything else raw."""
    if _CONTROL.search(data) is None:
        return b"'" + data + b"'"
    return b"'" + _CONTROL.sub(lambda m: _HEX[m[0]], data) + b"'"


def quote_identifier(name: str) -> bytes:
    """``%`s`` of MariaDB's printf: backquote ``name``, doubling backquotes inside it."""
    return b"`" + name.encode("utf-8", "surrogateescape").replace(b"`", b"``") + b"`"


def _signed(bits: int) -> _Formatter:
    wrap = 1 << bits

    def fmt(value: int) -> bytes:
        if value < 0:
            return b"%d (%d)" % (value, value + wrap)
        return b"%d" % value

    return fmt


def _c_float(value: float, spec: bytes) -> bytes:
    """C printf of a double: as Python's, except that NaN keeps its sign (glibc prints -nan)."""
    if math.isnan(value):
        text = b"-nan" if math.copysign(1.0, value) < 0 else b"nan"
        return text.ljust(20) if spec == b"%-20g" else text
    return spec % value


def _frac(value: int, fsp: int) -> bytes:
    return b".%0*d" % (fsp, value // 10 ** (6 - fsp)) if fsp else b""


def _bits(data: bytes, nbits: int) -> bytes:
    """``my_b_write_bit``: the last ``nbits`` bits of ``data`` (big-endian), as b'0101'."""
    text = "".join(format(byte, "08b") for byte in data)
    return b"b'" + text[len(text) - nbits :].encode() + b"'"


def _formatter(column_type: int, meta: int) -> _Formatter | None:
    """Value printer of a column, fed by the raw-mode row decoder; None when the tool cannot print it."""
    rtype = C.real_type(column_type, meta)
    if rtype in C.INT_SIZES:
        return _signed(8 * C.INT_SIZES[rtype])
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        if meta & 0xFF:
            return lambda v: format(v, "f").encode()
        # bin2decimal turns a negative zero without fraction digits into plain 0 ("-0.00" stays)
        return lambda v: format(v, "f").encode() if v else b"0"
    if rtype == C.MYSQL_TYPE_FLOAT:
        return lambda v: _c_float(v, b"%-20g")
    if rtype == C.MYSQL_TYPE_DOUBLE:
        return lambda v: _c_float(v, b"%.20g")
    if rtype == C.MYSQL_TYPE_BIT:
        nbits = C.bit_width(meta)
        size = (nbits + 7) // 8
        return lambda v: _bits(bit_image(v, size), nbits)
    if rtype == C.MYSQL_TYPE_SET:
        size = meta & 0xFF
        return lambda v: _bits(uint_image(v, size), 8 * size)
    if rtype == C.MYSQL_TYPE_ENUM:
        return lambda v: b"%d" % v
    if rtype == C.MYSQL_TYPE_TIMESTAMP:
        return lambda v: b"%d" % (v.seconds - (1 << 32) if v.seconds >= 1 << 31 else v.seconds)
    if rtype == C.MYSQL_TYPE_TIMESTAMP2:
        return lambda v: b"%d" % v.seconds + _frac(v.microsecond, meta)
    if rtype == C.MYSQL_TYPE_DATETIME:
        return lambda v: b"'%04d-%02d-%02d %02d:%02d:%02d'" % (v.year, v.month, v.day, v.hour, v.minute, v.second)
    if rtype == C.MYSQL_TYPE_DATETIME2:
        return lambda v: (
            b"'%04d-%02d-%02d %02d:%02d:%02d" % (v.year, v.month, v.day, v.hour, v.minute, v.second)
            + _frac(v.microsecond, meta)
            + b"'"
        )
    if rtype == C.MYSQL_TYPE_TIME:
        return lambda v: b"'%s%02d:%02d:%02d'" % (b"-" if v.negative else b"", v.hour, v.minute, v.second)
    if rtype == C.MYSQL_TYPE_TIME2:
        return lambda v: (
            b"'%s%02d:%02d:%02d" % (b"-" if v.negative else b"", v.hour, v.minute, v.second)
            + _frac(v.microsecond, meta)
            + b"'"
        )
    if rtype in (C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE):
        return lambda v: b"'%04d:%02d:%02d'" % (v.year, v.month, v.day)
    if rtype == C.MYSQL_TYPE_YEAR:
        return lambda v: b"%04d" % (v or 1900)
    if rtype == C.MYSQL_TYPE_VAR_STRING:
        return None  # the tool's table_def has no size for it and reports the event corrupted
    if C.verbose_type_name(column_type, meta):  # strings, BLOBs, GEOMETRY
        return quote_bytes
    return None


class _Column:
    """Printing plan of one column: value formatter and the ``-vv`` comment pieces."""

    __slots__ = ("comment", "fmt", "label", "null_comment")

    def __init__(self, index: int, column_type: int, meta: int, nullable: bool) -> None:
        self.label = b"###   @%d=" % (index + 1)
        self.fmt = _formatter(column_type, meta)
        typestr = C.verbose_type_name(column_type, meta).encode()
        head = b" /* %s meta=%d nullable=%d is_null=" % (typestr, meta, nullable)
        self.comment = head + b"0 */"
        self.null_comment = head + b"1 */"


# Printing plans by table map identity (events have no __weakref__ slot); the map is kept
# beside its plan so that a recycled id() never matches, and the cache is bounded.
_PLANS: dict[int, tuple[TableMapLike, list[_Column]]] = {}
_MAX_PLANS = 256


def _plan(table_map: TableMapLike) -> list[_Column]:
    cached = _PLANS.get(id(table_map))
    if cached is not None and cached[0] is table_map:
        return cached[1]
    nulls = table_map.null_bitmap
    plan = [
        _Column(i, t, m, bool(nulls[i >> 3] >> (i & 7) & 1))
        for i, (t, m) in enumerate(zip(table_map.column_types, table_map.column_meta))
    ]
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[id(table_map)] = (table_map, plan)
    return plan


_COMMANDS = {
    "insert": (b"INSERT INTO", b"### SET\n", None),
    "delete": (b"DELETE FROM", b"### WHERE\n", None),
    "update": (b"UPDATE", b"### WHERE\n", b"### SET\n"),
}


def _image_lines(out: list[bytes], plan: list[_Column], row: tuple[Any, ...], verbose: int) -> None:
    for col, value in zip(plan, row):
        if value is ABSENT:
            continue
        if value is None:
            out.append(col.label + b"NULL" + (col.null_comment if verbose > 1 else b"") + b"\n")
            continue
        if col.fmt is None:
            raise DecodeError(
                f"mariadb-binlog cannot print column {col.label[6:-1].decode()}", expected="a printable type"
            )
        out.append(col.label + col.fmt(value) + (col.comment if verbose > 1 else b"") + b"\n")


def _has_columns(bitmap: bytes | None, width: int) -> bool:
    return bitmap is not None and any(bitmap[i >> 3] >> (i & 7) & 1 for i in range(width))


def rows_sql(table_map: TableMapLike | None, rows_event: RowsEventLike, *, verbose: int = 1) -> bytes:
    """The ``###`` lines ``mariadb-binlog -v`` (``verbose=1``) or ``-vv`` (2) prints for ``rows_event``.

    ``table_map`` is the Table_map in force for the event's table id (None if
    there is none: the tool then prints a single "unknown table" line).
    Undecodable rows raise :class:`DecodeError` (where the tool would print a
    partial row and stop).
    """
    if table_map is None:
        return b"### Row event for unknown table #%d" % rows_event.table_id
    kind = rows_event.kind
    command, clause1, clause2 = _COMMANDS[kind]
    header = b"### %s %s.%s\n" % (command, quote_identifier(table_map.schema), quote_identifier(table_map.table))
    if kind == "insert" and not rows_event.rows_data:
        return b"### INSERT INTO %s.%s VALUES ()\n" % (
            quote_identifier(table_map.schema),
            quote_identifier(table_map.table),
        )
    if not _has_columns(rows_event.present_before, rows_event.width):
        raise DecodeError("row image without columns", offset=0, expected="a non-empty column bitmap")
    plan = _plan(table_map)
    after_empty = kind == "update" and not _has_columns(rows_event.present_after, rows_event.width)
    out: list[bytes] = []
    for change in row_decoder(table_map).decode(rows_event, raw=True):
        out.append(header)
        out.append(clause1)
        _image_lines(out, plan, change.after if kind == "insert" else change.before, verbose)  # type: ignore[arg-type]
        if clause2 is not None:
            if after_empty:
                out.append(b"### SET /* no columns */\n")
            else:
                out.append(clause2)
                _image_lines(out, plan, change.after, verbose)  # type: ignore[arg-type]
    return b"".join(out)
