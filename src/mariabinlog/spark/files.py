"""Reading what split planning needs from binlog files (driver side).

Private I/O helpers of the Spark layer: the GTID state at the start of a legacy file (its
Gtid_list event) and the GTID states an `.ibb` file records at page 1 and every
``gtid_state_interval`` pages.  All decoding is the codec's; this module only opens files.
Which files a path names is the engine's :func:`~mariabinlog.engine.files.discover_binlogs`.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator

from ..codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    GtidListEvent,
)
from ..codec.gtid import BinlogState
from ..codec.ibb import PAGE_SIZE_SHIFT
from ..codec.ibb_state import state_points
from ..codec.stream import EventStreamDecoder
from ..engine.files import BinlogFile, IbbDirectory
from ..errors import DecodeError
from .options import state_from_gtids

_HEAD_BYTES = 1 << 20


def legacy_start_state(path: str) -> BinlogState | None:
    """The GTID state at the start of a legacy file (its Gtid_list event), None without one."""
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    decoder = EventStreamDecoder(verify_checksum=False)
    pos = 4
    while pos + 19 <= len(head):
        try:
            event = decoder.decode(head, pos)
        except DecodeError:
            return None
        if event.type_code == GTID_LIST_EVENT:
            assert isinstance(event, GtidListEvent)
            return state_from_gtids(event.gtids)
        if event.type_code not in (FORMAT_DESCRIPTION_EVENT, BINLOG_CHECKPOINT_EVENT):
            return None
        pos = event.end_position or len(head)
    return None


def ibb_state_points(directory: str, file: BinlogFile) -> Iterator[tuple[int, BinlogState]]:
    """``(byte offset, GTID state)`` at page 1 and every interval page of an `.ibb` file.

    The state at a page start covers every event group whose COMMIT record began before it
    (ibb-format.md §6.2); the codec's :func:`~mariabinlog.codec.ibb_state.state_points` reads
    them and stops at the first interval page without a state record.
    """
    source = IbbDirectory(directory, {file.file_no: file.path})
    try:
        for page_no, state in state_points(source, file.file_no, file.size >> PAGE_SIZE_SHIFT):
            yield page_no << PAGE_SIZE_SHIFT, state
    finally:
        source.close()


def read_whole(path: str) -> mmap.mmap | bytes:
    """The file's bytes, memory-mapped (``b""`` for an empty file)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not size:
            return b""
        return mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
