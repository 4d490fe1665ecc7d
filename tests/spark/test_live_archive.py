"""A streaming query over a directory that a live ``mariabinlog archive --stop-never`` writes
while a real MariaDB primary runs a workload (256 KiB files, OOB transactions spanning many
files, XA, DDL, several domains).  The query is SIGKILLed twice, once between planning a batch
and committing it, and restarted from its checkpoint: it never dies on its own, and the sink
holds every GTID once, equal to a batch read of the final archive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory

pytestmark = [pytest.mark.spark, pytest.mark.mariadb, pytest.mark.timeout(900)]

QUERY = r'''
import sys
from pyspark.sql import SparkSession
from mariabinlog.spark import register

archive, out, checkpoint, mode = sys.argv[1:5]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1").config("spark.sql.session.timeZone", "UTC").getOrCreate())
register(spark, check=False)
df = (spark.readStream.format("mariabinlog").option("view", "groups").option("maxGroupsPerTrigger", "25")
      .option("maxPartitionBytes", "64k").load(archive))
writer = (df.select("gtid", "event_count", "events").writeStream.format("parquet").option("path", out)
          .option("checkpointLocation", checkpoint))
query = writer.trigger(availableNow=True).start() if mode == "now" else writer.trigger(
    processingTime="500 milliseconds").start()
query.awaitTermination()
'''


def _wait(check: Callable[[], bool], seconds: float, what: str, every: float = 0.05) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def _batches(checkpoint: Path, kind: str) -> int:
    folder = checkpoint / kind
    return max((int(p.name) for p in folder.iterdir() if p.name.isdigit()), default=-1) if folder.is_dir() else -1


def _workload(server: MariaDBServer, round_no: int) -> None:
    """Small groups in three domains, DDL, an XA transaction and a big (OOB) transaction."""
    statements = [f"CREATE TABLE IF NOT EXISTS live.t{round_no} (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB;"]
    for i in range(60):
        statements.append(f"SET gtid_domain_id={i % 3}; INSERT INTO live.t{round_no} VALUES ({i}, REPEAT('x', {i}));")
    statements.append(f"SET gtid_domain_id=0; ALTER TABLE live.t{round_no} ADD COLUMN w INT DEFAULT {round_no};")
    statements.append(
        f"XA START 'x{round_no}'; INSERT INTO live.t{round_no} (id, v) VALUES (1000, 'xa');"
        f" XA END 'x{round_no}'; XA PREPARE 'x{round_no}'; XA COMMIT 'x{round_no}';")
    statements.append(
        f"SET gtid_domain_id=1; INSERT INTO live.t{round_no} (id, v) SELECT seq + 10000, REPEAT('big', 60)"
        " FROM seq_1_to_6000;")
    for i in range(20):
        statements.append(f"SET gtid_domain_id=2; UPDATE live.t{round_no} SET v = 'u{i}' WHERE id = {i};")
    server.pipe("\n".join(statements) + "\n", database="live")


def _start_query(script: Path, archive: Path, out: Path, checkpoint: Path, mode: str, log: Path) -> Any:
    with open(log, "ab") as handle:
        return subprocess.Popen([sys.executable, str(script), str(archive), str(out), str(checkpoint), mode],
                                stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def _kill(proc: Any, log: Path) -> None:
    assert proc.poll() is None, f"the streaming query died on its own: {log.read_text()[-4000:]}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(60)


def test_stream_over_live_archive_survives_two_kills(
        spark: Any, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path) -> None:
    primary = mariadb_server_factory("--log-bin", "--binlog-format=ROW", "--binlog-checksum=CRC32",
                                     "--server-id=1", "--default-time-zone=+00:00", name="live-archive-primary")
    primary.sql("CREATE USER 'arch'@'%' IDENTIFIED BY 'arch'; GRANT REPLICATION SLAVE, REPLICATION CLIENT,"
                " BINLOG MONITOR ON *.* TO 'arch'@'%'; CREATE DATABASE live")
    archive, out, checkpoint = tmp_path / "archive", tmp_path / "out", tmp_path / "checkpoint"
    script, log = tmp_path / "query.py", tmp_path / "query.log"
    script.write_text(QUERY)
    archiver = subprocess.Popen(
        [sys.executable, "-m", "mariabinlog", "archive", "--from", f"mariadb://arch:arch@127.0.0.1:{primary.port}",
         "--dir", str(archive), "--stop-never", "--heartbeat", "0.5", "--max-binlog-size", "256K", "--quiet"],
        stderr=subprocess.PIPE)
    query = None
    try:
        # The query starts before the archive directory exists: it waits for it.
        query = _start_query(script, archive, out, checkpoint, "live", log)
        _workload(primary, 1)
        _wait(lambda: _batches(checkpoint, "commits") >= 1, 300, "a first committed batch")
        # Kill 1: between planning a batch (offsets written) and committing it.
        _workload(primary, 2)
        _wait(lambda: _batches(checkpoint, "offsets") > _batches(checkpoint, "commits"), 300,
              "a planned, uncommitted batch")
        _kill(query, log)
        query = _start_query(script, archive, out, checkpoint, "live", log)
        _workload(primary, 3)
        done = _batches(checkpoint, "commits")
        _wait(lambda: _batches(checkpoint, "commits") > done + 1, 300, "batches after the restart")
        _kill(query, log)  # kill 2: wherever it is
        query = None
        _workload(primary, 4)
        want = primary.rows("SELECT @@gtid_binlog_pos")[0][0]
        last = set(want.split(","))
        _wait(lambda: last <= set(r.gtid for r in spark.read.format("mariabinlog").option("view", "groups")
                                  .load(str(archive)).select("gtid").collect()), 300, "the archive to catch up", every=2)
    finally:
        if query is not None and query.poll() is None:
            os.killpg(query.pid, signal.SIGKILL)
        archiver.send_signal(signal.SIGTERM)
        _, err = archiver.communicate(timeout=60)
    assert archiver.returncode == 0, err.decode()
    final = _start_query(script, archive, out, checkpoint, "now", log)
    assert final.wait(600) == 0, log.read_text()[-4000:]
    sink = sorted((r.gtid, r.event_count, [bytes(e) for e in r.events])
                  for r in spark.read.parquet(str(out)).collect())
    batch = sorted((r.gtid, r.event_count, [bytes(e) for e in r.events])
                   for r in spark.read.format("mariabinlog").option("view", "groups").load(str(archive))
                   .select("gtid", "event_count", "events").collect())
    gtids = [row[0] for row in sink]
    assert len(gtids) == len(set(gtids)) > 4 * 80
    assert sink == batch
    assert len(list(archive.glob("binlog-*.ibb"))) > 6
