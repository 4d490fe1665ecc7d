"""Sans-I/O `.ibb` record stream reader (ibb-format.md §5, §6.1, §6.3, §10).

The caller supplies pages through a :class:`PageSource`; the reader validates
headers and page CRCs, assembles records from chunks across pages and files
(setting nested GTID_STATE/DUMMY chunks aside), and for COMMIT records walks
the OOB forests lazily so a multi-GB transaction streams piece by piece.
Every error names the file and the absolute byte offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from ...errors import CorruptRecordError, DecodeError, TruncatedError
from .page import (
    CHUNK_HEADER_SIZE,
    FLAG_CONT,
    FLAG_LAST,
    MAX_CHUNK_START,
    NESTABLE_TYPES,
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    TYPE_MASK,
    IbbHeader,
    RecordType,
    check_page,
    chunk_at,
    decode_header_page,
    py_page_records,
)
from ..events import GTID_EVENT
from ..framing import event_offsets, stored_events
from ..groups import EventGroup, gtid_of
from ..native import FRAMEFAST_VERSION, load_fast
from ..primitives import Buffer
from .records import COMMIT_PLAIN_HEADER, CommitRecord, OobData, OobRef, RecordPayload, decode_record

_fast = load_fast("mariabinlog.codec._framefast", "FAST_VERSION", FRAMEFAST_VERSION, "ibb/reader.py")
#: :func:`~.page.py_page_records`, compiled where available.
page_records: Any = _fast.page_records if _fast is not None else py_page_records

MAX_OOB_DEPTH = 4096
"""Traversal stack bound: a valid forest needs at most the sum of its tree heights (< 2100)."""


class PageSource(Protocol):
    """Where the reader gets pages; file numbers are those of ``binlog-NNNNNN.ibb``."""

    def page(self, file_no: int, page_no: int) -> Buffer | None:
        """Bytes of one 16 KiB page, or None if the file or the page does not exist."""

    def name(self, file_no: int) -> str:
        """File name used in error messages."""


def record_type_name(record_type: int) -> str:
    """``COMMIT``, ``OOB_DATA``...; ``type N`` for a type no writer uses (damaged data)."""
    try:
        return RecordType(record_type).name
    except ValueError:
        return f"type {record_type}"


def _reanchor(err: DecodeError, message: str, file: str, offset: int) -> DecodeError:
    """A copy of ``err`` with a new message, placed at ``offset`` of ``file``."""
    return type(err)(message, offset=offset, expected=err.expected, file=file)


class Record:
    """One assembled record with its start and end (file_no, byte offset in that file)."""

    __slots__ = ("type", "payload", "file_no", "offset", "end_file_no", "end_offset", "nested")

    def __init__(
        self,
        record_type: int,
        payload: bytes,
        file_no: int,
        offset: int,
        end_file_no: int,
        end_offset: int,
        nested: bool,
    ) -> None:
        self.type = record_type
        self.payload = payload
        self.file_no = file_no
        self.offset = offset
        self.end_file_no = end_file_no
        self.end_offset = end_offset
        self.nested = nested

    def decode(self) -> RecordPayload:
        """Decode the payload (errors carry payload-relative offsets)."""
        return decode_record(self.type, self.payload)

    def __repr__(self) -> str:
        nested = ", nested" if self.nested else ""
        return (
            f"Record({record_type_name(self.type)}, {len(self.payload)} bytes, {self.file_no}:{self.offset}"
            f"..{self.end_file_no}:{self.end_offset}{nested})"
        )


class _Pages:
    """Validated access to headers and data pages of a PageSource."""

    __slots__ = ("source", "_headers", "_names")

    def __init__(self, source: PageSource) -> None:
        self.source = source
        self._headers: dict[int, IbbHeader] = {}
        self._names: dict[int, str] = {}

    def name(self, file_no: int) -> str:
        """The source's name of a file, asked once (every group read names its file)."""
        name = self._names.get(file_no)
        if name is None:
            name = self._names[file_no] = self.source.name(file_no)
        return name

    def header(self, file_no: int) -> IbbHeader | None:
        """The validated header, or None when the file is missing or empty pre-allocated."""
        header = self._headers.get(file_no)
        if header is not None:
            return header
        page = self.source.page(file_no, 0)
        if page is None:
            return None
        try:
            header = decode_header_page(page)
        except DecodeError as err:
            raise err.located(self.name(file_no)) from None
        if header is None:
            return None
        if header.file_no != file_no:
            raise CorruptRecordError(
                f"header says binlog number {header.file_no}",
                offset=16,
                expected=f"file_no {file_no}",
                file=self.name(file_no),
            )
        self._headers[file_no] = header
        return header

    def page(self, file_no: int, page_no: int) -> bytes | None:
        """A CRC-checked data page, ``b""`` for an all-zero page, None past the end of the file."""
        page = self.source.page(file_no, page_no)
        if page is None:
            return None
        try:
            has_data = check_page(page, page_no)
        except DecodeError as err:
            raise err.located(self.name(file_no), page_no << PAGE_SIZE_SHIFT) from None
        return bytes(page) if has_data else b""


class _Cursor:
    """Chunk-by-chunk position in the stream; moves over page and file ends."""

    __slots__ = ("pages", "file_no", "page_no", "offset", "page", "end_reason")

    def __init__(self, pages: _Pages, file_no: int, page_no: int, offset: int) -> None:
        self.pages = pages
        self.file_no = file_no
        self.page_no = page_no
        self.offset = offset
        self.page: bytes | None = None
        self.end_reason = ""

    @property
    def position(self) -> tuple[int, int]:
        """(file_no, byte offset); the end of a full page counts as the start of the next."""
        if self.offset >= PAGE_DATA_END:
            return self.file_no, (self.page_no + 1) << PAGE_SIZE_SHIFT
        return self.file_no, (self.page_no << PAGE_SIZE_SHIFT) + self.offset

    def next_chunk(self) -> tuple[int, bytes, int, int] | None:
        """``(type_flags, payload, page_no, offset_in_page)`` of the next chunk, None at end of data."""
        while True:
            page = self.page
            if page is None:
                page = self.pages.page(self.file_no, self.page_no)
                if page is None:
                    if not self._enter_next_file():
                        return None
                    continue
                if not page:
                    self.end_reason = f"end of written data at page {self.page_no} of {self.pages.name(self.file_no)}"
                    return None
                self.page = page
            offset = self.offset
            try:
                header = chunk_at(page, offset)
            except DecodeError as err:
                raise self.corrupt(err) from None
            if header is None:
                self.page_no += 1
                self.offset = 0
                self.page = None
                continue
            flags, length = header
            if not flags:
                self.page = None
                self.end_reason = f"end of written data at page {self.page_no} of {self.pages.name(self.file_no)}"
                return None
            start = offset + CHUNK_HEADER_SIZE
            self.offset = start + length
            return flags, page[start : start + length], self.page_no, offset

    def corrupt(self, err: DecodeError) -> DecodeError:
        """Re-anchor a page-relative chunk error in this file, naming page and file number."""
        offset = (self.page_no << PAGE_SIZE_SHIFT) + (err.offset or 0)
        message = f"Corrupt binlog found on page {self.page_no} in binlog number {self.file_no}: {err.reason}"
        return _reanchor(err, message, self.pages.name(self.file_no), offset)

    def corrupt_chunk(self, offset: int, message: str) -> DecodeError:
        """CorruptRecordError for the chunk at ``offset`` of the current page."""
        return self.corrupt(CorruptRecordError(message, offset=offset))

    def _enter_next_file(self) -> bool:
        next_no = self.file_no + 1
        if self.pages.header(next_no) is None:
            self.end_reason = f"{self.pages.name(next_no)} does not exist or is empty"
            return False
        self.file_no = next_no
        self.page_no = 1
        self.offset = 0
        return True


class RecordReader:
    """Records in order from a start position, across pages and files.

    ``offset`` is a byte offset in file ``file_no`` at a chunk boundary (values
    below one page mean page 1).  With ``skip_partial`` leading continuation
    chunks (the tail of a record begun earlier) are skipped, as after a GTID
    search.  Nested GTID_STATE/DUMMY records are yielded when they complete,
    i.e. before the record they interrupt, with ``nested=True``.  Iteration
    stops at the end of written data.  :attr:`position` is the end of the last
    top-level record yielded (or where the data ended); iterating again
    resumes there, which lets a caller follow a file that is still growing.
    """

    __slots__ = ("_pages", "_skip_partial", "position")

    def __init__(
        self, source: PageSource, file_no: int, offset: int = PAGE_SIZE, *, skip_partial: bool = False
    ) -> None:
        self._pages = _Pages(source)
        self._skip_partial = skip_partial
        self.position = (file_no, max(offset, PAGE_SIZE))

    def __iter__(self) -> Iterator[Record]:
        pages = self._pages
        file_no, offset = self.position
        cursor = _Cursor(pages, file_no, offset >> PAGE_SIZE_SHIFT, offset & (PAGE_SIZE - 1))
        if pages.header(file_no) is None:
            return
        skipping = self._skip_partial
        outer: list[Any] | None = None  # [type, chunks, file_no, offset]
        inner: list[Any] | None = None
        while True:
            page = cursor.page
            if outer is None and not skipping and page is not None:
                # The page's one-chunk records (small commits) in one call; the rest of the page
                # (a record of several chunks, the end, damage) chunk by chunk below.
                found, cursor.offset = page_records(page, cursor.offset)
                if found:
                    file_no, base = cursor.file_no, cursor.page_no << PAGE_SIZE_SHIFT
                    for record_type, payload, start, end in found:
                        end = base + end if end < PAGE_DATA_END else base + PAGE_SIZE  # a full page: the next's start
                        self.position = (file_no, end)
                        yield Record(record_type, payload, file_no, base + start, file_no, end, False)
            chunk = cursor.next_chunk()
            if chunk is None:
                for pending in (inner, outer):
                    if pending is not None:
                        raise TruncatedError(
                            f"{record_type_name(pending[0])} record is incomplete: {cursor.end_reason}",
                            offset=pending[3],
                            expected="its remaining chunks",
                            file=pages.name(pending[2]),
                        )
                self.position = cursor.position
                return
            flags, payload, page_no, offset = chunk
            record_type = flags & TYPE_MASK
            start = (page_no << PAGE_SIZE_SHIFT) + offset
            if outer is None:
                if flags & FLAG_CONT:
                    if skipping:
                        continue
                    raise cursor.corrupt_chunk(offset, "Binlog record starts with continuation chunk")
                if skipping and record_type not in NESTABLE_TYPES:
                    skipping = self._skip_partial = False
                if flags & FLAG_LAST:
                    self.position = cursor.position
                    yield Record(record_type, payload, cursor.file_no, start, *cursor.position, False)
                else:
                    outer = [record_type, [payload], cursor.file_no, start]
            elif record_type == outer[0] and inner is None:
                if not flags & FLAG_CONT:
                    raise cursor.corrupt_chunk(offset, "Binlog record missing end chunk")
                outer[1].append(payload)
                if flags & FLAG_LAST:
                    self.position = cursor.position
                    yield Record(record_type, b"".join(outer[1]), outer[2], outer[3], *cursor.position, False)
                    outer = None
            elif record_type in NESTABLE_TYPES:
                if inner is None:
                    if flags & FLAG_CONT:
                        raise cursor.corrupt_chunk(offset, "nested record starts with continuation chunk")
                    if flags & FLAG_LAST:
                        yield Record(record_type, payload, cursor.file_no, start, *cursor.position, True)
                    else:
                        inner = [record_type, [payload], cursor.file_no, start]
                else:
                    if record_type != inner[0] or not flags & FLAG_CONT:
                        raise cursor.corrupt_chunk(offset, "nested record missing end chunk")
                    inner[1].append(payload)
                    if flags & FLAG_LAST:
                        yield Record(record_type, b"".join(inner[1]), inner[2], inner[3], *cursor.position, True)
                        inner = None
            else:
                raise cursor.corrupt_chunk(
                    offset,
                    f"Binlog record missing end chunk"
                    f" ({record_type_name(record_type)} chunk inside {record_type_name(outer[0])} record)",
                )

    def event_groups(self) -> Iterator[EventGroup]:
        """The COMMIT records as event groups; other record types are skipped.  A group's
        ``gtid`` is None for a COMMIT record without a GTID event (a restart marker)."""
        for record in self:
            if record.type == RecordType.COMMIT:
                yield self.group(record)

    def group(self, record: Record) -> EventGroup:
        """The event group of a COMMIT ``record`` met while iterating this reader (for callers
        that see every record, e.g. to stop at a split's end); its OOB data is read lazily."""
        payload = record.payload
        if payload[:1] == COMMIT_PLAIN_HEADER:  # no OOB forest: the events follow the header byte
            found = stored_events(payload, 1)
            if found is not None:
                group = EventGroup.of_scan(found, None, self._pages.name(record.file_no))
                group.record = record
                return group
        try:
            commit = CommitRecord.decode(record.payload)
        except DecodeError as err:
            raise _reanchor(
                err, f"{err.reason} in COMMIT record header", self._pages.name(record.file_no), record.offset
            ) from None
        data = commit.data
        gtid = flags2 = timestamp = None
        if len(data) >= 32 and data[4] == GTID_EVENT:
            try:
                gtid, flags2, timestamp = gtid_of(data)
            except DecodeError as err:
                raise err.located(self._pages.name(record.file_no), record.offset) from None
        pages = self._pages
        if not commit.forests:
            return EventGroup(gtid, data, event_offsets(data), flags2=flags2, timestamp=timestamp,
                              source=pages.name(record.file_no), record=record, commit=commit)
        return EventGroup(gtid, pieces=lambda: _stored_pieces(pages, record, commit), flags2=flags2,
                          timestamp=timestamp, source=pages.name(record.file_no), record=record, commit=commit)


def _stored_pieces(pages: _Pages, record: Record, commit: CommitRecord) -> Iterator[bytes]:
    """A stored group's event data in pieces (§6.1): the commit record's event data, then the
    nodes of forest 1 in node order, then those of forest 2; OOB nodes are read only as the
    iteration reaches them."""
    if commit.data:
        yield commit.data
    bound = (record.file_no, record.offset)
    for forest in commit.forests:
        yield from _forest_pieces(pages, forest, bound)


def _dangling(pages: _Pages, file_no: int, offset: int, why: str) -> CorruptRecordError:
    return CorruptRecordError(
        f"dangling OOB pointer: {why}",
        offset=offset,
        expected="the start of an OOB_DATA record",
        file=pages.name(file_no),
    )


def _read_oob_node(pages: _Pages, file_no: int, offset: int) -> OobData:
    """Assemble and decode the OOB_DATA record that must start exactly at ``(file_no, offset)``."""
    page_no, in_page = offset >> PAGE_SIZE_SHIFT, offset & (PAGE_SIZE - 1)
    if page_no < 1 or in_page > MAX_CHUNK_START:
        raise _dangling(pages, file_no, offset, "not a possible record start")
    if pages.header(file_no) is None:
        raise _dangling(pages, file_no, offset, f"{pages.name(file_no)} does not exist or is empty")
    cursor = _Cursor(pages, file_no, page_no, in_page)
    try:
        chunk = cursor.next_chunk()
    except CorruptRecordError:
        raise _dangling(pages, file_no, offset, "no chunk header there") from None
    if chunk is None or cursor.file_no != file_no or chunk[2:] != (page_no, in_page):
        raise _dangling(pages, file_no, offset, "no record starts there")
    flags, payload, _, _ = chunk
    if flags & FLAG_CONT or flags & TYPE_MASK != RecordType.OOB_DATA:
        raise _dangling(pages, file_no, offset, f"chunk type 0x{flags:02x} where an OOB_DATA record should start")
    parts = [payload]
    while not flags & FLAG_LAST:
        chunk = cursor.next_chunk()
        if chunk is None:
            raise TruncatedError(
                f"OOB_DATA record is incomplete: {cursor.end_reason}",
                offset=offset,
                expected="its remaining chunks",
                file=pages.name(file_no),
            )
        chunk_flags, payload, _, chunk_offset = chunk
        record_type = chunk_flags & TYPE_MASK
        if record_type != RecordType.OOB_DATA and record_type in NESTABLE_TYPES:
            continue
        if record_type != RecordType.OOB_DATA or not chunk_flags & FLAG_CONT:
            raise cursor.corrupt_chunk(chunk_offset, "Binlog record missing end chunk")
        flags = chunk_flags
        parts.append(payload)
    try:
        return OobData.decode(b"".join(parts))
    except DecodeError as err:
        raise _reanchor(err, f"{err.reason} in OOB_DATA record header", pages.name(file_no), offset) from None


def _forest_pieces(pages: _Pages, forest: OobRef, bound: tuple[int, int]) -> Iterator[bytes]:
    """Post-order walk of one OOB forest (§6.3 'Reading'), yielding node data in node order.

    Every link must point strictly backwards and nodes must come out at
    strictly increasing positions, so cycles and shared subtrees fail fast.
    """

    def load(target: tuple[int, int], parent: tuple[int, int], leftmost: bool) -> list[Any]:
        if target >= parent:
            raise CorruptRecordError(
                "OOB link does not point backwards (cycle?)",
                offset=parent[1],
                expected=f"a location before {parent[0]}:{parent[1]}, found {target[0]}:{target[1]}",
                file=pages.name(parent[0]),
            )
        if len(stack) >= MAX_OOB_DEPTH:
            raise CorruptRecordError(
                "OOB forest too deep",
                offset=target[1],
                expected=f"at most {MAX_OOB_DEPTH} levels",
                file=pages.name(target[0]),
            )
        return [0, target, _read_oob_node(pages, *target), leftmost]

    stack: list[list[Any]] = []
    stack.append(load(forest.last, bound, True))
    previous = (-1, -1)
    count = 0
    while stack:
        entry = stack[-1]
        state, where, node, leftmost = entry
        if state == 0:
            entry[0] = 2
            if node.left_file_no or node.left_offset:
                entry[0] = 1
                stack.append(load((node.left_file_no, node.left_offset), where, leftmost))
            elif leftmost and (node.right_file_no or node.right_offset):
                stack.append(load((node.right_file_no, node.right_offset), where, True))
        elif state == 1:
            if not (node.right_file_no or node.right_offset):
                raise CorruptRecordError(
                    "interior OOB node without right child",
                    offset=where[1],
                    expected="a right link",
                    file=pages.name(where[0]),
                )
            entry[0] = 2
            stack.append(load((node.right_file_no, node.right_offset), where, False))
        else:
            stack.pop()
            if where <= previous:
                raise CorruptRecordError(
                    "OOB nodes out of order (shared subtree or cycle)",
                    offset=where[1],
                    expected=f"a node after {previous[0]}:{previous[1]}",
                    file=pages.name(where[0]),
                )
            previous = where
            count += 1
            if node.data:
                yield node.data
    if count != forest.num_nodes:
        raise CorruptRecordError(
            f"OOB forest has {count} nodes",
            offset=forest.last_offset,
            expected=f"{forest.num_nodes} nodes as the commit header says",
            file=pages.name(forest.last_file_no),
        )
