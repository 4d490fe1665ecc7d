"""``mariabinlog pipeline``: the command on the bundled sample, and the latest-state merge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.spark.pipeline import BUCKETS, MAX_BUCKETS, bucket_seconds, run_pipeline
from mariabinlog.tools.sample import write_many_tables, write_sample

pytestmark = pytest.mark.spark


def test_pipeline_command_on_bundled_sample(spark: Any, tmp_path: Path) -> None:
    """What the README runs: no SOURCE, so the sample is generated; tables, chart and summary."""
    import pyarrow.parquet as pq
    from pyspark.sql.types import StringType

    from mariabinlog.spark.schema import render, text_reader

    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "pipeline", "--out", str(out), "--master", "local[2]",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| shop.customers |" in done.stdout and "chart:" in done.stdout
    chart = out / "report" / "events_over_time.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 20_000
    summary = (out / "report" / "summary.md").read_text()
    assert all(f"| {d} |" in summary for d in range(4))
    info = write_sample(str(tmp_path / "again"))  # deterministic: the same content
    # The CDC table, written by the reading tasks themselves, holds the rows view as it is.
    from pyspark.sql import functions as F

    cdc = spark.read.parquet(str(out / "cdc"))
    view = spark.read.format("mariabinlog").option("view", "rows").load(str(out / "sample-binlogs"))

    def as_json(df: Any) -> list[str]:
        return sorted(r[0] for r in df.select(F.to_json(F.struct(*sorted(view.columns)))).collect())

    assert cdc.count() == view.count() > 0 and as_json(cdc) == as_json(view)
    for name, rows in info.tables.items():
        # The sample's CREATE TABLE statements type the state tables: each value is what the
        # typed view reads back from the map text of the row the sample committed.
        # (pyarrow, not Spark's collect: it would shift TIMESTAMP values into local time)
        fields = spark.read.parquet(str(out / "state" / name)).schema.fields
        readers = [text_reader(field.dataType) for field in fields]
        assert not all(isinstance(f.dataType, StringType) for f in fields), name
        got = {r[0]: r for r in map(tuple, (d.values() for d in pq.read_table(out / "state" / name).to_pylist()))}
        want = {
            readers[0](render(key)): tuple(read(render(v)) for read, v in zip(readers, row))
            for key, row in rows.items()
        }
        assert got == want, name


def _changes(rows: list[tuple[Any, ...]]) -> Any:
    """CDC rows of one table in binlog order, as the pipeline's tasks read them."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from mariabinlog.spark.schema import ROWS_SCHEMA

    schema = to_arrow_schema(ROWS_SCHEMA, timezone="UTC")
    return pa.Table.from_pylist([
        {"file_no": 1, "position": 100 + i, "event_index": 0, "row_index": 0, "database": "db", "table": "t",
         "op": op, "key_columns": keys, "before": None if before is None else list(before.items()),
         "after": None if after is None else list(after.items())}
        for i, (op, keys, before, after) in enumerate(rows)
    ], schema=schema)


def _state(rows: list[tuple[Any, ...]], columns: list[str]) -> list[tuple[Any, ...]]:
    from mariabinlog.spark.tables import fold

    images = fold(_changes(rows), columns).to_pylist()
    return sorted((tuple(dict(image).get(c) for c in columns) for image in images), key=_nulls_first)


def _nulls_first(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is not None, v or "") for v in row)


def test_latest_state_merges_partial_images_and_key_changes() -> None:
    keys = ["id"]
    changes = [
        ("insert", keys, None, {"id": "1", "a": "x", "b": "y"}),
        ("insert", keys, None, {"id": "2", "a": "p", "b": "q"}),
        ("update", keys, {"id": "1"}, {"b": "z"}),  # MINIMAL: key only before, changed column after
        ("update", keys, {"id": "2", "a": "p", "b": "q"}, {"id": "3", "a": "p", "b": "q"}),  # key moves
        ("insert", keys, None, {"id": "4", "a": None, "b": "n"}),
        ("delete", keys, {"id": "4"}, None),
        ("insert", keys, None, {"id": "5", "a": "s", "b": None}),
        ("update", keys, {"id": "5"}, {"a": "t"}),
        ("update", keys, {"id": "5"}, {"b": "u"}),  # two partial images merged in order
        ("delete", keys, {"id": "5"}, None),
        ("insert", keys, None, {"id": "5", "a": "v", "b": "w"}),  # deleted, then inserted again
        ("update", keys, {"id": "6"}, {"a": "only"}),  # a row from before the binlog: what it tells, key included
        ("update", keys, {"id": "7", "a": "1", "b": "2"}, {"id": "7", "a": "1", "b": "3"}),
        ("update", keys, {"id": "7", "a": "1", "b": "3"}, {"id": "8", "a": "1", "b": "3"}),
        ("update", keys, {"id": "8", "a": "1", "b": "3"}, {"id": "7", "a": "9", "b": "9"}),  # and back
    ]
    assert _state(changes, ["id", "a", "b"]) == [
        ("1", "x", "z"), ("3", "p", "q"), ("5", "v", "w"), ("6", "only", None), ("7", "9", "9")]


def test_latest_state_without_key_counts_identical_rows() -> None:
    row, other = {"a": "1", "b": "x"}, {"a": "2", "b": "y"}
    changes = [
        ("delete", None, {"a": "0", "b": "z"}, None),  # a row from before the binlog,
        ("insert", None, None, {"a": "0", "b": "z"}),  # inserted again: still there
        ("insert", None, None, row),
        ("insert", None, None, row),
        ("insert", None, None, other),
        ("update", None, other, {"a": "3", "b": "y"}),
        ("delete", None, row, None),
    ]
    assert _state(changes, ["a", "b"]) == [("0", "z"), ("1", "x"), ("3", "y")]


def test_latest_state_folds_as_binlog_order_replayed(tmp_path: Path) -> None:
    """Many keys, random inserts/updates (full and partial images)/deletes/key moves: the fold
    equals replaying the changes one by one into a dict."""
    import random

    draw = random.Random(20261126)
    columns = ["id", "a", "b"]
    table: dict[str, dict[str, Any]] = {}
    changes = []
    for _ in range(3000):
        key = str(draw.randrange(60))
        choice = draw.random()
        if key not in table:
            image = {"id": key, "a": str(draw.randrange(5)), "b": draw.choice([None, "b"])}
            changes.append(("insert", ["id"], None, image))
            table[key] = image
        elif choice < 0.3:
            changes.append(("delete", ["id"], {"id": key}, None))
            del table[key]
        elif choice < 0.6:  # MINIMAL update of one column
            column = draw.choice(["a", "b"])
            value = str(draw.randrange(9))
            changes.append(("update", ["id"], {"id": key}, {column: value}))
            table[key] = {**table[key], column: value}
        else:  # FULL update, the key moving now and then
            new = str(draw.randrange(60)) if choice > 0.9 else key
            if new != key and new in table:
                continue
            image = {"id": new, "a": str(draw.randrange(5)), "b": "full"}
            changes.append(("update", ["id"], dict(table[key]), image))
            del table[key]
            table[new] = image
    want = sorted((tuple(image.get(c) for c in columns) for image in table.values()), key=_nulls_first)
    assert _state(changes, columns) == want
    # folded chunk by chunk, as a task folds a big table: the same rows
    from mariabinlog.spark.tables import Folder

    for size in (97, 1):  # a chunk of one row touches no state row most of the time
        folder, rows = Folder(columns), _changes(changes)
        for start in range(0, rows.num_rows, size):
            folder.add(rows.slice(start, size))
        got = sorted((tuple(dict(image).get(c) for c in columns) for image in folder.images().to_pylist()),
                     key=_nulls_first)
        assert got == want


@pytest.mark.parametrize("layout", ["same keys", "same keys, sliced", "keys vary", "all null", "one key twice"])
def test_map_entries_read_as_arrow_map_lookup(layout: str) -> None:
    """``Entries`` (the fold's and the typed tables' column lookup) gives what Arrow's own
    ``map_lookup`` gives, on its shortcut for images of the same keys and on the general path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from mariabinlog.spark.tables import Entries

    kind = pa.map_(pa.string(), pa.string())
    full = [[("id", str(i)), ("a", None if i % 3 else f"a{i}"), ("b", "x" * i)] for i in range(40)]
    images: list[Any] = [None if i % 4 == 1 else image for i, image in enumerate(full)]
    if layout == "keys vary":
        images[5] = [("b", "moved"), ("id", "5")]
    elif layout == "all null":
        images = [None] * 7
    elif layout == "one key twice":
        images = [[("id", str(i)), ("id", "again"), ("a", "1")] for i in range(9)]
    array = pa.array(images, kind)
    if layout == "same keys, sliced":
        array = array.slice(3, 30)
    entries = Entries(array)
    assert (entries.starts is not None) == (layout in ("same keys", "same keys, sliced", "one key twice"))
    for name in ("id", "a", "b", "missing"):
        assert entries.column(name).to_pylist() == pc.map_lookup(array, name, "first").to_pylist()
    holds = [image is not None and {"id", "b"} <= {k for k, _ in image} for image in array.to_pylist()]
    assert entries.holds_all(["id", "b"]).tolist() == holds


def test_cdc_task_files_hold_each_table_in_binlog_order(tmp_path: Path) -> None:
    """A CDC task's files (small row groups, so batches of several tables split and flush):
    one per table, each in binlog order, together the rows view of its partition."""
    import pyarrow.parquet as pq

    from mariabinlog.spark import cdc
    from mariabinlog.spark.source import MariabinlogDataSource
    from mariabinlog.spark.tables import ORDER, _sorted, partition_of

    write_sample(str(tmp_path / "binlogs"))
    source = MariabinlogDataSource({"path": str(tmp_path / "binlogs"), "view": "rows", "batchRows": "7"})
    reader = source.reader(source.schema())
    root = str(tmp_path / "cdc")
    want = sorted(tuple(r[c] for c in ORDER) for p in reader.partitions()
                  for b in reader.read(p) for r in b.select(ORDER).to_pylist())
    groups, held = cdc.GROUP_ROWS, cdc.HELD_BYTES
    cdc.GROUP_ROWS, cdc.HELD_BYTES = 5, 2000
    files = []
    try:
        for index, partition in enumerate(reader.partitions()):
            written = cdc.write_partition(reader, partition, index, root)
            keys = [partition_of(f, root) for f in written]
            assert len(set(keys)) == len(keys)  # one file per table
            files += written
    finally:
        cdc.GROUP_ROWS, cdc.HELD_BYTES = groups, held
    assert len({partition_of(f, root) for f in files}) > 3
    assert not [n for n in os.listdir(root) if n.startswith(".")]  # the attempt's directory is gone
    got = []
    for path in files:
        table = pq.read_table(path, columns=ORDER)
        assert _sorted(table), path
        got += [tuple(r[c] for c in ORDER) for r in table.to_pylist()]
    assert max(pq.ParquetFile(path).num_row_groups for path in files) > 1
    assert sorted(got) == want


def test_cdc_directories_named_as_spark_names_them(spark: Any, tmp_path: Path) -> None:
    """The CDC tasks name their partition directories as Spark's own partitioned write does
    (``%XX`` escapes, the default partition), so Spark reads the values back alike."""
    from mariabinlog.spark.cdc import escape

    names = ["plain", "a/b", "x=y", "we%ird", "sp ace", "ünï", "q?*:#", "tab\tx", "br[a]ce{s}^'\"", "ctl\x01"]
    spark.createDataFrame([(n, 1) for n in names], "name string, n int").write.partitionBy("name").parquet(
        str(tmp_path / "t"))
    written = sorted(p.name for p in (tmp_path / "t").iterdir() if p.name.startswith("name="))
    assert written == sorted(f"name={escape(n)}" for n in names)
    back = spark.read.parquet(str(tmp_path / "t")).collect()
    assert sorted(r["name"] for r in back) == sorted(names)


def test_delta_tables_committed_by_delta_rs(spark: Any, tmp_path: Path) -> None:
    """``--format delta`` on a Spark without Delta Lake's jars: every table is a Delta table that
    an independent Delta reader (delta-rs) reads back with the rows Spark wrote."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    result = run_pipeline(None, str(tmp_path / "out"), table_format="delta", spark=spark)
    cdc = DeltaTable(result.cdc)
    assert cdc.version() == 0 and cdc.metadata().partition_columns == ["database", "table"]
    rows = spark.read.format("mariabinlog").option("view", "rows").load(str(tmp_path / "out" / "sample-binlogs"))
    assert cdc.to_pyarrow_table().num_rows == result.rows == rows.count()
    by_table = {(r["database"], r["table"]): r["count"] for r in rows.groupBy("database", "table").count().collect()}
    for (database, table), count in by_table.items():
        part = cdc.to_pyarrow_table(filters=[("database", "=", database), ("table", "=", table)])
        assert part.num_rows == count
    assert len(result.states) == len(by_table) >= 3
    for path in result.states.values():
        # the Parquet files Spark's job wrote, read by pyarrow (Spark's collect would shift
        # TIMESTAMP values into local time)
        delta = DeltaTable(path).to_pyarrow_table()
        written = sorted(tuple(r.values()) for r in pq.read_table(path).to_pylist())
        assert sorted(tuple(r.values()) for r in delta.to_pylist()) == written


def _spark_jobs(spark: Any, group: str, run: Any) -> tuple[int, Any]:
    """(number of Spark jobs ``run()`` started, its result), counted by the status tracker."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        result = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group)), result


def test_pipeline_jobs_do_not_grow_with_tables(spark: Any, tmp_path: Path) -> None:
    """The same number of Spark jobs on a binlog of 5 tables and one of 200; every state table
    holds what the binlog leaves in it."""
    counts = {}
    # Adaptive execution may split or skip a shuffle stage by the data's runtime size, one job
    # more or less from run to run: off, the count is the plan's own.
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        for tables in (5, 200):
            info = write_many_tables(str(tmp_path / f"binlogs-{tables}"), tables)
            jobs, result = _spark_jobs(spark, f"pipeline-{tables}", lambda: run_pipeline(
                str(tmp_path / f"binlogs-{tables}"), str(tmp_path / f"out-{tables}"), spark=spark))
            counts[tables] = jobs
            assert len(result.states) == tables and result.rows == 5 * tables
            for name in ("db0.t0000", f"db{(tables - 1) % 5}.t{tables - 1:04d}"):
                state = spark.read.parquet(result.states[name])
                assert state.columns == ["sku", "qty", "price"]
                got = sorted(tuple(r) for r in state.collect())
                assert got == sorted(tuple(render(v) for v in row) for row in info.tables[name].values())
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert counts[5] == counts[200] <= 24, counts


def render(value: Any) -> Any:
    from mariabinlog.spark.schema import render as text

    return text(value)


@pytest.mark.parametrize("span, seconds", [
    (0, 1), (30, 1), (200, 5), (3600, 60), (2 * 3600, 300), (86400, 3600), (30 * 86400, 86400),
    (4 * 365 * 86400, 30 * 86400),
])
def test_report_bucket_follows_the_span(span: int, seconds: int) -> None:
    got, label = bucket_seconds("auto", 1_700_000_000, 1_700_000_000 + span)
    assert got == seconds and label
    assert span // got <= MAX_BUCKETS or got == BUCKETS[-1][0]
    assert bucket_seconds("15 minutes", None, None) == (900, "15 minutes")
    with pytest.raises(Exception, match="--bucket"):
        bucket_seconds("fortnightly", None, None)
