"""The engine's own redo log: LSN-stamped records in a circular file, checkpoints, group commit.

Why: MariaDB makes `.ibb` appends crash-safe by logging them in InnoDB's redo
log (seed 002, ibb-format.md §9).  This engine has no InnoDB, so it keeps a
redo log of its own with the same contract: an append to the binlog becomes
durable when its redo record is durable, binlog pages themselves may be
written (or not) at any time, and recovery replays the log from the last
checkpoint.  A host may put its own records into the same log write, so host
data and binlog become durable together without two-phase commit.

File ``redo.log`` in the binlog directory (not a ``binlog-*.ibb`` name, so
binlog readers ignore it)::

    [0, 4096)            checkpoint slot 0
    [4096, 8192)         checkpoint slot 1   (written alternately, newest valid wins)
    [8192, 8192 + cap)   circular record area: LSN x is stored at 8192 + x % cap

A record is ``u32 length, u32 crc, u64 lsn, body``; the LSN is the record's
position in the endless log stream, so a stale record from an earlier lap of
the circle has the wrong LSN.  The CRC-32C covers ``lsn + body`` and is seeded
with the checkpoint's *epoch*; every recovery starts a new epoch, so bytes of
records that were written but lost before a crash can never be mistaken for
records written after it.  The body is a list of operations (see ``OP_*``),
always ending with the binlog end position after the record.

Group commit: appenders put records into an in-memory buffer; a thread that
needs durability becomes the *leader* if no write is in progress, writes the
whole buffer (everyone's records), fsyncs once and wakes the followers.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator

from ..codec.ibb.redo import (  # the record and slot format
    SLOT_SIZE,
    AREA_START,
    MIN_CAPACITY,
    FRAME_SIZE,
    FIRST_LSN,
    Checkpoint,
    RedoRecord,
    decode_body,
    frame,
    frame_head,
    frame_valid,
)
from ..errors import EngineError

REDO_NAME = "redo.log"
IOV_BATCH = 512


class _Waiter:
    """A thread waiting in group commit: its LSN, the kind of flush, and its own wake-up lock."""

    __slots__ = ("error", "lead", "lock", "lsn", "sync")

    def __init__(self, lsn: int, sync: bool) -> None:
        self.lsn = lsn
        self.sync = sync
        self.lock = threading.Lock()
        self.lock.acquire()
        self.lead = False
        self.error: BaseException | None = None


class RedoLog:
    """The redo log file: buffered appends, group-commit writes, checkpoints, recovery scan.

    Thread safety: :meth:`append` may be called from any thread (callers that
    need records in a given order serialise themselves); :meth:`flush` elects
    one leader at a time.  ``on_write(lsn)`` / ``on_sync(lsn)`` are called by the
    leader after a write / fsync; ``barrier(token)`` before writing a record that
    was appended with a barrier token (pages that must be durable first);
    ``tap(lsn, data)`` receives every byte range written (online backup).
    """

    def __init__(self, path: str, fd: int, checkpoint: Checkpoint, next_lsn: int) -> None:
        self.path = path
        self._fd = fd
        self.checkpoint = checkpoint
        self.capacity = checkpoint.capacity
        self.epoch = checkpoint.epoch
        self._buf: list[bytes] = []
        self._buf_size = 0
        self._buf_lsn = next_lsn
        self._buf_lock = threading.Lock()
        self._barriers: deque[tuple[int, object]] = deque()
        self._cond = threading.Condition()
        self._busy = False
        self._waiters: list[_Waiter] = []
        self.written_lsn = next_lsn
        self.synced_lsn = next_lsn
        self.on_write: Callable[[int], None] | None = None
        self.on_sync: Callable[[int], None] | None = None
        self.barrier: Callable[[object], None] | None = None
        self.tap: Callable[[int, bytes], None] | None = None
        self._ckpt_lock = threading.Lock()
        self.closed = False
        #: Log writes made durable so far (each one fdatasync): commits / syncs is what group
        #: commit saves, whatever the disk's fsync cost.
        self.syncs = 0

    # ------------------------------------------------------------------ files

    @classmethod
    def create(cls, directory: str, capacity: int, *, lsn: int = FIRST_LSN, epoch: int = 1,
               end: tuple[int, int] = (0, 0), number: int = 1) -> RedoLog:
        """A new, empty log whose checkpoint says the binlog ends at ``end``.

        The record area is written with zeros (not left sparse) so that log
        writes never allocate blocks and an fdatasync needs no metadata update.
        """
        capacity = max(MIN_CAPACITY, capacity)
        path = os.path.join(directory, REDO_NAME)
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            checkpoint = Checkpoint(number, lsn, epoch, capacity, end)
            os.pwrite(fd, checkpoint.encode(), 0)
            os.pwrite(fd, bytes(SLOT_SIZE), SLOT_SIZE)
            zeros = bytes(min(capacity, 1 << 20))
            for offset in range(0, capacity, len(zeros)):
                os.pwrite(fd, zeros[: capacity - offset], AREA_START + offset)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        os.rename(tmp, path)
        fsync_dir(directory)
        return cls(path, fd, checkpoint, lsn)

    @staticmethod
    def read_checkpoint(path: str) -> Checkpoint:
        """The newest valid checkpoint of the log file at ``path``."""
        with open(path, "rb") as f:
            slots = f.read(AREA_START)
        found = [c for c in (Checkpoint.decode(slots[:SLOT_SIZE]), Checkpoint.decode(slots[SLOT_SIZE:])) if c]
        if not found:
            raise EngineError(f"{path}: no valid checkpoint in the redo log")
        return max(found, key=lambda c: c.number)

    @classmethod
    def open_for_recovery(cls, directory: str, *, readonly: bool = False) -> tuple[int, Checkpoint]:
        """Open the existing log: (fd, newest checkpoint); ``readonly`` for look-only views."""
        path = os.path.join(directory, REDO_NAME)
        checkpoint = cls.read_checkpoint(path)
        fd = os.open(path, os.O_RDONLY if readonly else os.O_RDWR)
        size = os.fstat(fd).st_size
        if size < AREA_START + checkpoint.capacity:
            os.close(fd)
            raise EngineError(f"{path}: file is {size} bytes, the checkpoint says {AREA_START + checkpoint.capacity}")
        return fd, checkpoint

    # ------------------------------------------------------------------ scanning

    @staticmethod
    def _read(fd: int, capacity: int, lsn: int, size: int) -> bytes:
        pos = lsn % capacity
        first = min(size, capacity - pos)
        data = os.pread(fd, first, AREA_START + pos)
        if first < size:
            data += os.pread(fd, size - first, AREA_START)
        return data

    @classmethod
    def scan(cls, fd: int, checkpoint: Checkpoint) -> Iterator[RedoRecord]:
        """Valid records from the checkpoint on, in LSN order, up to the first invalid one."""
        lsn = checkpoint.lsn
        limit = checkpoint.lsn + checkpoint.capacity
        while True:
            data = cls.frame_at(fd, checkpoint, lsn, limit)
            if data is None:
                return
            try:
                record = decode_body(lsn, lsn + len(data), data[FRAME_SIZE:])
            except (EngineError, ValueError, IndexError):
                return
            yield record
            lsn += len(data)

    @classmethod
    def frame_at(cls, fd: int, checkpoint: Checkpoint, lsn: int, limit: int) -> bytes | None:
        """The whole valid record (frame included) written at ``lsn`` in the epoch of
        ``checkpoint`` and ending by ``limit``; None where there is none (not written yet,
        torn, or overwritten by a later lap of the circular log)."""
        capacity = checkpoint.capacity
        if lsn + FRAME_SIZE > limit:
            return None
        length, crc, stored_lsn = frame_head(cls._read(fd, capacity, lsn, FRAME_SIZE))
        if stored_lsn != lsn or length < FRAME_SIZE + 3 or lsn + length > limit:
            return None
        data = cls._read(fd, capacity, lsn, length)
        return data if frame_valid(checkpoint.epoch, data, crc) else None

    # ------------------------------------------------------------------ appending

    @property
    def buffered_lsn(self) -> int:
        """LSN after the last appended record."""
        return self._buf_lsn + self._buf_size

    def free(self) -> int:
        """Bytes that can still be appended before the checkpoint must advance."""
        return self.capacity - (self.buffered_lsn - self.checkpoint.lsn)

    def append(self, body: bytes, barrier: object = None) -> tuple[int, int]:
        """Buffer one record; return its (lsn, end_lsn)."""
        with self._buf_lock:
            lsn = self._buf_lsn + self._buf_size
            record = frame(lsn, self.epoch, body)
            self._buf.append(record)
            self._buf_size += len(record)
            end = lsn + len(record)
            if barrier is not None:
                self._barriers.append((end, barrier))
        return lsn, end

    def buffered_bytes(self) -> int:
        """Bytes appended but not yet written."""
        return self._buf_size

    def flush(self, lsn: int | None = None, *, sync: bool = True) -> None:
        """Make the log written (``sync=False``) or durable up to ``lsn`` (default: all appended).

        Group commit: whoever finds no write in progress becomes the leader and
        writes everything buffered so far, fsyncs once, then wakes exactly the
        waiters it covered and hands leadership to the first one it did not.
        Each waiter sleeps on its own lock, so a flush wakes no one in vain.
        """
        if lsn is None:
            lsn = self.buffered_lsn
        with self._cond:
            if (self.synced_lsn if sync else self.written_lsn) >= lsn:
                return
            if self._busy:
                waiter = _Waiter(lsn, sync)
                self._waiters.append(waiter)
            else:
                self._busy = True
                waiter = None
        if waiter is not None:
            waiter.lock.acquire()
            if not waiter.lead:
                if waiter.error is not None:
                    raise waiter.error
                return
        while True:
            error: BaseException | None = None
            try:
                self._lead(sync)
            except BaseException as err:  # noqa: BLE001 - re-raised here and to the covered waiters
                error = err
            with self._cond:
                written, synced = self.written_lsn, self.synced_lsn
                waiting = []
                for other in self._waiters:
                    if error is not None or (synced if other.sync else written) >= other.lsn:
                        other.error = error
                        other.lock.release()
                    else:
                        waiting.append(other)
                mine_done = (synced if sync else written) >= lsn
                if error is None and not mine_done:
                    self._waiters = waiting
                    continue
                if waiting:
                    successor = waiting.pop(0)
                    successor.lead = True
                    self._waiters = waiting
                    successor.lock.release()
                else:
                    self._waiters = []
                    self._busy = False
            if error is not None:
                raise error
            return

    def _lead(self, sync: bool) -> None:
        with self._buf_lock:
            parts = self._buf
            start = self._buf_lsn
            end = self._buf_lsn = start + self._buf_size
            self._buf = []
            self._buf_size = 0
            token = None
            barriers = self._barriers
            while barriers and barriers[0][0] <= end:
                token = barriers.popleft()[1]
        if token is not None and self.barrier is not None:
            self.barrier(token)
        if parts:
            self._pwrite(start, parts)
            tap = self.tap
            if tap is not None:
                lsn = start
                for part in parts:
                    tap(lsn, part)
                    lsn += len(part)
        with self._cond:
            self.written_lsn = end
        if self.on_write is not None:
            self.on_write(end)
        if sync and self.synced_lsn < end:
            os.fdatasync(self._fd)
            with self._cond:
                self.synced_lsn = end
                self.syncs += 1
            if self.on_sync is not None:
                self.on_sync(end)

    def _pwrite(self, lsn: int, parts: list[bytes]) -> None:
        """Write the records (kept as separate objects: no multi-MB join, whose free would
        raise glibc's mmap threshold and fragment the heap) at their circular positions."""
        capacity = self.capacity
        batch: list[bytes | memoryview] = []
        batch_pos = lsn % capacity
        pos = batch_pos
        for part in parts:
            room = capacity - pos
            if len(part) > room:
                batch.append(memoryview(part)[:room])
                self._pwritev(batch, batch_pos)
                batch, batch_pos, pos = [memoryview(part)[room:]], 0, len(part) - room
                continue
            batch.append(part)
            pos += len(part)
            if len(batch) >= IOV_BATCH or pos == capacity:
                self._pwritev(batch, batch_pos)
                pos %= capacity
                batch, batch_pos = [], pos
        if batch:
            self._pwritev(batch, batch_pos)

    def _pwritev(self, buffers: list[bytes | memoryview], pos: int) -> None:
        offset = AREA_START + pos
        while buffers:
            written = os.pwritev(self._fd, buffers, offset)
            offset += written
            while buffers and written >= len(buffers[0]):
                written -= len(buffers[0])
                buffers.pop(0)
            if buffers and written:
                buffers[0] = memoryview(buffers[0])[written:]

    # ------------------------------------------------------------------ checkpoints

    def write_checkpoint(self, lsn: int, end: tuple[int, int], *, epoch: int | None = None) -> Checkpoint:
        """Durably record that the log before ``lsn`` is no longer needed (``lsn`` must be synced)."""
        with self._ckpt_lock:
            old = self.checkpoint
            checkpoint = Checkpoint(old.number + 1, lsn, old.epoch if epoch is None else epoch, self.capacity, end)
            os.pwrite(self._fd, checkpoint.encode(), (checkpoint.number % 2) * SLOT_SIZE)
            os.fdatasync(self._fd)
            self.checkpoint = checkpoint
        return checkpoint

    def close(self) -> None:
        """Close the file (appended but unwritten records are dropped)."""
        if not self.closed:
            self.closed = True
            os.close(self._fd)


def fsync_dir(directory: str) -> None:
    """fsync a directory so created, renamed and deleted names are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
