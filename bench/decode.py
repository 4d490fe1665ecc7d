"""Decode speed of the format core next to the real ``mariadb-binlog``, on one core.

Makes (once, cached) a large ROW-format binlog with a real MariaDB server
(``bench/workload.py``), then in the same run times, each in its own process
pinned to one CPU:

* ``events``: mariabinlog decodes every event to an event object (rows left lazy);
* ``rows``: mariabinlog also decodes every row image to Python values;
* ``mariadb-binlog -v`` and ``mariadb-binlog -vv --base64-output=decode-rows``
  writing to /dev/null (the C++ tool must decode every row to print it).

Prints one table: wall seconds, MB/s, events/s, rows/s and peak RSS (mariabinlog
maps the file and releases the decoded pages as it goes, so its RSS is its own
memory plus a window of the file, as the C++ tool's buffered reads).

    python bench/decode.py [--bytes 1G] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))


#: Bytes of the mapped binlog between two releases of the pages already decoded.
_RELEASE_STEP = 16 << 20


def decode_file(path: str, rows: bool) -> dict[str, float]:
    """Decode ``path`` in this process; returns counts and the wall time."""
    from mariabinlog.codec.events import RowsEvent
    from mariabinlog.codec.rows import row_decoder
    from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events

    start = time.perf_counter()
    events = row_count = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        decoder = EventStreamDecoder()
        released = 0  # file pages below this offset were handed back (they stay in the page cache)
        for event in iter_legacy_events(data, decoder=decoder):
            events += 1
            if rows and isinstance(event, RowsEvent):
                row_count += len(row_decoder(decoder.table_map_for(event)).decode(event))
            if event.position - released >= _RELEASE_STEP:
                # Without this, every mapped page read stays in our RSS: peak RSS would be the file size.
                done = event.position & -mmap.PAGESIZE
                data.madvise(mmap.MADV_DONTNEED, released, done - released)
                released = done
    wall = time.perf_counter() - start
    return {"wall": wall, "events": events, "rows": row_count}


def _child(mode: str, path: str) -> None:
    result = decode_file(path, rows=mode == "rows")
    result["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(result))


def _pinned(cmd: list[str]) -> list[str]:
    taskset = shutil.which("taskset")
    return [taskset, "-c", "0", *cmd] if taskset else cmd


def _run_ours(mode: str, path: Path) -> dict[str, float]:
    out = subprocess.run(
        _pinned([sys.executable, __file__, "--child", mode, str(path)]), check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _run_real(options: list[str], path: Path) -> dict[str, float]:
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if tool is None:
        raise SystemExit("mariadb-binlog not found: run scripts/setup.sh first")
    # time -f gives the child's own peak RSS; fall back to wall time only.
    gnu_time = Path("/usr/bin/time")
    cmd = [tool, "--no-defaults", *options, str(path)]
    start = time.perf_counter()
    if gnu_time.exists():
        proc = subprocess.run(
            _pinned([str(gnu_time), "-f", "%M", *cmd]), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "TZ": "UTC"}
        )
        maxrss = int(proc.stderr.strip().splitlines()[-1])
    else:
        proc = subprocess.run(_pinned(cmd), stdout=subprocess.DEVNULL, env={**os.environ, "TZ": "UTC"})
        maxrss = 0
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode}")
    return {"wall": wall, "maxrss_kb": maxrss}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bytes", default=None, help="binlog size to generate (default: bench/workload.py's, 1G)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool; the best is reported")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0

    import workload

    target = workload.parse_size(args.bytes) if args.bytes else workload.default_target()
    files = workload.make_binlog(target)
    path = files[0]
    size = path.stat().st_size
    counts = _run_ours("rows", path)
    runs = {
        "mariabinlog: events only": lambda: _run_ours("events", path),
        "mariabinlog: events + row values": lambda: _run_ours("rows", path),
        "mariadb-binlog -v": lambda: _run_real(["-v"], path),
        "mariadb-binlog -vv --base64-output=decode-rows": lambda: _run_real(["-vv", "--base64-output=decode-rows"], path),
    }
    print(f"binlog: {path} ({size / 1e6:.1f} MB, {counts['events']:,} events, {counts['rows']:,} rows), one core each")
    header = f"{'tool':<48} {'wall s':>8} {'MB/s':>8} {'events/s':>11} {'rows/s':>11} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for name, run in runs.items():
        best = min((run() for _ in range(args.repeat)), key=lambda r: r["wall"])
        wall = best["wall"]
        print(
            f"{name:<48} {wall:>8.2f} {size / 1e6 / wall:>8.1f} {counts['events'] / wall:>11,.0f}"
            f" {counts['rows'] / wall:>11,.0f} {best['maxrss_kb'] / 1024:>12.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
