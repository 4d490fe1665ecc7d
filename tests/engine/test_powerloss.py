"""The power-loss harness on a small sample (the big run is ``scripts/power_loss.py``)."""

from __future__ import annotations

import random
from pathlib import Path

import powerloss


def test_power_loss_states_recover(tmp_path: Path) -> None:
    summary = powerloss.run(str(tmp_path), steps=30, states=75, recovery_states=15, seed=11)
    assert summary.acked > 0 and summary.during_recovery > 0
    assert set(summary.models) >= set(powerloss.MODELS)
    assert not summary.failures, summary.failures[0]


def test_the_harness_sees_lost_data(tmp_path: Path) -> None:
    """A state whose binlog files lost their unlogged tail must be caught (the harness can fail)."""
    recorder = powerloss.workload(str(tmp_path / "w"), 40, 5)
    rnd = random.Random(1)
    caught = 0
    for point in range(len(recorder.ops) // 2, len(recorder.ops), max(1, len(recorder.ops) // 10)):
        state = powerloss.crash_state(recorder.initial, recorder.ops, point, "synced", rnd)
        state.files = {name: data[: 2 * 16384] if name.endswith(".ibb") else data for name, data in state.files.items()}
        caught += powerloss.check_state(state, str(tmp_path)) is not None
    assert caught > 0
