"""Power-loss harness: record the engine's file-system operations, rebuild the states a power
cut could leave, recover each in a fresh process (the method of ALICE and CrashMonkey).

A :class:`Recorder` wraps ``os`` (``open``, ``write``, ``pwrite``, ``pwritev``, ``ftruncate``,
``posix_fallocate``, ``fsync``, ``fdatasync``, ``rename``, ``unlink``, ``close``) while a workload
runs, and logs every operation on the engine directory by inode, plus ``ack`` markers when a
commit returned (durability mode 1: the engine promised it).  :func:`crash_state` replays the
log up to a crash point under one of four persistence models:

* ``synced``: only what was fsynced survives; directory operations (create, rename, unlink)
  not followed by a directory fsync are undone;
* ``kept``: everything written survives (a process crash);
* ``reordered``: each unsynced write and each unsynced directory operation survives or not,
  independently;
* ``torn``: unsynced writes survive in order up to one that is torn at 512-byte sectors
  (an arbitrary subset of its sectors reached the disk);
* ``sectors``: every 512-byte sector of every unsynced write survives or not, independently
  (a disk cache that keeps any subset of what it was given, also parts of one write).

:func:`check_state` writes such a state to a fresh directory and, in a forked child, opens
it (recovery), runs the offline checker, reads every group and asserts: every acknowledged
commit is there with its payload, the groups are a gap-free run of commit order after what
was purged, every visible group is whole, and writing goes on (a commit after the recovery
survives a clean reopen).  :func:`recovery_log` records a recovery itself, so the states a
power cut *during* recovery leaves are checked the same way.
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import crash_harness  # noqa: E402

from mariabinlog.codec.events import FL_TRANSACTIONAL, GtidEvent  # noqa: E402
from mariabinlog.codec.groups import EventGroup  # noqa: E402
from mariabinlog.codec.gtid import Gtid  # noqa: E402
from mariabinlog.codec.ibb.page import PAGE_SIZE_SHIFT  # noqa: E402
from mariabinlog.codec.ibb.records import Xid  # noqa: E402
from mariabinlog.engine import Engine  # noqa: E402
from mariabinlog.engine.check import check_directory  # noqa: E402
from mariabinlog.errors import EngineError, LogInUseError  # noqa: E402

SECTOR = 512
MODELS = ("synced", "kept", "reordered", "torn", "sectors")
#: Engine settings of the workloads, taken in turn: small files, a small redo log and small OOB
#: pieces; the settings of issue 27's power cut (pages forced to the file from two whole pages
#: on, 16 KiB pieces); and larger files and pieces.
CONFIGS: dict[str, dict[str, Any]] = {
    "64k": {
        "max_binlog_size": 64 * 1024,
        "state_interval": 32768,
        "redo_capacity": 256 * 1024,
        "flush_interval": 0.01,
        "fifo_pages": 16,
        "spill_size": 12 * 1024,
        "oob_piece_size": 4 * 1024,
    },
    "128k-forced": {
        "max_binlog_size": 128 * 1024,
        "state_interval": 32768,
        "redo_capacity": 1 << 20,
        "flush_interval": 0.01,
        "fifo_pages": 32,
        "spill_size": 40960,
        "oob_piece_size": 16384,
        "forced_page_threshold": 2,
    },
    "512k": {
        "max_binlog_size": 512 * 1024,
        "state_interval": 65536,
        "redo_capacity": 1 << 20,
        "flush_interval": 0.01,
        "fifo_pages": 32,
        "spill_size": 64 * 1024,
        "oob_piece_size": 32 * 1024,
    },
}
CONFIG = CONFIGS["64k"]
DOMAINS = (0, 1, 2)

Op = tuple[Any, ...]


# ---------------------------------------------------------------------- recording


class Recorder:
    """Wraps ``os`` so that every operation on files under ``root`` is logged (module docstring)."""

    NAMES = ("open", "close", "write", "pwrite", "pwritev", "ftruncate", "posix_fallocate", "fsync",
             "fdatasync", "rename", "unlink")

    def __init__(self, root: str, config: dict[str, Any] | None = None) -> None:
        self.root = os.path.abspath(root)
        #: the engine settings of the recorded workload
        self.config = CONFIG if config is None else config
        self.ops: list[Op] = []
        self.initial: dict[str, tuple[int, bytes]] = {}
        self._fds: dict[int, int | None] = {}  # fd -> inode (None: the directory)
        self._names: dict[str, int] = {}
        self._next = 0
        self._lock = threading.RLock()
        self._orig: dict[str, Callable[..., Any]] = {}

    def _new_inode(self) -> int:
        self._next += 1
        return self._next

    def _mine(self, path: str) -> bool:
        return os.path.dirname(path) == self.root

    def install(self) -> None:
        """Snapshot the directory as the initial state and start logging."""
        os.makedirs(self.root, exist_ok=True)
        for name in sorted(os.listdir(self.root)):
            path = os.path.join(self.root, name)
            if os.path.isfile(path):
                inode = self._new_inode()
                self._names[path] = inode
                with open(path, "rb") as handle:
                    self.initial[path] = (inode, handle.read())
        for name in self.NAMES:
            self._orig[name] = getattr(os, name)
            setattr(os, name, getattr(self, "_" + name))

    def uninstall(self) -> None:
        """Stop logging."""
        for name, func in self._orig.items():
            setattr(os, name, func)
        self._orig.clear()

    def ack(self, key: tuple[int, int], token: int) -> None:
        """A commit of GTID (domain, seq) ``key`` returned: the engine promised it survives."""
        with self._lock:
            self.ops.append(("ack", key, token))

    def _open(self, path: Any, flags: int, mode: int = 0o777, **kwargs: Any) -> int:
        full = os.path.abspath(os.fsdecode(path))
        with self._lock:
            existed = os.path.exists(full)
            fd = self._orig["open"](path, flags, mode, **kwargs)
            if full == self.root:
                self._fds[fd] = None
            elif self._mine(full):
                if not existed:
                    inode = self._new_inode()
                    self._names[full] = inode
                    self.ops.append(("create", full, inode))
                inode = self._names[full]
                self._fds[fd] = inode
                if existed and flags & os.O_TRUNC:
                    self.ops.append(("trunc", inode, 0))
            return fd

    def _close(self, fd: int) -> None:
        with self._lock:
            self._fds.pop(fd, None)
            self._orig["close"](fd)

    def _logged_write(self, fd: int, offset: int | None, data: bytes, write: Callable[[], int]) -> int:
        """Run ``write`` and log the bytes it wrote at ``offset`` (None: the file position)."""
        with self._lock:
            inode = self._fds.get(fd)
            if offset is None:
                offset = os.lseek(fd, 0, os.SEEK_CUR) if inode is not None else 0
            written = int(write())
            if inode is not None:
                self.ops.append(("write", inode, offset, data[:written]))
            return written

    def _write(self, fd: int, data: Any) -> int:
        return self._logged_write(fd, None, bytes(data), lambda: self._orig["write"](fd, data))

    def _pwrite(self, fd: int, data: Any, offset: int) -> int:
        return self._logged_write(fd, offset, bytes(data), lambda: self._orig["pwrite"](fd, data, offset))

    def _pwritev(self, fd: int, buffers: Any, offset: int) -> int:
        data = b"".join(bytes(b) for b in buffers)
        return self._logged_write(fd, offset, data, lambda: self._orig["pwritev"](fd, buffers, offset))

    def _ftruncate(self, fd: int, size: int) -> None:
        with self._lock:
            self._orig["ftruncate"](fd, size)
            inode = self._fds.get(fd)
            if inode is not None:
                self.ops.append(("trunc", inode, size))

    def _posix_fallocate(self, fd: int, offset: int, length: int) -> None:
        with self._lock:
            self._orig["posix_fallocate"](fd, offset, length)
            inode = self._fds.get(fd)
            if inode is not None:
                self.ops.append(("falloc", inode, offset + length))

    def _sync(self, name: str, fd: int) -> None:
        with self._lock:
            self._orig[name](fd)
            if fd in self._fds:
                inode = self._fds[fd]
                self.ops.append(("dirsync",) if inode is None else ("fsync", inode))

    def _fsync(self, fd: int) -> None:
        self._sync("fsync", fd)

    def _fdatasync(self, fd: int) -> None:
        self._sync("fdatasync", fd)

    def _rename(self, src: Any, dst: Any, **kwargs: Any) -> None:
        full_src, full_dst = os.path.abspath(os.fsdecode(src)), os.path.abspath(os.fsdecode(dst))
        with self._lock:
            self._orig["rename"](src, dst, **kwargs)
            if self._mine(full_src) and self._mine(full_dst):
                self._names[full_dst] = self._names.pop(full_src)
                self.ops.append(("rename", full_src, full_dst))

    def _unlink(self, path: Any, **kwargs: Any) -> None:
        full = os.path.abspath(os.fsdecode(path))
        with self._lock:
            self._orig["unlink"](path, **kwargs)
            if self._mine(full):
                self._names.pop(full, None)
                self.ops.append(("unlink", full))


# ---------------------------------------------------------------------- crash states


def _apply(buf: bytearray, op: Op) -> None:
    kind = op[0]
    if kind == "write":
        _, _, offset, data = op
        if len(buf) < offset + len(data):
            buf.extend(bytes(offset + len(data) - len(buf)))
        buf[offset : offset + len(data)] = data
    elif kind == "trunc":
        size = op[2]
        if len(buf) > size:
            del buf[size:]
        else:
            buf.extend(bytes(size - len(buf)))
    elif kind == "falloc" and len(buf) < op[2]:
        buf.extend(bytes(op[2] - len(buf)))


def _torn(buf: bytearray, op: Op, rnd: random.Random) -> None:
    """Apply a random subset of the 512-byte sectors of a write."""
    _, _, offset, data = op
    position = offset
    end = offset + len(data)
    while position < end:
        stop = min(end, (position // SECTOR + 1) * SECTOR)
        if rnd.random() < 0.5:
            _apply(buf, ("write", 0, position, data[position - offset : stop - offset]))
        position = stop


@dataclass
class CrashState:
    """Files (name -> bytes) a power cut at ``point`` leaves under ``model``, the commits
    acknowledged before it ((domain, seq) -> token) and the engine settings."""

    point: int
    model: str
    files: dict[str, bytes]
    acked: dict[tuple[int, int], int] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=lambda: CONFIG)


def crash_state(initial: dict[str, tuple[int, bytes]], ops: list[Op], point: int, model: str,
                rnd: random.Random, config: dict[str, Any] | None = None) -> CrashState:
    """Replay ``ops[:point]`` and keep what ``model`` lets survive (module docstring)."""
    synced: dict[int, bytearray] = {}
    current: dict[int, bytearray] = {}
    pending: dict[int, list[Op]] = {}
    durable_names: dict[str, int] = {}
    for path, (inode, data) in initial.items():
        synced[inode], current[inode], pending[inode] = bytearray(data), bytearray(data), []
        durable_names[path] = inode
    names = dict(durable_names)
    dir_pending: list[Op] = []
    acked: dict[tuple[int, int], int] = {}
    for op in ops[:point]:
        kind = op[0]
        if kind in ("write", "trunc", "falloc"):
            _apply(current[op[1]], op)
            pending[op[1]].append(op)
        elif kind == "fsync":
            synced[op[1]] = bytearray(current[op[1]])
            pending[op[1]] = []
        elif kind == "create":
            _, path, inode = op
            synced[inode], current[inode], pending[inode] = bytearray(), bytearray(), []
            names[path] = inode
            dir_pending.append(op)
        elif kind == "unlink":
            names.pop(op[1], None)
            dir_pending.append(op)
        elif kind == "rename":
            names[op[2]] = names.pop(op[1])
            dir_pending.append(op)
        elif kind == "dirsync":
            durable_names = dict(names)
            dir_pending = []
        elif kind == "ack":
            acked[op[1]] = op[2]
    if model == "kept":
        final_names = names
    elif model == "synced":
        final_names = durable_names
    else:
        final_names = dict(durable_names)
        for op in dir_pending:
            if rnd.random() < 0.5:
                continue
            if op[0] == "create":
                final_names[op[1]] = op[2]
            elif op[0] == "unlink":
                final_names.pop(op[1], None)
            elif op[0] == "rename" and op[1] in final_names:
                final_names[op[2]] = final_names.pop(op[1])
    files = {}
    for path, inode in final_names.items():
        buf = bytearray(synced[inode])
        todo = pending[inode]
        if model == "kept":
            for op in todo:
                _apply(buf, op)
        elif model == "reordered":
            for op in todo:
                if rnd.random() < 0.5:
                    _apply(buf, op)
        elif model == "torn" and todo:
            cut = rnd.randrange(len(todo) + 1)
            for op in todo[:cut]:
                _apply(buf, op)
            if cut < len(todo) and todo[cut][0] == "write":
                _torn(buf, todo[cut], rnd)
        elif model == "sectors":
            for op in todo:
                if op[0] == "write":
                    _torn(buf, op, rnd)
                elif rnd.random() < 0.5:
                    _apply(buf, op)
        files[os.path.basename(path)] = bytes(buf)
    return CrashState(point, model, files, acked, CONFIG if config is None else config)


def crash_points(ops: list[Op], limit: int, rnd: random.Random,
                 initial: dict[str, tuple[int, bytes]] | None = None) -> list[int]:
    """Crash points worth trying: right before and after every sync, directory operation and
    acknowledgement, every point where a binlog file has unsynced writes to two pages or more
    (a cut there may keep a later page and lose an earlier one), plus random points between,
    at most ``limit`` (spread over the log)."""
    binlogs = {inode for path, (inode, _) in (initial or {}).items() if path.endswith(".ibb")}
    unsynced: dict[int, set[int]] = {}
    interesting = set()
    for index, op in enumerate(ops):
        kind = op[0]
        if kind in ("fsync", "dirsync", "create", "rename", "unlink", "ack", "trunc", "falloc"):
            interesting.add(index)
            interesting.add(index + 1)
        if kind == "create" and op[1].endswith(".ibb"):
            binlogs.add(op[2])
        elif kind == "write" and op[1] in binlogs:
            pages = unsynced.setdefault(op[1], set())
            pages.add(op[2] >> PAGE_SIZE_SHIFT)
            if len(pages) > 1:
                interesting.add(index + 1)
        elif kind == "fsync":
            unsynced.pop(op[1], None)
    interesting.update(rnd.randrange(len(ops) + 1) for _ in range(max(1, len(ops) // 10)))
    points = sorted(interesting)
    if len(points) > limit:
        points = sorted(rnd.sample(points, limit))
    return points


def crash_states(initial: dict[str, tuple[int, bytes]], ops: list[Op], limit: int,
                 rnd: random.Random, config: dict[str, Any] | None = None) -> Iterator[CrashState]:
    """``limit`` crash states over the log, the models taken in turn."""
    points = crash_points(ops, max(1, limit // len(MODELS)) + 1, rnd, initial)
    count = 0
    for point in points:
        for model in MODELS:
            if count >= limit:
                return
            yield crash_state(initial, ops, point, model, rnd, config)
            count += 1


# ---------------------------------------------------------------------- workloads


#: The GTID domain of the archiver's batches (explicit GTIDs: one writer, the admin thread).
ARCHIVE_DOMAIN = 7


def archive_batch(engine: Engine, rnd: random.Random) -> list[tuple[tuple[int, int], int]]:
    """An archiver's batch: groups received with their own GTIDs (the next of :data:`ARCHIVE_DOMAIN`, which only the admin thread writes), small
    and out-of-band ones, written by :meth:`Engine.commit_groups` and not yet durable; their
    ((domain, seq), token)s."""
    last = engine.gtid_state().last(ARCHIVE_DOMAIN)
    seq = last.seq + 1 if last else 1
    batch, written = [], []
    for _ in range(rnd.randrange(1, 10)):
        token = rnd.getrandbits(60)
        size = rnd.randrange(15_000, 40_000) if rnd.random() < 0.15 else rnd.randrange(30, 3000)
        head = GtidEvent(seq_no=seq, domain_id=ARCHIVE_DOMAIN, flags2=FL_TRANSACTIONAL, server_id=1, timestamp=1).encode()
        batch.append(EventGroup(Gtid(ARCHIVE_DOMAIN, 1, seq), raw=[head, *crash_harness.group_events(token, size)]))
        written.append(((ARCHIVE_DOMAIN, seq), token))
        seq += 1
    engine.commit_groups(batch)
    return written


def _step(engine: Engine, rnd: random.Random, recorder: Recorder, admin: bool) -> None:
    """One operation of a workload thread: a commit (small, crossing pages, OOB with events up to
    60 KB, XA) in GTID domain 0, 1 or 2, or (``admin``) an archiver's batch (acknowledged once a
    group commit made it durable, as the archiver reports it), FLUSH, PURGE or a checkpoint."""
    token = rnd.getrandbits(60)
    domain = rnd.choice(DOMAINS)
    kind = rnd.random()
    if kind < 0.45:
        info = engine.commit(b"".join(crash_harness.group_events(token, rnd.randrange(30, 3000))), domain_id=domain)
    elif kind < 0.55:
        info = engine.commit(b"".join(crash_harness.group_events(token, rnd.randrange(5_000, 20_000))),
                             domain_id=domain)
    elif kind < 0.7:
        trx = engine.begin()
        for event in crash_harness.group_events(token, rnd.randrange(15_000, 120_000), 60_000, rnd):
            trx.write(event)
        info = engine.commit(trx=trx, domain_id=domain)
    elif kind < 0.78 or not admin:
        trx = engine.begin()
        for event in crash_harness.group_events(token, rnd.randrange(100, 20_000)):
            trx.write(event)
        xid = Xid(1, b"x%d" % token)
        trx.prepare(xid)
        if rnd.random() < 0.3:
            engine.xa_rollback(xid)
            return
        info = engine.xa_commit(xid, domain_id=domain)
    else:
        if kind < 0.82:
            written = archive_batch(engine, rnd)
            if rnd.random() < 0.7:  # made durable and reported so; else a later sync covers it
                engine.group_commit()
                for key, written_token in written:
                    recorder.ack(key, written_token)
        elif kind < 0.86:
            engine.flush()
        elif kind < 0.9:
            files = engine.files_list()
            if len(files) > 2:
                try:
                    engine.purge(files[rnd.randrange(1, len(files) - 1)].file_no)
                except (LogInUseError, EngineError):  # in use, or purged meanwhile
                    pass
        else:
            engine.checkpoint()
        return
    recorder.ack((info.gtid.domain, info.gtid.seq), token)


def workload(directory: str, steps: int, seed: int, config: dict[str, Any] | None = None, *,
             threads: int = 3, phases: int = 3) -> Recorder:
    """``steps`` operations (:func:`_step`) from ``threads`` threads at once (the first one also
    runs FLUSH, PURGE and checkpoints), in ``phases`` separated by a clean restart, recorded from
    an empty directory; durability mode 1, so every ``ack`` is a promise.  Threads at once leave
    more writes unsynced at a time (pages of one group written while another waits for its
    log write)."""
    config = CONFIG if config is None else config
    recorder = Recorder(directory, config)
    recorder.install()
    failures: list[BaseException] = []
    try:
        engine = Engine.open(directory, durability=1, **config)
        for phase in range(phases):
            if phase:
                engine.close()
                engine = Engine.open(directory, durability=1, **config)

            def run(number: int, count: int, engine: Engine = engine, phase: int = phase) -> None:
                rnd = random.Random(seed * 1000 + phase * 10 + number)
                try:
                    for _ in range(count):
                        _step(engine, rnd, recorder, admin=number == 0)
                except BaseException as err:  # noqa: BLE001 - raised in the recording thread below
                    failures.append(err)

            share = steps // phases
            counts = [share // threads + (n < share % threads) for n in range(threads)]
            workers = [threading.Thread(target=run, args=(n, counts[n])) for n in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            if failures:
                raise failures[0]
        engine.close()
    finally:
        recorder.uninstall()
    return recorder


def recovery_log(state: CrashState, workdir: str) -> tuple[dict[str, tuple[int, bytes]], list[Op]]:
    """Record the recovery of ``state`` and two commits after it, in a forked child."""
    directory = os.path.join(workdir, "recovering")
    shutil.rmtree(directory, ignore_errors=True)
    _write_state(directory, state.files)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            recorder = Recorder(directory, state.config)
            recorder.install()
            try:
                for key, token in state.acked.items():
                    recorder.ack(key, token)
                engine = Engine.open(directory, durability=1, restart_marker=False, **state.config)
                for _ in range(2):
                    token = random.getrandbits(60)
                    info = engine.commit(b"".join(crash_harness.group_events(token, 500)))
                    recorder.ack((info.gtid.domain, info.gtid.seq), token)
                engine.close()
            finally:
                recorder.uninstall()
            payload = pickle.dumps((recorder.initial, recorder.ops))
        except BaseException:  # noqa: BLE001 - reported to the parent
            payload = pickle.dumps(traceback.format_exc())
            code = 1
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        result = pickle.loads(pipe.read())
    os.waitpid(pid, 0)
    if isinstance(result, str):
        raise AssertionError(f"recording a recovery failed (model {state.model}, point {state.point}):\n{result}")
    return result


# ---------------------------------------------------------------------- checking


def _write_state(directory: str, files: dict[str, bytes]) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as handle:
            handle.write(data)


def _verify(directory: str, acked: dict[tuple[int, int], int], config: dict[str, Any]) -> None:
    engine = Engine.open(directory, durability=1, restart_marker=False, **config)
    try:
        state = engine.gtid_state()
        initial = engine.initial_state()
    finally:
        engine.close()
    report = check_directory(directory)
    assert report.ok, f"engine check after recovery:\n{report.summary()}"
    groups = crash_harness.binlog_groups(directory)  # verifies every group's payload
    purged = crash_harness.gap_free(groups, state, initial)
    recovered = dict(groups)
    for key, token in acked.items():
        assert key[1] <= purged.get(key[0], 0) or recovered.get(key) == token, f"acknowledged commit {key} lost"
    engine = Engine.open(directory, durability=1, restart_marker=False, **config)
    token = 424242
    info = engine.commit(b"".join(crash_harness.group_events(token, 800)))
    engine.close()
    again = dict(crash_harness.binlog_groups(directory))
    assert again.get((info.gtid.domain, info.gtid.seq)) == token, "a commit after the recovery did not survive a clean reopen"
    report = check_directory(directory)
    assert report.ok, f"engine check after writing on:\n{report.summary()}"


def check_state(state: CrashState, workdir: str) -> str | None:
    """Recover ``state`` in a forked child and verify it; the failure text, or None."""
    directory = os.path.join(workdir, "state")
    shutil.rmtree(directory, ignore_errors=True)
    _write_state(directory, state.files)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            _verify(directory, state.acked, state.config)
            message = b""
        except BaseException:  # noqa: BLE001 - reported to the parent
            message = traceback.format_exc().encode()
        with os.fdopen(write_end, "wb") as out:
            out.write(message)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    return message.decode() or None


@dataclass
class Summary:
    """Counts of one power-loss run."""

    states: int = 0
    failures: list[str] = field(default_factory=list)
    models: dict[str, int] = field(default_factory=dict)
    during_recovery: int = 0
    acked: int = 0
    configs: dict[str, int] = field(default_factory=dict)


def run(workdir: str, *, steps: int, states: int, recovery_states: int, seed: int,
        progress: Callable[[Summary], None] | None = None, configs: Iterable[str] = tuple(CONFIGS)) -> Summary:
    """For each of ``configs`` (names in :data:`CONFIGS`), record a workload and check its share
    of ``states`` crash states and of ``recovery_states`` states of recoveries of some of them
    (a power cut during recovery)."""
    rnd = random.Random(seed)
    summary = Summary()
    names = list(configs)
    for index, name in enumerate(names):
        config = CONFIGS[name]
        share = states // len(names) + (index < states % len(names))
        recovery_share = recovery_states // len(names) + (index < recovery_states % len(names))
        recorder = workload(os.path.join(workdir, f"workload-{name}"), steps, seed + index, config)
        summary.acked += sum(op[0] == "ack" for op in recorder.ops)
        needing: list[CrashState] = []
        for state in crash_states(recorder.initial, recorder.ops, share, rnd, config):
            _count(summary, state, check_state(state, workdir), name)
            if state.model in ("kept", "torn", "sectors") and len(needing) < 64 and rnd.random() < 0.3:
                needing.append(state)
            if progress is not None and summary.states % 100 == 0:
                progress(summary)
        per_base = max(len(MODELS), recovery_share // max(1, len(needing)))
        done = 0
        for base in needing:
            if done >= recovery_share:
                break
            initial, ops = recovery_log(base, workdir)
            for state in crash_states(initial, ops, min(per_base, recovery_share - done), rnd, config):
                state.model = f"recovery/{state.model}"
                _count(summary, state, check_state(state, workdir), name)
                summary.during_recovery += 1
                done += 1
                if progress is not None and summary.states % 100 == 0:
                    progress(summary)
    return summary


def _count(summary: Summary, state: CrashState, failure: str | None, config: str) -> None:
    summary.states += 1
    summary.models[state.model] = summary.models.get(state.model, 0) + 1
    summary.configs[config] = summary.configs.get(config, 0) + 1
    if failure is not None:
        summary.failures.append(f"settings {config}, model {state.model}, crash point {state.point}:\n{failure}")
