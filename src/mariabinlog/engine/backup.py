"""Online backup of an engine directory and the prepare step that makes the copy consistent.

Why (seed 002 "Backup", seed 000 "mariadb-backup"): binlog files are maintained
transactionally, so a copy taken while writers run is made consistent the way
mariabackup does it: copy the files in any state, plus the redo log from a
checkpoint up to an end LSN, then *prepare* = run crash recovery on the copy.

:meth:`Backup.backup` takes the engine's admin lock for its whole run, which blocks
FLUSH / PURGE / RESET (the files must not be cut or removed under the copy)
but never writers.  It checkpoints, then from that checkpoint's LSN on every
redo write is also appended to a stream file in the destination (a tap in the
log writer); the binlog files are copied; the log is written up to the end LSN
and the tap removed.  Pages that the engine forced to disk instead of logging
are copied again afterwards (they may have been written after the copy read
them).  The destination then holds the files and a ``redo.log`` whose
checkpoint is the backup's start, and :func:`prepare` replays it onto every
copied file (not only the last two: the copy of an older file may predate its
final pages) and starts a new epoch.  The result opens as a normal engine
directory; host records found in the log are handed to ``on_recover``.

:class:`Backup` holds no state between backups (a backup's redo tap is its own); the
:class:`~mariabinlog.engine.engine.Engine` holds it and lends it a :class:`~.host.BackupHost`
(its files and redo log, its locks, the write position, the checkpoint steps).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..codec.ibb.page import PAGE_SIZE
from ..errors import EngineError
from .recovery import HostRecords, Recovered, finish_recovery, recover
from ..codec.ibb.redo import (
    AREA_START,
    FRAME,
    MIN_CAPACITY,
    OP_FORCED,
    SLOT_SIZE,
    Checkpoint,
    decode_body,
    frame_head,
)
from .redo import REDO_NAME, RedoLog, fsync_dir
from .files import binlog_name
from .host import BackupHost
from .storage import BinlogFiles

STREAM_NAME = "redo.stream"
COPY_CHUNK = 1 << 20


@dataclass
class BackupInfo:
    """What a backup copied: the LSN range of its redo and the files."""

    destination: str
    start_lsn: int
    end_lsn: int
    end: tuple[int, int]
    files: list[int]
    bytes_copied: int


class _Tap:
    """Receives every redo write; keeps the bytes in [start_lsn, end_lsn) in a stream file."""

    def __init__(self, path: str, start_lsn: int) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.start_lsn = start_lsn
        self.next_lsn = start_lsn
        self.end_lsn: int | None = None
        self.lock = threading.Lock()

    def __call__(self, lsn: int, data: bytes) -> None:
        with self.lock:
            end = lsn + len(data)
            if self.end_lsn is not None:
                end = min(end, self.end_lsn)
            begin = max(lsn, self.next_lsn)
            if begin >= end:
                return
            if begin != self.next_lsn:
                raise EngineError(f"backup: redo stream gap at LSN {self.next_lsn}")
            os.write(self.fd, data[begin - lsn : end - lsn])
            self.next_lsn = end


class Backup:
    """Online backup of the engine's own directory (held by the engine; module docstring)."""

    def __init__(self, host: BackupHost) -> None:
        self._host = host

    def backup(self, destination: str | os.PathLike[str]) -> BackupInfo:
        """Copy the directory consistently into ``destination`` (must be empty or new)."""
        destination = os.fspath(destination)
        os.makedirs(destination, exist_ok=True)
        if os.listdir(destination):
            raise EngineError(f"backup destination {destination} is not empty")
        host = self._host
        redo = host.redo()
        with host.admin:
            with host.lock:
                host.check_open()
                capture = host.capture()
                start_lsn, start_end, _, _ = capture
                tap = _Tap(os.path.join(destination, STREAM_NAME), start_lsn)
                redo.tap = tap
            try:
                host.checkpoint_now(capture)
                source = host.files
                numbers = source.list()
                copied = 0
                target = BinlogFiles(destination)
                try:
                    for file_no in numbers:
                        copied += _copy_file(source, target, file_no)
                    with host.lock:
                        end_lsn = redo.buffered_lsn
                        end = host.position()
                        with tap.lock:
                            tap.end_lsn = end_lsn
                    redo.flush(end_lsn, sync=False)
                finally:
                    redo.tap = None
                if tap.next_lsn != end_lsn:
                    raise EngineError(f"backup: redo stream ends at LSN {tap.next_lsn}, expected {end_lsn}")
                try:
                    copied += _recopy_forced(tap.fd, start_lsn, end_lsn, source, target)
                    _write_redo(destination, tap.fd, start_lsn, end_lsn, redo.epoch, redo.capacity, start_end)
                    for file_no in target.list():
                        target.sync(file_no)
                finally:
                    target.close()
            finally:
                os.close(tap.fd)
                stream = os.path.join(destination, STREAM_NAME)
                if os.path.exists(stream):
                    os.unlink(stream)
        fsync_dir(destination)
        return BackupInfo(destination, start_lsn, end_lsn, end, numbers, copied)


def backup_from_outside(directory: str, destination: str | os.PathLike[str], *, attempts: int = 20) -> BackupInfo:
    """Copy an engine directory that another process has open (``engine backup`` beside a
    running ``archive``), without its lock and without writing to it.

    The way mariabackup copies a running server: note the newest checkpoint, copy the binlog
    files, then the redo log; if the copied log's checkpoint is still the one noted, every
    page before it was in the files when they were copied and no log bytes after it were
    overwritten (that needs a checkpoint), so the copy plus its log is a crash image of the
    directory; pages the log names as forced are copied again.  Otherwise (a checkpoint,
    FLUSH or RESET ran meanwhile) it starts over.  :func:`prepare` makes the copy consistent.
    """
    destination = os.fspath(destination)
    os.makedirs(destination, exist_ok=True)
    if os.listdir(destination):
        raise EngineError(f"backup destination {destination} is not empty")
    redo_path = os.path.join(directory, REDO_NAME)
    for _ in range(attempts):
        before = RedoLog.read_checkpoint(redo_path)
        source = BinlogFiles(directory, readonly=True)
        target = BinlogFiles(destination)
        try:
            numbers = source.list()
            copied = sum(_copy_file(source, target, file_no) for file_no in numbers)
            copied += _copy_path(redo_path, os.path.join(destination, REDO_NAME))
            fd, checkpoint = RedoLog.open_for_recovery(destination, readonly=True)
            try:
                if checkpoint != before:
                    raise _Moved()
                end_lsn, end = checkpoint.lsn, checkpoint.end
                for record in RedoLog.scan(fd, checkpoint):
                    end_lsn, end = record.end_lsn, record.end
                    for op in record.ops:
                        if op[0] == OP_FORCED:
                            page = source.read_page(op[1], op[2])
                            if page is None:
                                raise _Moved()
                            target.write_pages(op[1], op[2], [page])
                            copied += PAGE_SIZE
            finally:
                os.close(fd)
            for file_no in target.list():
                target.sync(file_no)
        except (_Moved, FileNotFoundError):
            target.close()
            for name in os.listdir(destination):
                os.unlink(os.path.join(destination, name))
            continue
        finally:
            source.close()
            target.close()
        fsync_dir(destination)
        return BackupInfo(destination, checkpoint.lsn, end_lsn, end, numbers, copied)
    raise EngineError(f"{directory}: the engine kept moving under the backup ({attempts} attempts)")


class _Moved(Exception):
    """The source directory changed in a way the copy cannot follow: start over."""


def _copy_path(source: str, target: str) -> int:
    """Copy one file by path; returns bytes copied."""
    fd = os.open(source, os.O_RDONLY)
    try:
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            size = 0
            while True:
                data = os.read(fd, COPY_CHUNK)
                if not data:
                    break
                os.write(out, data)
                size += len(data)
        finally:
            os.close(out)
        return size
    finally:
        os.close(fd)


def _copy_file(source: BinlogFiles, target: BinlogFiles, file_no: int) -> int:
    """Copy a binlog file as it is now; returns bytes copied."""
    try:
        fd = os.open(source.path(file_no), os.O_RDONLY)
    except FileNotFoundError:
        return 0
    try:
        size = os.fstat(fd).st_size
        out = os.open(target.path(file_no), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            offset = 0
            while offset < size:
                data = os.pread(fd, min(COPY_CHUNK, size - offset), offset)
                if not data:
                    break
                os.pwrite(out, data, offset)
                offset += len(data)
            os.ftruncate(out, size)
        finally:
            os.close(out)
        return size
    finally:
        os.close(fd)


def _records(fd: int, start_lsn: int, end_lsn: int) -> list[tuple[int, bytes]]:
    """(lsn, body) of each record in the stream file."""
    out = []
    lsn = start_lsn
    while lsn < end_lsn:
        head = os.pread(fd, FRAME.size, lsn - start_lsn)
        length, _, stored = frame_head(head)
        if stored != lsn:
            raise EngineError(f"backup: redo stream damaged at LSN {lsn}")
        body = os.pread(fd, length - FRAME.size, lsn - start_lsn + FRAME.size)
        out.append((lsn, body))
        lsn += length
    return out


def _recopy_forced(fd: int, start_lsn: int, end_lsn: int, source: BinlogFiles, target: BinlogFiles) -> int:
    """Copy again the pages that redo records name as forced (written after the file copy maybe)."""
    copied = 0
    for lsn, body in _records(fd, start_lsn, end_lsn):
        record = decode_body(lsn, lsn, body)
        for op in record.ops:
            if op[0] == OP_FORCED:
                _, file_no, page_no, _ = op
                page = source.read_page(file_no, page_no)
                if page is None:
                    raise EngineError(f"backup: forced page {page_no} of {binlog_name(file_no)} disappeared")
                target.write_pages(file_no, page_no, [page])
                copied += PAGE_SIZE
    return copied


def _write_redo(destination: str, fd: int, start_lsn: int, end_lsn: int, epoch: int, capacity: int,
                end: tuple[int, int]) -> None:
    """A redo log for the copy: checkpoint at the backup start, the streamed records after it."""
    length = end_lsn - start_lsn
    capacity = max(capacity, MIN_CAPACITY, 1 << (length + SLOT_SIZE).bit_length())
    path = os.path.join(destination, REDO_NAME)
    out = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.pwrite(out, Checkpoint(1, start_lsn, epoch, capacity, end).encode(), 0)
        os.pwrite(out, bytes(SLOT_SIZE), SLOT_SIZE)
        os.ftruncate(out, AREA_START + capacity)
        lsn = start_lsn
        while lsn < end_lsn:
            data = os.pread(fd, min(COPY_CHUNK, end_lsn - lsn), lsn - start_lsn)
            position = lsn % capacity
            first = min(len(data), capacity - position)
            os.pwrite(out, data[:first], AREA_START + position)
            if first < len(data):
                os.pwrite(out, data[first:], AREA_START)
            lsn += len(data)
        os.fsync(out)
    finally:
        os.close(out)


def prepare(destination: str, on_recover: Callable[[HostRecords], None] | None = None) -> Recovered:
    """Make a backup copy consistent: replay its redo onto all copied files, start a new epoch."""
    files = BinlogFiles(destination)
    try:
        recovered = recover(destination, files, all_files=True)
        try:
            if recovered.host_records and on_recover is not None:
                on_recover(recovered.host_records)
            finish_recovery(recovered)
        finally:
            recovered.redo.close()
    finally:
        files.close()
    return recovered
