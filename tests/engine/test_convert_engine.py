"""A conversion into an engine directory ends like FLUSH BINARY LOGS and leaves nothing when it fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine_helpers import SRC, query

from mariabinlog.codec.gtid import Gtid
from mariabinlog.engine import Engine
from mariabinlog.engine.check import check_directory


def dump(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "mariabinlog", "dump", *args], capture_output=True, env=env,
                          timeout=120, check=False)


def legacy_binlog(tmp_path: Path, gtids: list[Gtid]) -> Path:
    """A legacy binlog made by converting an engine directory with ``gtids``."""
    source = tmp_path / "source"
    with Engine.open(source, max_binlog_size=64 * 1024) as engine:
        for number, gtid in enumerate(gtids):
            engine.commit(query(b"insert %d" % number, 500), gtid=gtid)
    files = sorted(str(p) for p in source.glob("binlog-*.ibb"))
    done = dump("--skip-gtid-strict-mode", "--convert-engine-binlog", "-r", str(tmp_path / "legacy"), *files)
    assert done.returncode == 0, done.stderr
    return tmp_path / "legacy.000001"


def test_conversion_ends_like_flush_binary_logs(tmp_path: Path) -> None:
    legacy = legacy_binlog(tmp_path, [Gtid(0, 1, n) for n in range(1, 30)])
    target = tmp_path / "converted"
    done = dump(f"--convert-to-engine-binlog={target}", str(legacy))
    assert done.returncode == 0, done.stderr
    names = sorted(os.listdir(target))
    assert names == ["binlog-000000.ibb", "redo.log"]  # no pre-allocated next file, nothing aside
    assert (target / "binlog-000000.ibb").stat().st_size < 64 * 1024  # the default is 1 GiB
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]
    assert check_directory(str(target)).ok
    with Engine.open(target, restart_marker=False) as engine:
        assert engine.recovered is not None and engine.recovered.records == 0
        assert str(engine.gtid_state()) == "0-1-29"
        engine.commit(query(b"after", 100))
    assert check_directory(str(target)).ok


def test_a_failed_conversion_leaves_nothing(tmp_path: Path) -> None:
    legacy = legacy_binlog(tmp_path, [Gtid(0, 1, 5), Gtid(0, 1, 3), Gtid(0, 1, 7)])
    target = tmp_path / "converted"
    done = dump(f"--convert-to-engine-binlog={target}", str(legacy))
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    assert not target.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]
