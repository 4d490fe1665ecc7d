"""``mariabinlog dump DIR`` / ``events DIR``: the directory's binlogs in order, or one clear line.

A directory used to end in an ``OSError`` traceback from ``mmap``; now its binlog files are
read in the order SHOW BINARY LOGS lists them (the same bytes as naming the files), and a
directory holding none is refused with one line and exit status 1, in every output format.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

WORKLOAD = "w07_gtid_domains"  # three legacy files, several GTID domains


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mariabinlog", *args], capture_output=True, env=env, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def legacy_dir(corpus_dir: Path) -> Path:
    directory = corpus_dir / "binlogs" / WORKLOAD
    assert len(list(directory.glob("mysql-bin.*"))) == 3, f"corpus workload {WORKLOAD} is incomplete"
    return directory


@pytest.mark.parametrize(
    "command",
    [["dump"], ["dump", "-v", "--base64-output=decode-rows"], ["dump", "--format=json"], ["events"]],
    ids=["dump", "dump-rows", "json", "events"],
)
def test_a_directory_reads_its_binlogs_in_order(
    tool_env: dict[str, str], legacy_dir: Path, command: list[str]
) -> None:
    files = sorted(str(p) for p in legacy_dir.glob("mysql-bin.*"))
    by_dir = _run(tool_env, *command, str(legacy_dir))
    by_files = _run(tool_env, *command, *files)
    assert by_dir.returncode == 0, by_dir.stderr.decode()
    assert by_dir.stdout == by_files.stdout and by_dir.stderr == by_files.stderr
    assert b"mysql-bin.000003" in by_dir.stdout  # the last file was read too


@pytest.mark.parametrize("command", [["dump"], ["dump", "--format=json"], ["events"]], ids=["dump", "json", "events"])
def test_a_directory_without_binlogs_is_one_line_and_exit_1(
    tool_env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "notes.txt").write_text("not a binlog\n")
    result = _run(tool_env, *command, str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert lines == [f"mariadb-binlog: '{tmp_path}' is a directory without binlog files (legacy or .ibb)"]
