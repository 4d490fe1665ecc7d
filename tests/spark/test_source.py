"""The batch ``mariabinlog`` source against the plain single-process readers.

Must show: on every corpus file and on `.ibb` files with OOB and file-crossing groups, the
DataFrame's events equal the plain reader's events for one, two and many partitions.  The plain
readers here use the codec directly (``iter_legacy_events``, ``RecordReader.event_groups``); the
legacy files are also checked against the live server's ``SHOW BINLOG EVENTS``.
"""

from __future__ import annotations

import csv
import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.codec.events import (
    ANNOTATE_ROWS_EVENT,
    FL_STANDALONE,
    GTID_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    Event,
)
from mariabinlog.codec.ibb import RecordReader
from mariabinlog.codec.rows import row_decoder
from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events
from mariabinlog.engine.files import IbbDirectory

pytestmark = pytest.mark.spark

EVENT_COLUMNS = (
    "source_file", "file_no", "position", "event_index", "gtid", "domain_id", "gtid_server_id", "seq_no",
    "event_type", "type_code", "server_id", "event_length", "flags", "database", "table", "query", "xid",
)
META_TYPES = {4, 3, 15, 161, 163, 164, 27}  # Rotate, Stop, FD, Binlog_checkpoint, Gtid_list, Start_encryption, HB


def corpus_files(corpus_dir: Path) -> list[Path]:
    files = sorted(corpus_dir.glob("binlogs/*/mysql-bin.*"))
    assert len(files) == 21
    return files


def _details(event: Any, decoder: EventStreamDecoder) -> tuple[Any, Any, Any, Any]:
    code = event.type_code
    if code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
        return event.database.decode("utf-8", "replace") or None, None, event.query.decode("utf-8", "replace"), None
    if code == ANNOTATE_ROWS_EVENT:
        return None, None, event.query.decode("utf-8", "replace"), None
    if code == TABLE_MAP_EVENT:
        return event.schema, event.table, None, None
    if code in ROWS_KIND:
        tm = decoder.table_maps[event.table_id]
        return tm.schema, tm.table, None, None
    if code == XID_EVENT:
        return None, None, None, event.xid
    return None, None, None, None


def _row(path: str, file_no: int, position: int, index: int, gtid: Any, event: Event, length: int,
         decoder: EventStreamDecoder) -> tuple[Any, ...]:
    gtid_cols = (None, None, None, None) if gtid is None else (f"{gtid[0]}-{gtid[1]}-{gtid[2]}", *gtid)
    return (path, file_no, position, index, *gtid_cols, event.name, event.type_code, event.server_id, length,
            event.flags, *_details(event, decoder))


def plain_legacy(path: Path) -> Iterator[tuple[Any, ...]]:
    """Events of one legacy file, with the GTID of the group each belongs to."""
    with open(path, "rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    file_no = int(path.suffix[1:])
    decoder = EventStreamDecoder()
    gtid, left = None, None
    for event in iter_legacy_events(data, decoder=decoder):
        code = event.type_code
        if code == GTID_EVENT:
            gtid = (event.domain_id, event.server_id, event.seq_no)
            left = 1 if event.flags2 & FL_STANDALONE else None
            yield _row(str(path), file_no, event.position, 0, gtid, event, event.end_position - event.position,
                       decoder)
            continue
        if code in META_TYPES:
            gtid = None
        yield _row(str(path), file_no, event.position, 0, gtid, event, event.end_position - event.position, decoder)
        if gtid is not None:
            left = None if left is None else left - 1
            ends = code in (XID_EVENT, XA_PREPARE_LOG_EVENT) or left == 0 or (
                code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT) and event.query.upper() in (b"COMMIT", b"ROLLBACK"))
            if ends:
                gtid = None


def plain_ibb(directory: Path) -> Iterator[tuple[Any, ...]]:
    """Events of an `.ibb` directory, group by group, in commit order."""
    source = IbbDirectory(str(directory))
    first = min(int(p.name[7:13]) for p in directory.glob("binlog-*.ibb"))
    decoder = EventStreamDecoder()
    for group in RecordReader(source, first).event_groups():
        record = group.record
        path = str(directory / f"binlog-{record.file_no:06d}.ibb")
        gtid = None
        for index, raw in enumerate(group.raw_events()):
            event = decoder.decode(raw, 0)
            if index == 0 and event.type_code == GTID_EVENT:
                gtid = (event.domain_id, event.server_id, event.seq_no)
            yield _row(path, record.file_no, record.offset, index, gtid, event, len(raw), decoder)
    source.close()


def spark_events(spark: Any, path: str, **options: str) -> tuple[list[tuple[Any, ...]], int]:
    """The DataFrame's events as tuples of :data:`EVENT_COLUMNS` in order, and its partition count."""
    reader = spark.read.format("mariabinlog")
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load(path)
    rows = df.select(*EVENT_COLUMNS).collect()
    return [tuple(r) for r in rows], df.rdd.getNumPartitions()


# One partition, exactly two, one per 16 KiB piece of every file (legacy files split too).
LEGACY_PARTITIONINGS = {
    "one": {"maxPartitionBytes": "1g", "minPartitions": "1"},
    "two": {"maxPartitionBytes": "1200000", "openCostInBytes": "0", "minPartitions": "1"},
    "many": {"maxPartitionBytes": "1", "openCostInBytes": "0"},
}


@pytest.mark.parametrize("layout", LEGACY_PARTITIONINGS)
def test_corpus_events_equal_plain_reader(spark: Any, corpus_dir: Path, layout: str) -> None:
    files = corpus_files(corpus_dir)
    expected = [row for f in files for row in plain_legacy(f)]
    got, partitions = spark_events(spark, str(corpus_dir / "binlogs/*/mysql-bin.*"), **LEGACY_PARTITIONINGS[layout])
    pieces = sum(max(1, -(-f.stat().st_size // 16384)) for f in files)
    assert pieces > len(files) + 50
    assert partitions == {"one": 1, "two": 2, "many": pieces}[layout]
    assert sorted(got, key=_order) == sorted(expected, key=_order)
    assert len(got) == len(expected) > 1000


def _order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row[0], row[2], row[3]


def test_corpus_events_match_show_binlog_events(spark: Any, corpus_dir: Path) -> None:
    """Positions, types, server ids, ends and GTIDs equal the live server's SHOW BINLOG EVENTS."""
    df = spark.read.format("mariabinlog").load(str(corpus_dir / "binlogs/*/mysql-bin.*"))
    got = {}
    for r in df.select("source_file", "position", "event_type", "server_id", "event_length", "gtid").collect():
        got[(Path(r[0]).parent.name, Path(r[0]).name, r[1])] = (r[2], r[3], r[1] + r[4], r[5])
    expected = {}
    for tsv in sorted(corpus_dir.glob("events/*/*.tsv")):
        with open(tsv, newline="") as handle:
            for line in csv.DictReader(handle, delimiter="\t"):
                key = (tsv.parent.name, line["Log_name"], int(line["Pos"]))
                expected[key] = (line["Event_type"], int(line["Server_id"]), int(line["End_log_pos"]), line["Info"])
    assert got.keys() == expected.keys()
    for key, (etype, server, end, info) in expected.items():
        assert got[key][:3] == (etype, server, end), key
        if etype == "Gtid":
            assert info.split()[-1] == got[key][3], key


def _ibb_partitionings(directory: Path) -> dict[str, dict[str, str]]:
    return {
        "one": {"maxPartitionBytes": "1g", "minPartitions": "1"},
        "two": {"maxPartitionBytes": "1g", "minPartitions": "2", "openCostInBytes": "0"},
        "many": {"maxPartitionBytes": "16k", "openCostInBytes": "0"},
    }


@pytest.mark.parametrize("layout", ["one", "two", "many"])
def test_ibb_events_equal_plain_reader(spark: Any, stress_ibb: tuple[Path, list[str]], layout: str) -> None:
    directory, order = stress_ibb
    expected = list(plain_ibb(directory))
    got, partitions = spark_events(spark, str(directory), **_ibb_partitionings(directory)[layout])
    if layout == "many":
        from mariabinlog.engine.files import discover_binlogs
        from mariabinlog.spark.files import ibb_data_end
        from mariabinlog.spark.fs import Storage

        files = discover_binlogs(str(directory))
        # One split per written data page; the current file's pre-allocated rest is not cut.
        pages = sum(ibb_data_end(f, Storage()) // 16384 - 1 for f in files)
        assert partitions == pages > 30 and pages < sum(f.size // 16384 - 1 for f in files)
    else:
        assert partitions == {"one": 1, "two": 2}[layout]
    assert sorted(got, key=lambda r: (r[1], r[2], r[3])) == expected
    gtids = [r[4] for r in expected if r[3] == 0 and r[4] is not None]
    assert gtids == order


@pytest.mark.timeout(180)
def test_preallocated_archive_file_is_cut_only_over_its_written_pages(spark: Any, tmp_path: Path) -> None:
    """An archive's current file is pre-allocated at full size with a few pages written: with
    ``maxPartitionBytes=1`` a split per page of the whole file made 65,535 empty tasks per
    GiB, which looked like a hang.  Planning cuts only the written pages."""
    from mariabinlog.engine import Engine
    from mariabinlog.engine.files import discover_binlogs
    from mariabinlog.tools.sample import SampleBuilder, commit_group

    engine = Engine.open(str(tmp_path), server_id=1, max_binlog_size=8 << 20, durability=0,
                         redo_capacity=1 << 20)
    builder = SampleBuilder(seed=5)
    order = []
    try:
        for table in builder.tables:
            order.append(str(commit_group(engine, builder.ddl(table))))
        for i in range(80):
            order.append(str(commit_group(engine, builder.transaction(i % 2, 1, builder.rnd.randint(1, 6)))))
    finally:
        engine.close()
    (file,) = discover_binlogs(str(tmp_path))
    written = len(list(plain_ibb(tmp_path)))
    got, partitions = spark_events(spark, str(tmp_path), maxPartitionBytes="1", openCostInBytes="0")
    data_pages = partitions  # one split, one partition per written data page
    assert file.size == 8 << 20 and 2 <= data_pages < 64, (file.size, data_pages)
    assert sorted(got, key=lambda r: (r[1], r[2], r[3])) == list(plain_ibb(tmp_path)) and len(got) == written
    assert [r[4] for r in sorted(got, key=lambda r: (r[1], r[2], r[3])) if r[3] == 0 and r[4]] == order


def test_ibb_groups_view_keeps_commit_order_and_bytes(spark: Any, stress_ibb: tuple[Path, list[str]]) -> None:
    directory, order = stress_ibb
    df = spark.read.format("mariabinlog").option("view", "groups").option("maxPartitionBytes", "16k").load(
        str(directory))
    rows = df.orderBy("file_no", "position").collect()
    assert [r.gtid for r in rows] == order
    source = IbbDirectory(str(directory))
    groups = [g for g in RecordReader(source, 0).event_groups()][1:]  # the first is the restart marker
    assert [list(r.events) for r in rows] == [list(g.raw_events()) for g in groups]
    assert [r.event_count for r in rows] == [len(list(g.raw_events())) for g in groups]
    source.close()


def test_rows_view_equals_codec_rows(spark: Any, corpus_dir: Path) -> None:
    from mariabinlog.codec.columns import ABSENT
    from mariabinlog.spark.schema import column_names, render

    def image_map(names: tuple[str, ...], image: Any) -> dict[str, Any] | None:
        return None if image is None else {n: render(v) for n, v in zip(names, image) if v is not ABSENT}

    expected = []
    for path in corpus_files(corpus_dir):
        with open(path, "rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        decoder = EventStreamDecoder()
        for event in iter_legacy_events(data, decoder=decoder):
            if event.type_code in ROWS_KIND:
                tm = decoder.table_map_for(event)
                names = column_names(tm)
                for i, change in enumerate(row_decoder(tm).decode(event)):
                    before = image_map(names, change.before)
                    after = image_map(names, change.after)
                    expected.append((str(path), event.position, i, tm.schema, tm.table, change.kind, before, after))
    df = (spark.read.format("mariabinlog").option("view", "rows").option("maxPartitionBytes", "1")
          .option("schemaHistory", "none").load(str(corpus_dir / "binlogs/*/mysql-bin.*")))
    got = [tuple(r) for r in df.select("source_file", "position", "row_index", "database", "table", "op", "before",
                                       "after").collect()]
    assert sorted(got, key=lambda r: r[:3]) == sorted(expected, key=lambda r: r[:3])
    assert len(got) > 1500


def test_typed_rows_of_one_table_rebuild_final_state(spark: Any, sample_ibb: tuple[Path, Any]) -> None:
    """Typed images of shop.customers, replayed in order, give the sample's final table."""
    from decimal import Decimal

    directory, info = sample_ibb
    df = (spark.read.format("mariabinlog").option("view", "rows").option("table", "shop.customers")
          .option("maxPartitionBytes", "32k").load(str(directory)))
    assert [f.name for f in df.schema["after"].dataType.fields] == ["id", "name", "email", "created", "balance"]
    assert df.schema["after"].dataType["balance"].dataType.simpleString() == "decimal(12,2)"
    assert df.schema["after"].dataType["created"].dataType.simpleString() == "timestamp_ntz"
    assert df.select("table").distinct().collect() == [("customers",)]
    state: dict[int, tuple[Any, ...]] = {}
    for r in df.orderBy("file_no", "position", "event_index", "row_index").collect():
        if r.op == "delete":
            del state[r.before.id]
        else:
            if r.op == "update":
                del state[r.before.id]
            state[r.after.id] = tuple(r.after)
    final = info.tables["shop.customers"]
    assert set(state) == set(final)
    for key, row in final.items():
        got = state[key]
        assert got[:3] == row[:3] and got[4] == Decimal(row[4])
        assert got[3] == row[3].to_datetime()


def test_partial_images_leave_absent_columns_out(spark: Any, corpus_dir: Path) -> None:
    """MINIMAL images leave absent columns out of the maps; SQL NULL stays a null value."""
    df = spark.read.format("mariabinlog").option("view", "rows").load(str(corpus_dir / "binlogs/w03_types_minimal"))
    full = {r.table: len(r.after) for r in df.filter("op = 'insert'").collect()}
    updates = df.filter("op = 'update'").collect()
    assert updates
    partial = [r for r in updates if r.table in full and len(r.before) < full[r.table] and len(r.after) < full[r.table]]
    assert len(partial) > len(updates) // 2
    assert any(v is None for r in df.filter("op = 'insert'").collect() for v in r.after.values())


def test_every_batch_has_the_exact_arrow_schema(sample_ibb: tuple[Path, Any], corpus_dir: Path) -> None:
    """Spark checks only the first batch; all of them carry ``to_arrow_schema`` of the view."""
    from mariabinlog.engine.files import discover_binlogs
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.plan import plan
    from mariabinlog.spark.read import read_splits
    from mariabinlog.spark.schema import SCHEMAS, rows_schema, typed_row_struct
    from mariabinlog.spark.partition import arrow_schema
    from mariabinlog.spark.source import find_table_map

    directory = str(sample_ibb[0])
    files = discover_binlogs(directory)
    typed = rows_schema(typed_row_struct(find_table_map(files, ("shop", "orders")))[0])
    cases = [(view, SCHEMAS[view], {}) for view in SCHEMAS] + [("rows", typed, {"table": "shop.orders"})]
    for view, schema, extra in cases:
        options = ScanOptions.parse({"view": view, "batchRows": "100", "maxPartitionBytes": "64k", **extra})
        expected = arrow_schema(schema)
        batches = [b for part in plan(files, options) for b in read_splits(part, options, expected)]
        assert len(batches) > 3 and all(b.schema.equals(expected) for b in batches), view
    corpus = discover_binlogs(str(corpus_dir / "binlogs" / "w02_types_full"))
    options = ScanOptions.parse({"view": "rows", "batchRows": "5"})
    expected = arrow_schema(SCHEMAS["rows"])
    batches = [b for part in plan(corpus, options) for b in read_splits(part, options, expected)]
    assert len(batches) > 3 and all(b.schema.equals(expected) for b in batches)


@pytest.mark.parametrize("view", ["events", "groups"])
def test_events_and_groups_batches_bounded_in_bytes(stress_ibb: tuple[Path, list[str]], view: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is cut at ``MAX_BATCH_BYTES`` of event data as well as at ``batchRows``: the
    same rows, in many more batches, none far over the bound (one event or group at most)."""
    import pyarrow as pa

    from mariabinlog.engine.files import discover_binlogs
    from mariabinlog.spark import read
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.partition import arrow_schema
    from mariabinlog.spark.plan import plan
    from mariabinlog.spark.schema import SCHEMAS

    files = discover_binlogs(str(stress_ibb[0]))
    options = ScanOptions.parse({"view": view, "batchRows": "1000000"})
    schema = arrow_schema(SCHEMAS[view])

    def batches() -> list[pa.RecordBatch]:
        return [b for part in plan(files, options) for b in read.read_splits(part, options, schema)]

    whole = batches()
    monkeypatch.setattr(read, "MAX_BATCH_BYTES", 16384)
    cut = batches()
    assert len(cut) > 2 * len(whole)
    assert pa.Table.from_batches(cut, schema).equals(pa.Table.from_batches(whole, schema))

    def held(batch: pa.RecordBatch) -> list[int]:  # the event bytes of each row
        if view == "events":
            return batch.column("event_length").to_pylist()
        return [sum(map(len, events)) for events in batch.column("events").to_pylist()]

    biggest = max(max(held(b)) for b in whole)
    assert all(sum(held(b)) < 16384 + biggest for b in cut)
