#!/usr/bin/env python3
"""Crash soak: SIGKILL a binlog engine writer process many times (default 1000) and verify each recovery.

Runs the harness of ``tests/engine/crash_harness.py``: four committers in GTID domains 0, 1
and 2 (small groups, groups crossing pages, OOB groups, ~1 MB groups of events up to 160 KB,
XA prepare + commit, rolled-back OOB garbage) and a durable reader, in a forked writer
process whose files are 64 KiB to 512 KiB (drawn per kill); SIGKILL at a random moment,
sometimes during start-up recovery or right after the open; durability modes 1, 2 and 0 in
turn.  With admin operations (the default; ``--no-admin`` for plain load) an admin thread
also runs PURGE (by name, by age, by size), FLUSH BINARY LOGS and checkpoints, a committer
XA ROLLBACK, and the kills are counted by the operation they interrupted.  After every kill
it asks the look-only view what an open will find, recovers the directory and asserts the
crash invariants (the view predicted the open, gap-free prefix of commit order per domain,
consistent GTID state, acknowledged mode-1 commits kept, nothing a reader saw lost, offline
check clean, and every tenth kill also clean on the crashed directory checked as it will
recover).  The kills come in batches of ``--reset-every``, each in a fresh directory that
ends with RESET MASTER (verification time stays bounded); ``--jobs`` runs batches side by
side.

    python scripts/crash_soak.py --kills 10000 --jobs 2 --dir /tmp/soak
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engine"))

import crash_harness

from mariabinlog.engine import Engine


def _batch(work: str, index: int, mode: int, kills: int, seed: int, max_delay: float,
           admin: bool) -> tuple[int, int, dict[str, Any] | str]:
    """One batch of kills in a directory of its own, then RESET MASTER; (index, mode, stats or
    the failure).  The directory is removed when the batch passed, kept when it failed."""
    directory = os.path.join(work, f"batch{index:05d}-mode{mode}")
    try:
        stats = crash_harness.crash_loop(directory, mode, kills, seed, max_delay=max_delay, admin=admin)
        config = crash_harness.trial_config(crash_harness.FILE_SIZES[0], admin)
        with Engine.open(directory, durability=mode, restart_marker=False, **config) as engine:
            for pending in engine.pending_xa():
                engine.xa_rollback(pending.xid)
            engine.reset()
    except Exception as err:  # any failure is a finding to report, never a crash of the soak
        detail = "".join(traceback.format_exception_only(type(err), err)).strip()
        return index, mode, f"{detail} (directory kept: {directory})\n{traceback.format_exc()}"
    shutil.rmtree(directory)
    shutil.rmtree(crash_harness.crashed_copy(directory), ignore_errors=True)
    return index, mode, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=1000, help="number of SIGKILLs (default 1000)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed at the end)")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed)")
    parser.add_argument("--modes", default="1,2,0", help="durability modes to rotate through")
    parser.add_argument("--reset-every", type=int, default=25, help="RESET MASTER after this many kills")
    parser.add_argument("--max-delay", type=float, default=0.8, help="longest run before a kill, seconds")
    parser.add_argument("--jobs", type=int, default=1, help="batches run side by side, each in its own directory")
    parser.add_argument("--no-admin", dest="admin", action="store_false",
                        help="plain commit load: no PURGE / FLUSH / checkpoint / XA ROLLBACK")
    args = parser.parse_args(argv)
    modes = [int(m) for m in args.modes.split(",")]
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="crash-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"crash soak: {args.kills} kills, modes {modes}, admin operations {'on' if args.admin else 'off'},"
          f" {args.jobs} job(s), seed {args.seed}, in {work}", flush=True)
    rnd = random.Random(args.seed)
    batches = []
    planned = 0
    while planned < args.kills:
        index = len(batches)
        kills = min(args.reset_every, args.kills - planned)
        batches.append((str(work), index, modes[index % len(modes)], kills, rnd.getrandbits(32), args.max_delay,
                        args.admin))
        planned += kills
    started = time.monotonic()
    totals = {m: {"kills": 0, "acked": 0, "received": 0, "early": 0, "lost": 0} for m in modes}
    points: dict[str, int] = {}
    kinds: dict[str, int] = {}
    sizes: dict[int, int] = {}
    done = 0
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for index, mode, stats in pool.imap_unordered(_star_batch, batches):
            if isinstance(stats, str):
                pool.terminate()
                print(f"FAILED after {done} completed kills, in batch {index}: {stats} (seed {args.seed})",
                      file=sys.stderr)
                return 1
            for key in ("kills", "acked", "received", "early", "lost"):
                totals[mode][key] += stats[key]
            for name, into in (("points", points), ("kinds", kinds), ("sizes", sizes)):
                for key, count in stats[name].items():
                    into[key] = into.get(key, 0) + count
            done += stats["kills"]
            rate = done / (time.monotonic() - started)
            print(f"{done}/{args.kills} kills ok (batch {index}, mode {mode}: {stats['groups']} groups),"
                  f" {rate:.2f} kills/s", flush=True)
    for mode, counts in totals.items():
        print(f"mode {mode}: {counts['kills']} kills ({counts['early']} during start-up), "
              f"{counts['acked']} acknowledged commits ({counts['lost']} not durable, lost as mode {mode} allows), "
              f"{counts['received']} groups delivered to readers")
    mix = ", ".join(f"{point} {count}" for point, count in sorted(points.items(), key=lambda item: -item[1]))
    print(f"kill points: {mix}")
    print("acknowledged groups by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda i: -i[1])))
    print("kills by file size: " + ", ".join(f"{size // 1024} KiB {n}" for size, n in sorted(sizes.items())))
    print(f"all {done} kills recovered consistently (engine check clean, every visible group readable)"
          f" in {time.monotonic() - started:.0f} s")
    if not args.dir:
        shutil.rmtree(work)
    return 0


def _star_batch(batch: tuple[Any, ...]) -> tuple[int, int, dict[str, Any] | str]:
    return _batch(*batch)


if __name__ == "__main__":
    sys.exit(main())
