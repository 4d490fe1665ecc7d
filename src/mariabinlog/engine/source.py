"""Page sources for the codec's reader that stop at a given binlog end position.

Why: readers must only see durable data (seed 002 "Crash-safe replication"),
and recovery/state restore must not look past the recovered end, although the
files (or the page FIFO) may hold more.  A :class:`ClippedSource` serves pages
through a fetch function and presents everything at or after ``end`` as not
written yet: the page holding ``end`` comes back with its tail zeroed and its
CRC resealed, later pages as all-zero, later files as missing.  The codec's
``RecordReader`` then ends exactly at ``end`` and resumes from there later.
"""

from __future__ import annotations

from collections.abc import Callable

from ..codec.ibb.page import (
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    ZERO_PAGE,
    seal_page,
)
from .files import binlog_name
from .storage import BinlogFiles

Fetch = Callable[[int, int], "bytes | None"]


def clip_page(page: bytes, offset: int) -> bytes:
    """``page`` with bytes from ``offset`` on zeroed and the CRC recomputed."""
    if offset <= 0:
        return ZERO_PAGE
    buf = bytearray(PAGE_SIZE)
    buf[:offset] = page[:offset]
    return seal_page(buf)


class ClippedSource:
    """A codec ``PageSource`` over ``fetch`` that ends at ``end`` = (file_no, byte offset), if set."""

    __slots__ = ("end", "fetch")

    def __init__(self, fetch: Fetch, end: tuple[int, int] | None = None) -> None:
        self.fetch = fetch
        self.end = end

    def page(self, file_no: int, page_no: int) -> bytes | None:
        """The page as it is at ``end`` (see the module docstring)."""
        end = self.end
        if end is not None:
            end_file, end_offset = end
            if file_no > end_file:
                return None
            if file_no == end_file:
                start = page_no << PAGE_SIZE_SHIFT
                if start >= end_offset:
                    return None if page_no == 0 else ZERO_PAGE
                in_page = end_offset - start
                if in_page < PAGE_DATA_END:
                    data = self.fetch(file_no, page_no)
                    return None if data is None else clip_page(data, in_page)
        return self.fetch(file_no, page_no)

    def name(self, file_no: int) -> str:
        """``binlog-NNNNNN.ibb``."""
        return binlog_name(file_no)


def disk_source(files: BinlogFiles, end: tuple[int, int] | None = None) -> ClippedSource:
    """Pages straight from the files (recovery, state restore, offline checks)."""
    return ClippedSource(files.read_page, end)
