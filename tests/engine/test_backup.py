"""Online backup (files + redo from a checkpoint to an end LSN) and prepare."""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import crash_harness
import pytest
from engine_helpers import SMALL, fake_event, gtid_groups, query

from mariabinlog.codec.gtid import BinlogState
from mariabinlog.engine.redo import REDO_NAME, RedoLog
from mariabinlog.engine import Engine
from mariabinlog.engine import backup as backup_module
from mariabinlog.engine.backup import backup_from_outside, prepare
from mariabinlog.engine.check import check_directory
from mariabinlog.errors import EngineError


def test_backup_under_concurrent_writes_is_a_consistent_prefix(open_engine, engine_dir: Path, tmp_path: Path) -> None:
    engine = open_engine(durability=2, spill_size=20_000, oob_piece_size=5_000)
    stop = threading.Event()
    acked: list[int] = []

    def writer(number: int) -> None:
        rnd = random.Random(number)
        n = 0
        while not stop.is_set():
            if rnd.random() < 0.1:
                trx = engine.begin()
                for i in range(rnd.randrange(3, 12)):
                    trx.write(fake_event(4_000, (n + i) % 256))
                info = engine.commit(trx=trx)
            else:
                info = engine.commit(query(b"w%d-%d" % (number, n), rnd.randrange(50, 4_000)))
            acked.append(info.gtid.seq)
            n += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    before = len(acked)
    info = engine.backup(tmp_path / "copy")
    time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    engine.close()
    assert info.end_lsn > info.start_lsn and info.files
    recovered = prepare(str(tmp_path / "copy"))
    assert recovered.end == info.end
    report = check_directory(str(tmp_path / "copy"))
    assert report.ok, report.summary()
    source_groups = gtid_groups(engine_dir)
    copy_groups = gtid_groups(tmp_path / "copy")
    assert before <= len(copy_groups) < len(source_groups)
    assert copy_groups == source_groups[: len(copy_groups)]
    # the prepared copy is a normal engine directory: it opens cleanly and takes new commits
    clone = Engine.open(tmp_path / "copy", restart_marker=False, **SMALL)
    assert clone.gtid_state().last(0).seq == len(copy_groups)
    clone.commit(query(b"on the clone", 10))
    clone.close()
    assert check_directory(str(tmp_path / "copy")).ok


def test_flush_waits_for_a_running_backup(open_engine, tmp_path: Path) -> None:
    engine = open_engine()
    for n in range(50):
        engine.commit(query(b"b%d" % n, 2_000))
    events = []
    original = engine.files.list

    def slow_list() -> list[int]:  # the backup lists the files, then copies them slowly
        events.append("list")
        time.sleep(0.3)
        return original()

    engine.files.list = slow_list  # type: ignore[method-assign]
    backup = threading.Thread(target=lambda: engine.backup(tmp_path / "copy"))
    backup.start()
    time.sleep(0.1)
    engine.files.list = original  # type: ignore[method-assign]
    started = time.monotonic()
    engine.flush()
    waited = time.monotonic() - started
    backup.join()
    assert events == ["list"] and waited > 0.1
    prepare(str(tmp_path / "copy"))
    assert check_directory(str(tmp_path / "copy")).ok


def test_backup_from_outside_while_another_process_writes(tmp_path: Path) -> None:
    """`engine backup` beside a running writer process: no "in use" refusal, a consistent prefix."""
    source = tmp_path / "live"
    env = dict(os.environ, PYTHONPATH=str(crash_harness.SRC))
    child = subprocess.Popen([sys.executable, crash_harness.__file__, "child", str(source), "1", "7"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None
    seen = b""
    try:
        while seen.count(b"\nA ") < 50:
            ready, _, _ = select.select([child.stdout], [], [], 30)
            assert ready, "the writer process did not commit"
            seen += os.read(child.stdout.fileno(), 65536)
        acked_before = crash_harness.Facts()
        acked_before.feed(seen.decode())
        done = subprocess.run([sys.executable, "-m", "mariabinlog", "engine", "backup", str(source),
                               str(tmp_path / "copy")], capture_output=True, text=True, env=env, timeout=120,
                              check=False)
        assert child.poll() is None, "the writer died during the backup"
    finally:
        child.kill()
        child.communicate()
    assert done.returncode == 0, done.stderr
    report = check_directory(str(tmp_path / "copy"))
    assert report.ok, report.summary()
    groups = crash_harness.binlog_groups(str(tmp_path / "copy"))
    crash_harness.gap_free(groups, report.state, BinlogState())  # nothing purged: GTIDs from 1
    recovered = dict(groups)
    for key, token in acked_before.acked.items():
        assert recovered.get(key) == token, f"commit {key}, acknowledged before the backup began, is not in the copy"


def test_outside_backup_follows_the_log_through_checkpoints(open_engine, engine_dir: Path, tmp_path: Path,
                                                            monkeypatch) -> None:
    """A writer that checkpoints while every file is copied (a busy engine checkpoints each
    second; a large directory takes longer to copy) does not make the outside backup start
    over: the copy follows the redo log from the first checkpoint and succeeds in one attempt,
    a consistent prefix holding every group committed before it began."""
    engine = open_engine()
    for n in range(40):
        engine.commit(query(b"before%d" % n, 3_000))
    committed = engine.gtid_state()
    redo_path = str(engine_dir / REDO_NAME)
    first = RedoLog.read_checkpoint(redo_path).number
    copy_file = backup_module._copy_file
    n = 0

    def copy_then_write(source, target, file_no):  # the writer moves on and checkpoints after each file
        nonlocal n
        result = copy_file(source, target, file_no)
        for _ in range(3):
            engine.commit(query(b"during%d" % n, 3_000))
            n += 1
        engine.checkpoint()
        return result

    monkeypatch.setattr(backup_module, "_copy_file", copy_then_write)
    info = backup_from_outside(str(engine_dir), tmp_path / "copy", attempts=1)
    assert RedoLog.read_checkpoint(redo_path).number >= first + len(info.files)
    assert info.end_lsn > info.start_lsn
    prepare(str(tmp_path / "copy"))
    report = check_directory(str(tmp_path / "copy"))
    assert report.ok, report.summary()
    seqs = [gtid.seq for gtid, _ in gtid_groups(tmp_path / "copy")]
    assert seqs == list(range(1, len(seqs) + 1))  # one domain: every GTID from 1, none twice
    assert str(report.state) == f"0-1-{len(seqs)}"
    assert len(seqs) >= committed.last(0).seq  # every group committed before the backup began


def test_outside_backup_lapped_by_the_writer_tries_again(open_engine, engine_dir: Path, tmp_path: Path,
                                                         monkeypatch) -> None:
    """When the writer laps the circular redo log before the follower copied its records (more
    than the log's capacity written while the follower slept), that attempt is abandoned, not
    stored with a hole; the next attempt makes a consistent copy."""
    engine = open_engine()
    for n in range(20):
        engine.commit(query(b"before%d" % n, 3_000))
    attempts = []

    class Late(backup_module._RedoFollower):
        """In a call's first attempt the thread copies nothing (finish() finds the log lapped)."""

        def __init__(self, *args, **kwargs) -> None:
            self.idle = not attempts
            attempts.append(self)
            super().__init__(*args, **kwargs)
            if self.idle:  # more than the log holds, written while the follower is away
                for n in range(700):
                    engine.commit(query(b"lap%d" % n, 3_000))

        def _run(self) -> None:
            if not self.idle:
                super()._run()

    monkeypatch.setattr(backup_module, "_RedoFollower", Late)
    with pytest.raises(EngineError, match="kept moving"):
        backup_from_outside(str(engine_dir), tmp_path / "one", attempts=1)
    assert os.listdir(tmp_path / "one") == []  # nothing half-made left behind
    attempts.clear()
    backup_from_outside(str(engine_dir), tmp_path / "copy", attempts=2)
    assert len(attempts) == 2
    prepare(str(tmp_path / "copy"))
    report = check_directory(str(tmp_path / "copy"))
    assert report.ok, report.summary()
    seqs = [gtid.seq for gtid, _ in gtid_groups(tmp_path / "copy")]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 720
