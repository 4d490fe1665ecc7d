"""The Spark rows view, its typed view and the pipeline on a default (NO_LOG) server's binlog.

The same workload (tables created inside the binlog, then ALTERed mid-stream: a column
added in the middle, INT -> INT UNSIGNED, a renamed column, a table dropped and recreated
with another shape) runs on two real servers that differ only in ``binlog_row_metadata``.
The rows view of the NO_LOG binlog, named and typed by the schema history the driver builds
from the binlog's DDL, must equal the FULL binlog's; the pipeline's latest state must equal
``SELECT *`` of the source tables.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from schema_workloads import SERVER_OPTIONS, WORKLOAD_TAIL, assert_state_equals_select, binlog_dir

WORKLOAD = """
SET SESSION sql_mode='';
CREATE DATABASE s;
USE s;
CREATE TABLE t (id INT PRIMARY KEY, n INT, name VARCHAR(20), note TEXT, e ENUM('red','green','blue'),
  st SET('a','b','c'), d DECIMAL(8,3), at DATETIME, lat VARCHAR(10) CHARACTER SET latin1) DEFAULT CHARSET=utf8mb4;
INSERT INTO t VALUES (1, 7, 'one', 'text é', 'green', 'a,c', 12.5, '2024-01-31 12:00:00', 'café'),
  (2, 5, 'two', 'x', 'red', '', -1, '2024-02-29 00:00:00', NULL), (3, 0, 'three', NULL, 'blue', 'b', 0, NULL, 'ñ');
ALTER TABLE t ADD COLUMN mid VARCHAR(10) AFTER id, MODIFY n INT UNSIGNED;
INSERT INTO t (id, mid, n, name, note) VALUES (4, 'middle', 255, 'four', 'long text'), (5, 'x', 4294967295, 'five', '');
UPDATE t SET n = 255, mid = 'm2' WHERE id = 2;
DELETE FROM t WHERE id = 3;
CREATE TABLE v (a TINYINT UNSIGNED, b VARCHAR(5));
INSERT INTO v VALUES (255, 'x'), (255, 'x'), (2, 'y');
DELETE FROM v WHERE a = 2;
CREATE TABLE r (id INT PRIMARY KEY, name VARCHAR(10));
INSERT INTO r VALUES (1, 'before');
ALTER TABLE r CHANGE name label VARCHAR(10);
INSERT INTO r VALUES (2, 'after');
""" + WORKLOAD_TAIL


@pytest.fixture(scope="module")
def servers(mariadb_server_factory: Any) -> dict[str, Any]:
    out = {}
    for metadata in ("NO_LOG", "FULL"):
        server = mariadb_server_factory(*SERVER_OPTIONS, f"--binlog-row-metadata={metadata}",
                                        name=f"spark-schema-{metadata}")
        server.pipe(WORKLOAD)
        out[metadata] = server
    return out


def rows(spark: Any, path: str, **options: str) -> list[tuple[Any, ...]]:
    reader = spark.read.format("mariabinlog").option("view", "rows")
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load(path)
    ordered = df.orderBy("file_no", "position", "event_index", "row_index")
    return [tuple(r) for r in ordered.select("database", "table", "op", "key_columns", "before", "after").collect()]


def test_rows_view_of_no_log_equals_full(spark: Any, servers: dict[str, Any], tmp_path: Path) -> None:
    full = rows(spark, binlog_dir(servers["FULL"], tmp_path, "full"))
    no_log = rows(spark, binlog_dir(servers["NO_LOG"], tmp_path, "nolog"))
    assert no_log == full
    t = [r for r in no_log if r[1] == "t"]
    assert t[0][3] == ["id"] and t[0][5]["name"] == "one" and t[0][5]["e"] == "green" and t[0][5]["st"] == "a,c"
    assert t[0][5]["note"] == "text é" and t[0][5]["lat"] == "café"
    assert any(r[5] is not None and r[5].get("n") == "4294967295" and r[5].get("mid") == "x" for r in t)
    assert [r[5]["label"] for r in no_log if r[1] == "r" and "label" in r[5]] == ["after"]
    assert [r[5] for r in no_log if r[1] == "u"] == [{"a": "1", "b": "é"},
                                                    {"k": "18446744073709551615", "note": "recreated", "flag": "n"}]
    # Without the history the same binlog is positional and INT UNSIGNED reads signed: what the history fixes.
    raw = rows(spark, binlog_dir(servers["NO_LOG"], tmp_path, "raw"), schemaHistory="none")
    assert any(r[1] == "t" and r[5] is not None and r[5].get("@3") == "-1" for r in raw)
    assert any(r[1] == "t" and r[5] is not None and r[5].get("@6") == "2" for r in raw)  # ENUM index, no label


def test_saved_history_option_gives_the_same_rows(spark: Any, servers: dict[str, Any], tmp_path: Path) -> None:
    from mariabinlog.tools.dump.cli import dump_main

    path = binlog_dir(servers["NO_LOG"], tmp_path, "nolog")
    history = tmp_path / "history.json"
    with open(history, "wb") as out:
        assert dump_main(["--format=schema-history", *sorted(str(p) for p in Path(path).iterdir())], stdout=out) == 0
    assert rows(spark, path, schemaHistory=str(history)) == rows(spark, path)


def test_typed_view_of_one_table(spark: Any, servers: dict[str, Any], tmp_path: Path) -> None:
    frames = {}
    for metadata in ("NO_LOG", "FULL"):
        df = (spark.read.format("mariabinlog").option("view", "rows").option("table", "s.t")
              .load(binlog_dir(servers[metadata], tmp_path, metadata)))
        frames[metadata] = (df.schema, [tuple(r) for r in df.orderBy("file_no", "position", "row_index")
                                        .select("op", "before", "after").collect()])
    assert frames["NO_LOG"] == frames["FULL"]
    schema, changes = frames["NO_LOG"]
    after = schema["after"].dataType
    # The struct is the table's last shape: mid in the middle, n UNSIGNED (still fits a long).
    assert after.fieldNames() == ["id", "mid", "n", "name", "note", "e", "st", "d", "at", "lat"]
    first = changes[0][2].asDict()
    assert first["mid"] is None and first["note"] == "text é" and first["e"] == "green" and first["st"] == "a,c"
    assert first["d"] == Decimal("12.500") and first["at"] == datetime.datetime(2024, 1, 31, 12, 0)
    assert any(c[2] is not None and c[2]["n"] == 4294967295 for c in changes)
    assert any(c[0] == "update" and c[2]["n"] == 255 and c[2]["mid"] == "m2" for c in changes)


def test_pipeline_latest_state_equals_select(spark: Any, servers: dict[str, Any], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from mariabinlog.spark.pipeline import run_pipeline

    server = servers["NO_LOG"]
    result = run_pipeline(binlog_dir(server, tmp_path, "nolog"), str(tmp_path / "out"), spark=spark)
    assert result.statements == 1 and "binlog_format=ROW" in result.summary
    for table in ("t", "v", "r", "u"):
        assert_state_equals_select(pq.read_table(result.states[f"s.{table}"]), server, "s", table)


def test_history_read_and_built_from_object_storage(spark: Any, servers: dict[str, Any], s3_data: Any,
                                                    tmp_path: Path) -> None:
    """On ``s3://`` the driver builds the history from the objects' DDL, a saved history is read
    from the object store (option ``schemaHistory`` or ``schema-history.json`` beside the
    binlogs), and the rows equal the local read's."""
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.read import history_source
    from mariabinlog.tools.dump.cli import dump_main

    local = binlog_dir(servers["NO_LOG"], tmp_path, "nolog")
    binlogs = sorted(Path(local).iterdir())
    history = tmp_path / "history.json"
    with open(history, "wb") as out:
        assert dump_main(["--format=schema-history", *map(str, binlogs)], stdout=out) == 0
    prefix = f"s3://{s3_data.bucket}/schema-{tmp_path.name}"
    for path in binlogs:
        s3_data.put(path, f"schema-{tmp_path.name}/built/{path.name}")
        s3_data.put(path, f"schema-{tmp_path.name}/beside/{path.name}")
    s3_data.put(history, f"schema-{tmp_path.name}/history.json")
    s3_data.put(history, f"schema-{tmp_path.name}/beside/schema-history.json")
    expected = rows(spark, local)
    assert any(r[1] == "t" for r in expected)
    options = ScanOptions.parse(s3_data.options)
    assert history_source([f"{prefix}/built"], options) is None
    assert rows(spark, f"{prefix}/built", **s3_data.options) == expected
    assert rows(spark, f"{prefix}/built", schemaHistory=f"{prefix}/history.json", **s3_data.options) == expected
    assert history_source([f"{prefix}/beside"], options) == f"{prefix}/beside/schema-history.json"
    assert rows(spark, f"{prefix}/beside", **s3_data.options) == expected


def test_archive_directory_uses_its_own_history(spark: Any, servers: dict[str, Any], tmp_path: Path) -> None:
    """`mariabinlog archive` of the NO_LOG server: reading its `.ibb` directory, in a batch or
    as a stream, names and types the rows by the archive's schema-history.json (whose
    positions are the upstream server's) as FULL metadata does."""
    from mariabinlog.cli import main as cli_main

    server = servers["NO_LOG"]
    directory = tmp_path / "archive"
    assert cli_main(["archive", "--quiet", "--from", f"mariadb://root@127.0.0.1:{server.port}",
                     "--dir", str(directory)]) == 0
    assert (directory / "schema-history.json").is_file(), "archive wrote no schema-history.json"
    full = rows(spark, binlog_dir(servers["FULL"], tmp_path, "full"))
    archived = rows(spark, str(directory))
    assert archived == full
    # A stream of the archive directory names and types its rows by the same file.
    out = tmp_path / "streamed"
    query = (spark.readStream.format("mariabinlog").option("view", "rows").load(str(directory)).writeStream
             .format("parquet").option("path", str(out)).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(240)
    streamed = spark.read.parquet(str(out)).orderBy("file_no", "position", "event_index", "row_index")
    assert [tuple(r) for r in streamed.select("database", "table", "op", "key_columns", "before", "after")
            .collect()] == full
