"""Replication benchmarks (not a test): streaming and apply rates against real MariaDB servers.

1. Streaming: events/s and MB/s that a client receives and decodes from the same real primary
   (one ROW-format binlog of ``--mbytes`` MB, streamed from the start by GTID, non-blocking),
   side by side in one run:

   * ``mariabinlog events``: :meth:`BinlogClient.events`, every event decoded by the format
     core (row images stay undecoded, as a replica's I/O thread leaves them); like the other
     client it does not ask for Annotate_rows events, so both receive the same events;
   * ``mariabinlog groups``: :meth:`BinlogClient.groups`, complete event groups;
   * ``python-mysql-replication``: PyPI ``mysql-replication``'s ``BinLogStreamReader`` from the
     first file and position 4 (its GTID mode is broken against MariaDB, see
     :func:`pymysqlreplication_events`), iterating its events without touching ``rows``;
   * ``python-mysql-replication rows``: the same, reading every row (``event.rows``).

2. Apply: ``replicate`` from a live primary with a 4-domain workload (each domain its own
   table, small transactions) into fresh targets, serial (``--parallel 1``) and per-domain
   parallel (``--parallel 4``); groups/s and events/s.

Run: ``.venv/bin/python bench/replication.py [--mbytes 64] [--groups-per-domain 2000]``
(needs the ``bench`` extra: ``pip install -e '.[bench]'``).  Figures depend on the machine:
the servers, the writer and the client share its cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "src"))

from mariadb_server import MariaDBServer  # noqa: E402

from mariabinlog.codec.gtid import ConnectState  # noqa: E402
from mariabinlog.replication.apply import PositionTable, Replicator  # noqa: E402
from mariabinlog.replication.client import BinlogClient  # noqa: E402
from mariabinlog.replication.filters import GroupFilter  # noqa: E402
from mariabinlog.replication.net import Connection, ConnectionOptions  # noqa: E402
from mariabinlog.replication.sources import PrimarySource  # noqa: E402

PRIMARY_OPTIONS = (
    "--log-bin",
    "--binlog-format=ROW",
    "--server-id=1",
    "--binlog-annotate-row-events=ON",
    "--binlog-row-metadata=FULL",
    "--innodb-flush-log-at-trx-commit=0",
    "--sync-binlog=0",
    "--innodb-buffer-pool-size=256M",
    "--max-allowed-packet=256M",
)
TARGET_OPTIONS = ("--log-bin", "--server-id=2", "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0")


def options(server: MariaDBServer) -> ConnectionOptions:
    """root over TCP."""
    return ConnectionOptions(host="127.0.0.1", port=server.port, user="root", read_timeout=600)


def stream_workload(server: MariaDBServer, mbytes: int) -> None:
    """Fill the binlog with about ``mbytes`` MB: 500-row INSERT ... SELECT transactions, updates, deletes."""
    server.sql(
        "CREATE DATABASE s; CREATE TABLE s.t (id BIGINT PRIMARY KEY, qty INT, name VARCHAR(64), at DATETIME(6),"
        " amount DECIMAL(12,2), score DOUBLE, note TEXT) ENGINE=InnoDB"
    )
    with Connection.open(options(server)) as conn:
        next_id = 0
        while True:
            status = conn.rows("SHOW BINARY LOGS")
            size = sum(int(row[1] or 0) for row in status)
            if size >= mbytes << 20:
                return
            conn.query(
                "INSERT INTO s.t SELECT seq, seq % 1000, CONCAT('customer ', seq), NOW(6) - INTERVAL seq SECOND,"
                f" seq / 7, seq / 3, IF(seq % 5 = 0, NULL, REPEAT('n', seq % 100)) FROM s.seq_{next_id + 1}_to_{next_id + 500}"
            )
            conn.query(f"UPDATE s.t SET qty = qty + 1 WHERE id BETWEEN {next_id + 1} AND {next_id + 100}")
            conn.query(f"DELETE FROM s.t WHERE id BETWEEN {next_id + 401} AND {next_id + 420}")
            next_id += 500


def timed(label: str, run: Any) -> dict[str, Any]:
    """Run ``run()`` -> (events, bytes); figures with the elapsed time."""
    started = time.perf_counter()
    events, size = run()
    elapsed = time.perf_counter() - started
    result = {
        "what": label,
        "events": events,
        "mbytes": round(size / 1e6, 1),
        "seconds": round(elapsed, 2),
        "events_per_s": round(events / elapsed),
        "mb_per_s": round(size / 1e6 / elapsed, 1),
    }
    print(f"  {label:<32} {events:>9} events {result['mbytes']:>7} MB {elapsed:>7.2f} s"
          f" {result['events_per_s']:>9} events/s {result['mb_per_s']:>6} MB/s", flush=True)
    return result


def mariabinlog_events(server: MariaDBServer) -> tuple[int, int]:
    """Every event through BinlogClient.events()."""
    count = size = 0
    for placed in BinlogClient(options(server), blocking=False, server_id=1001, annotate=False).events():
        count += 1
        size += len(placed.raw)
    return count, size


def mariabinlog_groups(server: MariaDBServer) -> tuple[int, int]:
    """Complete groups through BinlogClient.groups()."""
    count = size = 0
    for group in BinlogClient(options(server), blocking=False, server_id=1002, annotate=False).groups():
        count += len(group)
        size += group.size
    return count, size


def pymysqlreplication_events(server: MariaDBServer, rows: bool) -> tuple[int, int]:
    """Every event through python-mysql-replication's BinLogStreamReader (optionally its rows).

    It streams from the first binlog file by file and position: its MariaDB GTID mode
    (``is_mariadb=True, auto_position=...``) sends a COM_BINLOG_DUMP whose length field is one
    byte short (``binlogstream.py`` ``__set_mariadb_settings``: header_size 14 for a 15-byte
    payload); the primary then resets the connection mid-stream and the library starts over
    from the beginning, endlessly, in non-blocking mode (seen with 1.0.17 and MariaDB 10.11).
    """
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import RowsEvent

    settings = {"host": "127.0.0.1", "port": server.port, "user": "root", "passwd": ""}
    first = server.rows("SHOW BINARY LOGS")[0][0]
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=1003, blocking=False, resume_stream=True, log_file=first, log_pos=4
    )
    count = size = 0
    try:
        for event in stream:
            count += 1
            size += event.event_size
            if rows and isinstance(event, RowsEvent):
                for _ in event.rows:
                    pass
    finally:
        stream.close()
    return count, size


def apply_workload(server: MariaDBServer, per_domain: int) -> None:
    """Four domains (0-3), each inserting and updating its own table in small transactions."""
    server.sql(
        "CREATE DATABASE a;"
        + "".join(f"CREATE TABLE a.d{d} (id INT PRIMARY KEY AUTO_INCREMENT, k INT, note VARCHAR(100)) ENGINE=InnoDB;"
                  for d in range(4))
    )

    def writer(domain: int) -> None:
        with Connection.open(options(server)) as conn:
            conn.query(f"SET SESSION gtid_domain_id={domain}")
            for i in range(per_domain):
                if i % 4 == 3:
                    conn.query(f"UPDATE a.d{domain} SET k = k + 1 WHERE id = {i * 3 // 4}")
                else:
                    conn.query(f"INSERT INTO a.d{domain} (k, note) VALUES ({i}, 'domain {domain} row {i}')")

    threads = [threading.Thread(target=writer, args=(d,)) for d in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def apply_rate(primary: MariaDBServer, workdir: Path, parallel: int, start: ConnectState) -> dict[str, Any]:
    """replicate from the live primary into a fresh target; groups/s."""
    target = MariaDBServer(workdir / f"target-{parallel}", TARGET_OPTIONS).start()
    try:
        replicator = Replicator(options(target), table=PositionTable(), workers=parallel)
        start = replicator.prepare(start)
        source = PrimarySource(BinlogClient(options(primary), blocking=False, server_id=1100 + parallel))
        started = time.perf_counter()
        replicator.run(source, GroupFilter(start=start))
        elapsed = time.perf_counter() - started
        progress = replicator.progress
        tables = [f"a.d{d}" for d in range(4)]
        same = target.checksum_table(*tables) == primary.checksum_table(*tables)
        result = {
            "what": f"replicate --parallel {parallel}",
            "groups": progress.groups,
            "events": progress.events,
            "seconds": round(elapsed, 2),
            "groups_per_s": round(progress.groups / elapsed),
            "events_per_s": round(progress.events / elapsed),
            "checksums_equal": same,
        }
        print(f"  {result['what']:<32} {progress.groups:>9} groups {elapsed:>7.2f} s {result['groups_per_s']:>7} groups/s"
              f" {result['events_per_s']:>8} events/s  checksums equal: {same}", flush=True)
        return result
    finally:
        target.stop()


def main() -> int:
    """Run both benchmarks and print the figures (and JSON at the end)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mbytes", type=int, default=64, help="binlog size for the streaming benchmark (MB)")
    parser.add_argument("--groups-per-domain", type=int, default=2000, help="transactions per domain for apply")
    parser.add_argument("--repeat", type=int, default=2, help="streaming runs per client (best is kept)")
    args = parser.parse_args()
    results: dict[str, Any] = {"streaming": [], "apply": []}
    with tempfile.TemporaryDirectory(prefix="mbl-bench-") as tmp:
        workdir = Path(tmp)
        primary = MariaDBServer(workdir / "primary", PRIMARY_OPTIONS).start()
        try:
            print(f"streaming: building a {args.mbytes} MB binlog on {primary} ...", flush=True)
            stream_workload(primary, args.mbytes)
            clients = [
                ("mariabinlog events", lambda: mariabinlog_events(primary)),
                ("mariabinlog groups", lambda: mariabinlog_groups(primary)),
                ("python-mysql-replication", lambda: pymysqlreplication_events(primary, False)),
                ("python-mysql-replication rows", lambda: pymysqlreplication_events(primary, True)),
            ]
            for label, run in clients:
                runs = [timed(label, run) for _ in range(args.repeat)]
                results["streaming"].append(max(runs, key=lambda r: r["events_per_s"]))
            print(f"apply: 4 domains x {args.groups_per_domain} transactions ...", flush=True)
            with Connection.open(options(primary)) as conn:
                before = ConnectState.parse(conn.text("SELECT @@gtid_binlog_pos") or "")
            apply_workload(primary, args.groups_per_domain)
            for parallel in (1, 4):
                results["apply"].append(apply_rate(primary, workdir, parallel, before))
        finally:
            primary.stop()
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
