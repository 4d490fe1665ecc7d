"""Write throughput of the binlog engine next to a two-phase baseline and the disk itself.

Measures, in one run, on the disk holding ``--dir``:

* the disk: sequential bandwidth (1 MiB writes + one fsync) and fsyncs/s (512-byte
  overwrite + fdatasync, the best case for a log);
* small event groups: commits/s and MB/s of :class:`mariabinlog.engine.Engine` for each
  durability mode and 1..64 concurrent committers;
* the two-phase baseline at the same concurrency: group commit that writes the
  groups to a plain binlog file and fsyncs it, then writes an engine commit log
  record and fsyncs that too (what a separate binlog costs: two fsyncs per group);
* large groups (8 MiB, out-of-band) in mode 1, 1 and 4 committers: MB/s against a
  sequential write of the same size measured just before (``--rounds`` pairs, median);
* a huge transaction (default 4 GiB) in a child process, written and read back by a
  durable reader: MB/s both ways and peak RSS.

Targets checked at the end: 64 committers in mode 1 >= 20x the commits/s of one fsync
per commit (the disk's fsyncs/s); large groups >= 80% of sequential bandwidth; peak RSS
of the huge transaction <= 64 MiB.

    python bench/write.py [--dir DIR] [--seconds 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))

from mariabinlog.codec.events import QueryEvent, XidEvent
from mariabinlog.codec.gtid import Gtid
from mariabinlog.engine import Engine

MB = 1 << 20


def small_group(size: int) -> bytes:
    """A Query + Xid group body of about ``size`` bytes (the GTID event is added by the writer)."""
    query = QueryEvent(query=b"INSERT INTO t VALUES ('" + b"x" * max(0, size - 80) + b"')", database=b"test",
                       server_id=1, timestamp=1).encode()
    return query + XidEvent(xid=1, server_id=1, timestamp=1).encode()


def big_event(size: int) -> bytes:
    """One event of ``size`` bytes with an opaque body (rows-like payload)."""
    return struct.pack("<IBIIIH", 1, 0xFF, 1, size, 0, 0) + os.urandom(size - 19)


# ---------------------------------------------------------------------- disk


def disk_sequential(directory: Path, megabytes: int) -> float:
    """MB/s writing ``megabytes`` in 1 MiB writes to a new file, fsync included."""
    path = directory / "seq.bin"
    chunk = os.urandom(MB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(megabytes):
        os.write(fd, chunk)
    os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    path.unlink()
    return megabytes * MB / elapsed / 1e6


def disk_fsyncs(directory: Path, seconds: float) -> float:
    """fdatasync calls per second after a 512-byte overwrite of an allocated file."""
    path = directory / "fsync.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, bytes(4 * MB))
    os.fsync(fd)
    block = b"x" * 512
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        os.pwrite(fd, block, (count % 8192) * 512)
        os.fdatasync(fd)
        count += 1
    elapsed = time.perf_counter() - start
    os.close(fd)
    path.unlink()
    return count / elapsed


# ---------------------------------------------------------------------- engine, small groups


def run_committers(commit: object, threads: int, seconds: float) -> int:
    """Run ``threads`` threads calling ``commit()`` for ``seconds``; returns the number of commits."""
    stop = threading.Event()
    counts = [0] * threads

    def work(index: int) -> None:
        n = 0
        while not stop.is_set():
            commit()  # type: ignore[operator]
            n += 1
        counts[index] = n

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return sum(counts)


def engine_small(directory: Path, mode: int, threads: int, seconds: float, body: bytes) -> tuple[float, float, float]:
    """(commits/s, MB/s of binlog data, commits per redo-log fsync) for small groups."""
    path = directory / f"engine-{mode}-{threads}"
    engine = Engine.open(path, durability=mode, max_binlog_size=256 * MB, redo_capacity=64 * MB,
                         restart_marker=False)
    start = time.perf_counter()
    count = run_committers(lambda: engine.commit(body), threads, seconds)
    elapsed = time.perf_counter() - start
    status = engine.status()
    syncs = engine.redo.syncs
    engine.close()
    shutil.rmtree(path)
    written = status.file_no * 256 * MB + status.offset
    return count / elapsed, written / elapsed / 1e6, count / max(1, syncs)


class TwoPhase:
    """Baseline: group commit into a separate binlog file + an engine log, one fsync each per group."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.binlog = os.open(directory / "binlog.000001", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.log = os.open(directory / "engine.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.cond = threading.Condition()
        self.queue: list[bytes] = []
        self.queued = 0
        self.done = 0
        self.busy = False
        self.seq = 0
        self.bytes = 0

    def commit(self, body: bytes) -> None:
        with self.cond:
            self.seq += 1
            event = Engine.gtid_event(Gtid(0, 1, self.seq))
            self.queue.append(event + body)
            self.queued += 1
            mine = self.queued
            while self.done < mine:
                if not self.busy:
                    self.busy = True
                    break
                self.cond.wait()
            else:
                return
            batch, self.queue = self.queue, []
            upto = self.queued
        data = b"".join(batch)
        os.write(self.binlog, data)
        self.bytes += len(data)
        os.fdatasync(self.binlog)  # phase 2: binlog durable
        os.write(self.log, struct.pack("<QQ", upto, len(batch)))
        os.fdatasync(self.log)  # phase 3: engine commit durable
        with self.cond:
            self.done = upto
            self.busy = False
            self.cond.notify_all()

    def close(self) -> None:
        os.close(self.binlog)
        os.close(self.log)


def two_phase_small(directory: Path, threads: int, seconds: float, body: bytes) -> tuple[float, float]:
    """(commits/s, MB/s) of the two-phase baseline."""
    path = directory / f"twophase-{threads}"
    baseline = TwoPhase(path)
    start = time.perf_counter()
    count = run_committers(lambda: baseline.commit(body), threads, seconds)
    elapsed = time.perf_counter() - start
    baseline.close()
    shutil.rmtree(path)
    return count / elapsed, baseline.bytes / elapsed / 1e6


# ---------------------------------------------------------------------- large groups


def engine_large(directory: Path, megabytes: int, threads: int, group_mb: int = 8) -> float:
    """MB/s of ``threads`` committers of ``group_mb`` MiB out-of-band groups in mode 1, ``megabytes`` in all.

    One committer alternates CPU (layout) and I/O (its commit's fsync); several
    overlap one's layout with another's fsync, as concurrent large transactions do.
    """
    path = directory / f"engine-large-{threads}"
    engine = Engine.open(path, durability=1, max_binlog_size=1 << 30, redo_capacity=64 * MB, restart_marker=False)
    event = big_event(MB)
    groups = max(1, megabytes // group_mb // threads)

    def work() -> None:
        for _ in range(groups):
            trx = engine.begin()
            for _ in range(group_mb):
                trx.write(event)
            engine.commit(trx=trx)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    engine.close()
    shutil.rmtree(path)
    return groups * threads * group_mb * len(event) / elapsed / 1e6


HUGE_CHILD = r"""
import os, resource, struct, sys, time
sys.path.insert(0, {src!r})
from mariabinlog.engine import Engine
engine = Engine.open({path!r}, durability=1, max_binlog_size=1 << 30, restart_marker=False)
body = os.urandom(1 << 20)
event = struct.pack("<IBIIIH", 1, 0xFF, 1, len(body) + 19, 0, 0) + body
start = time.perf_counter()
trx = engine.begin()
for _ in range({mib}):
    trx.write(event)
engine.commit(trx=trx)
elapsed = time.perf_counter() - start
start = time.perf_counter()
total = 0
for group in engine.reader().groups(timeout=0):
    for piece in group.pieces():
        total += len(piece)
read_elapsed = time.perf_counter() - start
engine.close()
assert total > {mib} << 20, total
# VmHWM, not ru_maxrss: a child started by vfork+exec inherits its parent's high-water mark
# in ru_maxrss (Linux keeps the larger of the old and new address space's), so a big bench
# parent would be reported as this child's peak.
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(elapsed, read_elapsed, hwm)
"""


def engine_huge(directory: Path, megabytes: int) -> tuple[float, float, float]:
    """(write MB/s, read-back MB/s, peak RSS in MiB) of one ``megabytes`` MiB transaction,
    written and streamed back by a durable reader in a fresh process."""
    path = directory / "engine-huge"
    code = HUGE_CHILD.format(src=str(REPO_ROOT / "src"), path=str(path), mib=megabytes)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed, read_elapsed, rss_kib = out.stdout.split()
    shutil.rmtree(path)
    size = megabytes * (MB + 19) / 1e6
    return size / float(elapsed), size / float(read_elapsed), int(rss_kib) / 1024


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="directory on the disk to measure (default: a temporary one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per small-group point")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32,64")
    parser.add_argument("--modes", default="1,2,0")
    parser.add_argument("--group-bytes", type=int, default=200, help="size of a small event group")
    parser.add_argument("--large-mb", type=int, default=1024, help="MiB written as 8 MiB groups")
    parser.add_argument("--huge-mb", type=int, default=4096, help="MiB of the huge transaction")
    parser.add_argument("--rounds", type=int, default=3, help="paired sequential/large-group rounds (median)")
    parser.add_argument("--quick", action="store_true", help="1 s points, 256 MiB large, 512 MiB huge")
    parser.add_argument("--json", help="also write the results as JSON to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.large_mb, args.huge_mb = 1.0, 256, 512
    concurrency = [int(c) for c in args.concurrency.split(",")]
    modes = [int(m) for m in args.modes.split(",")]
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-write-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    body = small_group(args.group_bytes)

    seq = disk_sequential(work, max(256, args.large_mb))
    fsyncs = disk_fsyncs(work, min(args.seconds, 2.0))
    results["disk"] = {"sequential_MBps": seq, "fsyncs_per_s": fsyncs}
    print(f"disk: sequential {seq:.0f} MB/s, {fsyncs:.0f} fsyncs/s (one fsync per commit = {fsyncs:.0f} commits/s)")

    print(f"\nsmall groups ({len(body) + 32} bytes with GTID), {args.seconds:g} s per point")
    columns = [f"mode {m}" for m in modes] + ["two-phase"]
    print("threads " + " ".join(f"{c:>16}" for c in columns))
    print(" " * 8 + " ".join(f"{'commits/s':>10}{'MB/s':>6}" for _ in columns))
    small: dict[str, dict[str, float]] = {}
    for threads in concurrency:
        row = f"{threads:>7} "
        for mode in modes:
            rate, mbps, per_sync = engine_small(work, mode, threads, args.seconds, body)
            small[f"mode{mode}/{threads}"] = {"commits_per_s": rate, "MBps": mbps, "commits_per_fsync": per_sync}
            row += f"{rate:>10.0f}{mbps:>6.1f} "
        baseline, baseline_mbps = two_phase_small(work, threads, args.seconds, body)
        small[f"twophase/{threads}"] = {"commits_per_s": baseline, "MBps": baseline_mbps}
        print(row + f"{baseline:>10.0f}{baseline_mbps:>6.1f}", flush=True)
    results["small"] = small

    # The disk's bandwidth drifts (shared hardware): each large-group run is paired with a
    # sequential-write run of the same size just before it, and the median pair is reported.
    print(f"\nlarge groups (8 MiB, mode 1), {args.rounds} rounds, each next to a sequential write of"
          f" {args.large_mb} MiB:")
    pairs: list[tuple[float, float, float]] = []
    for _ in range(args.rounds):
        seq_now = disk_sequential(work, args.large_mb)
        single_now = engine_large(work, args.large_mb, 1)
        large_now = engine_large(work, args.large_mb, 4)
        pairs.append((large_now / seq_now, seq_now, single_now))
        print(f"  sequential {seq_now:.0f} MB/s; 1 committer {single_now:.0f} MB/s ({100 * single_now / seq_now:.0f}%),"
              f" 4 committers {large_now:.0f} MB/s ({100 * large_now / seq_now:.0f}%)", flush=True)
    ratio, seq_large, single_large = sorted(pairs)[len(pairs) // 2]
    large = ratio * seq_large
    results["large_MBps"] = {"1 committer": single_large, "4 committers": large, "sequential": seq_large,
                             "rounds": [{"ratio": r, "sequential": q, "1 committer": o} for r, q, o in pairs]}
    print(f"  median: 4 committers {large:.0f} MB/s = {100 * ratio:.0f}% of sequential bandwidth")
    huge_mbps, huge_read, huge_rss = engine_huge(work, args.huge_mb)
    results["huge"] = {"MiB": args.huge_mb, "MBps": huge_mbps, "read_MBps": huge_read, "peak_rss_MiB": huge_rss}
    print(f"huge transaction ({args.huge_mb} MiB, mode 1): written {huge_mbps:.0f} MB/s, read back"
          f" {huge_read:.0f} MB/s, peak RSS {huge_rss:.0f} MiB")

    top = max(concurrency)
    group_rate = small.get(f"mode1/{top}", {}).get("commits_per_s", 0.0)
    if f"mode1/{top}" in small:
        per_sync = ", ".join(f"{t}: {small[f'mode1/{t}']['commits_per_fsync']:.1f}" for t in concurrency)
        print(f"\ncommits per redo-log fsync in mode 1 (group commit, independent of the disk's fsync cost):"
              f" {per_sync}")
    single = small.get("mode1/1", {}).get("commits_per_s")
    if single:
        print(f"\n{top} committers vs one committer (one fsync per commit through the engine), mode 1:"
              f" {group_rate / single:.1f}x")
    checks = [
        (f"{top} committers, mode 1 >= 20x one fsync per commit", group_rate / fsyncs, 20.0, "x"),
        ("large groups (4 committers) >= 80% of sequential bandwidth", 100 * ratio, 80.0, "%"),
        (f"peak RSS of a {args.huge_mb} MiB transaction <= 64 MiB", 64.0 - huge_rss, 0.0, " MiB headroom"),
    ]
    print("\ntargets:")
    for text, value, limit, unit in checks:
        print(f"  {'PASS' if value >= limit else 'MISS'}  {text}: {value:.1f}{unit}")
    results["targets"] = {text: value >= limit for text, value, limit, unit in checks}
    results["peak_rss_bench_MiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
