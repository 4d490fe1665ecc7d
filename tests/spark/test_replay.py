"""Per-domain parallel replay into a real MariaDB server, through the replica's apply code."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from mariadb_server import CORPUS_OPTIONS, MariaDBServerFactory

pytestmark = pytest.mark.spark


def _checksums(corpus_dir: Path, workload: str) -> dict[str, int]:
    with (corpus_dir / "checksums" / f"{workload}.tsv").open(newline="") as handle:
        return {row["table"]: int(row["checksum"]) for row in csv.DictReader(handle, delimiter="\t")}


def test_replay_by_domain_reaches_recorded_checksums_once(
    spark: Any, corpus_dir: Path, mariadb_server_factory: MariaDBServerFactory
) -> None:
    from mariabinlog.spark.replay import replay

    target = mariadb_server_factory(*CORPUS_OPTIONS, "--log-bin", "--server-id=77", name="spark-replay")
    url = f"mariadb://root@127.0.0.1:{target.port}"
    source = str(corpus_dir / "binlogs" / "w07_gtid_domains")
    applied = replay(spark, source, url, channel="w07")
    groups = spark.read.format("mariabinlog").option("view", "groups").load(source)
    per_domain = {r.domain_id: r["count"] for r in groups.groupBy("domain_id").count().collect()}
    assert applied == per_domain and set(applied) == {0, 1, 2}
    expected = _checksums(corpus_dir, "w07_gtid_domains")
    assert target.checksum_table(*expected) == expected
    # Every domain's last GTID is the recorded position, and the target's binlog kept the GTIDs.
    last = {r.domain_id: r.gtid for r in groups.orderBy("file_no", "position").collect()}
    rows = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos WHERE channel='w07'")
    assert {int(d): f"{d}-{s}-{n}" for d, s, n in rows} == last
    # A rerun applies nothing twice.
    assert replay(spark, source, url, channel="w07") == {0: 0, 1: 0, 2: 0}
    assert target.checksum_table(*expected) == expected
