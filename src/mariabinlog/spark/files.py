"""Finding binlog files and reading what split planning needs from them (driver side).

Private I/O helpers of the Spark layer: which files a path names, their kind and number, the
GTID state at the start of a legacy file (its Gtid_list event) and the GTID states an `.ibb`
file records at page 1 and every ``gtid_state_interval`` pages.  All decoding is the codec's;
this module only opens files.  (A directory listing with kinds and numbers would fit
``engine/files.py`` too; it lives here until the engine offers one.)
"""

from __future__ import annotations

import glob
import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    GtidListEvent,
)
from ..codec.gtid import BinlogState
from ..codec.ibb import (
    FLAG_CONT,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    GtidState,
    RecordReader,
    RecordType,
    chunk_at,
    decode_header_page,
    sniff_file,
)
from ..codec.ibb_page import TYPE_MASK, ZERO_PAGE
from ..codec.stream import EventStreamDecoder
from ..engine.files import IbbDirectory
from ..errors import DecodeError, OptionError
from .options import state_from_gtids

_LEGACY_NUMBER = re.compile(r"\.(\d+)$")
_HEAD_BYTES = 1 << 20


@dataclass(frozen=True, order=True)
class BinlogFile:
    """One binlog file: ``kind`` is ``"ibb"`` or ``"legacy"``; ``file_no`` comes from the
    `.ibb` header or the legacy name's numeric extension (``mysql-bin.000002`` -> 2)."""

    directory: str
    kind: str
    file_no: int
    path: str
    size: int


def _kind(path: str) -> str | None:
    """"ibb", "legacy", "empty" (pre-allocated `.ibb`) or None for anything else."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    try:
        return sniff_file(head)
    except DecodeError:
        return None


def describe(path: str) -> BinlogFile | None:
    """The :class:`BinlogFile` for ``path``; None for non-binlog and empty pre-allocated files."""
    path = os.path.abspath(path)
    kind = _kind(path)
    if kind not in ("ibb", "legacy"):
        return None
    size = os.path.getsize(path)
    if kind == "ibb":
        with open(path, "rb") as handle:
            header = decode_header_page(handle.read(PAGE_SIZE))
        if header is None:
            return None
        file_no = header.file_no
    else:
        match = _LEGACY_NUMBER.search(path)
        file_no = int(match.group(1)) if match else 0
    return BinlogFile(os.path.dirname(path), kind, file_no, path, size)


def discover(spec: str) -> list[BinlogFile]:
    """The binlog files ``spec`` names: a file, a directory (its binlog files) or a glob.

    Files are ordered by directory, then kind, then number, so the files of one directory form
    one stream in order.  A spec that names no binlog file is an :class:`OptionError`.
    """
    if any(ch in spec for ch in "*?["):
        candidates = sorted(glob.glob(spec))
    elif os.path.isdir(spec):
        candidates = sorted(os.path.join(spec, name) for name in os.listdir(spec))
    elif os.path.exists(spec):
        candidates = [spec]
    else:
        raise OptionError(f"binlog path {spec!r} does not exist")
    files = [f for f in (describe(p) for p in candidates if os.path.isfile(p)) if f is not None]
    if not files:
        raise OptionError(f"no binlog files (legacy or .ibb) found at {spec!r}")
    files.sort()
    return files


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
    (ibb-format.md §6.2).  Probing stops at the first interval page without a state record.
    """
    source = IbbDirectory(directory, {file.file_no: file.path})
    try:
        first = source.page(file.file_no, 0)
        header = decode_header_page(first) if first is not None else None
        if header is None:
            return
        full = _state_at(source, file.file_no, 1)
        if full is None:
            return
        base = state_from_gtids(full.gtids)
        yield PAGE_SIZE, base
        interval = header.gtid_state_interval
        if not interval:
            return
        pages = file.size >> PAGE_SIZE_SHIFT
        for page_no in range(interval, pages, interval):
            diff = _state_at(source, file.file_no, page_no)
            if diff is None:
                return
            state = base.copy()
            for gtid in state_from_gtids(diff.gtids):
                state.update(gtid)
            yield page_no << PAGE_SIZE_SHIFT, state
    finally:
        source.close()


def _state_at(source: IbbDirectory, file_no: int, page_no: int) -> GtidState | None:
    """The GTID_STATE record starting at offset 0 of ``page_no``, if there is one."""
    page = source.page(file_no, page_no)
    if page is None or bytes(page) == ZERO_PAGE:
        return None
    header = chunk_at(page, 0)
    if header is None or header[0] & FLAG_CONT or header[0] & TYPE_MASK != RecordType.GTID_STATE:
        return None
    for record in RecordReader(source, file_no, page_no << PAGE_SIZE_SHIFT):
        if record.type == RecordType.GTID_STATE and record.offset == page_no << PAGE_SIZE_SHIFT:
            payload = record.decode()
            assert isinstance(payload, GtidState)
            return payload
        return None
    return None


def read_whole(path: str) -> mmap.mmap | bytes:
    """The file's bytes, memory-mapped (``b""`` for an empty file)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not size:
            return b""
        return mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ)
