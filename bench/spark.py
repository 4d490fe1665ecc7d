"""Throughput of the Spark pipeline on local[1] and local[2], next to one-process decoders.

Takes the ~1 GB ROW-format binlog of ``bench/workload.py`` (made once by a real MariaDB server
and cached), writes it once more as `.ibb` files through the project's engine (cached beside
it: the page-based format is what Spark splits inside a file; a legacy file is one split), and
then, in the same run:

* ``mariabinlog pipeline`` (CDC Parquet table, latest-state tables, report) with
  ``--master local[1]`` and ``local[2]``, each in its own process; the time is the job's own
  wall time, Spark's start-up excluded (printed apart); each once free to use every core and
  once pinned (``taskset``) to as many cores as it has task slots;
* the same for a plain scan of the ``rows`` view (decode every row image, count);
* single-process ``mariabinlog dump -v --base64-output=decode-rows`` and the real
  ``mariadb-binlog`` with the same options on the legacy file, output to /dev/null.

Events/s is always the binlog's event count over the wall time.  The goal is local[2] at
least 1.8 times local[1].

    python bench/spark.py [--bytes 1G] [--skip-tools] [--repeat N] [--modes rows-scan,pipeline]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))

#: Engine settings of the `.ibb` copy: 256 MB files, states every 2 MB (the server's defaults
#: otherwise), no fsync: only the layout matters here.
IBB_ENGINE = {"max_binlog_size": 256 << 20, "durability": 0, "redo_capacity": 16 << 20}


def to_ibb(legacy: Path, directory: Path) -> int:
    """Write the event groups of a legacy binlog through the engine; returns the event count."""
    from mariabinlog.codec.events import CHECKSUM_CRC32, GTID_EVENT, GtidEvent
    from mariabinlog.codec.gtid import Gtid
    from mariabinlog.codec.stream import EventStreamDecoder, iter_legacy_events
    from mariabinlog.engine import Engine
    from mariabinlog.spark.read import META_EVENTS, ends_group

    engine = Engine.open(str(directory), server_id=1, **IBB_ENGINE)
    events = 0
    try:
        with open(legacy, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            decoder = EventStreamDecoder(verify_checksum=False)
            head: GtidEvent | None = None
            body: list[bytes] = []
            left: int | None = None
            for event in iter_legacy_events(data, decoder=decoder):
                events += 1
                assert event.position is not None and event.end_position is not None
                if event.type_code == GTID_EVENT:
                    assert isinstance(event, GtidEvent)
                    head, body, left = event, [], (1 if event.standalone else None)
                    continue
                if head is None or event.type_code in META_EVENTS:
                    head = None
                    continue
                footer = 4 if decoder.checksum_alg == CHECKSUM_CRC32 else 0
                raw = bytearray(data[event.position : event.end_position - footer])
                raw[9:13] = len(raw).to_bytes(4, "little")
                body.append(bytes(raw))
                left = None if left is None else left - 1
                if left == 0 or ends_group(event):
                    gtid = Gtid(head.domain_id, head.server_id, head.seq_no)
                    engine.commit(b"".join(body), gtid=gtid, flags2=head.flags2, timestamp=head.timestamp)
                    head = None
    finally:
        engine.close()
    return events


def _pipeline_child(master: str, source: str, out: str, mode: str) -> None:
    """In its own process: start Spark, run the job, print timings as JSON."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    ready = time.perf_counter()
    if mode == "pipeline":
        from mariabinlog.spark.pipeline import run_pipeline

        result = run_pipeline(source, out, spark=spark)
        detail = {"rows": result.rows, "partitions": None}
    else:
        from mariabinlog.spark import register

        register(spark)
        df = spark.read.format("mariabinlog").option("view", "rows").load(source)
        detail = {"rows": df.count(), "partitions": df.rdd.getNumPartitions()}
    done = time.perf_counter()
    spark.stop()
    print(json.dumps({"startup": ready - started, "wall": done - ready, **detail}))


def _run_child(master: str, source: Path, out: Path, mode: str, cores: int | None = None) -> dict[str, float]:
    """Run one job in its own process; ``cores``: pin it (JVM, Python workers) to that many CPUs."""
    pin = ["taskset", "-c", f"0-{cores - 1}"] if cores else []
    proc = subprocess.run(
        [*pin, sys.executable, __file__, "--child", master, str(source), str(out), mode],
        capture_output=True, text=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} on {master} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_tool(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "TZ": "UTC"})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode}: {proc.stderr[-2000:]!r}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", default=None, help="binlog size (default: bench/workload.py's, 1G)")
    parser.add_argument("--skip-tools", action="store_true", help="leave out dump and mariadb-binlog")
    parser.add_argument("--unpinned-only", action="store_true", help="leave out the runs pinned to 1 and 2 cores")
    parser.add_argument("--repeat", type=int, default=1, help="rounds per configuration; the best time counts")
    parser.add_argument("--modes", default="rows-scan,pipeline", help="which jobs to time (rows-scan,pipeline)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _pipeline_child(*args.child)
        return 0

    import workload

    target = workload.parse_size(args.bytes) if args.bytes else workload.default_target()
    legacy = workload.make_binlog(target)[0]
    ibb = legacy.parent.with_name(legacy.parent.name + "-ibb")
    count_file = ibb / "events.json"
    if not count_file.is_file():
        shutil.rmtree(ibb, ignore_errors=True)
        staging = ibb.with_name(ibb.name + ".building")
        shutil.rmtree(staging, ignore_errors=True)
        print(f"writing {legacy.name} as .ibb through the engine ...", file=sys.stderr, flush=True)
        events = to_ibb(legacy, staging)
        (staging / "events.json").write_text(json.dumps({"events": events}))
        staging.rename(ibb)
    events = json.loads(count_file.read_text())["events"]
    size = legacy.stat().st_size
    print(f"binlog: {legacy} ({size / 1e6:.0f} MB legacy, {events:,} events); .ibb copy: {ibb}")
    header = f"{'run':<58} {'wall s':>8} {'events/s':>10} {'start-up s':>10}"
    print(header)
    print("-" * len(header))
    results: dict[str, float] = {}
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "mariabinlog-bench-spark"
    # Unpinned, local[1] still has the other cores for its JVM (Arrow intake, GC, JIT), which
    # runs beside the one Python worker; pinned, local[N] gets exactly N cores: the scaling a
    # user sees when adding cores (or executors) is the pinned ratio.
    # A shared VM's speed drifts by tens of percent between runs: with --repeat, the runs of
    # one round alternate local[1] and local[2], and each configuration keeps its best time.
    pinning = [False, True] if shutil.which("taskset") and not args.unpinned_only else [False]
    modes = [m for m in ("rows-scan", "pipeline") if m in args.modes.split(",")]
    for mode in modes:
        for pinned in pinning:
            for _ in range(args.repeat):
                for master in ("local[1]", "local[2]"):
                    out = work / f"{mode}-{master[6]}"
                    shutil.rmtree(out, ignore_errors=True)
                    cores = int(master[6]) if pinned else None
                    r = _run_child(master, ibb, out, mode, cores)
                    label = f"{mode} {master}" + (f" on {cores} core{'s' if cores > 1 else ''}" if cores else "")
                    results[label] = min(r["wall"], results.get(label, r["wall"]))
                    print(f"{label + ' (.ibb)':<58} {r['wall']:>8.1f} {events / r['wall']:>10,.0f}"
                          f" {r['startup']:>10.1f}", flush=True)
                    shutil.rmtree(out, ignore_errors=True)
    if not args.skip_tools:
        dump = [sys.executable, "-m", "mariabinlog", "dump", "-v", "--base64-output=decode-rows", str(legacy)]
        real = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
        tools = {"mariabinlog dump -v --base64-output=decode-rows (1 process)": dump}
        if real:
            tools["mariadb-binlog -v --base64-output=decode-rows"] = [
                real, "--no-defaults", "-v", "--base64-output=decode-rows", str(legacy)]
        for name, cmd in tools.items():
            wall = _run_tool(cmd)
            print(f"{name:<58} {wall:>8.1f} {events / wall:>10,.0f} {'':>10}", flush=True)
    for mode in modes:
        speedup = results[f"{mode} local[1]"] / results[f"{mode} local[2]"]
        line = f"{mode}: local[2] is {speedup:.2f}x local[1] (goal >= 1.8x; best of {args.repeat})"
        if True in pinning:
            pinned = results[f"{mode} local[1] on 1 core"] / results[f"{mode} local[2] on 2 cores"]
            line += f"; pinned to 1 vs 2 cores: {pinned:.2f}x"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
