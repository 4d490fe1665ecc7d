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
check clean, and every fifth kill also clean on the crashed directory checked as it will
recover).  Every ``--reset-every`` kills the directory is emptied with RESET MASTER so
verification time stays bounded.

    python scripts/crash_soak.py --kills 10000 --dir /tmp/soak
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engine"))

import crash_harness

from mariabinlog.engine import Engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=1000, help="number of SIGKILLs (default 1000)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed at the end)")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed)")
    parser.add_argument("--modes", default="1,2,0", help="durability modes to rotate through")
    parser.add_argument("--reset-every", type=int, default=25, help="RESET MASTER after this many kills")
    parser.add_argument("--max-delay", type=float, default=0.8, help="longest run before a kill, seconds")
    parser.add_argument("--no-admin", dest="admin", action="store_false",
                        help="plain commit load: no PURGE / FLUSH / checkpoint / XA ROLLBACK")
    args = parser.parse_args(argv)
    modes = [int(m) for m in args.modes.split(",")]
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="crash-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"crash soak: {args.kills} kills, modes {modes}, admin operations {'on' if args.admin else 'off'},"
          f" seed {args.seed}, in {work}", flush=True)
    rnd = random.Random(args.seed)
    started = time.monotonic()
    totals = {m: {"kills": 0, "acked": 0, "received": 0, "early": 0, "lost": 0} for m in modes}
    points: dict[str, int] = {}
    kinds: dict[str, int] = {}
    sizes: dict[int, int] = {}
    done = 0
    try:
        while done < args.kills:
            mode = modes[(done // args.reset_every) % len(modes)]
            directory = work / f"mode{mode}"
            batch = min(args.reset_every, args.kills - done)
            stats = crash_harness.crash_loop(str(directory), mode, batch, rnd.getrandbits(32),
                                             max_delay=args.max_delay, admin=args.admin)
            for key in ("kills", "acked", "received", "early", "lost"):
                totals[mode][key] += stats[key]
            for point, count in stats["points"].items():
                points[point] = points.get(point, 0) + count
            for kind, count in stats["kinds"].items():
                kinds[kind] = kinds.get(kind, 0) + count
            for size, count in stats["sizes"].items():
                sizes[size] = sizes.get(size, 0) + count
            done += batch
            config = crash_harness.trial_config(crash_harness.FILE_SIZES[0], args.admin)
            with Engine.open(directory, durability=mode, restart_marker=False, **config) as engine:
                for pending in engine.pending_xa():
                    engine.xa_rollback(pending.xid)
                engine.reset()
            rate = done / (time.monotonic() - started)
            print(f"{done}/{args.kills} kills ok (mode {mode}: {stats['groups']} groups), {rate:.1f} kills/s", flush=True)
    except AssertionError as err:
        print(f"FAILED after {done} completed kills, at the batch's {err} (seed {args.seed})", file=sys.stderr)
        print(f"directory kept for inspection: {work}", file=sys.stderr)
        return 1
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


if __name__ == "__main__":
    sys.exit(main())
