"""The official corpus checkers over ``mariabinlog dump``, run as they are.

* ``compare.py check``: GTIDs printed, ``###`` row lines and exit status of ~360
  recorded runs of the real ``mariadb-binlog`` (every manifest entry must pass).
* ``compare.py replay``: for every workload, the tool's output piped into
  ``mariadb --binary-mode`` on a fresh private ``mariadbd`` (started by
  compare.py itself) must reproduce the recorded ``CHECKSUM TABLE ... EXTENDED``
  and row counts of every table.

Both run from the repository root with this interpreter, exactly as the
project's instructions give them; exit 0 means every entry passed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _compare(corpus_dir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(corpus_dir / "compare.py"), *args],
        cwd=REPO_ROOT,
        env=env,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )


@pytest.mark.timeout(1800)
def test_compare_py_check_passes(corpus_dir: Path, tool_env: dict[str, str], tool_command: str) -> None:
    result = _compare(
        corpus_dir, tool_env, "check", "--tool", tool_command,
        "--manifest", str(corpus_dir / "manifest.tsv"), "-q",
    )
    assert result.returncode == 0, result.stdout[-4000:]
    assert " 0 failed" in result.stdout


@pytest.mark.mariadb
@pytest.mark.timeout(1800)
def test_compare_py_replay_passes(corpus_dir: Path, tool_env: dict[str, str], tool_command: str) -> None:
    result = _compare(
        corpus_dir, tool_env, "replay", "--tool", tool_command,
        "--replay", str(corpus_dir / "replay.tsv"),
    )
    assert result.returncode == 0, result.stdout[-4000:]
    workloads = len((corpus_dir / "replay.tsv").read_text().strip().splitlines()) - 1
    assert f"{workloads} passed, 0 failed" in result.stdout
