"""Rows of a default (NO_LOG) or MINIMAL server decoded with the schema history equal FULL metadata's.

The same workload (tables created inside the binlog, then ALTERed mid-stream:
a column added in the middle, INT -> INT UNSIGNED, a renamed column, a changed
charset, a table dropped and recreated with another shape; every column type)
runs on three real servers that differ only in ``binlog_row_metadata``; the
rows of ``dump --format=json`` (table, kind, names, values) must be equal.
Tables created before the binlog: ``--schema-from`` and ``--schema-file`` give
FULL's rows; without either, positional names and a warning.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.schema import SchemaHistory, SchemaTracker
from mariabinlog.tools.debezium import DebeziumSink
from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.dump.options import parse_options
from schema_workloads import RECREATED_TABLE, SERVER_OPTIONS, STATEMENT_AND_CLOSE, closed_binlogs

WORKLOAD = """
SET SESSION sql_mode='';
CREATE DATABASE s;
USE s;
CREATE TABLE t (
  id INT PRIMARY KEY,
  ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, n INT, bi BIGINT UNSIGNED,
  d DECIMAL(12,3), f FLOAT, db DOUBLE, bt BIT(5), b1 BIT(1),
  dt DATE, tm TIME(2), dtm DATETIME(6), ts TIMESTAMP(3) NULL, y YEAR,
  c CHAR(4), vc VARCHAR(40), lat VARCHAR(20) CHARACTER SET latin1, bin BINARY(3), vb VARBINARY(8),
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT CHARACTER SET latin1, lt LONGTEXT, tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('red','green','blue'), st SET('a','b','c'), js JSON, g GEOMETRY, pt POINT, uu UUID, i6 INET6
) DEFAULT CHARSET=utf8mb4;
INSERT INTO t VALUES (1, -5, 65535, -8388608, -7, 18446744073709551615, -12.500, 1.5, 0.25, b'10101', b'1',
  '2024-02-29', '-838:59:59.50', '2024-01-31 12:00:00.250000', '2024-01-31 12:00:00.125', 2024,
  'ab', 'héllo 😀', 'café', X'00FF10', X'DEADBEEF', 'tiny', 'text é', 'mé', 'long', X'01', X'0203', X'04', X'05',
  'green', 'a,c', '{"k": [1, 2]}', ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POINT(3 4)'),
  '123e4567-e89b-12d3-a456-426655440000', '::1');
INSERT INTO t (id, dt, dtm, ts) VALUES (2, '0000-00-00', '2024-00-00 00:00:00', '0000-00-00 00:00:00');
UPDATE t SET vc = 'bye', bi = 7 WHERE id = 1;
ALTER TABLE t ADD COLUMN mid VARCHAR(10) AFTER ti, MODIFY n INT UNSIGNED;
INSERT INTO t (id, ti, mid, n) VALUES (3, 1, 'middle', 4294967295);
ALTER TABLE t CHANGE vc greeting VARCHAR(40), RENAME COLUMN c TO code;
ALTER TABLE t MODIFY lat VARCHAR(20) CHARACTER SET utf8mb4;
INSERT INTO t (id, greeting, code, lat) VALUES (4, 'hi', 'x', 'ñandú 😀');
UPDATE t SET n = 4000000000 WHERE id = 3;
SET SESSION binlog_row_image = MINIMAL;
UPDATE t SET lat = 'über', bi = 5 WHERE id = 4;
SET SESSION binlog_row_image = FULL;
DELETE FROM t WHERE id = 2;
""" + RECREATED_TABLE + """
RENAME TABLE u TO u2;
INSERT INTO u2 VALUES (1, 'renamed', 'y');
TRUNCATE TABLE u2;
CREATE TABLE cs AS SELECT id, greeting, n FROM t;
INSERT INTO cs VALUES (9, 'copied', 4294967295);
CREATE TABLE tl LIKE u2;
INSERT INTO tl VALUES (18446744073709551614, 'like', 'y');
UPDATE tl SET k = 7 WHERE k = 18446744073709551614;
CREATE TABLE parted (id INT, v VARCHAR(5), PRIMARY KEY (id)) PARTITION BY RANGE (id)
  (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE);
ALTER TABLE parted REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (100), PARTITION p2 VALUES LESS THAN MAXVALUE);
INSERT INTO parted VALUES (1, 'a'), (50, 'b');
CREATE SEQUENCE sq START WITH 10 INCREMENT BY 5;
SELECT NEXTVAL(sq);
CREATE DEFINER=root@localhost TRIGGER trg AFTER INSERT ON parted FOR EACH ROW SET @x = 1;
ALTER ONLINE TABLE parted ADD COLUMN w INT FIRST;
INSERT INTO parted VALUES (7, 2, 'c');
""" + STATEMENT_AND_CLOSE


def dump_json(args: list[str]) -> tuple[list[dict[str, Any]], str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(["--format=json", *args], stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().decode("utf-8").splitlines()], err.getvalue()


def rows_of(events: list[dict[str, Any]]) -> list[tuple[str, str, str, list[Any]]]:
    """(table, kind, rows) of every rows event: names and typed values."""
    return [(e["table"], e["kind"], e["rows"]) for e in events if "rows" in e]


def column_types(events: list[dict[str, Any]]) -> list[list[tuple[str, str, bool]]]:
    """Names, types and signedness of every Table_map."""
    return [
        [(c["name"], c["type"], c.get("unsigned", False)) for c in e["columns"]]
        for e in events
        if e["type"] == "Table_map"
    ]


@pytest.fixture(scope="module")
def servers(mariadb_server_factory: Any) -> dict[str, Any]:
    out = {}
    for metadata in ("NO_LOG", "MINIMAL", "FULL"):
        server = mariadb_server_factory(*SERVER_OPTIONS, f"--binlog-row-metadata={metadata}", name=f"schema-{metadata}")
        server.pipe(WORKLOAD)
        out[metadata] = server
    return out


def binlogs(server: Any) -> list[str]:
    return [str(p) for p in closed_binlogs(server)]


@pytest.mark.parametrize("metadata", ["NO_LOG", "MINIMAL"])
def test_history_rows_equal_full_metadata(servers: dict[str, Any], metadata: str) -> None:
    full, _ = dump_json(binlogs(servers["FULL"]))
    other, err = dump_json(binlogs(servers[metadata]))
    assert rows_of(other) == rows_of(full)
    assert column_types(other) == column_types(full)
    named = rows_of(other)
    assert named[0][2][0]["after"]["bi"] == 18446744073709551615 and named[0][2][0]["after"]["e"] == "green"
    assert any(r[0] == "t" and "after" in r[2][0] and r[2][0]["after"].get("n") == 4294967295 for r in named)
    assert any("lat" in row.get("after", {}) and row["after"]["lat"] == "ñandú 😀" for _, _, rows in named for row in rows)
    assert "positional names" not in err


def test_without_history_names_are_positional_never_wrong(servers: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    files = binlogs(servers["NO_LOG"])
    # Skip the first file's DDL by starting after the CREATE TABLE statements: the history never sees them.
    events, _ = dump_json(files)
    first_rows = next(e for e in events if "rows" in e)
    with caplog.at_level(logging.WARNING):
        later, _ = dump_json([f"--start-position={first_rows['pos']}", *files])
    assert rows_of(later), "no rows after the start position"
    for table, _, rows in rows_of(later):
        if table != "t":  # u is created (and named) after the start position
            continue
        for row in rows:
            for image in row.values():
                assert all(key.startswith("@") for key in image)
    assert "positional names" in caplog.text and "s.t" in caplog.text


PRE_EXISTING = """
SET SESSION sql_mode='';
CREATE DATABASE p;
CREATE TABLE p.old (id INT UNSIGNED PRIMARY KEY, name VARCHAR(10) CHARACTER SET latin1, kind ENUM('a','b'),
  amount DECIMAL(8,2), at DATETIME(3), tags SET('x','y'), raw VARBINARY(4));
CREATE TABLE p.wide (k BIGINT UNSIGNED NOT NULL, t TINYINT UNSIGNED, js JSON, g POINT, bt BIT(9), y YEAR,
  tm TIME(2), ts TIMESTAMP NULL, e ENUM('it''s','b') CHARACTER SET latin1, tx TEXT CHARACTER SET latin1 COLLATE latin1_bin,
  bl MEDIUMBLOB, u UUID, PRIMARY KEY (k)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
FLUSH BINARY LOGS;
INSERT INTO p.old VALUES (4294967295, 'señor', 'b', 12.34, '2024-05-06 07:08:09.123', 'x,y', X'FF00');
INSERT INTO p.wide VALUES (18446744073709551615, 255, '[1]', ST_GeomFromText('POINT(1 1)'), b'100000001', 2001,
  '12:00:00.25', '2024-01-01 00:00:00', 'it''s', 'déjà', X'00', '123e4567-e89b-12d3-a456-426655440000');
UPDATE p.old SET name = 'niño', kind = 'a' WHERE id = 4294967295;
DELETE FROM p.old;
FLUSH BINARY LOGS;
"""


@pytest.fixture(scope="module")
def pre_existing(mariadb_server_factory: Any) -> dict[str, Any]:
    out = {}
    for metadata in ("NO_LOG", "FULL"):
        server = mariadb_server_factory(*SERVER_OPTIONS, f"--binlog-row-metadata={metadata}", name=f"pre-{metadata}")
        server.pipe(PRE_EXISTING)
        out[metadata] = server
    return out


def after_create(server: Any) -> list[str]:
    """The binlog files written after the tables were created (the last one is still open)."""
    files = [str(p) for p in server.binlog_files()]
    assert len(files) >= 3, f"expected the workload's FLUSH BINARY LOGS in {server}"
    return files[1:-1]


def test_schema_from_live_server_and_dump_file(pre_existing: dict[str, Any], tmp_path: Path) -> None:
    full, _ = dump_json(after_create(pre_existing["FULL"]))
    server = pre_existing["NO_LOG"]
    files = after_create(server)
    url = f"mariadb://root@{server.host}:{server.port}"
    from_server, _ = dump_json([f"--schema-from={url}", *files])
    assert rows_of(from_server) == rows_of(full) and {r[0] for r in rows_of(full)} == {"old", "wide"}
    dump = tmp_path / "schema.sql"
    dump.write_bytes(
        subprocess.run(
            [*server.client_command()[:0], "mariadb-dump", f"--socket={server.socket}", "-uroot", "--no-data",
             "--databases", "p"],
            check=True,
            capture_output=True,
        ).stdout
    )
    from_file, _ = dump_json([f"--schema-file={dump}", *files])
    assert rows_of(from_file) == rows_of(full)
    plain, err = dump_json(files)
    assert all(key.startswith("@") for _, _, rows in rows_of(plain) for row in rows for image in row.values()
               for key in image)


class DebeziumConsumer:
    """A consumer written against Debezium's documented change-event value: envelope, op, before/after, key."""

    def __init__(self) -> None:
        self.state: dict[str, dict[str, dict[str, Any]]] = {}
        self.keyless: dict[str, list[dict[str, Any]]] = {}
        self.ops: list[tuple[str, str]] = []
        self.ddl: list[str] = []
        self.statements: list[str] = []

    def consume(self, record: dict[str, Any]) -> None:
        value = record["value"]
        if "ddl" in value:
            assert record["key"] == {"databaseName": value["databaseName"]}
            self.ddl.append(value["ddl"])
            return
        if "statement" in value:
            self.statements.append(value["statement"])
            return
        op = value["op"]
        assert op in ("c", "u", "d") and set(value) == {"before", "after", "source", "op", "ts_ms", "transaction"}
        source = value["source"]
        assert source["connector"] == "mariadb" and source["gtid"] and source["file"].startswith("mysql-bin.")
        assert record["topic"] == f"{source['name']}.{source['db']}.{source['table']}"
        assert source["ts_ms"] == value["ts_ms"] and isinstance(source["pos"], int) and source["query"]
        assert source["thread"] is None or isinstance(source["thread"], int), record
        self.ops.append((source["table"], op))
        if record["key"] is None:  # no primary key: a consumer can only keep the log
            self.keyless.setdefault(f"{source['db']}.{source['table']}", []).append(value["after"])
            return
        table = self.state.setdefault(f"{source['db']}.{source['table']}", {})
        key = json.dumps(record["key"], sort_keys=True)
        if op == "c":
            assert value["before"] is None and key not in table
            table[key] = value["after"]
        elif op == "u":
            assert key in table
            table[key] = {**table[key], **value["after"]}
        else:
            assert value["after"] is None
            del table[key]


def debezium(args: list[str], tracker: SchemaTracker | None = None) -> list[dict[str, Any]]:
    """The records of ``dump --format=debezium`` through the Python API and through the command, checked equal."""
    out, err = io.BytesIO(), io.StringIO()
    assert dump_main(["--format=debezium", *args], stdout=out, stderr=err) == 0, err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().decode("utf-8").splitlines()]
    collected: list[dict[str, Any]] = []
    opts, _, _ = parse_options(args)
    assert dump_main(args, stdout=io.BytesIO(), sink=lambda write: DebeziumSink(write, opts, tracker or SchemaTracker(), collected)) == 0
    assert collected == lines
    return lines


def test_debezium_consumer_reads_ops_keys_values_in_order(servers: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    server = servers["NO_LOG"]
    consumer = DebeziumConsumer()
    with caplog.at_level(logging.WARNING):
        records = debezium(["--topic-prefix=shop", *binlogs(server)])
    assert {r["value"]["source"]["name"] for r in records} == {"shop"} and records[0]["topic"].startswith("shop")
    for record in records:
        consumer.consume(record)
    assert [op for op in consumer.ops if op[0] not in ("parted", "sq")] == [("t", "c"), ("t", "c"), ("t", "u"), ("t", "c"), ("t", "c"), ("t", "u"), ("t", "u"), ("t", "d"),
                            ("u", "c"), ("u", "c"), ("u2", "c"), ("cs", "c"), ("cs", "c"), ("cs", "c"), ("cs", "c"),
                            ("tl", "c"), ("tl", "d"), ("tl", "c")]
    expected = {row["id"]: row for row in server.records("SELECT id, greeting, n, lat, bi, d, e, st FROM s.t")}
    got = {json.loads(k)["id"]: v for k, v in consumer.state["s.t"].items()}
    assert sorted(got) == sorted(int(i) for i in expected)
    for ident, row in got.items():
        want = expected[str(ident)]
        # Row 1 was last written before the ALTERs, which change it without logging rows (renames,
        # -7 clamped to 0 by INT UNSIGNED): a consumer that does not apply DDL keeps what it was sent.
        checked = ("bi", "d", "e", "st") if ident == 1 else ("greeting", "n", "lat", "bi", "d", "e", "st")
        for column in checked:
            have = row.get(column)
            assert (None if want[column] == "NULL" else want[column]) == (None if have is None else str(have)), column
    first = next(r for r in records if r["value"].get("op") == "c")["value"]["after"]
    assert (first["dt"], first["tm"], first["dtm"], first["ts"]) == (
        19782, -3020399500000, 1706702400250000, "2024-01-31T12:00:00.125000Z"
    )
    assert first["b1"] is True and first["bt"] == "FQ==" and first["js"] == '{"k": [1, 2]}'
    assert first["g"]["srid"] == 0 and first["bin"] == "AP8Q"
    assert any(d.startswith("ALTER TABLE t ADD COLUMN mid") for d in consumer.ddl)
    assert consumer.statements == ["INSERT INTO stm VALUES (1)"]
    assert consumer.keyless["s.cs"][-1] == {"id": 9, "greeting": "copied", "n": 4294967295}
    assert consumer.state["s.tl"] == {json.dumps({"k": 7}): {"k": 7, "note": "like", "flag": "y"}}
    assert consumer.state["s.parted"][json.dumps({"id": 2})] == {"w": 7, "id": 2, "v": "c"}
    assert consumer.keyless["s.sq"], "no row change of the sequence"
    assert "STATEMENT or MIXED" in caplog.text


def test_archive_saves_a_history_that_names_its_rows(servers: dict[str, Any], tmp_path: Path) -> None:
    from mariabinlog.cli import main as cli_main

    server = servers["NO_LOG"]
    directory = tmp_path / "archive"
    url = f"mariadb://root@127.0.0.1:{server.port}"
    assert cli_main(["archive", "--quiet", "--from", url, "--dir", str(directory)]) == 0
    saved = directory / "schema-history.json"
    assert saved.is_file(), "archive wrote no schema history"
    history = json.loads(saved.read_text())
    assert any(r["query"].startswith("ALTER TABLE t ADD COLUMN mid") for r in history["ddl"])
    full, _ = dump_json(binlogs(servers["FULL"]))
    ibb = [str(p) for p in sorted(directory.glob("binlog-*.ibb"))]
    archived, err = dump_json([f"--schema-history={saved}", *ibb])
    assert rows_of(archived) == rows_of(full)
    # A restart with nothing new keeps the history as it was (no DDL applied twice).
    assert cli_main(["archive", "--quiet", "--from", url, "--dir", str(directory)]) == 0
    assert json.loads(saved.read_text()) == history
    # Reading from the middle: the saved history rewinds to the first group read.
    events, _ = dump_json(ibb)
    rows_events = [e for e in events if "rows" in e]
    later_gtid = rows_events[4]["gtid"]
    middle, _ = dump_json([f"--schema-history={saved}", f"--start-position={later_gtid}", *ibb])
    assert rows_of(middle) and rows_of(middle) == [r for r in rows_of(full) if r in rows_of(middle)]
    assert all(not key.startswith("@") for _, _, rows in rows_of(middle) for row in rows for image in row.values()
               for key in image)


def test_a_starting_schema_that_disagrees_gives_positional_names_and_a_warning(
    pre_existing: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = tmp_path / "wrong.sql"
    wrong.write_text(
        "USE p;\nCREATE TABLE old (id INT UNSIGNED PRIMARY KEY, name VARCHAR(10), kind ENUM('a','b'),"
        " amount INT, at DATETIME(3), tags SET('x','y'), raw VARBINARY(4));\n"
    )
    with caplog.at_level(logging.WARNING):
        events, _ = dump_json([f"--schema-file={wrong}", *after_create(pre_existing["NO_LOG"])])
    assert rows_of(events) and all(
        key.startswith("@") for _, _, rows in rows_of(events) for row in rows for image in row.values() for key in image
    )
    gtid = next(e["gtid"] for e in events if e["type"] == "Table_map")
    assert f"p.old at GTID {gtid}" in caplog.text and "column 4 (amount) is DECIMAL" in caplog.text
    caplog.clear()
    # With FULL metadata the binlog's names win and the history is only checked against them.
    full, _ = dump_json(after_create(pre_existing["FULL"]))
    with caplog.at_level(logging.WARNING):
        checked, _ = dump_json([f"--schema-file={wrong}", *after_create(pre_existing["FULL"])])
    assert rows_of(checked) == rows_of(full)
    assert "disagrees with the binlog's own metadata for p.old" in caplog.text


def test_a_history_saved_by_dump_names_a_later_read(servers: dict[str, Any], tmp_path: Path) -> None:
    files = binlogs(servers["NO_LOG"])
    out, err = io.BytesIO(), io.StringIO()
    assert dump_main(["--format=schema-history", *files], stdout=out, stderr=err) == 0, err.getvalue()
    saved = tmp_path / "history.json"
    saved.write_bytes(out.getvalue())
    full, _ = dump_json(binlogs(servers["FULL"]))
    again, _ = dump_json([f"--schema-history={saved}", *files])
    assert rows_of(again) == rows_of(full)
    # Debezium output with the saved history: the same DDL records, still not taken for statements.
    plain = debezium(files)
    with_saved = debezium([f"--schema-history={saved}", *files], SchemaTracker(SchemaHistory.load(saved)))
    assert with_saved == plain
    assert [r["value"]["statement"] for r in with_saved if "statement" in r["value"]] == ["INSERT INTO stm VALUES (1)"]


def metadata_lines(args: list[str]) -> list[str]:
    out, err = io.BytesIO(), io.StringIO()
    assert dump_main(["--print-table-metadata", *args], stdout=out, stderr=err) == 0, err.getvalue()
    return [line for line in out.getvalue().decode("utf-8").splitlines() if line.startswith(("# Columns(", "# Primary Key"))]


def test_opt_in_table_metadata_from_the_history_matches_full(servers: dict[str, Any]) -> None:
    full = metadata_lines(binlogs(servers["FULL"]))
    files = binlogs(servers["NO_LOG"])
    default = metadata_lines(files)
    real = subprocess.run(["mariadb-binlog", "--print-table-metadata", *files], check=True, capture_output=True).stdout
    assert default == [line for line in real.decode("utf-8").splitlines() if line.startswith(("# Columns(", "# Primary Key"))]
    assert default != full
    assert metadata_lines(["--schema-metadata", *files]) == full


def test_position_based_typing_for_out_of_order_readers(servers: dict[str, Any], tmp_path: Path) -> None:
    from mariabinlog.codec.events import TableMapEvent
    from mariabinlog.codec.events.stream import iter_legacy_events
    from mariabinlog.schema import SchemaHistory, typed_map_at

    out = io.BytesIO()
    files = binlogs(servers["NO_LOG"])
    assert dump_main(["--format=schema-history", *files], stdout=out, stderr=io.StringIO()) == 0
    history = SchemaHistory.from_json(json.loads(out.getvalue()))

    def maps(paths: list[str]) -> list[TableMapEvent]:
        found = []
        for path in paths:
            for event in iter_legacy_events(Path(path).read_bytes()):
                if isinstance(event, TableMapEvent):
                    found.append((Path(path).name, event))
        return found  # type: ignore[return-value]

    full = [tm.optional_metadata.column_names for _, tm in maps(binlogs(servers["FULL"]))]  # type: ignore[attr-defined]
    # Visit the maps last to first: each is typed as of its own position, not the stream's end.
    typed = [typed_map_at(history, tm, name, tm.position, None)[0] for name, tm in reversed(maps(files))]  # type: ignore[misc]
    assert [tm.optional_metadata.column_names for tm in reversed(typed)] == full
