"""Types of the compiled Arrow builder of the Spark rows view (``_arrowfast.c``); used by
:mod:`mariabinlog.spark.read`.  It reads the codec's compiled image programs
(``mariabinlog.codec.rows._rowsfast.Image``)."""

from collections.abc import Callable
from typing import Any

PLAN_VERSION: int

def configure(
    image: type,
    absent: object,
    date: type,
    time: type,
    datetime: type,
    timestamp: type,
    decimal: Callable[[str], Any],
    error_hook: Callable[[Any, bytes, int, int], Any],
) -> None:
    """Give the module the codec's ``Image`` type, value classes and error hook (``rows.compiled_images()``)."""

def double_repr(x: float) -> str:
    """``float.__repr__(x)`` as the map builder renders FLOAT/DOUBLE values."""

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
        first: Any,
        second: Any | None,
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
