"""Streaming: a query follows a binlog directory while it grows; a restart from the checkpoint
gives every event group exactly once in the (file) sink."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.engine import Engine
from mariabinlog.tools.sample import SampleBuilder, commit_group

pytestmark = pytest.mark.spark

#: Small files, states every two pages, a low spill size: every case shows up in a few groups.
FEED_ENGINE = {
    "max_binlog_size": 6 * 16384,
    "state_interval": 2 * 16384,
    "spill_size": 4000,
    "oob_piece_size": 1500,
    "durability": 0,
    "redo_capacity": 1 << 20,
    "flush_interval": 0.05,
}


class Feeder:
    """Commits sample groups through the engine into a directory and remembers their GTIDs."""

    def __init__(self, directory: Path) -> None:
        self.engine = Engine.open(str(directory), server_id=1, **FEED_ENGINE)
        self.builder = SampleBuilder(seed=11)
        self.gtids: list[str] = []
        for table in self.builder.tables:
            self.commit(self.builder.ddl(table))

    def commit(self, events: list[bytes], trx: Any = None) -> None:
        self.gtids.append(str(commit_group(self.engine, events, trx)))

    def groups(self, count: int, *, pause: float = 0.0) -> None:
        for i in range(count):
            domain = i % 3
            size = 150 if i % 10 == 7 else self.builder.rnd.randint(1, 4)
            self.commit(self.builder.transaction(domain, domain + 1, size))
            self.builder.tick(5)
            if pause:
                time.sleep(pause)


def _sink_gtids(spark: Any, out: Path) -> list[str]:
    return [r.gtid for r in spark.read.parquet(str(out)).select("gtid").collect()]


def test_ibb_stream_follows_growing_directory_exactly_once(spark: Any, tmp_path: Path) -> None:
    binlogs, out, checkpoint = tmp_path / "binlogs", tmp_path / "out", tmp_path / "checkpoint"
    binlogs.mkdir()
    feeder = Feeder(binlogs)
    feeder.groups(30)
    feeder.engine.checkpoint()

    def start(**trigger: Any) -> Any:
        df = (spark.readStream.format("mariabinlog").option("view", "groups").option("maxPartitionBytes", "32k")
              .load(str(binlogs)))
        return (df.select("gtid", "domain_id", "seq_no", "event_count", "file_no", "position").writeStream
                .format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
                .trigger(**trigger).start())

    query = start(processingTime="500 milliseconds")
    try:
        feeder.groups(60, pause=0.02)  # appended while the query runs, torn tail pages included
        feeder.engine.flush()
        feeder.groups(10)
        feeder.engine.checkpoint()  # the half-filled last page reaches the file
        query.processAllAvailable()
        assert sorted(_sink_gtids(spark, out)) == sorted(feeder.gtids)
    finally:
        query.stop()
    # Written while no query runs: a big transaction whose OOB nodes interleave with commits.
    big = feeder.builder.bulk_load(5, 6, 300)
    trx = feeder.engine.begin()
    rest = b"".join(big[1:])
    trx.write(rest[: len(rest) // 2])
    feeder.groups(5)
    trx.write(rest[len(rest) // 2 :])
    feeder.commit(big, trx)
    feeder.groups(20)
    feeder.engine.close()
    query = start(availableNow=True)
    query.awaitTermination(240)
    got = _sink_gtids(spark, out)
    assert len(got) == len(feeder.gtids) == len(set(got))
    assert sorted(got) == sorted(feeder.gtids)
    # The offsets are GTID states: the last one holds every domain's last GTID.
    offset = query.lastProgress["sources"][0]["endOffset"]
    offset = offset if isinstance(offset, dict) else __import__("json").loads(offset)
    last = {g.split("-")[0]: g for g in feeder.gtids}
    assert set(offset["gtid_state"].split(",")) >= set(last.values())


def test_legacy_stream_over_rotated_files_with_torn_tail(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    """Legacy files copied in as a server would write them: a half-written event waits."""
    source = sorted((corpus_dir / "binlogs" / "w07_gtid_domains").glob("mysql-bin.*"))
    binlogs, out, checkpoint = tmp_path / "binlogs", tmp_path / "out", tmp_path / "checkpoint"
    binlogs.mkdir()
    data = [p.read_bytes() for p in source]

    def run() -> None:
        df = spark.readStream.format("mariabinlog").load(str(binlogs))
        query = (df.filter("gtid is not null").select("gtid", "position", "event_type", "source_file").writeStream
                 .format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(240)

    (binlogs / source[0].name).write_bytes(data[0])
    (binlogs / source[1].name).write_bytes(data[1][:2501])  # cut inside an event group
    run()
    first = spark.read.parquet(str(out)).collect()
    assert first and all(Path(r.source_file).name in (source[0].name, source[1].name) for r in first)
    (binlogs / source[1].name).write_bytes(data[1])
    (binlogs / source[2].name).write_bytes(data[2])
    run()
    got = sorted((Path(r.source_file).name, r.position) for r in spark.read.parquet(str(out)).collect())
    expected = sorted(
        (Path(r.source_file).name, r.position)
        for r in spark.read.format("mariabinlog").load(str(corpus_dir / "binlogs" / "w07_gtid_domains"))
        .filter("gtid is not null").collect()
    )
    assert got == expected
    gtids = [r.gtid for r in spark.read.parquet(str(out)).filter("event_type = 'Gtid'").collect()]
    assert len(gtids) == len(set(gtids)) == 36  # w07's README: 36 transactions, three domains


@pytest.mark.parametrize("kind", ["legacy", "ibb"])
def test_read_max_bytes_bounds_the_bytes_a_micro_batch_moves(
        kind: str, corpus_dir: Path, stress_ibb: tuple[Path, list[str]]) -> None:
    """``ReadMaxBytes(n)`` ends an offset at the first group boundary at least ``n`` bytes on,
    counting every byte of the groups (not only their last events), across files."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes

    from mariabinlog.spark.mirror.job import stream_reader

    directory = corpus_dir / "binlogs" / "w02_types_full" if kind == "legacy" else stress_ibb[0]
    reader = stream_reader(str(directory), {})
    start = reader.initialOffset()
    files = {f.name: f.stat().st_size for f in directory.iterdir() if f.name[-1].isdigit() or f.suffix == ".ibb"}
    names = sorted(files)

    def moved(end: dict[str, Any]) -> int:
        """Bytes from the start offset to ``end``, across files."""
        if end["file"] == start["file"]:
            return int(end["offset"]) - int(start["offset"])
        total = files[start["file"]] - int(start["offset"])
        for name in names[names.index(start["file"]) + 1:names.index(end["file"])]:
            total += files[name]
        return total + int(end["offset"])

    everything = moved(reader.latestOffset(start, ReadAllAvailable()))
    for share in (0.1, 0.5, 0.99):
        end = reader.latestOffset(start, ReadMaxBytes(int(everything * share)))
        assert moved(end) >= everything * share, (share, end)
        if share < 0.9:  # (the last group may take the rest)
            assert moved(end) < everything, (share, end)
