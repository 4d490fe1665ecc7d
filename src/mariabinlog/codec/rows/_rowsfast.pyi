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
