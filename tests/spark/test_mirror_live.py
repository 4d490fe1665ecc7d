"""A live mirror of a real primary: ``mariabinlog archive --stop-never`` copies its binlog while
``mariabinlog pipeline ARCHIVE --out OUT --format delta|iceberg --follow`` keeps Delta (then
Iceberg) tables current, SIGKILLed twice and restarted.

The workload runs in rounds on a default (``binlog_row_metadata=NO_LOG``) primary: inserts,
updates and deletes in three GTID domains over a keyed table, a keyless one (``DELETE ...
LIMIT 1`` of duplicate rows) and a wide one; a ~5 MB transaction, which the archive writes out
of band across its 256 KiB files; an ``ALTER TABLE ... ADD COLUMN ... DEFAULT`` midway.  Kill 1
is the job's own test-only fault hook: it SIGKILLs itself right after a table commit, before the
micro-batch's checkpoint commit; kill 2 is a SIGKILL of the job's process group wherever it is.
At the end every state table equals ``SELECT *`` on the primary, read back with ``deltalake`` or
``pyiceberg``, and the CDC table holds every row change of the archive exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from mirror_lake import lake_table, rows_of
from schema_workloads import SERVER_OPTIONS, typed_select

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.timeout(1500)]

TABLES = ("orders", "ledger", "wide")


def _wait(check: Callable[[], bool], seconds: float, what: str, every: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def _round(server: MariaDBServer, number: int) -> None:
    """One round of the workload (see the module docstring)."""
    sql = ["CREATE DATABASE IF NOT EXISTS live; USE live;"]
    if number == 1:
        sql.append("CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(20), amount DECIMAL(10,2), placed DATETIME);"
                   " CREATE TABLE ledger (account INT, delta INT, memo VARCHAR(10));"
                   " CREATE TABLE wide (id BIGINT UNSIGNED PRIMARY KEY, payload TEXT);")
    base = number * 1000
    for i in range(40):
        domain = i % 3
        sql.append(f"SET SESSION gtid_domain_id = {domain}; INSERT INTO live.orders (id, customer, amount, placed) VALUES"
                   f" ({base + i}, 'c{i % 7}', {i}.25, '2026-01-0{1 + i % 9} 10:00:00');"
                   f" INSERT INTO live.ledger VALUES ({i % 4}, {i % 3}, 'r{number}');")
    for i in range(0, 40, 3):
        sql.append(f"SET SESSION gtid_domain_id = {(i + 1) % 3}; UPDATE live.orders SET amount = amount + 1"
                   f" WHERE id = {base + i};")
    sql.append(f"SET SESSION gtid_domain_id = 2; DELETE FROM live.orders WHERE id IN ({base + 1}, {base + 5});"
               f" DELETE FROM live.ledger WHERE account = 1 AND memo = 'r{number}' LIMIT 1;")
    if number == 2:  # ~5 MB in one transaction: the archive spills it out of band
        sql.append("SET SESSION gtid_domain_id = 1; INSERT INTO live.wide SELECT seq, REPEAT(CHAR(65 + seq % 26), 200)"
                   " FROM seq_1_to_25000;")
    if number == 3:  # midway: a column with a default the rows already there get
        sql.append("SET SESSION gtid_domain_id = 0; ALTER TABLE live.orders ADD COLUMN note VARCHAR(12) NOT NULL"
                   " DEFAULT 'none' AFTER customer;")
        sql.append("SET SESSION gtid_domain_id = 1; UPDATE live.orders SET note = 'noted' WHERE id % 4 = 0;")
        sql.append("SET SESSION gtid_domain_id = 2; UPDATE live.wide SET payload = 'short' WHERE id % 1000 = 0;"
                   " DELETE FROM live.wide WHERE id > 24990;")
    server.pipe("\n".join(sql) + "\n")


def _job(archive: Path, out: Path, table_format: str, log: Path, kill_after: int | None = None) -> Any:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("MARIABINLOG_MIRROR_KILL_AFTER_COMMITS", None)
    if kill_after is not None:
        env["MARIABINLOG_MIRROR_KILL_AFTER_COMMITS"] = str(kill_after)
    with open(log, "ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "mariabinlog", "pipeline", str(archive), "--out", str(out), "--format",
             table_format, "--follow", "--master", "local[2]", "--trigger", "500ms",
             "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"],
            stdout=handle, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _batches(checkpoint: Path, kind: str) -> int:
    folder = checkpoint / kind
    return max((int(p.name) for p in folder.iterdir() if p.name.isdigit()), default=-1) if folder.is_dir() else -1


def _position(out: Path) -> dict[str, Any] | None:
    ledger = out / "_mirror" / "mirror.json"
    return json.loads(ledger.read_text())["position"] if ledger.exists() else None


def _covers(position: dict[str, Any] | None, gtids: str) -> bool:
    """Whether a mirror's position holds every GTID of ``@@gtid_binlog_pos``."""
    if not position or not position.get("gtid_state"):
        return False
    have = {}
    for gtid in position["gtid_state"].split(","):
        domain, _, seq = gtid.split("-")
        have[domain] = max(have.get(domain, 0), int(seq))
    return all(have.get(g.split("-")[0], 0) >= int(g.split("-")[2]) for g in gtids.split(","))


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_follow_a_live_archive_through_two_kills(
        table_format: str, spark: Any, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path) -> None:
    primary = mariadb_server_factory(*SERVER_OPTIONS, "--binlog-checksum=CRC32", "--server-id=1",
                                     name=f"mirror-primary-{table_format}")
    primary.sql("CREATE USER 'arch'@'%' IDENTIFIED BY 'arch'; GRANT REPLICATION SLAVE, REPLICATION CLIENT,"
                " BINLOG MONITOR ON *.* TO 'arch'@'%'")
    archive, out, log = tmp_path / "archive", tmp_path / "out", tmp_path / "job.log"
    checkpoint = out / "_mirror" / "checkpoint"
    archiver = subprocess.Popen(
        [sys.executable, "-m", "mariabinlog", "archive", "--from", f"mariadb://arch:arch@127.0.0.1:{primary.port}",
         "--dir", str(archive), "--stop-never", "--heartbeat", "0.5", "--max-binlog-size", "256K", "--quiet"],
        stderr=subprocess.PIPE)
    job = None
    try:
        _round(primary, 1)
        _wait(lambda: (archive / "schema-history.json").exists() and any(archive.glob("binlog-*.ibb")), 120,
              "the archive")
        # Started with the fault hook: the first run, then micro-batches until its 5th table
        # commit, where it kills itself before the checkpoint records the batch as done.
        job = _job(archive, out, table_format, log, kill_after=5)
        _wait(lambda: _position(out) is not None, 600, "the first run")
        _round(primary, 2)
        assert job.wait(600) == -signal.SIGKILL, log.read_text()[-4000:]
        assert _batches(checkpoint, "offsets") == _batches(checkpoint, "commits") + 1, "killed mid-batch"
        job = _job(archive, out, table_format, log)
        _round(primary, 3)
        done = _batches(checkpoint, "commits")
        _wait(lambda: _batches(checkpoint, "commits") > done + 1, 600, "batches after the restart")
        os.killpg(job.pid, signal.SIGKILL)  # kill 2: wherever it is
        job.wait(60)
        _round(primary, 4)
        job = _job(archive, out, table_format, log)
        want = primary.rows("SELECT @@gtid_binlog_pos")[0][0]
        _wait(lambda: _covers(_position(out), want), 600, f"the mirror to reach {want}", every=1)
        job.send_signal(signal.SIGTERM)  # a clean stop
        assert job.wait(120) == 0, log.read_text()[-4000:]
        job = None
    finally:
        if job is not None and job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        archiver.send_signal(signal.SIGTERM)
        _, err = archiver.communicate(timeout=60)
    assert archiver.returncode == 0, err.decode()
    text = log.read_text()
    assert "mirror: batch" in text and "behind:" in text
    assert len(list(archive.glob("binlog-*.ibb"))) > 15  # the 5 MB transaction and the rest, across files
    for table in TABLES:
        want, schema = typed_select(primary, "live", table)
        got = lake_table(out, table_format, "state", f"live.{table}")
        assert got.column_names == schema.names, table
        assert rows_of(got.cast(schema)) == rows_of(pa.Table.from_pylist(want, schema=schema)), table
    # Every row change once: the CDC table is the archive's rows view, as a batch read gives it.
    columns = ["gtid", "file_no", "position", "event_index", "row_index", "database", "table", "op"]
    view = spark.read.format("mariabinlog").option("view", "rows").load(str(archive)).select(*columns)
    cdc = lake_table(out, table_format, "cdc").select(columns)
    assert cdc.num_rows == view.count() > 25000
    assert rows_of(cdc) == sorted(json.dumps(r.asDict(), default=str, sort_keys=True) for r in view.collect())
