"""The row-image layout as ``mariadb-binlog`` measures it: one size code per column.

The C tool does not decode rows to count them or to reverse them; it measures each row
image with ``calc_field_event_length`` (``count_row_events``) or ``table_def::calc_field_size``
(``change_to_flashback_event``), quirks included.  A table map's columns become size codes,
one per column: a positive fixed byte size, ``-1``/``-2`` for a 1/2-byte length prefix
(VARCHAR, CHAR), ``-10 - n`` for an ``n``-byte BLOB length prefix, and ``0`` where the tool
gives up (GEOMETRY, old DECIMAL, ...), which stops its row count there.

This is the one description of that layout: the printer's pure-Python row counter
(:func:`row_counter`, compiled from the size codes), its ``--flashback`` row splitter
(:func:`image_fields`) and the compiled ``count_rows`` of ``tools/printer/_dumpfast.c``
(which receives the size codes as its plan) all measure with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import DecodeError
from .. import columns as C
from ..primitives import U32
from .packed import decimal_size


def size_codes(column_types: bytes, column_meta: Sequence[int]) -> tuple[int, ...]:
    """The ``count_row_events`` size code of each column of a table map."""
    return tuple(_field_size_code(t, m) for t, m in zip(column_types, column_meta))


def full_size_codes(column_types: bytes, column_meta: Sequence[int], sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The ``--flashback`` size codes: table_def::calc_field_size measures GEOMETRY/JSON too."""
    return tuple(
        (-10 - m if 1 <= m <= 4 else 0) if t in _BLOB_LIKE else size
        for t, m, size in zip(column_types, column_meta, sizes)
    )


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
    """calc_field_event_length as a size code (see the module's docstring)."""
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
        return decimal_size(precision, scale)
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
    namespace: dict[str, Any] = {"u32": U32.unpack_from}
    exec(compile("\n".join(lines), "<row counter>", "exec"), namespace)  # noqa: S102 - generated from sizes only
    func = namespace["count"]
    if len(_COUNTERS) > 4096:
        _COUNTERS.clear()
    _COUNTERS[key] = func
    return func


def image_fields(
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
