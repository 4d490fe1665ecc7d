"""Crash harness in the test suite: SIGKILL a writer process under load, recover, verify (bounded time)."""

from __future__ import annotations

import time
from pathlib import Path

import crash_harness
import pytest

KILLS = 8


@pytest.mark.parametrize("mode", [1, 2, 0])
def test_sigkill_under_concurrent_load(tmp_path: Path, mode: int) -> None:
    started = time.monotonic()
    stats = crash_harness.crash_loop(str(tmp_path / f"mode{mode}"), mode, KILLS, seed=1000 + mode)
    assert stats["kills"] == KILLS
    assert stats["acked"] > 0 and stats["received"] > 0 and stats["groups"] > 0
    assert time.monotonic() - started < 60


def test_sigkill_with_admin_operations(tmp_path: Path) -> None:
    """PURGE / FLUSH / checkpoints / XA ROLLBACK while committing, kills inside them too."""
    stats = crash_harness.crash_loop(str(tmp_path / "admin"), 1, KILLS, seed=77, admin=True)
    assert stats["kills"] == KILLS and stats["acked"] > 0
