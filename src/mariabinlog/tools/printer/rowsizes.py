"""Row counts and ``--flashback`` row reversal as ``mariadb-binlog`` does them, measured with
the codec's row-image layout (``codec/rows/layout.py``: size codes, the compiled counter);
the compiled ``count_rows`` of ``_dumpfast.c`` takes those size codes as its plan.
"""

from __future__ import annotations

from typing import Any

from ...codec.events import (
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
)
from ...codec.rows.layout import full_size_codes, image_fields, row_counter, size_codes
from ...errors import DecodeError, FlashbackError
from .base import _fast

__all__ = ["FLASHBACK_TYPE", "count_rows", "flashback_rows", "full_size_codes", "row_counter", "size_codes"]


def count_rows(
    sizes: tuple[int, ...],
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
            data, pos, end, sizes, width, cols, cols_ai if kind_update else None
        )
    return row_counter(sizes, width, cols, cols_ai if kind_update else None)(
        data, pos, end
    )


#: Flashback prints a Write_rows event as a Delete_rows one and vice versa.
FLASHBACK_TYPE = {
    WRITE_ROWS_EVENT_V1: DELETE_ROWS_EVENT_V1,
    DELETE_ROWS_EVENT_V1: WRITE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT: DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT: WRITE_ROWS_EVENT,
}


def flashback_rows(
    full_sizes: tuple[int, ...],
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
    measure ends the program with "Error row length: 0" (:class:`FlashbackError`),
    and so does an image of no bytes at all (no column present: no NULL bitmap,
    no value), which would otherwise never end the loop.
    """
    sizes = full_sizes[:width]
    rows = []
    try:
        while pos < end:
            row_start = pos
            _, pos = image_fields(sizes, cols, data, pos, end)
            before_end = pos
            if before_end == row_start:
                raise FlashbackError()
            if update:
                _, pos = image_fields(sizes, cols, data, pos, end)
                rows.append(
                    bytes(data[before_end:pos]) + bytes(data[row_start:before_end])
                )
            else:
                rows.append(bytes(data[row_start:pos]))
    except (DecodeError, IndexError):
        raise FlashbackError() from None
    return b"".join(reversed(rows))
