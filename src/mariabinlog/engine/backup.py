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
import time
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
                        copied += _copy_file(source, target, file_no)[0]
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
                    try:
                        copied += _recopy_forced(tap.fd, start_lsn, end_lsn, source, target)[0]
                    except _Moved as err:  # the admin lock holds purge off: nothing may vanish here
                        raise EngineError(f"backup: {err}") from None
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

    The way mariabackup copies a running server: note the newest checkpoint, and while the
    binlog files are copied, follow the redo log from that checkpoint's LSN, keeping every
    record in a stream file as it is written (:class:`_RedoFollower`; the log is circular, and
    a busy writer checkpoints and laps it many times during a long copy).  The files copied
    after the checkpoint plus the records from it to the end of the copy are a crash image
    of the directory; pages the records name as forced are copied again, and the records
    become the copy's redo log, which :func:`prepare` replays.  If the follower was lapped, or
    RESET or a restart began a new epoch, it tries again, copying only the files that changed
    since it copied them (:class:`_Copies`).
    """
    destination = os.fspath(destination)
    os.makedirs(destination, exist_ok=True)
    if os.listdir(destination):
        raise EngineError(f"backup destination {destination} is not empty")
    redo_path = os.path.join(directory, REDO_NAME)
    stream_path = os.path.join(destination, STREAM_NAME)
    copies = _Copies()
    copied = 0  # bytes written into the destination, every attempt counted
    try:
        for _ in range(attempts):
            start = RedoLog.read_checkpoint(redo_path)
            source = BinlogFiles(directory, readonly=True)
            target = BinlogFiles(destination)
            follower = _RedoFollower(redo_path, stream_path, start)
            try:
                numbers = source.list()
                for file_no in target.list():
                    if file_no not in numbers:  # purged since the last attempt
                        target.delete(file_no)
                        copies.forget(file_no)
                for file_no in numbers:
                    size = copies.copy(source, target, file_no)
                    if size is None:  # purged under the copy: so are the ones before it
                        for older in target.list():
                            if older < file_no:
                                target.delete(older)
                                copies.forget(older)
                    copied += size or 0
                end_lsn, end = follower.finish()
                forced, touched = _recopy_forced(follower.fd, start.lsn, end_lsn, source, target)
                copied += forced
                for file_no in touched:
                    copies.forget(file_no)  # the copy no longer matches one state of the file
                _write_redo(destination, follower.fd, start.lsn, end_lsn, start.epoch, start.capacity, start.end)
                copied += end_lsn - start.lsn
                for file_no in target.list():
                    target.sync(file_no)
            except _Moved:
                continue
            finally:
                follower.close()
                source.close()
                target.close()
            os.unlink(stream_path)
            fsync_dir(destination)
            return BackupInfo(destination, start.lsn, end_lsn, end, BinlogFiles(destination).list(), copied)
    except BaseException:
        _empty(destination)
        raise
    _empty(destination)
    raise EngineError(f"{directory}: the engine kept moving under the backup ({attempts} attempts)")


def _empty(directory: str) -> None:
    """Remove what a failed backup left in its destination."""
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))


class _RedoFollower:
    """Copies a live redo log's records, from a checkpoint's LSN on, into a stream file as the
    writer of another process appends them (mariabackup's log-copying thread).

    A record is complete in the log once a later checkpoint names an LSN past it, and it is
    not overwritten before the writer's checkpoint passes it (the log is circular): so a
    missing record at an LSN below the live checkpoint means the follower was lapped.
    """

    #: seconds between looks at the log when nothing new was there (each look also reads the
    #: checkpoint); a writer laps the log only after a whole capacity (>= 1 MiB) more
    POLL = 0.005

    def __init__(self, redo_path: str, stream_path: str, start: Checkpoint) -> None:
        self.redo_path = redo_path
        self.start = start
        self.lsn = start.lsn
        self.last: bytes | None = None
        self.error: BaseException | None = None  # what ended the thread, raised by finish()
        self._log = os.open(redo_path, os.O_RDONLY)
        self.fd = os.open(stream_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="backup-redo-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._drain():
                    self._stop.wait(self.POLL)
        except BaseException as err:  # noqa: BLE001 - raised in the caller's thread by finish()
            self.error = err

    def _drain(self) -> bool:
        """Copy the records written since the last call; False when there was none."""
        start = self.start
        moved = False
        while True:
            data = RedoLog.frame_at(self._log, start, self.lsn, self.lsn + start.capacity)
            if data is None:
                live = RedoLog.read_checkpoint(self.redo_path)
                if live.epoch != start.epoch:
                    raise _Moved()  # RESET MASTER, or the writer restarted
                if live.lsn <= self.lsn:
                    return moved  # not written yet
                data = RedoLog.frame_at(self._log, start, self.lsn, self.lsn + start.capacity)
                if data is None:
                    raise _Moved()  # lapped: the record is gone
            os.write(self.fd, data)
            self.lsn += len(data)
            self.last = data
            moved = True

    def finish(self) -> tuple[int, tuple[int, int]]:
        """Stop after the records written so far; (end LSN, binlog end) of the stream."""
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error
        self._drain()
        if self.last is None:
            return self.lsn, self.start.end
        lsn = self.lsn - len(self.last)
        return self.lsn, decode_body(lsn, self.lsn, self.last[FRAME.size:]).end

    def close(self) -> None:
        """Stop the thread and close both descriptors (the stream file stays)."""
        self._stop.set()
        self._thread.join()
        os.close(self._log)
        os.close(self.fd)


class _Copies:
    """Which copied binlog files still equal their source, so a retry copies only the others.

    A copy is trusted while the source's size and modification time are those it had when
    it was copied, and that time was at least :attr:`QUIET_NS` before the copy began: file
    times come from a coarse clock (a few ms), so a write just after the copy may leave the
    time unchanged, but never one that was already a second old.  Only the files the writer
    has moved past are that quiet, and those are the bulk of a large directory.
    """

    QUIET_NS = 1_000_000_000

    def __init__(self) -> None:
        self._copied: dict[int, tuple[int, int]] = {}  # file_no -> (size, mtime_ns) trusted

    def copy(self, source: BinlogFiles, target: BinlogFiles, file_no: int) -> int | None:
        """Copy ``file_no`` unless the copy made earlier still equals it; returns bytes
        copied, None when the source file is gone (purged)."""
        try:
            stat = os.stat(source.path(file_no))
        except FileNotFoundError:
            return None
        if self._copied.get(file_no) == (stat.st_size, stat.st_mtime_ns):
            return 0
        began = time.time_ns()
        self._copied.pop(file_no, None)
        copied, stat = _copy_file(source, target, file_no)
        if stat is None:
            return None
        if stat.st_mtime_ns <= began - self.QUIET_NS:
            self._copied[file_no] = (stat.st_size, stat.st_mtime_ns)
        return copied

    def forget(self, file_no: int) -> None:
        """The copy of ``file_no`` was changed or removed: copy it whole next time."""
        self._copied.pop(file_no, None)


class _Moved(Exception):
    """The source directory changed in a way the copy cannot follow: start over."""


def _copy_file(source: BinlogFiles, target: BinlogFiles, file_no: int) -> tuple[int, os.stat_result | None]:
    """Copy a binlog file as it is now; returns bytes copied and the source's status as the
    copy began (None when the file is gone)."""
    try:
        fd = os.open(source.path(file_no), os.O_RDONLY)
    except FileNotFoundError:
        return 0, None
    try:
        stat = os.fstat(fd)
        size = stat.st_size
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
        return size, stat
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


def _recopy_forced(fd: int, start_lsn: int, end_lsn: int, source: BinlogFiles,
                   target: BinlogFiles) -> tuple[int, set[int]]:
    """Copy again the pages that the stream's redo records name as forced (written after the
    file copy maybe); returns the bytes copied and the files touched.  _Moved when one is gone."""
    copied = 0
    touched: set[int] = set()
    for lsn, body in _records(fd, start_lsn, end_lsn):
        for op in decode_body(lsn, lsn, body).ops:
            if op[0] != OP_FORCED:
                continue
            _, file_no, page_no, _ = op
            page = source.read_page(file_no, page_no)
            if page is None:
                raise _Moved(f"forced page {page_no} of {binlog_name(file_no)} disappeared")
            target.write_pages(file_no, page_no, [page])
            copied += PAGE_SIZE
            touched.add(file_no)
    return copied, touched


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
