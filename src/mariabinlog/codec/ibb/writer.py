"""Pure `.ibb` writer: records -> chunks -> CRC-sealed 16 KiB pages (ibb-format.md §5.2, §6.2, §6.3).

``PageWriter`` mirrors MariaDB's ``fsp_binlog_write_rec`` as a state machine:
it lays each record out over chunks, writes the header page when a file
begins, puts a GTID_STATE record at offset 0 of page 1 and of every page that
is a multiple of the state interval (nested into whatever record is spanning
that page), and hands out completed pages.  It never touches files: the
caller drains pages and writes them where it wants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

from .page import (
    CHUNK_HEADER_SIZE,
    FILLER,
    FLAG_CONT,
    FLAG_LAST,
    NO_FILE_REF,
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    IbbHeader,
    RecordType,
    seal_page,
)
from .records import OobData, OobRef
from ..primitives import Buffer

_MIN_CHUNK_ROOM = CHUNK_HEADER_SIZE + 1
_STATE_CHUNK_MAX = PAGE_DATA_END - CHUNK_HEADER_SIZE
#: The caller's key of a record :meth:`PageWriter.write_records` writes (a GTID).
K = TypeVar("K")


class WrittenPage(NamedTuple):
    """A page ready to be stored at byte ``page_no * PAGE_SIZE`` of file ``file_no``."""

    file_no: int
    page_no: int
    data: bytes


class RecordSpan(NamedTuple):
    """Where a record was written: start and end as (file_no, byte offset in that file)."""

    file_no: int
    offset: int
    end_file_no: int
    end_offset: int


StatePayload = Callable[[int, int], bytes]
"""``(file_no, page_no) -> GTID_STATE payload``; page 1 wants the full state, others the differential."""
HeaderFactory = Callable[[int, int], IbbHeader]
"""``(file_no, page_count) -> header`` for a file the writer begins."""


class PageWriter:
    """Lays records out into pages; completed pages accumulate until :meth:`drain`.

    ``pages_per_file`` applies to files begun from now on.  The state interval
    of a file is the ``gtid_state_interval`` of its header (0 = none).
    """

    __slots__ = (
        "pages_per_file",
        "_state_payload",
        "_header_factory",
        "_file_no",
        "_page_no",
        "_offset",
        "_headers",
        "_pages_in_file",
        "_interval",
        "_page",
        "_done",
    )

    def __init__(
        self,
        file_no: int = 0,
        *,
        pages_per_file: int,
        state_payload: StatePayload,
        state_interval: int = 128,
        header_factory: HeaderFactory | None = None,
    ) -> None:
        if pages_per_file < 4:
            raise ValueError("a binlog file has at least 4 pages")
        self.pages_per_file = pages_per_file
        self._state_payload = state_payload
        self._header_factory = header_factory or (
            lambda file_no, page_count: IbbHeader(
                file_no,
                page_count,
                gtid_state_interval=state_interval,
                oob_ref_file_no=file_no,
                xa_ref_file_no=NO_FILE_REF,
            )
        )
        self._file_no = file_no
        self._page_no = 0
        self._offset = 0
        self._pages_in_file = pages_per_file
        self._interval = state_interval
        self._page = bytearray(PAGE_SIZE)
        self._done: list[WrittenPage] = []
        #: Header pages written so far (a file begun): :meth:`write_records` stops after one.
        self._headers = 0

    @classmethod
    def resume(
        cls,
        header: IbbHeader,
        page_no: int,
        offset: int,
        page: Buffer | None,
        *,
        pages_per_file: int,
        state_payload: StatePayload,
        state_interval: int = 128,
        header_factory: HeaderFactory | None = None,
        pages_in_file: int | None = None,
    ) -> PageWriter:
        """Continue the file of ``header`` at ``page_no``/``offset``; ``page`` holds that page's bytes so far.

        The current file keeps its header's state interval and page count
        (unless ``pages_in_file`` says it was truncated); ``state_interval`` is
        for the files begun later.
        """
        writer = cls(
            header.file_no,
            pages_per_file=pages_per_file,
            state_payload=state_payload,
            state_interval=state_interval,
            header_factory=header_factory,
        )
        writer._interval = header.gtid_state_interval
        writer._page_no = page_no
        writer._offset = offset
        writer._pages_in_file = header.page_count if pages_in_file is None else pages_in_file
        if page is not None and offset:
            writer._page[:offset] = page[:offset]
        return writer

    @property
    def position(self) -> tuple[int, int]:
        """Write position as (file_no, byte offset in the file).

        The next record starts here unless a header page or GTID state record
        falls due first (at offset 0 of page 0, page 1 or an interval page).
        """
        return self._file_no, (self._page_no << PAGE_SIZE_SHIFT) + self._offset

    def drain(self) -> list[WrittenPage]:
        """Hand over the pages completed since the last call, in write order."""
        done, self._done = self._done, []
        return done

    def partial_page(self) -> WrittenPage | None:
        """The current, partly filled page (CRC-sealed, zeros after the data), if it holds data."""
        if not self._offset:
            return None
        return WrittenPage(self._file_no, self._page_no, seal_page(bytearray(self._page)))

    def prepare(self) -> tuple[int, int]:
        """Write what falls due before the next chunk (header page, GTID state, page fill) and
        return where the next record starts.

        A caller that updates the GTID state per COMMIT calls this first: a state
        record at the start position then excludes that commit, state records on
        pages the commit crosses include it (§6.2 "first byte" rule).  It also
        makes a new file's header and page-1 state exist before any record.
        """
        self._prepare_chunk()
        return self.position

    def write_record(self, record_type: int, payload: Buffer) -> RecordSpan:
        """Append one record, splitting it into chunks across pages and files."""
        self._prepare_chunk()
        offset = self._offset
        if type(payload) is not memoryview and offset + CHUNK_HEADER_SIZE + len(payload) <= PAGE_DATA_END:
            # Fits in the current page (most small commits): one chunk, no splitting.
            file_no, start = self._file_no, (self._page_no << PAGE_SIZE_SHIFT) + offset
            self._put_chunk(record_type | FLAG_LAST, payload)
            return RecordSpan(file_no, start, self._file_no, (self._page_no << PAGE_SIZE_SHIFT) + self._offset)
        data = memoryview(payload).cast("B")
        size = len(data)
        sent = 0
        cont = 0
        start: tuple[int, int] | None = None
        while True:
            self._prepare_chunk()
            if start is None:
                start = self.position
            room = PAGE_DATA_END - self._offset - CHUNK_HEADER_SIZE
            length = min(room, size - sent)
            last = sent + length == size
            self._put_chunk(record_type | cont | (FLAG_LAST if last else 0), data[sent : sent + length])
            sent += length
            cont = FLAG_CONT
            if last:
                return RecordSpan(start[0], start[1], *self.position)

    def write_records(self, record_type: int, items: Sequence[tuple[K, bytes | bytearray]], start: int,
                      note: Callable[[Sequence[K]], None]) -> int:
        """Append a record for each ``(key, payload)`` of ``items[start:]``, as :meth:`prepare`,
        a note of the key and :meth:`write_record` would one by one, and stop after the record
        during which a new file began (one redo record begins at most one file); returns the
        index after the last record written.  ``note(keys)`` hears the keys of the records
        written, in order, each before the writer writes anything after that record's first byte
        that reads the caller's state (a GTID state record, a header: the §6.2 first-byte rule).

        The batch path of small commits (an archive's groups): a record that fits in the current
        page, with nothing falling due before it, is put in place here without the general
        splitting, and its key noted with the others of the run, so the per-record cost is a few
        byte stores."""
        count = len(items)
        index = start
        flags = record_type | FLAG_LAST
        page, offset = self._page, self._offset
        noted: list[K] = []
        while index < count:
            key, payload = items[index]
            size = len(payload)
            end = offset + CHUNK_HEADER_SIZE + size
            if offset and end < PAGE_DATA_END:  # prepare() has nothing to do: one chunk, page not full
                noted.append(key)
                page[offset] = flags
                page[offset + 1] = size & 0xFF
                page[offset + 2] = size >> 8
                page[offset + CHUNK_HEADER_SIZE : end] = payload
                offset = end
                index += 1
                continue
            self._offset = offset
            if noted:
                note(noted)
                noted = []
            headers = self._headers
            self.prepare()
            note((key,))
            self.write_record(record_type, payload)
            index += 1
            page, offset = self._page, self._offset
            if self._headers != headers:
                break
        self._offset = offset
        if noted:
            note(noted)
        return index

    def flush_file(self) -> int:
        """FLUSH BINARY LOGS: complete the current page, end the file, begin the next one.

        The rest of the current page becomes a DUMMY record (or 0xFF filler if
        fewer than 4 bytes are left; nothing if the page is still empty, the
        file then ends before it).  Returns the number of pages the finished
        file keeps (the caller truncates it; its header's page_count stays).
        The next file gets its header page and page-1 GTID state at once.
        """
        if self._page_no == 0:
            self._prepare_chunk()
        if self._page_no >= self._pages_in_file or self._offset == 0:
            pages = min(self._page_no, self._pages_in_file)
        else:
            room = PAGE_DATA_END - self._offset
            if room >= _MIN_CHUNK_ROOM:
                length = room - CHUNK_HEADER_SIZE
                self._put_chunk(RecordType.DUMMY | FLAG_LAST, b"\xff" * length)
            else:
                self._fill_page()
            pages = self._page_no
        self._next_file()
        self._prepare_chunk()
        return pages

    def _prepare_chunk(self) -> None:
        """Move to a position where a chunk can start, writing header/state records as they fall due."""
        while True:
            if self._offset == 0:
                if self._page_no >= self._pages_in_file:
                    self._next_file()
                if self._page_no == 0:
                    self._write_header()
                page_no = self._page_no
                if page_no == 1 or (self._interval and page_no % self._interval == 0):
                    self._write_state()
            if PAGE_DATA_END - self._offset >= _MIN_CHUNK_ROOM:
                return
            self._fill_page()

    def _put_chunk(self, type_flags: int, payload: Buffer) -> None:
        offset = self._offset
        length = len(payload)
        end = offset + CHUNK_HEADER_SIZE + length
        page = self._page
        page[offset] = type_flags
        page[offset + 1] = length & 0xFF
        page[offset + 2] = length >> 8
        page[offset + CHUNK_HEADER_SIZE : end] = payload
        self._offset = end
        if end == PAGE_DATA_END:
            self._complete_page()

    def _fill_page(self) -> None:
        self._page[self._offset : PAGE_DATA_END] = bytes((FILLER,)) * (PAGE_DATA_END - self._offset)
        self._complete_page()

    def _complete_page(self) -> None:
        self._done.append(WrittenPage(self._file_no, self._page_no, seal_page(self._page)))
        self._page = bytearray(PAGE_SIZE)
        self._page_no += 1
        self._offset = 0

    def _next_file(self) -> None:
        self._file_no += 1
        self._page_no = 0
        self._offset = 0
        self._pages_in_file = self.pages_per_file

    def _write_header(self) -> None:
        header = self._header_factory(self._file_no, self._pages_in_file)
        self._interval = header.gtid_state_interval
        self._done.append(WrittenPage(self._file_no, 0, header.encode()))
        self._page_no = 1
        self._headers += 1

    def _write_state(self) -> None:
        """GTID_STATE at offset 0 of this page, only if a page is left after it (``binlog_gtid_state``)."""
        payload = self._state_payload(self._file_no, self._page_no)
        needed_pages = -(-len(payload) // PAGE_DATA_END)
        if self._page_no + needed_pages >= self._pages_in_file:
            return
        sent = 0
        cont = 0
        while sent < len(payload):
            length = min(_STATE_CHUNK_MAX, len(payload) - sent)
            last = sent + length == len(payload)
            self._put_chunk(RecordType.GTID_STATE | cont | (FLAG_LAST if last else 0), payload[sent : sent + length])
            sent += length
            cont = FLAG_CONT


class OobForestBuilder:
    """Links of one OOB node sequence (§6.3): a stack of perfect trees in post-order.

    Call :meth:`next_node` for the record to write, then :meth:`added` with
    where it landed.  :attr:`ref` is what the COMMIT / XA_PREPARE record stores.
    """

    __slots__ = ("_trees", "num_nodes", "_first")

    def __init__(self) -> None:
        self._trees: list[tuple[int, int, int]] = []
        self.num_nodes = 0
        self._first = (0, 0)

    def _merging(self) -> bool:
        trees = self._trees
        return len(trees) >= 2 and trees[-2][2] == trees[-1][2]

    def next_node(self, data: bytes) -> OobData:
        """The OOB_DATA record of the next node: interior over the two newest equal trees, else a leaf."""
        trees = self._trees
        if self._merging():
            (left_file, left_offset, _), (right_file, right_offset, _) = trees[-2], trees[-1]
        else:
            left_file = left_offset = 0
            right_file, right_offset = (trees[-1][0], trees[-1][1]) if trees else (0, 0)
        return OobData(self.num_nodes, left_file, left_offset, right_file, right_offset, data)

    def added(self, file_no: int, offset: int) -> None:
        """Record that the node from :meth:`next_node` starts at ``(file_no, offset)``."""
        trees = self._trees
        if self._merging():
            height = trees[-1][2] + 1
            del trees[-2:]
        else:
            height = 1
        trees.append((file_no, offset, height))
        if not self.num_nodes:
            self._first = (file_no, offset)
        self.num_nodes += 1

    @property
    def ref(self) -> OobRef | None:
        """Forest reference for the commit header, or None while empty."""
        if not self.num_nodes:
            return None
        last_file, last_offset, _ = self._trees[-1]
        return OobRef(self.num_nodes, self._first[0], self._first[1], last_file, last_offset)
