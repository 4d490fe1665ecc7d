"""Crash recovery and start-up state: redo replay, truncation, GTID state and pending XA restore.

Why (ibb-format.md §9, seed 002 "Binlog recovery"): binlog pages reach their
files lazily, so after a crash a file may lack data whose redo record is
durable, or hold data whose redo record never became durable (modes 0/2, or a
page the flush thread wrote before the commit's log write).  Recovery:

1. reads the newest checkpoint and scans the redo log from it (pass 1: find the
   last valid record; its end position is the recovered binlog end);
2. replays page writes (pass 2) onto the last two files only: files before
   those were fsynced before the writer entered the newer one (the writer
   waits for that), and a record older than the ``start_lsn`` in its file's
   header belongs to an earlier incarnation of that file number and is skipped.
   The partial-last-page rule makes this safe: the first redo record for a page
   that a checkpoint wrote half-filled carries the whole page image;
3. zeroes everything after the recovered end (every non-zero page up to the end of the
   file, as a power cut may keep any subset of unsynced writes), deletes later files, replays
   FLUSH BINARY LOGS truncations (the engine grows the last file again when it
   next writes, not here: a clean directory is opened without a write);
4. starts a new epoch in a new checkpoint, so unrecovered log bytes can never
   be read as records later.

There are no index or state files: the GTID binlog state is rebuilt from the
last GTID state record before the end plus the commits after it, pending XA
transactions from the XA_PREPARE/XA_COMPLETE records after the file named in
the newest header / state record.  A directory with binlog files but no redo
log (files copied from elsewhere, or a deleted log) is *adopted*: the end is
where the readable data of the newest file stops.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..codec.checksum import crc32c
from ..codec.gtid import BinlogState
from ..codec.ibb.page import (
    NO_FILE_REF,
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    ZERO_PAGE,
    IbbHeader,
    RecordType,
    decode_header_page,
    page_crc_valid,
    seal_page,
)
from ..codec.ibb.reader import PageSource, Record, RecordReader
from ..codec.ibb.state import EndState, read_header
from ..codec.ibb.records import (
    XaComplete,
    XaPrepare,
    Xid,
)
from ..errors import DecodeError, EngineError
from ..codec.ibb.redo import OP_END, OP_FORCED, OP_HOST, OP_PAGE, OP_TRUNCATE
from .redo import REDO_NAME, RedoLog
from .purge import complete_purge
from .source import disk_source
from .storage import BinlogFiles
from .transaction import PendingXa

HostRecords = list[tuple[int, bytes]]
log = logging.getLogger(__name__)


@dataclass
class Recovered:
    """Outcome of opening a directory: the binlog end, the redo log, and what recovery did."""

    end: tuple[int, int]
    redo: RedoLog
    host_records: HostRecords = field(default_factory=list)
    records: int = 0
    truncated_pages: int = 0
    deleted_files: list[int] = field(default_factory=list)
    #: the end page (in the end file) if its CRC-32C was invalid before recovery sealed it again
    resealed: int | None = None


@dataclass
class RestoredState:
    """GTID state, (domain, server) pairs changed in the last file, pending XA transactions."""

    state: BinlogState
    changed: set[tuple[int, int]]
    pending_xa: dict[Xid, PendingXa]


# ---------------------------------------------------------------------- headers and pages


def _is_zero(page: bytes | None) -> bool:
    return page is None or page == ZERO_PAGE


class _PagePatcher:
    """Applies redo page writes; keeps only the page being appended to in memory."""

    def __init__(self, files: BinlogFiles) -> None:
        self.files = files
        self.key: tuple[int, int] | None = None
        self.page = bytearray()
        self.touched: set[int] = set()

    def write(self, file_no: int, page_no: int, offset: int, data: bytes) -> None:
        key = (file_no, page_no)
        if key != self.key:
            self.flush()
            current = self.files.read_page(file_no, page_no) if offset else None
            self.page = bytearray(current if current is not None else PAGE_SIZE)
            self.key = key
        self.page[offset : offset + len(data)] = data

    def flush(self) -> None:
        if self.key is None:
            return
        file_no, page_no = self.key
        self.files.write_pages(file_no, page_no, [seal_page(self.page)])
        self.touched.add(file_no)
        self.key = None


# ---------------------------------------------------------------------- recovery


def recover(
    directory: str,
    files: BinlogFiles,
    *,
    all_files: bool = False,
    readonly: bool = False,
) -> Recovered:
    """Replay the redo log of ``directory`` onto its binlog files (see the module docstring).

    ``all_files`` replays every record after the checkpoint, not only those of the
    last two files: a backup copy may hold files copied before they were complete.
    ``readonly`` opens the log read-only (``files`` is then a look-only overlay).
    """
    fd, checkpoint = RedoLog.open_for_recovery(directory, readonly=readonly)
    try:
        end = checkpoint.end
        next_lsn = checkpoint.lsn
        count = 0
        for record in RedoLog.scan(fd, checkpoint):
            end = record.end
            next_lsn = record.end_lsn
            count += 1
        host_records: HostRecords = []
        patcher = _PagePatcher(files)
        truncations: dict[int, int] = {}
        headers: dict[int, IbbHeader | None] = {}

        # files above the end may exist (pre-allocated before the lower ones were written):
        # only files up to the end tell where the binlog starts
        existing = [n for n in files.list() if n <= end[0]]
        lowest = existing[0] if existing else end[0]

        def skip(file_no: int, lsn: int, page_no: int, offset: int) -> bool:
            if file_no < lowest or (not all_files and file_no < end[0] - 1):
                return True
            if page_no == 0 and offset == 0:
                headers[file_no] = None
                return False
            if file_no not in headers:
                headers[file_no] = read_header(files, file_no)
            header = headers[file_no]
            return header is not None and header.start_lsn > lsn

        for record in RedoLog.scan(fd, checkpoint):
            if record.lsn >= next_lsn:
                break
            for op in record.ops:
                kind = op[0]
                if kind == OP_PAGE:
                    _, file_no, page_no, offset, data = op
                    if not skip(file_no, record.lsn, page_no, offset):
                        patcher.write(file_no, page_no, offset, data)
                        if page_no == 0:
                            headers[file_no] = decode_header_page(bytes(patcher.page[:512]))
                elif kind == OP_FORCED:
                    _, file_no, page_no, crc = op
                    if not skip(file_no, record.lsn, page_no, 1):
                        patcher.flush()
                        page = files.read_page(file_no, page_no)
                        if page is None or crc32c(memoryview(page)[:PAGE_DATA_END]) != crc:
                            raise EngineError(
                                f"recovery: page {page_no} of binlog {file_no} was forced to disk before LSN"
                                f" {record.lsn} but is missing or damaged"
                            )
                elif kind == OP_TRUNCATE:
                    truncations[op[1]] = op[2]
                elif kind == OP_HOST:
                    host_records.append((record.lsn, op[1]))
                elif kind != OP_END:
                    raise EngineError(f"recovery: unknown redo operation {kind}")
        patcher.flush()
        truncated, deleted, resealed = _cut_after(files, end, patcher.touched)
        purged = complete_purge(files, end[0])
        for file_no, pages in truncations.items():
            if file_no < end[0]:
                files.truncate(file_no, pages)
        for file_no in sorted(patcher.touched):
            files.sync(file_no)
        files.sync_dir()
        redo = RedoLog(os.path.join(directory, REDO_NAME), fd, checkpoint, next_lsn)
    except BaseException:
        os.close(fd)
        raise
    redo.epoch = checkpoint.epoch + 1
    return Recovered(end, redo, host_records, count, truncated, purged + deleted, resealed)


def finish_recovery(recovered: Recovered) -> None:
    """Start the new epoch: a checkpoint at the recovered end (after the host took its records)."""
    redo = recovered.redo
    redo.write_checkpoint(redo.buffered_lsn, recovered.end, epoch=redo.epoch)


def _cut_after(files: BinlogFiles, end: tuple[int, int], touched: set[int]) -> tuple[int, list[int], int | None]:
    """Zero the binlog after ``end`` and delete later files; return the pages cleared, the
    files deleted, and the end page if it was sealed again over an invalid CRC-32C.

    A page the redo log restored is sealed already; an end page with an invalid CRC was torn
    by a power cut (a longer version of it was being written: the bytes before the end are
    the same in every version) or damaged at rest, which nothing here can tell apart, so it is
    cut and sealed again as before, and reported."""
    end_file, end_offset = end
    existing = files.list()
    deleted = [n for n in existing if n > end_file or (n == end_file and end_offset == 0)]
    for file_no in deleted:
        files.delete(file_no)
    if end_offset == 0:
        return 0, deleted, None
    page_no, in_page = end_offset >> PAGE_SIZE_SHIFT, end_offset & (PAGE_SIZE - 1)
    cleared = 0
    resealed = None
    if in_page:
        page = files.read_page(end_file, page_no)
        if page is not None:
            buf = bytearray(PAGE_SIZE)
            buf[:in_page] = page[:in_page]
            sealed = seal_page(buf)
            if sealed != page:
                if not page_crc_valid(page):
                    resealed = page_no
                    log.warning("%s: page %d, where the binlog ends (offset %d), has an invalid CRC-32C: a torn"
                                " write or damage; recovery cuts it there and seals it again",
                                files.path(end_file), page_no, end_offset)
                files.write_pages(end_file, page_no, [sealed])
                touched.add(end_file)
                cleared += 1
        page_no += 1
    # every page up to the end of the file, not only up to the first zero page: a power cut
    # may keep any subset of the unsynced page writes past the end (MariaDB's
    # zero_out_cur_file also zeroes each non-zero page up to the file's size)
    for page_no in list(files.pages_with_data(end_file, page_no)):
        if not _is_zero(files.read_page(end_file, page_no)):
            files.write_pages(end_file, page_no, [ZERO_PAGE])
            touched.add(end_file)
            cleared += 1
    return cleared, deleted, resealed


def adopted_end(files: BinlogFiles) -> tuple[tuple[int, int], list[int]]:
    """Where readable data stops in files that have no redo log (after completing an
    interrupted purge): ``(end, files the purge completion deleted)``."""
    existing = files.list()
    last = None
    for file_no in reversed(existing):
        if read_header(files, file_no) is not None:
            last = file_no
            break
    if last is None:
        return (0, 0), []
    purged = complete_purge(files, last)
    reader = RecordReader(disk_source(files), last, PAGE_SIZE, skip_partial=True)
    end = (last, PAGE_SIZE)
    try:
        for _ in reader:
            end = reader.position
    except DecodeError:
        pass
    else:
        end = reader.position
    if end[0] != last:
        end = (last, end[1])
    return end, purged


def adopt(directory: str, files: BinlogFiles, capacity: int) -> Recovered:
    """Open binlog files that have no redo log: the end is where readable data stops."""
    end, purged = adopted_end(files)
    touched: set[int] = set()
    truncated, deleted, resealed = _cut_after(files, end, touched)
    for file_no in touched:
        files.sync(file_no)
    redo = RedoLog.create(directory, capacity, end=end)
    return Recovered(end, redo, [], 0, truncated, purged + deleted, resealed)


# ---------------------------------------------------------------------- state records


def _records(source: PageSource, file_no: int, page_no: int) -> Iterator[Record]:
    yield from RecordReader(source, file_no, page_no << PAGE_SIZE_SHIFT, skip_partial=True)


def restore_state(files: BinlogFiles, end: tuple[int, int]) -> RestoredState:
    """GTID state, pairs changed in the end file, and pending XA as of ``end`` (module docstring)."""
    pending: dict[Xid, PendingXa] = {}
    if end == (0, 0):
        return RestoredState(BinlogState(), set(), pending)
    source = disk_source(files, end)
    existing = [n for n in files.list() if n <= end[0]]
    walk = EndState(source, existing, end)
    xa_from = walk.latest.xa_ref_file_no if walk.latest is not None else None
    if walk.file_no != end[0]:
        end_header = read_header(files, end[0])
        if end_header is not None and end_header.xa_ref_file_no != NO_FILE_REF:
            xa_from = min(xa_from if xa_from is not None else NO_FILE_REF, end_header.xa_ref_file_no)
    for record in walk.records():
        if record.type != RecordType.COMMIT and xa_from is None:
            _track_xa(record, pending)
    if xa_from is not None:
        first = next((n for n in existing if n >= xa_from), end[0])
        for record in _records(source, first, 1):
            _track_xa(record, pending)
    return RestoredState(walk.state, walk.changed, pending)


def _track_xa(record: Record, pending: dict[Xid, PendingXa]) -> None:
    if record.type == RecordType.XA_PREPARE:
        prepare = XaPrepare.decode(record.payload)
        pending[prepare.xid] = PendingXa(prepare.xid, record.file_no, prepare.oob, prepare.engine_count)
    elif record.type == RecordType.XA_COMPLETE:
        pending.pop(XaComplete.decode(record.payload).xid, None)
