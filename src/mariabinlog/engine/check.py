"""Offline verification of a binlog directory against ibb-format.md (``mariabinlog engine check``).

Why: the engine's files must be accepted by MariaDB's reader, so every
invariant the spec states is checked independently of the writer, with the
codec's reader and page functions:

* headers (§3): magic/CRCs/version via the codec, ``file_no`` equal to the
  name, sizes (pre-allocated files are ``page_count`` pages; a file followed by
  another ends on a full page, §5.2), start LSNs increasing, OOB/XA refs not in
  the future;
* every page (§2, §5.2): CRC-32C; chunks never cross the CRC; 1..3 leftover bytes
  are 0xFF filler; a zero type byte (end of data) only in the last file, with
  nothing but zeros after it;
* records (§5, §6): chunk sequences, every payload decodes, DUMMY is 0xFF,
  every COMMIT's event stream (including its OOB forests) splits into events
  that start with a GTID event (or a Format_description restart marker);
* GTID state records (§6.2): one at offset 0 of page 1 of every file and of every
  interval page whose record fits, holding exactly the full / differential
  state implied by the commits before that page (the "first byte" rule) and
  the earliest file with a pending XA.

The report ends with the GTID binlog state, which is what recovery restores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..codec.events import FORMAT_DESCRIPTION_EVENT, GTID_EVENT
from ..codec.gtid import BinlogState, Gtid
from ..codec.ibb.page import (
    FILLER,
    MAX_CHUNK_START,
    NO_FILE_REF,
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    ZERO_PAGE,
    IbbHeader,
    RecordType,
    check_page,
    decode_header_page,
    iter_chunks,
)
from ..codec.ibb.reader import RecordReader, record_type_name
from ..codec.ibb.records import (
    CommitRecord,
    Dummy,
    GtidState,
    XaComplete,
    XaPrepare,
    Xid,
    decode_record,
)
from ..errors import DecodeError
from ..codec.ibb.state import commit_gtid
from .source import disk_source
from .files import binlog_name
from .redo import REDO_NAME
from .storage import BinlogFiles
from .view import recovered_files

MAX_ERRORS = 50


@dataclass
class CheckReport:
    """What ``check_directory`` found."""

    directory: str
    files: list[int] = field(default_factory=list)
    pages: int = 0
    records: int = 0
    groups: int = 0
    events: int = 0
    state_records: int = 0
    oob_nodes: int = 0
    state: BinlogState = field(default_factory=BinlogState)
    pending_xa: list[Xid] = field(default_factory=list)
    end: tuple[int, int] = (0, 0)
    errors: list[str] = field(default_factory=list)
    #: set when the files were checked as an open would recover them (what recovery found)
    recovery: str | None = None

    @property
    def ok(self) -> bool:
        """True when no invariant is violated."""
        return not self.errors

    def error(self, text: str) -> None:
        """Record a violation (the first MAX_ERRORS are kept)."""
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(text)

    def _file_range(self) -> str:
        if not self.files:
            return "none"
        if len(self.files) <= 4:
            return ", ".join(binlog_name(n) for n in self.files)
        return f"{binlog_name(self.files[0])} .. {binlog_name(self.files[-1])} ({len(self.files)} files)"

    def summary(self) -> str:
        """Human-readable report."""
        lines = [f"directory: {self.directory}"]
        if self.recovery is not None:
            lines.append(f"recovery: {self.recovery}")
        lines += [
            f"files: {self._file_range()}",
            f"pages checked: {self.pages}, records: {self.records}, state records: {self.state_records}",
            f"event groups: {self.groups}, events: {self.events}, OOB nodes: {self.oob_nodes}",
            f"end of data: {binlog_name(self.end[0])} offset {self.end[1]}",
            f"gtid_binlog_state: {self.state}",
            f"pending XA: {len(self.pending_xa)}",
        ]
        if self.errors:
            lines.append(f"ERRORS ({len(self.errors)}):")
            lines += [f"  {e}" for e in self.errors]
        else:
            lines.append("OK")
        return "\n".join(lines)


def check_directory(directory: str, *, as_recovered: bool = False) -> CheckReport:
    """Verify every file, page, record and state record of a binlog directory.

    By default the files are checked as they are on disk.  With ``as_recovered`` (``engine
    check``) an engine directory that a crash left needing recovery is checked as an open
    would recover it: recovery runs in memory (:mod:`mariabinlog.engine.view`), nothing is
    written, and the report says what recovery found.
    """
    report = CheckReport(directory)
    files: BinlogFiles
    if as_recovered and os.path.exists(os.path.join(directory, REDO_NAME)):
        files, found = recovered_files(directory)
        if not found.clean:
            report.recovery = (
                f"needed at the next open ({found.records} redo records to replay, {found.cut_pages} pages to cut"
                f" after the end, {found.deleted_files} files to delete); checked as it will recover, nothing written"
            )
        if found.resealed is not None:
            # recovery makes this page pass, but the redo log did not restore it: say so
            name = binlog_name(found.end[0])
            report.error(
                f"{name}: page {found.resealed}: invalid CRC-32C on disk; recovery will cut it where the binlog"
                f" ends (offset {found.end[1]}) and seal it again: a torn write, or damage to the data before"
            )
    else:
        files = BinlogFiles(directory, readonly=True)
    try:
        _check(files, report)
    finally:
        files.close()
    return report


def _check(files: BinlogFiles, report: CheckReport) -> None:
    numbers = files.list()
    headers: dict[int, IbbHeader] = {}
    data_files = []
    for file_no in numbers:
        page = files.read_page(file_no, 0)
        try:
            header = decode_header_page(page) if page is not None else None
        except DecodeError as err:
            report.error(f"{binlog_name(file_no)}: {err}")
            continue
        if header is None:
            continue
        headers[file_no] = header
        data_files.append(file_no)
    if not data_files:
        report.files = numbers
        return
    report.files = numbers
    last = data_files[-1]
    for later in numbers:
        if later > last and later in headers:
            report.error(f"{binlog_name(later)} has a header after the last file with data")
    expected = list(range(data_files[0], last + 1))
    if data_files != expected:
        report.error(f"binlog files are not consecutive: {data_files}")
    previous_lsn = -1
    for file_no in data_files:
        header = headers[file_no]
        name = binlog_name(file_no)
        if header.file_no != file_no:
            report.error(f"{name}: header file_no {header.file_no}")
        size = files.size(file_no)
        if size % PAGE_SIZE:
            report.error(f"{name}: size {size} is not a multiple of the page size")
        if size > header.page_count * PAGE_SIZE:
            report.error(f"{name}: {size} bytes is more than the header's {header.page_count} pages")
        if header.start_lsn <= previous_lsn:
            report.error(f"{name}: start_lsn {header.start_lsn} not after the previous file's {previous_lsn}")
        previous_lsn = header.start_lsn
        if header.oob_ref_file_no > file_no:
            report.error(f"{name}: oob_ref_file_no {header.oob_ref_file_no} is in the future")
        if header.xa_ref_file_no != NO_FILE_REF and header.xa_ref_file_no > file_no:
            report.error(f"{name}: xa_ref_file_no {header.xa_ref_file_no} is in the future")
        _check_pages(files, file_no, size // PAGE_SIZE, file_no == last, report)
    _check_records(files, data_files, headers, report)


def _check_pages(files: BinlogFiles, file_no: int, pages: int, is_last: bool, report: CheckReport) -> None:
    name = binlog_name(file_no)
    ended = False
    for page_no in range(1, pages):
        page = files.read_page(file_no, page_no)
        report.pages += 1
        if page is None:
            report.error(f"{name}: page {page_no} unreadable")
            return
        try:
            has_data = check_page(page, page_no)
        except DecodeError as err:
            report.error(f"{name}: {err.located(name, page_no * PAGE_SIZE)}")
            continue
        if ended:
            if page != ZERO_PAGE:
                report.error(f"{name}: data on page {page_no} after the end of written data")
            continue
        if not has_data:
            ended = True
            if not is_last:
                report.error(f"{name}: page {page_no} is empty but a later file follows (§5.2)")
            continue
        offset = 0
        try:
            for chunk in iter_chunks(page):
                offset = chunk.offset + 3 + len(chunk.payload)
        except DecodeError as err:
            report.error(f"{name}: page {page_no}: {err.reason} at {err.offset}")
            continue
        if offset >= PAGE_DATA_END:
            continue
        if offset > MAX_CHUNK_START:
            tail = page[offset:PAGE_DATA_END]
            if not any(tail):
                # not filled yet: the writer fills when it moves on, so this is the end of the data
                ended = True
                if not is_last:
                    report.error(f"{name}: data ends inside page {page_no} but a later file follows (§5.2)")
            elif any(b != FILLER for b in tail):
                report.error(f"{name}: page {page_no}: bytes {offset}..{PAGE_DATA_END} are not 0xFF filler")
        elif page[offset] == 0:
            ended = True
            if any(page[offset:PAGE_DATA_END]):
                report.error(f"{name}: page {page_no}: non-zero bytes after the end of data at {offset}")
            if not is_last:
                report.error(f"{name}: data ends inside page {page_no} but a later file follows (§5.2)")
        else:
            report.error(f"{name}: page {page_no}: a chunk could start at {offset} but the page ends there")


def _check_records(files: BinlogFiles, data_files: list[int], headers: dict[int, IbbHeader], report: CheckReport) -> None:
    source = disk_source(files)
    first = data_files[0]
    reader = RecordReader(source, first, PAGE_SIZE, skip_partial=first != 0)
    # (position, kind, value): commits count from their first byte, states at their page.
    timeline: list[tuple[tuple[int, int], int, object]] = []
    try:
        for record in reader:
            report.records += 1
            where = f"{binlog_name(record.file_no)} offset {record.offset}"
            try:
                payload = decode_record(record.type, record.payload)
            except DecodeError as err:
                report.error(f"{where}: {record_type_name(record.type)} record: {err.reason}")
                continue
            position = (record.file_no, record.offset)
            if record.type == RecordType.GTID_STATE:
                report.state_records += 1
                timeline.append((position, 0, payload))
            elif record.type == RecordType.COMMIT:
                assert isinstance(payload, CommitRecord)
                data = payload.data
                if len(data) < 19 or data[4] not in (GTID_EVENT, FORMAT_DESCRIPTION_EVENT):
                    report.error(f"{where}: COMMIT record does not start with a GTID or Format_description event")
                    continue
                gtid = commit_gtid(record.payload)
                if gtid is not None:
                    timeline.append((position, 1, gtid))
            elif record.type == RecordType.DUMMY:
                assert isinstance(payload, Dummy)
                if record.payload.strip(b"\xff") or (record.end_offset & (PAGE_SIZE - 1)) not in (0, PAGE_DATA_END):
                    report.error(f"{where}: DUMMY record is not 0xFF up to the page end")
            elif record.type == RecordType.OOB_DATA:
                report.oob_nodes += 1
            elif record.type in (RecordType.XA_PREPARE, RecordType.XA_COMPLETE):
                timeline.append((position, 2, payload))
        report.end = reader.position
    except DecodeError as err:
        report.error(f"record stream: {err}")
        return
    sizes = {file_no: files.size(file_no) >> PAGE_SIZE_SHIFT for file_no in headers}
    _check_states(timeline, headers, sizes, report)
    reader = RecordReader(source, first, PAGE_SIZE, skip_partial=first != 0)
    try:
        for group in reader.event_groups():
            report.groups += 1
            for event in group.raw_events():
                report.events += 1
    except DecodeError as err:
        report.error(f"event groups: {err}")


def _check_states(
    timeline: list[tuple[tuple[int, int], int, object]],
    headers: dict[int, IbbHeader],
    sizes: dict[int, int],
    report: CheckReport,
) -> None:
    timeline.sort(key=lambda item: (item[0], item[1]))
    state = BinlogState()
    changed: set[tuple[int, int]] = set()
    pending: dict[Xid, int] = {}
    seen_pages: set[tuple[int, int]] = set()
    current_file = None
    have_base = False
    first_file = min(headers) if headers else 0
    for (file_no, offset), kind, value in timeline:
        if file_no != current_file:
            current_file = file_no
            changed = set()
        if kind == 1:
            assert isinstance(value, Gtid)
            state.update(value)
            changed.add((value.domain, value.server))
            continue
        if kind == 2:
            if isinstance(value, XaPrepare):
                pending[value.xid] = file_no
            else:
                assert isinstance(value, XaComplete)
                pending.pop(value.xid, None)
            continue
        assert isinstance(value, GtidState)
        page_no, in_page = offset >> PAGE_SIZE_SHIFT, offset & (PAGE_SIZE - 1)
        where = f"{binlog_name(file_no)} page {page_no}"
        header = headers.get(file_no)
        interval = header.gtid_state_interval if header else 0
        if in_page or not (page_no == 1 or (interval and page_no % interval == 0)):
            report.error(f"{where}: GTID_STATE record at offset {in_page}, not at a state page start")
            continue
        seen_pages.add((file_no, page_no))
        got = set(value.gtids)
        if page_no == 1:
            if have_base and got != set(state.to_list()):
                report.error(f"{where}: full state {sorted(got)} != expected {sorted(state.to_list())}")
            if not have_base:
                state = BinlogState.from_list(Gtid(*g) for g in value.gtids)
                have_base = True
        else:
            want = {g for g in state.to_list() if (g.domain, g.server) in changed}
            if have_base and got != want:
                report.error(f"{where}: differential state {sorted(got)} != expected {sorted(want)}")
        want_xa = min(pending.values()) if pending else None
        # a reference below the first file names an XA_PREPARE that was purged: unknowable here
        purged_ref = value.xa_ref_file_no is not None and value.xa_ref_file_no < first_file
        if have_base and value.xa_ref_file_no != want_xa and not purged_ref:
            report.error(f"{where}: state record's XA reference {value.xa_ref_file_no} != expected {want_xa}")
    report.state = state
    report.pending_xa = list(pending)
    end_file, end_offset = report.end
    for file_no, header in headers.items():
        if file_no > end_file:
            continue
        if (file_no, 1) not in seen_pages and (file_no < end_file or end_offset > PAGE_SIZE):
            report.error(f"{binlog_name(file_no)}: no full GTID state record at page 1")
        interval = header.gtid_state_interval
        if file_no == end_file:
            pages_written = (end_offset + PAGE_SIZE - 1) >> PAGE_SIZE_SHIFT
        else:
            pages_written = sizes[file_no]
        if interval > 1:
            for page_no in range(interval, pages_written, interval):
                if (file_no, page_no) not in seen_pages and page_no + 1 < header.page_count:
                    report.error(f"{binlog_name(file_no)}: no differential GTID state record at page {page_no}")
