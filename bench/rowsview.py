"""The Spark ``rows`` view's reader without Spark: CPU seconds of one process, best of N.

``scan``: every Arrow batch of the rows view of a binlog (``read_partition``, what a Spark
Python worker runs: events decoded, row images rendered into map buffers by the compiled
``spark/_arrowfast`` builder, per-event columns repeated).  ``add``: the compiled
``MapBuilder.add`` alone over every rows event (events decoded and image programs made first,
untimed).  CPU time, not wall time, so a shared machine disturbs it less; compare two builds
by running both in one sitting, alternating.

    python bench/rowsview.py BINLOG [--mode scan|add] [--repeat N]

A binlog: ``bench/workload.py --bytes 100M`` (cached under ``bench/.cache/``).  Another
checkout (the baseline of a change) is timed with ``PYTHONPATH=OTHER/src``, which this script
then does not override; before issue 26 the builder was ``codec.rows.map_builder``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mariabinlog.codec.rows import row_decoder  # noqa: E402
from mariabinlog.spark import read  # noqa: E402
from mariabinlog.spark.fs import discover  # noqa: E402
from mariabinlog.spark.options import ScanOptions  # noqa: E402
from mariabinlog.spark.partition import BinlogPartition, read_partition  # noqa: E402
from mariabinlog.spark.plan import plan  # noqa: E402
from mariabinlog.spark.schema import SCHEMAS, render  # noqa: E402
from mariabinlog.spark.split import SplitReader  # noqa: E402


def scan(parts: list, options: ScanOptions) -> int:
    rows = 0
    for index, splits in enumerate(parts):
        for batch in read_partition(BinlogPartition(index, tuple(splits)), options, SCHEMAS["rows"]):
            rows += batch.num_rows
    return rows


def programs(parts: list, options: ScanOptions) -> list:
    work = []
    for splits in parts:
        for split in splits:
            for _, event, table_map in read._rows_events(SplitReader(split, options), None, None):
                info = read._map_info(table_map)
                if info.labels is None:
                    work.append((row_decoder(table_map).programs(event), info.names))
    return work


def add(work: list) -> int:
    map_builder = getattr(read, "map_builder", None)
    if map_builder is None:  # a checkout from before spark/_arrowfast.c
        from mariabinlog.codec.rows import map_builder  # type: ignore[attr-defined,no-redef]
    builder = map_builder(render)
    assert builder is not None, "the compiled builder is not built (bash scripts/setup.sh)"
    rows, max_rows, max_bytes = 0, 1 << 16, read.MAX_BATCH_BYTES
    for (kind, data, first, second), names in work:
        pos, row_index = 0, 0
        while pos < len(data):
            pos, row_index = builder.add(data, pos, first, second, kind, names, 0, row_index, max_rows, max_bytes)
            if builder.rows >= max_rows or builder.nbytes >= max_bytes:
                rows += builder.take()[0]
    return rows + builder.take()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binlog")
    parser.add_argument("--mode", choices=("scan", "add"), default="scan")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    options = ScanOptions.parse({"path": args.binlog, "view": "rows"}, {})
    parts = plan(discover([args.binlog], options.listing), options)
    work = programs(parts, options) if args.mode == "add" else None
    best, rows = float("inf"), 0
    for _ in range(args.repeat):
        start = time.process_time()
        rows = add(work) if work is not None else scan(parts, options)
        best = min(best, time.process_time() - start)
    print(f"{args.mode}: {rows} rows, best cpu {best:.3f} s of {args.repeat}")


if __name__ == "__main__":
    main()
