"""Types of the compiled row-image decoder (``_rowsfast.c``); used by :mod:`mariabinlog.codec.rows`."""

from collections.abc import Callable, Sequence
from typing import Any

PLAN_VERSION: int

class Image:
    """The program reading images of one column bitmap: one entry per present column.

    Entries are ``(slot, fixed, opcode, size, flag, a, b, obj)`` (see ``rows.packed._OP_*``).
    """

    null_bytes: int

    def __init__(
        self, width: int, program: Sequence[tuple[int, bool, int, int, bool, int, int, Any]], reader: Any
    ) -> None: ...

def decode(data: bytes, first: Image, second: Image | None, kind: str) -> list[Any]:
    """Every row of a rows event's ``rows_data`` as ``RowChange`` tuples."""

def configure(
    absent: object,
    date: type,
    time: type,
    datetime: type,
    timestamp: type,
    rowchange: type,
    decimal: Callable[[str], Any],
    error_hook: Callable[[Any, bytes, int, int], Any],
) -> None:
    """Give the module the value classes and the error hook of ``rows``."""

class MapBuilder:
    """Row images of rows events as the buffers of two Arrow ``map<string,string>`` arrays
    (``before``, ``after``), values rendered as ``render`` renders them."""

    rows: int
    nbytes: int

    def __init__(self, render: Callable[[Any], str | None]) -> None: ...
    def add(
        self,
        data: bytes,
        pos: int,
        first: Image,
        second: Image | None,
        kind: str,
        names: tuple[str, ...],
        event_no: int,
        row_index: int,
        max_rows: int,
        max_bytes: int,
    ) -> tuple[int, int]:
        """Append rows from ``pos`` until the data ends or a bound is reached: (pos, next row index)."""
    def take(self) -> tuple[int, bytes, bytes, tuple[Any, ...], tuple[Any, ...]]:
        """(rows, event numbers, row indexes, before buffers, after buffers); starts empty again."""

def repeat(events: list[Any], kinds: str, index: bytes) -> list[tuple[Any, ...]]:
    """Per-event values repeated per row (``index``: int32 event numbers) as Arrow buffers:
    per ``kinds`` letter ``q``/``i`` (valid, nulls, data), ``s`` (valid, nulls, offsets, data),
    ``l`` (valid, nulls, offsets, child offsets, child data)."""
