#!/usr/bin/env python3
"""Power-loss soak: record an engine workload's file-system operations, rebuild the states a
power cut could leave (only fsynced data; unsynced writes dropped, all kept, a random subset
kept, torn at 512-byte sectors, or any subset of their sectors kept; unsynced creates,
renames and unlinks undone) and recover each one in a fresh (forked) process, also states of
a power cut during recovery itself.  One workload per engine setting (``--configs``: 64 KiB
files; 128 KiB files with pages forced to the file from two on; 512 KiB files), the states
shared among them.

The harness is ``tests/engine/powerloss.py``; the test suite runs a small sample of it.

    python scripts/power_loss.py --states 4500 --recovery-states 600
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engine"))

import powerloss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="workload operations (default 300)")
    parser.add_argument("--states", type=int, default=2000, help="crash states of the workload (default 2000)")
    parser.add_argument("--recovery-states", type=int, default=500,
                        help="crash states of recoveries (power cut during recovery; default 500)")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed at the end)")
    parser.add_argument("--configs", default=",".join(powerloss.CONFIGS),
                        help=f"engine settings to run workloads with (default {','.join(powerloss.CONFIGS)})")
    args = parser.parse_args(argv)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="power-loss-"))
    work.mkdir(parents=True, exist_ok=True)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in powerloss.CONFIGS]
    if unknown:
        parser.error(f"unknown --configs {unknown}; choose from {list(powerloss.CONFIGS)}")
    print(f"power loss: {args.steps} workload steps per setting ({', '.join(configs)}), {args.states} +"
          f" {args.recovery_states} crash states, seed {args.seed}, in {work}", flush=True)
    started = time.monotonic()

    shown = 0

    def progress(summary: powerloss.Summary) -> None:
        nonlocal shown
        print(f"{summary.states} states checked, {len(summary.failures)} failed", flush=True)
        for failure in summary.failures[shown:5]:
            print(failure, file=sys.stderr, flush=True)
        shown = max(shown, min(len(summary.failures), 5))

    summary = powerloss.run(str(work), steps=args.steps, states=args.states,
                            recovery_states=args.recovery_states, seed=args.seed, progress=progress,
                            configs=configs)
    models = ", ".join(f"{model} {count}" for model, count in sorted(summary.models.items()))
    print(f"{summary.acked} acknowledged commits in the workload")
    print(f"{summary.states} crash states ({summary.during_recovery} during recovery): {models}")
    print("per setting: " + ", ".join(f"{name} {count}" for name, count in summary.configs.items()))
    for failure in summary.failures[shown:5]:
        print(failure, file=sys.stderr)
    print(f"{len(summary.failures)} failed (unrecoverable, an acknowledged commit lost, a torn or partial group"
          f" visible, engine check or writing on failed) in {time.monotonic() - started:.0f} s")
    if not args.dir and not summary.failures:
        shutil.rmtree(work)
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
