"""Reading binlog files for planning and for splits, wherever they live (:mod:`.fs`).

The GTID state at the start of a legacy file (its Gtid_list event), the GTID states an `.ibb`
file records at page 1 and every ``gtid_state_interval`` pages, and the events of a legacy
split: a split that starts inside a file enters it at the first believable event header
(:mod:`mariabinlog.codec.events.resync`: ``log_pos`` chain and CRC32 footer), so a large legacy file
is read by several tasks, each from its own byte range.  All decoding is the codec's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    Event,
    GtidListEvent,
    read_header,
)
from ..codec.gtid import BinlogState
from ..codec.ibb import PAGE_SIZE_SHIFT, chunk_at
from ..codec.ibb.page import CHUNK_HEADER_SIZE, LEGACY_MAGIC, file_kind
from ..codec.ibb.state import state_points
from ..codec.events.resync import footer_matches, header_claim, positions_recorded
from ..codec.events.stream import EventStreamDecoder
from ..engine.files import BinlogFile
from ..errors import DecodeError
from .fs import ByteWindow, Storage, open_pages, read_range
from .options import state_from_gtids

log = logging.getLogger(__name__)
_HEAD_BYTES = 1 << 16


def legacy_start_state(path: str, storage: Storage) -> BinlogState | None:
    """The GTID state at the start of a legacy file (its Gtid_list event), None without one."""
    head = read_range(path, 0, _HEAD_BYTES, storage)
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


def _unwritten(path: str, page_no: int, storage: Storage) -> bool:
    """Whether page ``page_no`` of an `.ibb` file starts with the end-of-data mark (a page the
    writer has not reached: every written page starts with a chunk)."""
    head = read_range(path, page_no << PAGE_SIZE_SHIFT, CHUNK_HEADER_SIZE, storage)
    try:
        return chunk_at(head, 0) == (0, 0)
    except DecodeError:  # a damaged page is written; its reader reports it
        return False


def ibb_data_end(file: BinlogFile, storage: Storage) -> int:
    """The byte offset where an `.ibb` file's written pages end: its size, or the first page the
    writer has not reached in a file the engine pre-allocated at full size (an archive's
    current file: 1 GiB of which a few pages are written).

    Pages are written in order, so the written ones form a prefix: one ranged read of the last
    page settles a full file, a binary search (about 16 reads for 1 GiB) a pre-allocated one.
    Planning cuts splits only over the written pages; without this a pre-allocated file is cut
    into splits of nothing (65,535 of them with ``maxPartitionBytes=1``).
    """
    pages = file.size >> PAGE_SIZE_SHIFT
    if pages <= 1 or not _unwritten(file.path, pages - 1, storage):
        return file.size
    low, high = 1, pages - 1  # the first unwritten page is in [low, high]
    while low < high:
        middle = (low + high) // 2
        if _unwritten(file.path, middle, storage):
            high = middle
        else:
            low = middle + 1
    return low << PAGE_SIZE_SHIFT


def ibb_state_points(file: BinlogFile, storage: Storage) -> Iterator[tuple[int, BinlogState]]:
    """``(byte offset, GTID state)`` at page 1 and every interval page of an `.ibb` file.

    The state at a page start covers every event group whose COMMIT record began before it
    (ibb-format.md §6.2); the codec's :func:`~mariabinlog.codec.ibb.state.state_points` reads
    them and stops at the first interval page without a state record.
    """
    source = open_pages(file.directory, {file.file_no: file.path}, storage)
    try:
        for page_no, state in state_points(source, file.file_no, file.size >> PAGE_SIZE_SHIFT):
            yield page_no << PAGE_SIZE_SHIFT, state
    finally:
        source.close()


def legacy_entry(window: ByteWindow, start: int, stop: int, decoder: EventStreamDecoder) -> tuple[Event | None, int]:
    """Where reading a legacy file from the first event that starts in ``[start, stop)`` begins:
    its Format_description (at offset 4, read first for its checksum setting; None for a file
    of no event) and the offset of that first event.  Inside the file the reader enters at the
    first header whose ``log_pos`` and CRC32 footer prove it an event; a file that does not
    record ``log_pos`` is walked from its start."""
    head, _ = window.span(0, 4)
    if file_kind(head[:4]) != "legacy":
        raise DecodeError(
            "not a legacy binary log file", offset=0, expected=f"magic {LEGACY_MAGIC.hex(' ')}", file=window.path
        )
    if window.size <= 4:
        return None, 4
    first = window.decode(decoder, 4)
    pos = first.end_position
    assert pos is not None
    if start > pos:
        buf, base = window.span(4, first.end_position - 4)
        if positions_recorded(buf, 4 - base):
            pos = _enter(window, start, stop, decoder.checksum_alg)
        else:
            log.info("%s records no log_pos; walking it from the start to offset %d", window.path, start)
            while pos < start and pos < window.size:
                event = window.decode(decoder, pos)
                pos = event.end_position  # type: ignore[assignment]
    return first, pos


def skipped_length(window: ByteWindow, pos: int, skip: frozenset[int]) -> int:
    """The length of the event at ``pos`` when its type is in ``skip`` (hopped over by its
    header's length, neither decoded nor yielded), else 0."""
    if not skip:
        return 0
    buf, base = window.span(pos, HEADER_LEN)
    if pos - base + HEADER_LEN <= len(buf):
        _, code, _, length, _, _ = read_header(buf, pos - base)
        if code in skip and length >= HEADER_LEN:
            return length  # type: ignore[no-any-return]
    return 0


def legacy_events(window: ByteWindow, start: int, stop: int, decoder: EventStreamDecoder,
                  skip: frozenset[int] = frozenset()) -> Iterator[Event]:
    """The events of a legacy file from the first event that starts in ``[start, stop)`` on,
    after its Format_description (:func:`legacy_entry`; yielded first, as
    :func:`~mariabinlog.codec.events.stream.iter_legacy_events` does).  Events whose type is
    in ``skip`` are hopped over (:func:`skipped_length`: a planning pass that wants only DDL
    skips the rows events, most of a binlog's bytes)."""
    first, pos = legacy_entry(window, start, stop, decoder)
    if first is None:
        return
    yield first
    while pos < window.size:
        hop = skipped_length(window, pos, skip)
        if hop:
            pos += hop
            continue
        event = window.decode(decoder, pos)
        yield event
        pos = event.end_position  # type: ignore[assignment]


def _enter(window: ByteWindow, start: int, stop: int, checksum_alg: int) -> int:
    """The file offset of the first event starting in ``[start, stop)`` (the file's size when
    none does): the first header there whose ``log_pos`` chain and footer check out."""
    pos = start
    limit = min(window.size, stop)
    while pos < limit:
        buf, base = window.span(pos, HEADER_LEN)
        length = header_claim(buf, pos - base, pos)
        if length is not None and pos + length <= window.size:
            event_buf, event_base = window.span(pos, length)
            if footer_matches(event_buf, pos - event_base, length, checksum_alg):
                return pos
        pos += 1
    return window.size

