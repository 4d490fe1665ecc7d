"""Benchmark input: a large ROW-format binlog written by a real MariaDB server.

``make_binlog(target_bytes, cache_dir)`` starts a private server (the test
harness's :class:`MariaDBServer`), runs a workload until the binlog holds
``target_bytes`` and returns the binlog files.  The result is cached under
``bench/.cache/`` (git-ignored): later calls with the same arguments return the
cached files at once.

The workload mixes what real binlogs carry: big multi-row ``INSERT ... SELECT``
transactions over ``seq_1_to_N``, range ``UPDATE`` s (before and after images)
and ``DELETE`` s, and bursts of small single-row autocommit transactions, on a
table with BIGINT, INT, VARCHAR, DATETIME(6), DECIMAL(12,2), DOUBLE, TEXT
(sometimes NULL), TINYINT and DATE columns.

Command line: ``python bench/workload.py [--bytes 200M] [--domains N] [--cache-dir DIR] [--force]``
prints the files' paths; ``MARIABINLOG_BENCH_BYTES`` sets the default size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from mariadb_server import MariaDBServer  # noqa: E402  (found through the path set above)

#: Default binlog size: just under the server's 1 GiB ``max_binlog_size`` limit, so one file.
DEFAULT_BYTES = 1_000_000_000
DEFAULT_CACHE_DIR = REPO_ROOT / "bench" / ".cache"
#: Bump when the workload changes, so stale caches are not reused.
WORKLOAD_VERSION = 1
#: The largest ``max_binlog_size`` the server accepts.
MAX_BINLOG_SIZE = 1 << 30

SERVER_OPTIONS = (
    "--log-bin",
    "--binlog-format=ROW",
    "--server-id=1",
    "--default-time-zone=+00:00",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--innodb-flush-log-at-trx-commit=0",
    "--sync-binlog=0",
    "--innodb-doublewrite=0",
    "--innodb-buffer-pool-size=1G",
    "--innodb-log-file-size=512M",
    "--max-allowed-packet=256M",
)

SCHEMA = """
CREATE DATABASE bench;
CREATE TABLE bench.orders (
  id BIGINT NOT NULL PRIMARY KEY,
  qty INT NOT NULL,
  customer VARCHAR(64) NOT NULL,
  created DATETIME(6) NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  score DOUBLE NOT NULL,
  note TEXT NULL,
  flag TINYINT NOT NULL,
  day DATE NOT NULL
) ENGINE=InnoDB;
"""

_SIZE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """``"200M"`` -> 209715200; plain digits are bytes; K, M, G are binary multiples."""
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in _SIZE_SUFFIXES:
        return int(float(text[:-1]) * _SIZE_SUFFIXES[text[-1]])
    return int(text)


def default_target() -> int:
    """``MARIABINLOG_BENCH_BYTES`` if set, else :data:`DEFAULT_BYTES`."""
    value = os.environ.get("MARIABINLOG_BENCH_BYTES")
    return parse_size(value) if value else DEFAULT_BYTES


def make_binlog(
    target_bytes: int | None = None,
    cache_dir: Path | None = None,
    *,
    max_file_bytes: int = MAX_BINLOG_SIZE,
    force: bool = False,
    domains: int = 1,
) -> list[Path]:
    """Return binlog files (oldest first) holding at least ``target_bytes``, made once and cached.

    ``max_file_bytes`` is the server's ``max_binlog_size``: the default keeps
    anything up to 1 GiB in one file; a smaller value spreads it over several.
    ``domains``: the transactions take GTID domains 0..N-1 in turn (statement by statement).
    """
    target = default_target() if target_bytes is None else target_bytes
    if not 4096 <= max_file_bytes <= MAX_BINLOG_SIZE:
        raise ValueError(f"max_file_bytes must be within 4096..{MAX_BINLOG_SIZE}")
    if domains < 1:
        raise ValueError("domains must be at least 1")
    root = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    spread = f"-d{domains}" if domains > 1 else ""
    final = root / f"row-{target}-max{max_file_bytes}{spread}-v{WORKLOAD_VERSION}"
    if not force:
        cached = _cached_files(final)
        if cached is not None:
            _progress(f"using cached binlog {final} ({_mb(sum(p.stat().st_size for p in cached))} MB)")
            return cached
    staging = root / f"{final.name}.building"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(final, ignore_errors=True)
    staging.mkdir(parents=True)
    server = MariaDBServer(staging / "server", (*SERVER_OPTIONS, f"--max-binlog-size={max_file_bytes}"))
    try:
        server.start()
        stats = _run_workload(server, target, domains)
        files = server.binlog_files()
        server.flush_binlogs()  # closes the last file the way the corpus's files are closed
        version = server.rows("SELECT VERSION()")[0][0]
    finally:
        server.stop()
    out = staging / "binlogs"
    out.mkdir()
    for path in files:
        path.rename(out / path.name)
    manifest = {
        "workload_version": WORKLOAD_VERSION,
        "target_bytes": target,
        "max_file_bytes": max_file_bytes,
        "domains": domains,
        "server_version": version,
        "server_options": [*SERVER_OPTIONS, f"--max-binlog-size={max_file_bytes}"],
        "files": [{"name": p.name, "bytes": (out / p.name).stat().st_size} for p in files],
        **stats,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    out.rename(final)
    shutil.rmtree(staging)
    result = [final / p.name for p in files]
    _progress(f"binlog ready: {final} ({len(result)} file(s), {_mb(sum(p.stat().st_size for p in result))} MB)")
    return result


def _cached_files(folder: Path) -> list[Path] | None:
    """The files a finished earlier run left in ``folder``, if all are intact."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    files = [(folder / entry["name"], entry["bytes"]) for entry in manifest["files"]]
    if all(path.is_file() and path.stat().st_size == size for path, size in files):
        return [path for path, _ in files]
    return None


def _run_workload(server: MariaDBServer, target: int, domains: int = 1) -> dict[str, float | int]:
    """Write rows until the binlog holds ``target`` bytes (statements in ``domains`` GTID
    domains in turn); return counts and timings."""
    server.pipe(SCHEMA)
    batch = max(2_000, min(100_000, target // 8_000))
    next_id = 1  # ids of batch inserts grow; single-row inserts use negative ids
    oldest = 1
    single_id = 0
    counts = {"inserted": 0, "updated": 0, "deleted": 0, "transactions": 0}
    started = time.monotonic()
    size = _binlog_bytes(server)
    cycle = 0
    while size < target:
        cycle += 1
        statements = [_insert_batch(next_id, batch, cycle)]
        counts["inserted"] += batch
        next_id += batch
        live = next_id - oldest
        update_rows = batch // 4
        low = oldest + (cycle * 7919) % max(1, live - update_rows)
        statements.append(
            "UPDATE bench.orders SET qty = qty + 1, amount = amount + 1.25, score = score / 2,"
            " flag = -flag, note = CONCAT(IFNULL(note, ''), 'u'), created = created + INTERVAL 1 SECOND"
            f" WHERE id BETWEEN {low} AND {low + update_rows - 1};"
        )
        counts["updated"] += update_rows
        if live > 4 * batch:
            delete_rows = batch // 10
            statements.append(f"DELETE FROM bench.orders WHERE id BETWEEN {oldest} AND {oldest + delete_rows - 1};")
            counts["deleted"] += delete_rows
            oldest += delete_rows
        for k in range(200):  # small autocommit transactions, one row each
            if k % 4 == 0:
                single_id -= 1
                statements.append(_insert_single(single_id))
                counts["inserted"] += 1
            else:
                row = oldest + (cycle * 104729 + k * 613) % max(1, next_id - oldest)
                statements.append(
                    f"UPDATE bench.orders SET qty = qty - 1, score = score + {k}.5 WHERE id = {row};"
                )
                counts["updated"] += 1
        counts["transactions"] += len(statements)
        if domains > 1:
            statements = [f"SET SESSION gtid_domain_id={(cycle + k) % domains}; {statement}"
                          for k, statement in enumerate(statements)]
        server.pipe("\n".join(statements) + "\n", database="bench")
        size = _binlog_bytes(server)
        elapsed = time.monotonic() - started
        _progress(
            f"{_mb(size)}/{_mb(target)} MB ({100 * size / target:.0f}%) after {elapsed:.1f} s,"
            f" {_mb(size / max(elapsed, 1e-9))} MB/s, {counts['inserted']} rows inserted"
        )
    return {**counts, "binlog_bytes": size, "seconds": round(time.monotonic() - started, 1)}


def _insert_batch(first_id: int, rows: int, cycle: int) -> str:
    base = first_id - 1
    return (
        "INSERT INTO bench.orders (id, qty, customer, created, amount, score, note, flag, day)"
        f" SELECT {base} + seq, seq * 7 % 100000, CONCAT('customer-', seq % 9973, '-', {cycle}),"
        f" TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ({base} + seq) * 37 SECOND"
        " + INTERVAL seq % 1000000 MICROSECOND,"
        " (seq * 13 % 10000000) / 100, seq * 1.000123 / 7,"
        f" IF(seq % 7 = 0, NULL, REPEAT(MD5({base} + seq), 1 + seq % 3)),"
        " CAST(seq % 200 AS SIGNED) - 100, DATE'2000-01-01' + INTERVAL seq % 9000 DAY"
        f" FROM seq_1_to_{rows};"
    )


def _insert_single(row_id: int) -> str:
    return (
        "INSERT INTO bench.orders VALUES"
        f" ({row_id}, {-row_id % 1000}, 'walk-in', '2025-06-30 12:00:00.000001', 19.99,"
        f" {row_id} / 3, NULL, 1, '2025-06-30');"
    )


def _binlog_bytes(server: MariaDBServer) -> int:
    return sum(int(size) for _, size, *_ in server.rows("SHOW BINARY LOGS"))


def _mb(size: float) -> str:
    return f"{size / 1e6:.1f}"


def _progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Make (or reuse) the benchmark binlog and print its files' paths."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=parse_size, default=None, help="target size, e.g. 200M (default 1e9)")
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"default {DEFAULT_CACHE_DIR}")
    parser.add_argument("--max-file-bytes", type=parse_size, default=MAX_BINLOG_SIZE, help="max_binlog_size")
    parser.add_argument("--force", action="store_true", help="rebuild even when cached")
    parser.add_argument("--domains", type=int, default=1, help="GTID domains the transactions take in turn")
    args = parser.parse_args(argv)
    for path in make_binlog(args.bytes, args.cache_dir, max_file_bytes=args.max_file_bytes, force=args.force,
                            domains=args.domains):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
