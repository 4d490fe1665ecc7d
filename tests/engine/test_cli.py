"""``mariabinlog engine {init,status,files,flush,purge,reset,backup,check}`` end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine_helpers import SRC, query

from mariabinlog.codec.ibb.page import PAGE_SIZE
from mariabinlog.engine import Engine


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run(
        [sys.executable, "-m", "mariabinlog", "engine", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_engine_commands(engine_dir: Path, tmp_path: Path) -> None:
    engine = Engine.open(engine_dir, max_binlog_size=64 * 1024, state_interval=32768)
    for n in range(60):
        engine.commit(query(b"c%d" % n, 3_000), domain_id=n % 2)
    engine.close()
    d = str(engine_dir)

    status = cli("status", d)
    assert status.returncode == 0, status.stderr
    assert "File: binlog-00000" in status.stdout and "Gtid_Binlog_Pos: 0-1-30,1-1-30" in status.stdout

    files = cli("files", d)
    rows = files.stdout.splitlines()[1:]
    assert len(rows) >= 3 and all(row.endswith("\t65536") for row in rows)

    flushed = cli("flush", d)
    assert flushed.returncode == 0 and f"binlog-{len(rows):06d}.ibb" in flushed.stdout

    purged = cli("purge", d, "--to", "binlog-000002.ibb")
    assert purged.returncode == 0, purged.stderr
    assert purged.stdout.split() == ["purged", "binlog-000000.ibb", "purged", "binlog-000001.ibb"]

    check = cli("check", d)
    assert check.returncode == 0, check.stdout
    assert "gtid_binlog_state: 0-1-30,1-1-30" in check.stdout and check.stdout.rstrip().endswith("OK")

    backup = cli("backup", d, str(tmp_path / "copy"))
    assert backup.returncode == 0, backup.stderr
    assert cli("check", str(tmp_path / "copy")).returncode == 0

    before = sorted(os.listdir(d))
    refused = cli("reset", d)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert sorted(os.listdir(d)) == before
    reset = cli("reset", "--yes", d)
    assert reset.returncode == 0, reset.stderr
    assert [row.split("\t")[0] for row in cli("files", d).stdout.splitlines()[1:]] == ["binlog-000000.ibb"]


def test_check_reports_a_damaged_page(engine_dir: Path) -> None:
    engine = Engine.open(engine_dir, max_binlog_size=64 * 1024, state_interval=32768)
    engine.commit(query(b"x", 1000))
    engine.close()
    with open(engine_dir / "binlog-000000.ibb", "r+b") as f:
        f.seek(PAGE_SIZE + 100)
        f.write(b"\x00\x01\x02")
    check = cli("check", str(engine_dir))
    assert check.returncode == 1
    # the damaged page is where the binlog ends: checked as an open will recover it (which cuts
    # the page there and seals it again), the damage is still reported
    assert "page 1: invalid CRC-32C on disk" in check.stdout, check.stdout
