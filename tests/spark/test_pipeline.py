"""``mariabinlog pipeline``: the command on the bundled sample, and the latest-state merge."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.tools.sample import write_sample

pytestmark = pytest.mark.spark


def test_pipeline_command_on_bundled_sample(spark: Any, tmp_path: Path) -> None:
    """What the README runs: no SOURCE, so the sample is generated; tables, chart and summary."""
    from mariabinlog.spark.schema import render

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
    cdc = spark.read.parquet(str(out / "cdc"))
    assert cdc.count() == spark.read.format("mariabinlog").option("view", "rows").load(
        str(out / "sample-binlogs")).count()
    for name, rows in info.tables.items():
        state = spark.read.parquet(str(out / "state" / name))
        columns = state.columns
        got = {r[0]: tuple(r) for r in state.collect()}
        assert set(got) == {render(key) for key in rows}, name
        for key, row in rows.items():
            expected = tuple(render(v) for v in row)
            mine = got[render(key)]
            for column, a, b in zip(columns, mine, expected):
                if isinstance(row[columns.index(column)], Decimal):
                    assert Decimal(a) == Decimal(b), (name, key, column)
                else:
                    assert a == b, (name, key, column)


def _changes(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    from mariabinlog.spark.schema import ROWS_SCHEMA

    full = []
    for i, (op, keys, before, after) in enumerate(rows):
        full.append(("f", 1, 100 + i, 0, 0, None, None, None, None, None, None, "db", "t", op, keys, before, after))
    return spark.createDataFrame(full, ROWS_SCHEMA)


def test_latest_state_merges_partial_images_and_key_changes(spark: Any) -> None:
    from mariabinlog.spark.pipeline import latest_state

    keys = ["id"]
    changes = _changes(spark, [
        ("insert", keys, None, {"id": "1", "a": "x", "b": "y"}),
        ("insert", keys, None, {"id": "2", "a": "p", "b": "q"}),
        ("update", keys, {"id": "1"}, {"b": "z"}),  # MINIMAL: key only before, changed column after
        ("update", keys, {"id": "2", "a": "p", "b": "q"}, {"id": "3", "a": "p", "b": "q"}),  # key moves
        ("insert", keys, None, {"id": "4", "a": None, "b": "n"}),
        ("delete", keys, {"id": "4"}, None),
        ("insert", keys, None, {"id": "5", "a": "s", "b": None}),
    ])
    state = sorted((r.id, r.a, r.b) for r in latest_state(changes).collect())
    assert state == [("1", "x", "z"), ("3", "p", "q"), ("5", "s", None)]


def test_latest_state_without_key_counts_identical_rows(spark: Any) -> None:
    from mariabinlog.spark.pipeline import latest_state

    row, other = {"a": "1", "b": "x"}, {"a": "2", "b": "y"}
    changes = _changes(spark, [
        ("insert", None, None, row),
        ("insert", None, None, row),
        ("insert", None, None, other),
        ("update", None, other, {"a": "3", "b": "y"}),
        ("delete", None, row, None),
    ])
    assert sorted((r.a, r.b) for r in latest_state(changes).collect()) == [("1", "x"), ("3", "y")]


def test_delta_tables_committed_by_delta_rs(spark: Any, tmp_path: Path) -> None:
    """``--format delta`` on a Spark without Delta Lake's jars: every table is a Delta table that
    an independent Delta reader (delta-rs) reads back with the rows Spark wrote."""
    from deltalake import DeltaTable

    from mariabinlog.spark.pipeline import run_pipeline

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
        delta = DeltaTable(path).to_pyarrow_table()
        spark_rows = sorted(tuple(r) for r in spark.read.parquet(path).collect())
        assert sorted(tuple(r.values()) for r in delta.to_pylist()) == spark_rows
