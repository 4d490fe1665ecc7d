"""Commands that should only look never write, and no engine command takes a wrong path for one.

Every engine subcommand (and ``files``) runs on an empty directory, a legacy binlog
directory, a plain file, a missing path, an unreadable directory and a directory of
garbage: no traceback, a one-line refusal (or a listing) and nothing in the path changed.
On a real engine directory, also one that needs recovery, ``status``, ``files`` and
``check`` leave every byte and every timestamp as it was.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from engine_helpers import SMALL, SRC, gtid_groups, query, query_texts, run_child

from mariabinlog.codec.events import FormatDescriptionEvent
from mariabinlog.codec.ibb.page import LEGACY_MAGIC
from mariabinlog.cli import main as cli_main
from mariabinlog.engine import Engine
from mariabinlog.engine.check import check_directory
from mariabinlog.engine.files import binlog_name

Snapshot = dict[str, tuple[int, int, int, str]]


def mariabinlog(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "mariabinlog", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def snapshot(path: Path) -> Snapshot:
    """Every entry under ``path`` (and ``path`` itself): mode, size, mtime and content hash."""
    out: Snapshot = {}
    if not path.exists():
        return out
    try:
        entries = [path] + sorted(path.rglob("*")) if path.is_dir() else [path]
    except PermissionError:  # an unreadable directory: its own metadata must not change
        entries = [path]
    for entry in entries:
        info = entry.lstat()
        try:
            digest = hashlib.sha256(entry.read_bytes()).hexdigest() if entry.is_file() else ""
        except PermissionError:
            digest = "unreadable"
        out[str(entry)] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return out


def make_path(kind: str, base: Path) -> Path:
    """A path of the given kind that holds no binlog engine."""
    path = base / kind
    if kind == "empty":
        path.mkdir()
    elif kind == "legacy":
        path.mkdir()
        event = FormatDescriptionEvent(server_version="10.11.0-test", create_timestamp=1, timestamp=1).encode()
        (path / "mysql-bin.000001").write_bytes(LEGACY_MAGIC + event)
        (path / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    elif kind == "file":
        path.write_bytes(b"just a file\n")
    elif kind == "unreadable":
        path.mkdir()
        (path / "secret").write_bytes(b"x" * 100)
        path.chmod(0)
    elif kind == "garbage":
        path.mkdir()
        (path / "notes.txt").write_text("hello\n")
        (path / "binlog-000000.ibb").write_bytes(os.urandom(3000))
        (path / "data.bin").write_bytes(os.urandom(20000))
    return path


KINDS = ["empty", "legacy", "file", "missing", "unreadable", "garbage"]
COMMANDS = [
    ["engine", "status", "{path}"],
    ["engine", "files", "{path}"],
    ["engine", "check", "{path}"],
    ["engine", "flush", "{path}"],
    ["engine", "purge", "--to", "binlog-000001.ibb", "{path}"],
    ["engine", "reset", "--yes", "{path}"],
    ["engine", "reset", "{path}"],
    ["engine", "backup", "{path}", "{dest}"],
    ["engine", "backup", "--prepare-only", "{path}"],
    ["files", "{path}"],
    ["dump", "{path}"],
    ["dump", "-vv", "--base64-output=decode-rows", "{path}"],
    ["dump", "--format=json", "{path}"],
    ["events", "{path}"],
    ["find", "--archive", "{path}"],
    ["undo", "--archive", "{path}", "--gtid", "0-1-1", "--dry-run"],
]


@pytest.mark.parametrize("kind", KINDS)
def test_no_command_writes_into_a_path_without_an_engine(tmp_path: Path, kind: str) -> None:
    path = make_path(kind, tmp_path)
    try:
        before = snapshot(path)
        for command in COMMANDS:
            dest = tmp_path / "backup-dest"
            done = mariabinlog(*(arg.format(path=path, dest=dest) for arg in command))
            where = f"{' '.join(command)} on a {kind} path"
            assert "Traceback" not in done.stderr, f"{where}: {done.stderr}"
            assert snapshot(path) == before, f"{where} changed the path"
            assert not dest.exists() or not any(dest.iterdir()), f"{where} wrote a backup"
            if command[0] == "engine":
                assert done.returncode == 1, f"{where}: exit {done.returncode}\n{done.stdout}{done.stderr}"
                lines = done.stderr.strip().splitlines()
                assert len(lines) == 1 and str(path) in lines[0], f"{where}: {done.stderr!r}"
    finally:
        if path.is_dir():
            path.chmod(stat.S_IRWXU)


def test_engine_status_on_a_fresh_empty_directory_leaves_it_empty(tmp_path: Path) -> None:
    done = mariabinlog("engine", "status", str(tmp_path))
    assert done.returncode == 1 and "engine init" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_init_is_the_creator(tmp_path: Path) -> None:
    target = tmp_path / "new"
    done = mariabinlog("engine", "init", str(target))
    assert done.returncode == 0, done.stderr
    status = mariabinlog("engine", "status", str(target))
    assert status.returncode == 0 and "File: binlog-000000.ibb" in status.stdout
    garbage = make_path("garbage", tmp_path)
    refused = mariabinlog("engine", "init", str(garbage))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr


def _engine_with_data(directory: Path) -> None:
    with Engine.open(directory, **SMALL) as engine:
        for n in range(40):
            engine.commit(query(b"q%d" % n, 4000), domain_id=n % 3)


@pytest.mark.parametrize("crashed", [False, True], ids=["clean", "needs-recovery"])
def test_looking_at_an_engine_changes_nothing(engine_dir: Path, crashed: bool) -> None:
    _engine_with_data(engine_dir)
    if crashed:
        run_child(engine_dir, """
engine = Engine.open(engine_dir, **SMALL)
for n in range(25):
    engine.commit(query(b"late%d" % n, 3000), domain_id=1)
os._exit(0)
""")
    before = snapshot(engine_dir)
    status = mariabinlog("engine", "status", str(engine_dir))
    files = mariabinlog("engine", "files", str(engine_dir))
    check = mariabinlog("engine", "check", str(engine_dir))
    listing = mariabinlog("files", str(engine_dir))
    assert snapshot(engine_dir) == before
    assert status.returncode == 0 and files.returncode == 0 and listing.returncode == 0, status.stderr + files.stderr
    assert ("Recovery: needed" in status.stdout) == crashed, status.stdout
    # what the look-only status reports is what an open then finds
    with Engine.open(engine_dir, restart_marker=False) as engine:
        opened = engine.status()
    assert f"Gtid_Binlog_State: {opened.gtid_binlog_state}" in status.stdout
    assert f"Position: {opened.offset}" in status.stdout
    assert check.returncode == 0, check.stdout  # a crashed directory is checked as it will recover
    assert ("recovery: needed" in check.stdout) == crashed, check.stdout


def test_a_clean_directory_opens_without_recovery_or_writes(engine_dir: Path) -> None:
    _engine_with_data(engine_dir)
    before = snapshot(engine_dir)
    with Engine.open(engine_dir, restart_marker=False) as engine:
        recovered = engine.recovered
        assert recovered is not None and recovered.records == 0 and not recovered.deleted_files
        assert engine.config.max_binlog_size == SMALL["max_binlog_size"]  # from the headers
    assert snapshot(engine_dir) == before


def test_a_killed_writers_directory_reads_as_its_recovery_will(engine_dir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """After a writer (``archive``) is killed, the look-only commands read the directory as the
    next open will recover it, in memory: here the last group's full pages reached the file
    but its last, partial page is only in the redo log, so the files alone hold an incomplete
    COMMIT record (and a pre-allocated next file); nothing is written."""
    run_child(engine_dir, """
engine = Engine.open(engine_dir, **{**SMALL, "max_binlog_size": 8 * 16384})
for n in range(5):
    engine.commit(query(b"small%d" % n, 500))
engine.checkpoint()
info = engine.commit(query(b"big", 40_000))
engine.fifo.wait_flushed((info.end_file_no, info.end_offset // 16384))
os._exit(0)
""")
    raw = check_directory(str(engine_dir))
    assert not raw.ok and "COMMIT record is incomplete" in raw.errors[0], raw.summary()
    before = snapshot(engine_dir)

    def run(*argv: str) -> tuple[int, str]:
        code = cli_main(list(argv))
        out, err = capfd.readouterr()
        assert "Traceback" not in err, err
        return code, out + err

    check = run("engine", "check", str(engine_dir))
    dump = run("dump", str(engine_dir))
    events = run("events", str(engine_dir))
    files = run("files", str(engine_dir))
    engine_files = run("engine", "files", str(engine_dir))
    assert snapshot(engine_dir) == before
    assert check[0] == 0 and "recovery: needed" in check[1] and "\nOK" in check[1], check[1]
    assert dump[0] == 0, dump[1][-500:]
    assert [line.split("GTID ")[1].split()[0] for line in dump[1].splitlines() if "GTID 0-1-" in line] == [
        f"0-1-{n}" for n in range(1, 7)]
    assert events[0] == 0 and "use `test`; big" in events[1], events[1][-500:]
    assert files == (0, f"Log_name\tFile_size\n{binlog_name(0)}\t{8 * 16384}\n"), files
    assert engine_files == files
    with Engine.open(engine_dir, restart_marker=False) as engine:
        assert str(engine.gtid_state()) == "0-1-6"
    assert [texts[0].rstrip(b".") for _, texts in ((g, query_texts(e)) for g, e in gtid_groups(engine_dir))] == [
        b"small0", b"small1", b"small2", b"small3", b"small4", b"big"]
