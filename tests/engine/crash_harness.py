"""Crash harness: a writer *process* under concurrent load is SIGKILLed at random moments.

The child (``python crash_harness.py child DIR MODE SEED``) opens an engine,
commits event groups from several threads (small groups, OOB groups, XA
prepare/commit, rolled-back OOB garbage, an occasional FLUSH BINARY LOGS) and
follows the binlog with a durable reader.  It reports on stdout, one line per
fact, with single ``os.write`` calls (atomic on a pipe):

* ``O <state>``            opened (after recovery)
* ``A <seq> <token>``      commit acknowledged (``commit`` returned)
* ``R <seq> <token>``      the reader received the group
* ``P <token>`` / ``X <token>``  XA prepared / its commit acknowledged
* ``K <op>`` / ``k <op>``  an administrative operation begins / ends (``admin=True``):
  PURGE by name, by age and by size, FLUSH, a checkpoint, XA ROLLBACK; the parent names
  the kill point after the operation that was running when the kill came.

Every group's events are derived from its token, so content is checked too.
After the kill the parent recovers the directory, runs the offline checker
and asserts: the binlog is exactly GTIDs k+1..n in order (a gap-free prefix of
commit order after the k groups purged, k from the oldest file's state) with
intact content, every group readable (no OOB pointer into a purged file); in mode 1 every acknowledged commit is
there; in every mode every group a reader received is there; the recovered
GTID state ends at n; acknowledged XA prepares are pending unless committed.
Used by ``tests/engine/test_crash.py`` and ``scripts/crash_soak.py``.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from mariabinlog.codec.events import QueryEvent, decode_event
from mariabinlog.codec.ibb_reader import RecordReader
from mariabinlog.codec.ibb_records import Xid
from mariabinlog.engine import Engine
from mariabinlog.engine.check import check_directory
from mariabinlog.codec.ibb_state import commit_gtid
from mariabinlog.engine.source import disk_source
from mariabinlog.engine.storage import BinlogFiles
from mariabinlog.errors import LogInUseError

CONFIG = {
    "max_binlog_size": 128 * 1024,
    "state_interval": 32768,
    "redo_capacity": 2 << 20,
    "flush_interval": 0.02,
    "fifo_pages": 64,
    "spill_size": 24 * 1024,
    "oob_piece_size": 8 * 1024,
}
THREADS = 6
#: With admin operations the binlog is also purged by size (automatic purge) while it runs.
ADMIN_CONFIG = {**CONFIG, "max_total_size": 768 * 1024}


# ---------------------------------------------------------------------- group content


def group_events(token: int, size: int) -> list[bytes]:
    """Query events whose text is derived from ``token`` (about ``size`` bytes in all)."""
    events = []
    index = 0
    pattern = token.to_bytes(8, "little")
    while size > 0 or not events:
        n = min(size, 6000)
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
    _say(f"k {op}")


def child(directory: str, mode: int, seed: int, admin: bool = False) -> None:
    """Open, then commit forever from THREADS threads while a reader follows."""
    engine = Engine.open(directory, durability=mode, **(ADMIN_CONFIG if admin else CONFIG))
    for pending in engine.pending_xa():
        token = int(pending.xid.gtrid[1:])
        info = engine.xa_commit(pending.xid)
        _say(f"X {token}")
        _say(f"A {info.gtid.seq} {token}")
    _say(f"O {engine.gtid_state()}")

    def committer(number: int) -> None:
        rnd = random.Random(seed * 1000 + number)
        while True:
            token = rnd.getrandbits(60)
            kind = rnd.random()
            if kind < 0.08:
                trx = engine.begin()
                for event in group_events(token, rnd.randrange(30_000, 150_000)):
                    trx.write(event)
                info = engine.commit(trx=trx)
            elif kind < 0.12:
                trx = engine.begin()
                for event in group_events(token, rnd.randrange(100, 40_000)):
                    trx.write(event)
                xid = Xid(1, b"x%d" % token)
                trx.prepare(xid)
                _say(f"P {token}")
                info = engine.xa_commit(xid)
                _say(f"X {token}")
            elif kind < 0.14:
                trx = engine.begin()
                for event in group_events(token, 40_000):
                    trx.write(event)
                trx.rollback()
                continue
            elif kind < 0.15 and admin and number == 1:
                trx = engine.begin()
                for event in group_events(token, rnd.randrange(100, 40_000)):
                    trx.write(event)
                xid = Xid(1, b"r%d" % token)
                trx.prepare(xid)
                _say("K xa-rollback")
                engine.xa_rollback(xid)
                _say("k xa-rollback")
                continue
            elif kind < 0.145 and number == 0 and not admin:
                engine.flush()
                continue
            elif kind < 0.2 and number == 0 and admin:
                _admin_op(engine, rnd)
                continue
            else:
                info = engine.commit(b"".join(group_events(token, rnd.randrange(30, 3000))))
            _say(f"A {info.gtid.seq} {token}")

    def follower() -> None:
        reader = engine.reader()
        for group in reader.groups(timeout=None):
            events = list(group.raw_events())
            gtid = commit_gtid(group.record.payload)
            assert gtid is not None
            _say(f"R {gtid.seq} {verify_group(events)}")

    threads = [threading.Thread(target=committer, args=(n,), daemon=True) for n in range(THREADS)]
    threads.append(threading.Thread(target=follower, daemon=True))
    for thread in threads:
        thread.start()
    while True:
        time.sleep(1)


# ---------------------------------------------------------------------- parent


@dataclass
class Facts:
    """What the child said before it died."""

    opened: bool = False
    acked: dict[int, int] = field(default_factory=dict)
    received: dict[int, int] = field(default_factory=dict)
    prepared: set[int] = field(default_factory=set)
    xa_done: set[int] = field(default_factory=set)
    #: administrative operation running at the end of the output (None: only commits)
    running: str | None = None
    #: seconds between the open and the kill, when the kill came after the open
    after_open: float | None = None

    def feed(self, text: str) -> None:
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "O":
                self.opened = True
            elif kind == "A":
                seq, token = rest.split()
                self.acked[int(seq)] = int(token)
            elif kind == "R":
                seq, token = rest.split()
                self.received[int(seq)] = int(token)
            elif kind == "P":
                self.prepared.add(int(rest))
            elif kind == "X":
                self.xa_done.add(int(rest))
            elif kind == "K":
                self.running = rest
            elif kind == "k":
                self.running = None


def run_child(directory: str, mode: int, seed: int, delay: float, *, after_open: bool = True,
              admin: bool = False) -> Facts:
    """Start a child, SIGKILL it ``delay`` s after it opened (or after start), return its facts."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "child", directory, str(mode), str(seed)]
        + (["admin"] if admin else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    facts = Facts()
    buffer = b""
    started = time.monotonic()
    kill_at = started + delay if not after_open else None
    fd = proc.stdout.fileno()
    while True:
        now = time.monotonic()
        if kill_at is not None and now >= kill_at:
            break
        if now - started > 30:
            proc.kill()
            raise AssertionError("crash child did not open within 30 s")
        ready, _, _ = select.select([fd], [], [], 0.01 if kill_at is None else max(0.0, kill_at - now))
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buffer += chunk
            if kill_at is None and b"\nO " in b"\n" + buffer:
                kill_at = time.monotonic() + delay
    proc.send_signal(signal.SIGKILL)
    opened_at = kill_at - delay if after_open and kill_at is not None else None
    rest, errors = proc.communicate()
    buffer += rest
    facts.feed(buffer.decode())
    if opened_at is not None and facts.opened:
        facts.after_open = delay
    if proc.returncode != -signal.SIGKILL:
        raise AssertionError(f"crash child exited with {proc.returncode}: {errors.decode()[-2000:]}")
    return facts


def binlog_groups(directory: str) -> list[tuple[int, int]]:
    """(seq, token) of every event group in the directory, read by the codec's own reader
    (an OOB pointer into a missing file raises)."""
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
            out.append((gtid.seq, verify_group(list(group.raw_events()))))
        return out
    finally:
        files.close()


def verify(directory: str, mode: int, facts: Facts, previous: dict[int, int], *, admin: bool = False) -> dict[int, int]:
    """Recover and assert every crash invariant; returns seq -> token of the recovered binlog."""
    engine = Engine.open(directory, durability=mode, restart_marker=False, **(ADMIN_CONFIG if admin else CONFIG))
    try:
        state = engine.gtid_state()
        pending = {int(p.xid.gtrid[1:]) for p in engine.pending_xa()}
        oldest = engine.initial_state().last(0)
    finally:
        engine.close()
    report = check_directory(directory)
    assert report.ok, report.summary()
    purged = oldest.seq if oldest else 0
    groups = binlog_groups(directory)
    seqs = [seq for seq, _ in groups]
    assert seqs == list(range(purged + 1, purged + len(seqs) + 1)), (
        f"binlog is not a gap-free prefix after the {purged} purged groups: {seqs[:5]}...{seqs[-5:]}"
    )
    recovered = dict(groups)
    n = purged + len(seqs)
    for seq, token in previous.items():
        assert seq <= purged or recovered.get(seq) == token, f"group {seq} that survived an earlier crash changed or vanished"
    for seq, token in facts.received.items():
        assert seq <= purged or recovered.get(seq) == token, f"a reader received group {seq} which recovery lost (mode {mode})"
    for seq, token in facts.acked.items():
        if mode == 1 and seq > purged:
            assert recovered.get(seq) == token, f"acknowledged commit {seq} lost in mode 1"
        elif seq in recovered:
            assert recovered[seq] == token, f"group {seq} holds another transaction's data"
    last = state.last(0)
    assert (last.seq if last else 0) == n, f"recovered GTID state {state} but the binlog ends at seq {n}"
    assert report.state == state, f"checker state {report.state} != engine state {state}"
    if mode == 1:
        committed = set(recovered.values())
        missing = {t for t in facts.prepared - facts.xa_done if t not in pending and t not in committed}
        assert not missing, f"acknowledged XA prepares not pending after recovery: {missing}"
    return recovered


def kill_point(facts: Facts, early: bool) -> str:
    """Where the kill came: start-up (recovery), just after the open, inside an admin
    operation, or under plain commit load."""
    if early and not facts.opened:
        return "startup"
    if facts.running is not None:
        return facts.running
    if facts.after_open is not None and facts.after_open < 0.02:
        return "after-open"
    return "load"


def crash_loop(directory: str, mode: int, kills: int, seed: int, *, max_delay: float = 0.5,
               admin: bool = False) -> dict[str, Any]:
    """Kill/recover/verify ``kills`` times; returns counters for reporting (``points``:
    kills per kill point)."""
    rnd = random.Random(seed)
    recovered: dict[int, int] = {}
    stats: dict[str, Any] = {"kills": 0, "acked": 0, "received": 0, "groups": 0, "early": 0, "lost": 0,
                             "points": {}}
    for round_no in range(kills):
        early = rnd.random() < 0.15
        if early:
            delay = rnd.uniform(0.0, 0.3)
        elif admin and rnd.random() < 0.15:
            delay = rnd.uniform(0.0, 0.02)  # right after the restart's open
        else:
            delay = rnd.uniform(0.05, max_delay)
        facts = run_child(directory, mode, seed * 100_000 + round_no, delay, after_open=not early, admin=admin)
        recovered = verify(directory, mode, facts, recovered, admin=admin)
        point = kill_point(facts, early)
        stats["points"][point] = stats["points"].get(point, 0) + 1
        stats["kills"] += 1
        stats["early"] += early
        stats["acked"] += len(facts.acked)
        stats["received"] += len(facts.received)
        stats["lost"] += sum(seq not in recovered and seq > min(recovered, default=0) for seq in facts.acked)
        stats["groups"] = len(recovered)
    return stats


if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), admin=sys.argv[5:] == ["admin"])
    else:
        sys.exit("usage: crash_harness.py child DIR MODE SEED [admin]")
