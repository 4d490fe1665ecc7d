"""Crash harness: a writer *process* under concurrent load is SIGKILLed at random moments.

The child (forked by :func:`run_child`, or ``python crash_harness.py child DIR MODE SEED
[admin] [SIZE]``) opens an engine whose new files are SIZE bytes (64 KiB to 512 KiB, drawn per
trial: every restart may change ``max_binlog_size``, as a server's may), and commits event
groups from four threads in GTID domains 0, 1 and 2: small groups, groups crossing pages,
out-of-band groups, ~1 MB groups of events up to 160 KB (its first OOB node is where the
buffered part of a group meets a large event), XA prepare + commit, rolled-back OOB garbage.
With ``admin`` a fifth thread runs FLUSH BINARY LOGS, PURGE (by name, by age, by size; the
automatic purge by size is on too) and checkpoints, and one committer XA ROLLBACK.  A durable
reader follows the binlog.  It reports on stdout, one line per fact, with single
``os.write`` calls (atomic on a pipe):

* ``O <state>``                       opened (after recovery)
* ``A <domain> <seq> <token> <kind>``  commit acknowledged (``commit`` returned); kind is
  ``small``, ``page``, ``oob``, ``big`` or ``xa``
* ``R <domain> <seq> <token>``         the reader received the group
* ``P <token>`` / ``X <token>``        XA prepared / its commit acknowledged
* ``K <op>`` / ``k <op>``              an administrative operation begins / ends; the parent
  names the kill point after the operation that was running when the kill came.

Every group's events are derived from its token, so content is checked too.  After the kill
the parent first asks the look-only view what an open will find, then recovers the directory
and asserts: the open finds what the view predicted (end, GTID state); the offline checker is
clean (every ``CHECK_EVERY``-th trial also on the crashed directory, checked as it will
recover, before the open); per domain the binlog is exactly GTIDs k+1..n (a gap-free prefix
of commit order after the k groups purged, k from the oldest file's state) with intact
content, every group readable (no OOB pointer into a purged file); in mode 1 every
acknowledged commit is there; in every mode every group a reader received is there; the
recovered GTID state of each domain ends at its n; acknowledged XA prepares are pending
unless committed.  Used by ``tests/engine/test_crash.py`` and ``scripts/crash_soak.py``.
"""

from __future__ import annotations

import ctypes
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from mariabinlog.codec.events import QueryEvent, decode_event
from mariabinlog.codec.gtid import BinlogState
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.codec.ibb.records import Xid
from mariabinlog.engine import Engine
from mariabinlog.engine.check import check_directory
from mariabinlog.codec.ibb.state import commit_gtid
from mariabinlog.engine.source import disk_source
from mariabinlog.engine.storage import BinlogFiles
from mariabinlog.engine.view import engine_kind, view
from mariabinlog.errors import EngineError, LogInUseError

#: Settings of every trial (those of the trial in issue 27's reproduction) but the file size.
CONFIG = {
    "state_interval": 32768,
    "redo_capacity": 1 << 20,
    "flush_interval": 0.02,
    "fifo_pages": 16,
    "spill_size": 24 * 1024,
    "oob_piece_size": 8 * 1024,
    "forced_page_threshold": 4,
}
#: ``max_binlog_size`` of a trial, drawn per trial.
FILE_SIZES = (64 * 1024, 128 * 1024, 256 * 1024, 512 * 1024)
COMMITTERS = 4
DOMAINS = (0, 1, 2)
#: With admin operations the binlog is also purged by size (automatic purge) while it runs.
ADMIN_TOTAL_SIZE = 2 << 20
#: Every this many trials the crashed directory is also checked as it will recover, before the open.
CHECK_EVERY = 10
PR_SET_PDEATHSIG = 1

Key = tuple[int, int]  # (domain, seq)


def trial_config(size: int, admin: bool) -> dict[str, Any]:
    """Engine settings of a trial with files of ``size`` bytes."""
    config: dict[str, Any] = {**CONFIG, "max_binlog_size": size}
    if admin:
        config["max_total_size"] = ADMIN_TOTAL_SIZE
    return config


# ---------------------------------------------------------------------- group content


def group_events(token: int, size: int, largest: int = 6000, rnd: random.Random | None = None,
                 lead: int = 0) -> list[bytes]:
    """Query events whose text is derived from ``token`` (about ``size`` bytes in all), each at
    most ``largest`` bytes of text (with ``rnd``, of random sizes up to that); the first
    ``lead`` bytes in events of at most 6000 bytes (small rows before large ones)."""
    events = []
    index = 0
    written = 0
    pattern = token.to_bytes(8, "little")
    while size > 0 or not events:
        most = 6000 if written < lead else largest
        n = min(size, most if rnd is None else rnd.randrange(1, most + 1))
        written += n
        head = f"T{token}:{index}:{n}:".encode()
        body = (pattern * (n // 8 + 1))[:n]
        events.append(QueryEvent(query=head + body, database=b"crash", server_id=1, timestamp=1).encode())
        size -= n
        index += 1
    return events


def verify_group(events: list[bytes]) -> int:
    """The token of a group's events (after the GTID event); raises if the content is damaged."""
    token = None
    for index, raw in enumerate(events[1:]):
        event = decode_event(raw)
        assert isinstance(event, QueryEvent), event
        head, _, rest = event.query.partition(b":")
        text_index, _, rest = rest.partition(b":")
        text_len, _, body = rest.partition(b":")
        this = int(head[1:])
        if token is None:
            token = this
        assert this == token and int(text_index) == index and int(text_len) == len(body), event.query[:60]
        pattern = token.to_bytes(8, "little")
        assert body == (pattern * (len(body) // 8 + 1))[: len(body)], f"damaged body in group of token {token}"
    assert token is not None, "group without events"
    return token


# ---------------------------------------------------------------------- child


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def _admin_op(engine: Engine, rnd: random.Random) -> None:
    """One administrative operation, announced (``K``) and confirmed (``k``)."""
    choice = rnd.random()
    if choice < 0.25:
        op = "purge-to"
    elif choice < 0.4:
        op = "purge-before"
    elif choice < 0.55:
        op = "purge-size"
    elif choice < 0.75:
        op = "flush"
    else:
        op = "checkpoint"
    _say(f"K {op}")
    try:
        if op == "purge-to":
            files = engine.files_list()
            if len(files) > 2:
                engine.purge(files[rnd.randrange(1, len(files) - 1)].file_no)
        elif op == "purge-before":
            engine.purge(before=time.time() - rnd.uniform(0.0, 0.5))
        elif op == "purge-size":
            engine.purge()
        elif op == "flush":
            engine.flush()
        else:
            engine.checkpoint()
    except LogInUseError:
        pass
    except EngineError as err:  # PURGE TO a file the automatic purge removed meanwhile
        if "Target log not found" not in str(err):
            raise
    _say(f"k {op}")


def _commit_one(engine: Engine, rnd: random.Random, number: int, admin: bool) -> None:
    """One event group (or XA rollback, or rolled-back garbage) of a committer."""
    token = rnd.getrandbits(60)
    domain = rnd.choice(DOMAINS)
    kind = rnd.random()
    if kind < 0.03:
        what = "big"  # ~1 MB: a few small events (buffered), then events up to 160 KB
        trx = engine.begin()
        for event in group_events(token, rnd.randrange(700_000, 1_300_000), 160_000, rnd, rnd.randrange(30_000)):
            trx.write(event)
        info = engine.commit(trx=trx, domain_id=domain)
    elif kind < 0.10:
        what = "oob"
        trx = engine.begin()
        for event in group_events(token, rnd.randrange(30_000, 150_000), rnd.choice((6000, 40_000)), rnd):
            trx.write(event)
        info = engine.commit(trx=trx, domain_id=domain)
    elif kind < 0.14:
        what = "xa"
        trx = engine.begin()
        for event in group_events(token, rnd.randrange(100, 40_000)):
            trx.write(event)
        xid = Xid(1, b"x%d" % token)
        trx.prepare(xid)
        _say(f"P {token}")
        info = engine.xa_commit(xid, domain_id=domain)
        _say(f"X {token}")
    elif kind < 0.155:
        trx = engine.begin()
        for event in group_events(token, 40_000):
            trx.write(event)
        trx.rollback()
        return
    elif kind < 0.165 and admin and number == 1:
        trx = engine.begin()
        for event in group_events(token, rnd.randrange(100, 40_000)):
            trx.write(event)
        xid = Xid(1, b"r%d" % token)
        trx.prepare(xid)
        _say("K xa-rollback")
        engine.xa_rollback(xid)
        _say("k xa-rollback")
        return
    elif kind < 0.3:
        what = "page"  # one record across page boundaries, under the spill size
        info = engine.commit(b"".join(group_events(token, rnd.randrange(5_000, 23_000))), domain_id=domain)
    else:
        what = "small"
        info = engine.commit(b"".join(group_events(token, rnd.randrange(30, 3000))), domain_id=domain)
    _say(f"A {info.gtid.domain} {info.gtid.seq} {token} {what}")


def _die(args: threading.ExceptHookArgs) -> None:
    """A committer, the reader or the admin thread failed: end the child with that error."""
    os.write(2, "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)).encode())
    os._exit(3)


def child(directory: str, mode: int, seed: int, admin: bool = False, size: int = FILE_SIZES[1]) -> None:
    """Open, then commit forever from COMMITTERS threads (and an admin thread) while a reader follows."""
    threading.excepthook = _die
    engine = Engine.open(directory, durability=mode, **trial_config(size, admin))
    for pending in engine.pending_xa():
        token = int(pending.xid.gtrid[1:])
        info = engine.xa_commit(pending.xid)
        _say(f"X {token}")
        _say(f"A {info.gtid.domain} {info.gtid.seq} {token} xa")
    _say(f"O {engine.gtid_state()}")

    def committer(number: int) -> None:
        rnd = random.Random(seed * 1000 + number)
        while True:
            _commit_one(engine, rnd, number, admin)

    def administrator() -> None:
        rnd = random.Random(seed * 1000 + 99)
        while True:
            time.sleep(rnd.uniform(0.01, 0.12))
            _admin_op(engine, rnd)

    def follower() -> None:
        reader = engine.reader()
        for group in reader.groups(timeout=None):
            events = list(group.raw_events())
            gtid = commit_gtid(group.record.payload)
            assert gtid is not None
            _say(f"R {gtid.domain} {gtid.seq} {verify_group(events)}")

    threads = [threading.Thread(target=committer, args=(n,), daemon=True) for n in range(COMMITTERS)]
    threads.append(threading.Thread(target=follower, daemon=True))
    if admin:
        threads.append(threading.Thread(target=administrator, daemon=True))
    for thread in threads:
        thread.start()
    while True:
        time.sleep(1)


# ---------------------------------------------------------------------- parent


@dataclass
class Facts:
    """What the child said before it died."""

    opened: bool = False
    acked: dict[Key, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    received: dict[Key, int] = field(default_factory=dict)
    prepared: set[int] = field(default_factory=set)
    xa_done: set[int] = field(default_factory=set)
    #: administrative operations running at the end of the output
    running: list[str] = field(default_factory=list)
    #: seconds between the open and the kill, when the kill came after the open
    after_open: float | None = None

    def feed(self, text: str) -> None:
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "O":
                self.opened = True
            elif kind == "A":
                domain, seq, token, what = rest.split()
                self.acked[int(domain), int(seq)] = int(token)
                self.kinds[what] = self.kinds.get(what, 0) + 1
            elif kind == "R":
                domain, seq, token = rest.split()
                self.received[int(domain), int(seq)] = int(token)
            elif kind == "P":
                self.prepared.add(int(rest))
            elif kind == "X":
                self.xa_done.add(int(rest))
            elif kind == "K":
                self.running.append(rest)
            elif kind == "k" and rest in self.running:
                self.running.remove(rest)


def _fork_child(directory: str, mode: int, seed: int, admin: bool, size: int) -> tuple[int, int, Any]:
    """Fork a child writer (no interpreter start-up, nothing to import): (pid, stdout fd, stderr file)."""
    read_end, write_end = os.pipe()
    errors = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        try:
            # die with the harness: an interrupted soak leaves no writer running
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() == 1:
                os._exit(1)
            os.close(read_end)
            os.dup2(write_end, 1)
            os.dup2(errors.fileno(), 2)
            child(directory, mode, seed, admin, size)
        except BaseException:  # noqa: BLE001 - reported through stderr and the exit code
            traceback.print_exc()
            sys.stderr.flush()
        os._exit(1)
    os.close(write_end)
    return pid, read_end, errors


def run_child(directory: str, mode: int, seed: int, delay: float, *, after_open: bool = True,
              admin: bool = False, size: int = FILE_SIZES[1]) -> Facts:
    """Fork a child, SIGKILL it ``delay`` s after it opened (or after start), return its facts."""
    pid, fd, errors = _fork_child(directory, mode, seed, admin, size)
    facts = Facts()
    buffer = b""
    started = time.monotonic()
    kill_at = started + delay if not after_open else None
    try:
        while True:
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                break
            if now - started > 30:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError("crash child did not open within 30 s")
            ready, _, _ = select.select([fd], [], [], 0.01 if kill_at is None else max(0.0, kill_at - now))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                buffer += chunk
                if kill_at is None and b"\nO " in b"\n" + buffer:
                    kill_at = time.monotonic() + delay
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        while chunk := os.read(fd, 65536):
            buffer += chunk
    finally:
        os.close(fd)
    errors.seek(0)
    text = errors.read().decode(errors="replace")
    errors.close()
    facts.feed(buffer.decode())
    if after_open and facts.opened:
        facts.after_open = delay
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        raise AssertionError(f"crash child exited with status {status}: {text[-3000:]}")
    return facts


def binlog_groups(directory: str) -> list[tuple[Key, int]]:
    """((domain, seq), token) of every event group in the directory, in binlog order, read by
    the codec's own reader (an OOB pointer into a missing file raises)."""
    files = BinlogFiles(directory)
    try:
        numbers = files.list()
        if not numbers:
            return []
        reader = RecordReader(disk_source(files), numbers[0], skip_partial=numbers[0] != 0)
        out = []
        for group in reader.event_groups():
            gtid = commit_gtid(group.record.payload)
            if gtid is None:
                continue
            out.append(((gtid.domain, gtid.seq), verify_group(list(group.raw_events()))))
        return out
    finally:
        files.close()


def gap_free(groups: Iterable[tuple[Key, int]], state: BinlogState, initial: BinlogState) -> dict[int, int]:
    """Assert that per domain the groups are GTIDs k+1..n in order, k from the state at the start
    of the oldest file (groups purged before it) and n the recovered state's; returns k per domain."""
    seqs: dict[int, list[int]] = {}
    for (domain, seq), _ in groups:
        seqs.setdefault(domain, []).append(seq)
    purged = {}
    for domain in set(seqs) | {g.domain for g in state.to_list()}:
        oldest, last = initial.last(domain), state.last(domain)
        k = oldest.seq if oldest else 0
        got = seqs.get(domain, [])
        assert got == list(range(k + 1, k + len(got) + 1)), (
            f"domain {domain}: not a gap-free prefix after the {k} purged groups: {got[:5]}...{got[-5:]}"
        )
        assert (last.seq if last else 0) == k + len(got), (
            f"domain {domain}: recovered GTID state {state} but the binlog ends at seq {k + len(got)}"
        )
        purged[domain] = k
    return purged


def verify(directory: str, mode: int, facts: Facts, previous: dict[Key, int], *, admin: bool = False,
           size: int = FILE_SIZES[1], deep: bool = False) -> tuple[dict[Key, int], dict[int, int]]:
    """Recover and assert every crash invariant; returns (domain, seq) -> token of the recovered
    binlog and the groups purged before it per domain.  ``deep`` also checks the crashed
    directory as it will recover, before the open."""
    seen = view(directory) if os.path.isdir(directory) and engine_kind(directory) == "engine" else None
    if deep and seen is not None:
        ahead = check_directory(directory, as_recovered=True)
        assert ahead.ok, f"engine check of the crashed directory (as it will recover):\n{ahead.summary()}"
    engine = Engine.open(directory, durability=mode, restart_marker=False, **trial_config(size, admin))
    try:
        status = engine.status()
        state = engine.gtid_state()
        pending = {int(p.xid.gtrid[1:]) for p in engine.pending_xa()}
        initial = engine.initial_state()
    finally:
        engine.close()
    if seen is not None and seen.end != (0, 0):
        assert (status.file_no, status.offset) == seen.end, f"view predicted end {seen.end}, the open found {status}"
        assert seen.state == state, f"view predicted GTID state {seen.state}, the open found {state}"
    report = check_directory(directory)
    assert report.ok, report.summary()
    groups = binlog_groups(directory)
    purged = gap_free(groups, state, initial)
    recovered = dict(groups)

    def gone(key: Key) -> bool:
        return key[1] <= purged.get(key[0], 0)

    for key, token in previous.items():
        assert gone(key) or recovered.get(key) == token, f"group {key} that survived an earlier crash changed or vanished"
    for key, token in facts.received.items():
        assert gone(key) or recovered.get(key) == token, f"a reader received group {key} which recovery lost (mode {mode})"
    for key, token in facts.acked.items():
        if mode == 1 and not gone(key):
            assert recovered.get(key) == token, f"acknowledged commit {key} lost in mode 1"
        elif key in recovered:
            assert recovered[key] == token, f"group {key} holds another transaction's data"
    assert report.state == state, f"checker state {report.state} != engine state {state}"
    if mode == 1:
        committed = set(recovered.values())
        missing = {t for t in facts.prepared - facts.xa_done if t not in pending and t not in committed}
        assert not missing, f"acknowledged XA prepares not pending after recovery: {missing}"
    return recovered, purged


def kill_point(facts: Facts, early: bool) -> str:
    """Where the kill came: start-up (recovery), just after the open, inside an admin
    operation, or under plain commit load."""
    if early and not facts.opened:
        return "startup"
    if facts.running:
        return facts.running[-1]
    if facts.after_open is not None and facts.after_open < 0.02:
        return "after-open"
    return "load"


def crashed_copy(directory: str) -> str:
    """Where :func:`crash_loop` keeps the directory as the last kill left it (before recovery)."""
    return directory.rstrip("/") + ".crashed"


def crash_loop(directory: str, mode: int, kills: int, seed: int, *, max_delay: float = 0.5,
               admin: bool = False) -> dict[str, Any]:
    """Kill/recover/verify ``kills`` times; returns counters for reporting (``points``: kills
    per kill point, ``kinds``: acknowledged groups per kind, ``sizes``: trials per file size).
    A failure names the copy of the directory as the kill left it (:func:`crashed_copy`)."""
    rnd = random.Random(seed)
    recovered: dict[Key, int] = {}
    stats: dict[str, Any] = {"kills": 0, "acked": 0, "received": 0, "groups": 0, "early": 0, "lost": 0,
                             "points": {}, "kinds": {}, "sizes": {}}
    for round_no in range(kills):
        size = rnd.choice(FILE_SIZES)
        early = rnd.random() < 0.15
        if early:
            delay = rnd.uniform(0.0, 0.08)  # mostly inside the open: recovery
        elif admin and rnd.random() < 0.15:
            delay = rnd.uniform(0.0, 0.02)  # right after the restart's open
        else:
            delay = rnd.uniform(0.05, max_delay)
        crashed = crashed_copy(directory)
        try:
            facts = run_child(directory, mode, seed * 100_000 + round_no, delay, after_open=not early,
                              admin=admin, size=size)
            point = kill_point(facts, early)
            # the directory as the kill left it, kept until the next kill: recovery rewrites it,
            # and a finding is only reproducible from the state before
            shutil.rmtree(crashed, ignore_errors=True)
            if os.path.isdir(directory):
                shutil.copytree(directory, crashed)
            recovered, purged = verify(directory, mode, facts, recovered, admin=admin, size=size,
                                       deep=round_no % CHECK_EVERY == CHECK_EVERY - 1)
        except AssertionError as err:
            where = f"kill {round_no + 1} of {kills} (mode {mode}, {size // 1024} KiB files, delay {delay:.3f} s"
            kept = f" (as the kill left it: {crashed})" if os.path.isdir(crashed) else ""
            raise AssertionError(f"{where}, {locals().get('point', 'before the kill')}){kept}: {err}") from err
        stats["points"][point] = stats["points"].get(point, 0) + 1
        stats["sizes"][size] = stats["sizes"].get(size, 0) + 1
        for kind, count in facts.kinds.items():
            stats["kinds"][kind] = stats["kinds"].get(kind, 0) + count
        stats["kills"] += 1
        stats["early"] += early
        stats["acked"] += len(facts.acked)
        stats["received"] += len(facts.received)
        stats["lost"] += sum(key not in recovered and key[1] > purged.get(key[0], 0) for key in facts.acked)
        stats["groups"] = len(recovered)
    return stats


if __name__ == "__main__":
    if len(sys.argv) in (5, 6, 7) and sys.argv[1] == "child":
        extra = sys.argv[5:]
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), admin="admin" in extra,
              size=next((int(a) for a in extra if a.isdigit()), FILE_SIZES[1]))
    else:
        sys.exit("usage: crash_harness.py child DIR MODE SEED [admin] [SIZE]")
