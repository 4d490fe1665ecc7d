"""Agreement of a Table_map with the history, and the optional metadata the history supplies.

:func:`resolve` compares a Table_map (column count, real types) with the
history's table at that position.  When they agree it returns the optional
metadata a ``binlog_row_metadata=FULL`` server would have logged (names,
signedness, charsets, ENUM/SET labels, primary key), merged over whatever the
event carries, so the codec's row decoder gives typed, named values unchanged.
When they disagree, or the history does not know the table, it returns None
with the reason: the caller decodes with ``@N`` names and warns.  With FULL
metadata in the event the binlog's names win; the history is only checked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..codec import charsets
from ..codec import columns as C
from ..codec.columns import OptionalMetadata
from .model import Column, Table, binlog_types

#: Collation MariaDB uses when a charset is named without one, where ``<cs>_general_ci`` is not it.
_DEFAULT_COLLATIONS = {"latin1": "latin1_swedish_ci", "binary": "binary"}
_ALIASES = {"utf8": "utf8mb3"}


@cache
def _collation_ids() -> dict[str, int]:
    return {name: cid for cid, (_, name) in charsets.COLLATIONS.items()}


@cache
def collation_id(charset: str | None, collation: str | None) -> int | None:
    """The collation id for a column's collation (or its charset's default collation)."""
    names = _collation_ids()
    if collation is not None and collation.lower() in names:
        return names[collation.lower()]
    if charset is None:
        return None
    charset = _ALIASES.get(charset.lower(), charset.lower())
    for candidate in (_DEFAULT_COLLATIONS.get(charset), f"{charset}_general_ci"):
        if candidate is not None and candidate in names:
            return names[candidate]
    ids = sorted(cid for cid, (cs, _) in charsets.COLLATIONS.items() if cs == charset)
    return ids[0] if ids else None


@dataclass(frozen=True)
class Resolution:
    """What the history says about one Table_map: metadata to decode with, or why not."""

    metadata: OptionalMetadata | None
    problem: str | None = None


def _types_problem(table: Table, types: bytes, metas: tuple[int, ...]) -> str | None:
    if len(types) != len(table.columns):
        return f"the binlog has {len(types)} columns, the history {len(table.columns)}"
    for index, (column, ctype, meta) in enumerate(zip(table.columns, types, metas)):
        real = C.real_type(ctype, meta)
        if real not in binlog_types(column.type):
            logged = C.TYPE_NAMES.get(real, str(real))
            return f"column {index + 1} ({column.name}) is {logged} in the binlog but {column.sql()} in the history"
    return None


def _encode(values: tuple[str, ...], column: Column) -> tuple[bytes, ...]:
    cid = collation_id(column.charset, column.collation)
    codec = C.collation_codec(cid) if cid is not None else None
    return tuple(v.encode(codec or "utf-8", "surrogateescape") for v in values)


def _signedness(table: Table, types: bytes, metas: tuple[int, ...]) -> bytes:
    bits: list[bool] = [
        column.unsigned
        for column, ctype, meta in zip(table.columns, types, metas)
        if C.real_type(ctype, meta) in C.NUMERIC_TYPES
    ]
    out = bytearray((len(bits) + 7) // 8)
    for index, flag in enumerate(bits):
        if flag:
            out[index >> 3] |= 0x80 >> (index & 7)
    return bytes(out)


def history_metadata(table: Table, types: bytes, metas: tuple[int, ...]) -> OptionalMetadata:
    """The FULL optional metadata of ``table`` for a Table_map of these (agreeing) types."""
    char_ids: list[int] = []
    enum_set_ids: list[int] = []
    enums: list[tuple[bytes, ...]] = []
    sets: list[tuple[bytes, ...]] = []
    for column, ctype, meta in zip(table.columns, types, metas):
        real = C.real_type(ctype, meta)
        cid = collation_id(column.charset, column.collation)
        if column.is_binary and real != C.MYSQL_TYPE_ENUM and real != C.MYSQL_TYPE_SET:
            cid = C.BINARY_COLLATION
        if real in C.CHARACTER_TYPES:
            char_ids.append(cid if cid is not None else C.BINARY_COLLATION)
        elif real in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET):
            enum_set_ids.append(cid if cid is not None else C.BINARY_COLLATION)
            (enums if real == C.MYSQL_TYPE_ENUM else sets).append(_encode(column.members, column))
    primary = table.key_indexes()
    return OptionalMetadata(
        signedness=_signedness(table, types, metas),
        column_charsets=tuple(char_ids) if char_ids else None,
        column_names=tuple(c.name for c in table.columns),
        set_str_values=tuple(sets) if sets else None,
        enum_str_values=tuple(enums) if enums else None,
        simple_primary_key=primary or None,
        enum_and_set_column_charsets=tuple(enum_set_ids) if enum_set_ids else None,
    )


def resolve(table: Table | None, types: bytes, metas: tuple[int, ...], logged: OptionalMetadata | None) -> Resolution:
    """The metadata to decode a Table_map with (see the module docstring).

    ``logged`` is the event's own optional metadata.  A returned ``problem``
    with metadata None means: decode with ``@N`` names and warn; a problem with
    metadata means the binlog's FULL metadata was used and the history differs.
    """
    if logged is not None and logged.column_names is not None:
        if table is None or table.unknown is not None:
            return Resolution(logged)
        problem = _types_problem(table, types, metas)
        if problem is None and tuple(c.name for c in table.columns) != logged.column_names:
            problem = f"column names {list(logged.column_names)} in the binlog, {[c.name for c in table.columns]} in the history"
        return Resolution(logged, problem)
    if table is None:
        return Resolution(None, "the schema history does not know the table (created before the binlog starts?)")
    if table.unknown is not None:
        return Resolution(None, f"the history lost track of the table: {table.unknown}")
    problem = _types_problem(table, types, metas)
    if problem is not None:
        return Resolution(None, problem)
    full = history_metadata(table, types, metas)
    if logged is None:
        return Resolution(full)
    # MINIMAL: the binlog's signedness and charsets are authoritative; the history adds the rest.
    merged = replace(
        logged,
        column_names=full.column_names,
        enum_str_values=full.enum_str_values,
        set_str_values=full.set_str_values,
        simple_primary_key=full.simple_primary_key,
        order=None,
    )
    if merged.default_charset is None and merged.column_charsets is None:
        merged = replace(merged, column_charsets=full.column_charsets)
    if merged.enum_and_set_default_charset is None and merged.enum_and_set_column_charsets is None:
        merged = replace(merged, enum_and_set_column_charsets=full.enum_and_set_column_charsets)
    return Resolution(merged)

