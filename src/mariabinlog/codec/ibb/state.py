"""The GTID state record of `.ibb` files and the GTID seek built on it (ibb-format.md §6.2, §7).

Why one module: the engine's readers, recovery, the archive reader of replication and the
Spark planner all need "the GTID state at this page" and "where does a replica with this
connect state start"; written once here, sans-I/O, they cannot disagree.  Everything asks a
codec :class:`~mariabinlog.codec.ibb.reader.PageSource` for pages (``page(file_no,
page_no)``), so the caller decides where pages come from (files, the engine's page FIFO, a
source clipped at the durable end).

* :func:`read_state_record`: the GTID_STATE record at the start of a page, if any;
* :func:`state_at_page`: the full state at page 1, or page 1's state plus an interval
  page's differential state;
* :func:`state_points`: every ``(page_no, state)`` a file records;
* :func:`commit_gtid`: the GTID of a COMMIT record (its first event);
* :class:`EndState`: the GTID state as of the end of a run of files (recovery, the look-only
  view, the archive reader, the binlog server): the newest full state, the newest interval state
  after it, then every commit up to the end;
* :func:`seek_gtid`: the newest position whose state lies before a connect state: the
  newest file whose page-1 state is before it, then a binary search over that file's
  interval states (states only grow along a file, so "before" is monotone).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ...errors import DecodeError
from ..events import GTID_EVENT, GtidEvent, decode_event
from ..groups import gtid_of
from ..gtid import BinlogState, ConnectState, Gtid
from .page import FLAG_CONT, PAGE_SIZE_SHIFT, TYPE_MASK, IbbHeader, RecordType, chunk_at, decode_header_page
from .reader import PageSource, Record, RecordReader
from .records import CommitRecord, GtidState

__all__ = [
    "EndState",
    "SeekResult",
    "commit_gtid",
    "latest_state",
    "read_header",
    "read_state_record",
    "seek_gtid",
    "state_at_page",
    "state_points",
]

_EVENT_HEADER = 19


class SeekResult(NamedTuple):
    """Where a GTID seek lands: ``offset`` is a page start in ``file_no`` and ``state`` the
    binlog state of every group that began before it."""

    file_no: int
    offset: int
    state: BinlogState


def read_header(source: PageSource, file_no: int) -> IbbHeader | None:
    """The valid header of ``file_no``, None when the file is missing, empty or damaged."""
    page = source.page(file_no, 0)
    if page is None:
        return None
    try:
        return decode_header_page(page)
    except DecodeError:
        return None


def read_state_record(source: PageSource, file_no: int, page_no: int) -> GtidState | None:
    """The GTID_STATE record starting at offset 0 of the page, None when there is none
    (page not written yet, another record there, or damaged data)."""
    page = source.page(file_no, page_no)
    if page is None:
        return None
    try:
        head = chunk_at(page, 0)
        if head is None or head[0] & FLAG_CONT or head[0] & TYPE_MASK != RecordType.GTID_STATE:
            return None
        for record in RecordReader(source, file_no, page_no << PAGE_SIZE_SHIFT, skip_partial=True):
            if record.type == RecordType.GTID_STATE and record.offset == page_no << PAGE_SIZE_SHIFT:
                return GtidState.decode(record.payload)
            return None
    except DecodeError:
        return None
    return None


def _state(record: GtidState) -> BinlogState:
    return BinlogState.from_list(Gtid(*triple) for triple in record.gtids)


def _apply(base: BinlogState, diff: GtidState) -> BinlogState:
    state = base.copy()
    for triple in diff.gtids:
        state.update(Gtid(*triple))
    return state


def state_at_page(source: PageSource, file_no: int, page_no: int, base: BinlogState | None = None) -> BinlogState | None:
    """The binlog state at the start of ``page_no`` of ``file_no`` as the file records it:
    page 1's full state, or (``page_no`` an interval page) that plus the differential state
    there.  ``base`` is page 1's state when the caller has it.  None without a record."""
    if base is None:
        full = read_state_record(source, file_no, 1)
        if full is None:
            return None
        base = _state(full)
    if page_no == 1:
        return base
    diff = read_state_record(source, file_no, page_no)
    return None if diff is None else _apply(base, diff)


def state_points(source: PageSource, file_no: int, pages: int) -> Iterator[tuple[int, BinlogState]]:
    """``(page_no, state)`` at page 1 and every interval page below ``pages`` of the file;
    stops at the first interval page without a state record (the written end)."""
    header = read_header(source, file_no)
    if header is None:
        return
    full = read_state_record(source, file_no, 1)
    if full is None:
        return
    base = _state(full)
    yield 1, base
    interval = header.gtid_state_interval
    if interval <= 1:
        return
    for page_no in range(interval, pages, interval):
        state = state_at_page(source, file_no, page_no, base)
        if state is None:
            return
        yield page_no, state


def commit_gtid(payload: bytes | bytearray | memoryview) -> Gtid | None:
    """The GTID of a COMMIT record's payload (its data starts with the GTID event), None for a
    restart-marker record (no GTID event first)."""
    data = CommitRecord.decode(payload).data
    if len(data) < _EVENT_HEADER or data[4] != GTID_EVENT:
        return None
    if len(data) < _EVENT_HEADER + 13 or int.from_bytes(data[9:13], "little") < _EVENT_HEADER + 13:
        event = decode_event(data, 0, int.from_bytes(data[9:13], "little"))  # raises the decoder's error
        assert isinstance(event, GtidEvent)
        return Gtid(event.domain_id, event.server_id, event.seq_no)
    return gtid_of(data)[0]


def seek_gtid(
    source: PageSource,
    files: Sequence[int],
    target: ConnectState,
    end: tuple[int, int] | None = None,
) -> SeekResult | None:
    """The newest page start of ``files`` (ascending, at or before ``end``) whose state lies
    before ``target``; None when no file's page-1 state does (the position was purged, or
    nothing is readable yet: the caller tells which)."""
    for file_no in reversed(files):
        if end is not None and file_no > end[0]:
            continue
        base = state_at_page(source, file_no, 1)
        if base is None or not base.is_before_pos(target):
            continue
        header = read_header(source, file_no)
        interval = header.gtid_state_interval if header is not None else 0
        if end is not None and file_no == end[0]:
            last_page = end[1] >> PAGE_SIZE_SHIFT
        else:
            last_page = header.page_count - 1 if header is not None else 1
        best, chosen = 1, base
        if 1 < interval <= last_page:
            low, high = 1, last_page // interval
            while low <= high:
                middle = (low + high) // 2
                state = state_at_page(source, file_no, middle * interval, base)
                if state is not None and state.is_before_pos(target):
                    best, chosen = middle * interval, state
                    low = middle + 1
                else:
                    high = middle - 1
        return SeekResult(file_no, best << PAGE_SIZE_SHIFT, chosen)
    return None


def latest_state(source: PageSource, file_no: int, limit_page: int, interval: int) -> tuple[int, GtidState | None]:
    """The newest differential state record of ``file_no`` at a page <= ``limit_page``:
    ``(page_no, record)``, or ``(1, None)`` when there is none (page 1's full state rules)."""
    if interval <= 1:
        return 1, None
    page_no = (limit_page // interval) * interval
    while page_no >= interval and page_no > 1:
        state = read_state_record(source, file_no, page_no)
        if state is not None:
            return page_no, state
        page_no -= interval
    return 1, None


class EndState:
    """The GTID state as of ``end`` (``(file_no, byte offset)``, None: the end of the data) of
    the files ``file_nos`` (ascending), as ibb-format.md §6.2 rebuilds it: the full state at
    page 1 of the newest file that has one, plus that file's newest interval state before the
    end, plus the GTID of every COMMIT record after it (a run without any state record is
    walked from page 1 of its first file).

    Build it, then iterate :meth:`records` to the end (a caller that also looks at the records,
    recovery's pending XA, sees each one after its GTID is applied); :attr:`state` is then the
    state at the end, :attr:`changed` the (domain, server) pairs the end file changed, and
    :attr:`latest` the last state record read before the walk (for its ``xa_ref_file_no``).
    """

    __slots__ = ("changed", "end_file", "file_no", "latest", "page_no", "source", "state")

    def __init__(self, source: PageSource, file_nos: Sequence[int], end: tuple[int, int] | None = None) -> None:
        self.source = source
        self.state = BinlogState()
        self.changed: set[tuple[int, int]] = set()
        self.latest: GtidState | None = None
        existing = [n for n in file_nos if end is None or n <= end[0]]
        self.end_file = end[0] if end is not None else (existing[-1] if existing else 0)
        for file_no in reversed(existing):
            full = read_state_record(source, file_no, 1)
            if full is not None:
                break
        else:
            self.file_no, self.page_no = (existing[0] if existing else self.end_file), 1
            return
        self.file_no = file_no
        self.state = _state(full)
        header = read_header(source, file_no)
        interval = header.gtid_state_interval if header is not None else 0
        if end is not None and file_no == end[0]:
            limit = end[1] >> PAGE_SIZE_SHIFT
        else:
            limit = header.page_count if header is not None else 1
        self.page_no, diff = latest_state(source, file_no, limit, interval)
        self.latest = diff if diff is not None else full
        if diff is not None:
            for domain, server, seq in diff.gtids:
                self.state.update(Gtid(domain, server, seq))
                self.changed.add((domain, server))

    def records(self) -> Iterator[Record]:
        """The records from the state point to the end, each COMMIT's GTID applied first."""
        state, current = self.state, self.file_no
        for record in RecordReader(self.source, self.file_no, self.page_no << PAGE_SIZE_SHIFT, skip_partial=True):
            if record.file_no != current:
                current = record.file_no
                self.changed = set()
            if record.type == RecordType.COMMIT:
                gtid = commit_gtid(record.payload)
                if gtid is not None:
                    state.update(gtid)
                    self.changed.add((gtid.domain, gtid.server))
            yield record
        if current != self.end_file:
            self.changed = set()

    def walk(self, *, torn_end: bool = False) -> BinlogState:
        """Read to the end and return the state there; ``torn_end``: a record that does not
        decode (a page a concurrent writer is writing) is the end."""
        try:
            for _ in self.records():
                pass
        except DecodeError:
            if not torn_end:
                raise
        return self.state
