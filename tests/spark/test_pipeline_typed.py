"""The pipeline on a default (``binlog_row_metadata=NO_LOG``) server's binlog writes typed
latest-state tables equal to ``SELECT *`` of the source tables at the binlog's end.

The workload creates its tables inside the binlog and changes them mid-stream, with
inserts, updates and deletes before and after each change: a column added in the middle
(with a constant default, NOT NULL without one, and nullable), INT -> INT UNSIGNED, renamed
columns, a dropped column, charsets changed (a column, then the whole table), a table
without a key whose older rows are deleted after a column is added in the middle, a table
renamed, a table truncated, a table dropped and recreated with another shape, a table
dropped at the end, tables created before the binlog (one dropped and recreated in it, one
whose state keeps the binlog's positional text columns); every column type the history knows.
Each state table is compared, columns, types and rows (any order), with a typed read of the
server (PyMySQL).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schema_workloads import SERVER_OPTIONS, WORKLOAD_TAIL, assert_state_equals_select, binlog_dir

WORKLOAD = """
SET SESSION sql_mode='';
CREATE DATABASE p;
USE p;
CREATE TABLE t (
  id INT PRIMARY KEY,
  ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, n INT, bi BIGINT UNSIGNED, sb BIGINT,
  d DECIMAL(12,3), f FLOAT, db DOUBLE, bt BIT(5),
  dt DATE, tm TIME(2), dtm DATETIME(6), ts TIMESTAMP(3) NULL, y YEAR,
  c CHAR(4), vc VARCHAR(40), lat VARCHAR(20) CHARACTER SET latin1, bin BINARY(3), vb VARBINARY(8),
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT CHARACTER SET latin1, lt LONGTEXT, tb TINYBLOB, bl BLOB, mb MEDIUMBLOB,
  lb LONGBLOB, e ENUM('red','green','blue'), st SET('a','b','c'), js JSON, gone INT
) DEFAULT CHARSET=utf8mb4;
INSERT INTO t VALUES (1, -5, 65535, -8388608, 7, 18446744073709551615, -9223372036854775808, -12.500, 1.5, 0.25,
  b'10101', '2024-02-29', '-838:59:59.50', '2024-01-31 12:00:00.250000', '2024-01-31 12:00:00.125', 2024,
  'ab', 'héllo 😀', 'café', X'00FF10', X'DEADBEEF', 'tiny', 'text é', 'mé', 'long', X'01', X'0203FF', X'04', X'05',
  'green', 'a,c', '{"k": [1, 2]}', 1);
INSERT INTO t (id, dt, dtm, ts, vb) VALUES (2, '0000-00-00', '2024-00-00 00:00:00', '0000-00-00 00:00:00', 'text');
INSERT INTO t (id, n, vc) VALUES (3, 3, 'three'), (5, 5, 'five');
UPDATE t SET vc = 'bye', bi = 7 WHERE id = 1;
DELETE FROM t WHERE id = 5;
ALTER TABLE t ADD COLUMN mid VARCHAR(10) AFTER ti, ADD COLUMN dflt INT NOT NULL DEFAULT 42 AFTER mid,
  ADD COLUMN nn SMALLINT NOT NULL AFTER n, MODIFY n INT UNSIGNED, DROP COLUMN gone;
INSERT INTO t (id, ti, mid, dflt, n) VALUES (4, 1, 'middle', -1, 4294967295);
UPDATE t SET mid = 'm3' WHERE id = 3;
ALTER TABLE t CHANGE vc greeting VARCHAR(40), RENAME COLUMN c TO code;
ALTER TABLE t MODIFY lat VARCHAR(20) CHARACTER SET utf8mb4;
INSERT INTO t (id, greeting, code, lat) VALUES (6, 'hi', 'x', 'ñandú 😀');
UPDATE t SET n = 4000000000, greeting = 'again' WHERE id = 4;
DELETE FROM t WHERE id = 2;
CREATE TABLE v (a TINYINT UNSIGNED, b VARCHAR(5));
INSERT INTO v VALUES (255, 'x'), (255, 'x'), (2, 'y'), (3, 'z');
DELETE FROM v WHERE a = 2;
ALTER TABLE v CONVERT TO CHARACTER SET latin1;
INSERT INTO v VALUES (4, 'ü');
UPDATE v SET b = 'w' WHERE a = 3;
CREATE TABLE k (a INT, b VARCHAR(5));
INSERT INTO k VALUES (1, 'x'), (2, 'y'), (2, 'y');
ALTER TABLE k ADD COLUMN m INT AFTER a;
DELETE FROM k WHERE a = 1;
DELETE FROM k WHERE a = 2 LIMIT 1;
INSERT INTO k VALUES (3, 7, 'z');
CREATE TABLE r (id INT PRIMARY KEY, name VARCHAR(10));
INSERT INTO r VALUES (1, 'before'), (2, 'two');
RENAME TABLE r TO r2;
UPDATE r2 SET name = 'moved' WHERE id = 2;
INSERT INTO r2 VALUES (3, 'three');
CREATE TABLE tr (id INT PRIMARY KEY, x INT);
INSERT INTO tr VALUES (1, 1), (2, 2);
TRUNCATE TABLE tr;
INSERT INTO tr VALUES (2, 20), (3, 30);
SET SESSION sql_log_bin = 0;
CREATE TABLE pre (a INT, b VARCHAR(5));
CREATE TABLE pre2 (a INT, b VARCHAR(5));
SET SESSION sql_log_bin = 1;
INSERT INTO pre VALUES (1, 'old');
INSERT INTO pre2 VALUES (1, 'one'), (2, 'two');
DROP TABLE pre;
CREATE TABLE pre (id INT PRIMARY KEY, v VARCHAR(5));
INSERT INTO pre VALUES (1, 'new');
CREATE TABLE bye (id INT PRIMARY KEY);
INSERT INTO bye VALUES (1);
DROP TABLE bye;
""" + WORKLOAD_TAIL

#: Source tables at the binlog's end, each with a state table.
TABLES = ("t", "v", "k", "r2", "tr", "pre", "u")


@pytest.fixture(scope="module")
def server(mariadb_server_factory: Any) -> Any:
    server = mariadb_server_factory(*SERVER_OPTIONS, "--binlog-row-metadata=NO_LOG", name="pipeline-typed")
    server.pipe(WORKLOAD)
    return server


def test_typed_state_equals_select_of_the_source(spark: Any, server: Any, tmp_path: Path) -> None:
    from mariabinlog.spark.pipeline import run_pipeline

    result = run_pipeline(binlog_dir(server, tmp_path, "nolog"), str(tmp_path / "out"), spark=spark)
    # p.bye, dropped at the end, has none; p.stm has no row changes (its insert is a statement).
    expected = sorted(f"p.{t}" for t in (*TABLES, "pre2"))
    assert sorted(result.states) == expected, "one state table per table left with rows"
    for table in TABLES:
        assert_state_equals_select(pq.read_table(result.states[f"p.{table}"]), server, "p", table)
    # The typed change tables: images typed as the state, in binlog order; replayed by key they give the state.
    assert sorted(result.changes) == expected
    for table in ("t", "r2", "tr", "pre", "u"):
        state = pq.read_table(result.states[f"p.{table}"])
        changes = pq.read_table(result.changes[f"p.{table}"])
        assert changes.schema.field("after").type == pa.struct(list(state.schema)), f"change images of p.{table}"
        key = state.column_names[0]
        replayed: dict[Any, Any] = {}
        for change in changes.to_pylist():
            if change["op"] != "insert":
                replayed.pop(change["before"][key])
            if change["op"] != "delete":
                replayed[change["after"][key]] = change["after"]
        assert sorted(replayed.values(), key=str) == sorted(state.to_pylist(), key=str), f"changes of p.{table}"
    first = pq.read_table(result.changes["p.t"]).to_pylist()[0]
    assert first["op"] == "insert" and first["gtid"] and first["after"]["greeting"] == "héllo 😀"
    assert first["after"]["dflt"] == 42 and first["after"]["nn"] == 0 and first["after"]["mid"] is None
    # Created before the binlog without a starting schema: positional text columns, as the binlog has them.
    unknown = pq.read_table(result.states["p.pre2"])
    assert unknown.column_names == ["@1", "@2"] and all(f.type == "string" for f in unknown.schema)
    assert sorted(unknown.to_pylist(), key=str) == [{"@1": "1", "@2": "one"}, {"@1": "2", "@2": "two"}]
