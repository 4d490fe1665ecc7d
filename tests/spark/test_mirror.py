"""The live mirror (``pipeline --format delta|iceberg`` on a directory; ``spark/mirror``).

* Its per-stretch apply, driven directly over the sample ``.ibb`` binlog (three domains, an
  out-of-band bulk load, groups across files) cut into many small stretches, with commits
  failing midway and stretches applied again: the tables equal the sample's final rows and
  those of one stretch over everything, every change is in the CDC and change tables once.
* The job on a real server's binlog directory growing in three steps (a first run, then two
  incremental runs), with DDL in every step (ADD COLUMN with a default, rename and drop of
  columns, a rename, TRUNCATE, DROP and re-CREATE, a widened and a narrowed type, a table
  dropped): every state table equals ``SELECT *`` on the server, read back with ``deltalake``
  or ``pyiceberg``, and every state and change table equals the batch pipeline's.
* ``--status``, a table that cannot be applied, compaction and vacuum.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mirror_lake import lake_names, lake_table, rows_of
from schema_workloads import SERVER_OPTIONS, typed_select

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

FORMATS = ["delta", "iceberg"]


# -- the apply, stretch by stretch ---------------------------------------------------------------

def _stretches(source: str, groups: int) -> list[tuple[pa.Table, dict[str, Any]]]:
    """The rows view of ``source`` cut as micro-batches of ``groups`` groups would be, read on
    the driver with the streaming source's own reader."""
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from mariabinlog.spark.mirror.job import stream_reader
    from mariabinlog.spark.partition import read_partition

    reader = stream_reader(source, {})
    start, out = reader.initialOffset(), []
    while True:
        end = reader.latestOffset(start, ReadMaxRows(groups))
        if (end["file"], end["offset"]) == (start["file"], start["offset"]):
            return out
        batches = [b for p in reader.partitions(start, end) for b in read_partition(p, reader.options, reader.schema)]
        out.append((pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None, end))
        start = end


class Cut(Exception):
    """A commit that 'kills' the apply."""


@pytest.mark.parametrize("table_format", FORMATS)
def test_stretches_applied_again_after_cuts_hold_every_change_once(
        table_format: str, sample_ibb: tuple[Path, Any], tmp_path: Path) -> None:
    from mariabinlog.errors import MirrorError
    from mariabinlog.spark.mirror.apply import Mirror
    from mariabinlog.spark.mirror.job import open_lake
    from mariabinlog.spark.schema import render

    directory, info = sample_ibb
    stretches = _stretches(str(directory), 40)
    assert len(stretches) > 10
    empty = next(rows for rows, _ in stretches if rows is not None).schema.empty_table()

    def run(out: Path, pieces: list[tuple[pa.Table | None, dict[str, Any]]], cut_every: int | None) -> None:
        commits = [0]

        def cut(table: Any) -> None:
            commits[0] += 1
            if cut_every and commits[0] % cut_every == 0:
                raise Cut(str(table))

        mirror = Mirror(open_lake(str(out), table_format, None), on_commit=cut)
        for rows, end in pieces:
            while True:  # a stretch cut short is applied again, as a restarted job does
                try:
                    mirror.apply(rows if rows is not None else empty, end, None)
                    break
                except Cut:
                    continue
                except MirrorError as error:  # a cut inside a table's apply, reported with the table
                    if not isinstance(error.__cause__, Cut):
                        raise

    run(tmp_path / "small", stretches, 5)
    everything = pa.concat_tables([rows for rows, _ in stretches if rows is not None])
    run(tmp_path / "whole", [(everything, stretches[-1][1])], None)
    # The sample's tables are named by their table maps (FULL metadata), columns as text.
    for name, rows in info.tables.items():
        state = lake_table(tmp_path / "small", table_format, "state", name)
        keys = [row[state.column_names[0]] for row in state.to_pylist()]
        assert sorted(keys) == sorted(render(key) for key in rows), name
        assert rows_of(state) == rows_of(lake_table(tmp_path / "whole", table_format, "state", name)), name
        changes = lake_table(tmp_path / "small", table_format, "changes", name)
        assert rows_of(changes) == rows_of(lake_table(tmp_path / "whole", table_format, "changes", name)), name
    cdc = lake_table(tmp_path / "small", table_format, "cdc")
    places = cdc.select(["file_no", "position", "event_index", "row_index"]).to_pylist()
    assert len(places) == len({tuple(p.values()) for p in places}) == everything.num_rows


# -- the job on a growing directory of a real server's binlogs -----------------------------------

#: Three steps, each ending with FLUSH BINARY LOGS: step N's runs see the files of steps 1..N.
STEPS = [
    """
    CREATE DATABASE m;
    USE m;
    CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(20), b INT, gone INT);
    INSERT INTO t VALUES (1, 'one', 10, 0), (2, 'two', 20, 0), (3, 'three', 30, 0);
    CREATE TABLE k (a INT, b VARCHAR(5));
    INSERT INTO k VALUES (1, 'x'), (1, 'x'), (2, 'y');
    CREATE TABLE r (id INT PRIMARY KEY, name VARCHAR(10));
    INSERT INTO r VALUES (1, 'a'), (2, 'b');
    CREATE TABLE tr (id INT PRIMARY KEY, x INT);
    INSERT INTO tr VALUES (1, 1), (2, 2);
    CREATE TABLE u (a INT, b VARCHAR(5));
    INSERT INTO u VALUES (1, 'u');
    CREATE TABLE d (id BIGINT UNSIGNED PRIMARY KEY, v DECIMAL(6,2));
    INSERT INTO d VALUES (18446744073709551615, 1.50);
    SET SESSION gtid_domain_id = 1;
    INSERT INTO t VALUES (5, 'five', 50, 0);
    SET SESSION gtid_domain_id = 0;
    FLUSH BINARY LOGS;
    """,
    """
    USE m;
    ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 42 AFTER a;
    UPDATE t SET b = 21 WHERE id = 2;
    ALTER TABLE t CHANGE a name VARCHAR(20), DROP COLUMN gone;
    INSERT INTO t (id, name, b) VALUES (4, 'four', 40);
    DELETE FROM k WHERE a = 1 LIMIT 1;
    INSERT INTO k VALUES (3, 'z');
    RENAME TABLE r TO r2;
    UPDATE r2 SET name = 'B' WHERE id = 2;
    TRUNCATE TABLE tr;
    INSERT INTO tr VALUES (2, 20);
    DROP TABLE u;
    CREATE TABLE u (k INT PRIMARY KEY, note TEXT);
    INSERT INTO u VALUES (1, 'new');
    ALTER TABLE d MODIFY v DECIMAL(10,2);
    ALTER TABLE d ADD COLUMN n VARCHAR(5);
    UPDATE d SET n = '5';
    SET SESSION gtid_domain_id = 1;
    UPDATE t SET b = 51 WHERE id = 5;
    SET SESSION gtid_domain_id = 0;
    FLUSH BINARY LOGS;
    """,
    """
    USE m;
    ALTER TABLE r2 ADD COLUMN extra INT;
    ALTER TABLE d MODIFY n INT;
    INSERT INTO d VALUES (7, 2.25, 8);
    DROP TABLE k;
    DELETE FROM t WHERE id = 1;
    FLUSH BINARY LOGS;
    """,
]
#: The tables the workload leaves, each with a state table.
FINAL = ("t", "r2", "tr", "u", "d")


@pytest.fixture(scope="module")
def stepped(mariadb_server_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[list[Path]]]:
    """(server, the closed binlog files after each step) of :data:`STEPS` on a default
    (NO_LOG) server, so the schema history names and types the rows."""
    server = mariadb_server_factory(*SERVER_OPTIONS, "--binlog-format=ROW", name="mirror-steps")
    steps = []
    for sql in STEPS:
        server.pipe(sql)
        steps.append(list(server.binlog_files()[:-1]))
    return server, steps


def _grow(directory: Path, files: list[Path]) -> None:
    directory.mkdir(exist_ok=True)
    for f in files:
        if not (directory / f.name).exists():
            shutil.copyfile(f, directory / f.name)


@pytest.fixture(scope="module")
def batch_tables(spark: Any, stepped: tuple[Any, list[list[Path]]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The batch pipeline's output over the final directory (Parquet), to compare with."""
    from mariabinlog.spark.pipeline import run_pipeline

    root = tmp_path_factory.mktemp("mirror-batch")
    _grow(root / "binlogs", stepped[1][-1])
    run_pipeline(str(root / "binlogs"), str(root / "out"), spark=spark)
    return root / "out"


@pytest.mark.parametrize("table_format", FORMATS)
def test_runs_on_a_growing_directory_follow_its_ddl(
        table_format: str, spark: Any, stepped: tuple[Any, list[list[Path]]], batch_tables: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from mariabinlog.spark import pipeline
    from mariabinlog.spark.mirror.job import Ledger, Settings, status, status_text
    from mariabinlog.spark.pipeline import run_pipeline

    def no_session(*args: Any) -> Any:
        raise AssertionError("an increment applied on the driver started a Spark session")

    server, steps = stepped
    source, out = tmp_path / "binlogs", tmp_path / "out"
    positions = []
    for number, files in enumerate(steps):
        _grow(source, files)
        # Step 2 is small enough to be applied on the driver; step 3 takes the streaming query.
        # Step 1, on the driver, is given no session and must start none (no JVM).
        settings = Settings(local_bytes=0 if number == 2 else Settings().local_bytes)
        with caplog.at_level(logging.WARNING, logger="mariabinlog.spark.mirror"), monkeypatch.context() as patch:
            if number == 1:
                patch.setattr(pipeline, "_session", no_session)
            result = run_pipeline(str(source), str(out), table_format=table_format,
                                  spark=None if number == 1 else spark, settings=settings)
        assert (out / "_mirror" / "checkpoint").is_dir() == (number == 2)
        assert result.position is not None
        positions.append(result.position)
        progress = out / "_mirror" / "progress.jsonl"
        if number:  # an incremental run: one micro-batch, from the first run's end on
            records = [json.loads(line) for line in progress.read_text().splitlines()]
            assert records[-1]["position"] == result.position and records[-1]["behind_gtids"] == 0
            assert "chart" not in result.summary
    ledger = Ledger.load(str(out))
    assert ledger is not None and ledger.position == positions[-1] and ledger.history == "own"
    assert positions[0]["file"] < positions[1]["file"] < positions[2]["file"]
    # The typed state of every table the workload leaves, as the formats' own readers see it.
    assert lake_names(out, table_format, "state") == sorted(f"m.{t}" for t in FINAL)
    for table in FINAL:
        want, schema = typed_select(server, "m", table)
        got = lake_table(out, table_format, "state", f"m.{table}")
        assert got.column_names == schema.names, table
        assert rows_of(got.cast(schema)) == rows_of(pa.Table.from_pylist(want, schema=schema)), table
    # ... and the very tables the batch pipeline writes from the whole directory at once.
    for kind in ("state", "changes"):
        for name in sorted(p.name for p in (batch_tables / kind).iterdir()):
            batch = pq.read_table(batch_tables / kind / name)
            mirror = lake_table(out, table_format, kind, name)
            assert rows_of(mirror.cast(batch.schema)) == rows_of(batch), f"{kind} {name}"
    # Changes the formats cannot express in place were rewritten once, with a warning; the
    # others evolved the tables in place.
    rewrites = [r.getMessage() for r in caplog.records if "rewriting it once" in r.getMessage()]
    assert any("state m.t" in m and "c added with a value" in m for m in rewrites), rewrites
    assert any("state m.d" in m and "n of another type" in m for m in rewrites), rewrites
    events = [e for line in progress.read_text().splitlines() for e in json.loads(line)["events"]]
    assert "evolved state/m.r2 in place" in events and "renamed state/m.r to m.r2" in events, events
    assert {"dropped state/m.tr (dropped or truncated)", "dropped state/m.k (dropped or truncated)"} <= set(events)
    widened = "evolved state/m.d in place" in events  # DECIMAL(6,2) -> (10,2) and a new column
    assert widened == (table_format == "iceberg"), events
    # --status: every table at the last position, nothing behind.
    report = status(str(out))
    assert report["behind_gtids"] == 0 and report["position"] == positions[-1]
    assert {(t["kind"], t["table"]) for t in report["tables"]} >= {("state", "m.t"), ("changes", "m.t"), ("cdc", "cdc")}
    assert all(t["behind_gtids"] == 0 for t in report["tables"])
    text = status_text(report)
    assert "| m.t | state | 4 |" in text and "behind: 0 GTIDs" in text


@pytest.mark.parametrize("table_format", FORMATS)
def test_a_table_that_cannot_be_applied_stops_the_job_naming_it(
        table_format: str, spark: Any, stepped: tuple[Any, list[list[Path]]], tmp_path: Path) -> None:
    """An outside writer changed a state table's type: the next run fails with the table, the
    GTIDs and the reason, and commits nothing of that table."""
    from mariabinlog.errors import MirrorError
    from mariabinlog.spark.mirror.job import open_lake
    from mariabinlog.spark.pipeline import run_pipeline

    _, steps = stepped
    source, out = tmp_path / "binlogs", tmp_path / "out"
    _grow(source, steps[0])
    run_pipeline(str(source), str(out), table_format=table_format, spark=spark)
    table = next(t for t in open_lake(str(out), table_format, None).tables() if t.kind == "state" and t.name == "m.d")
    before = table.marker()
    if table_format == "delta":
        from deltalake import write_deltalake

        broken = pa.table({"id": pa.array(["x"], pa.string()), "v": pa.array(["y"], pa.string())})
        write_deltalake(table.location, broken, mode="overwrite", schema_mode="overwrite")
    else:
        from pyiceberg.types import StringType

        iceberg = table.table  # type: ignore[attr-defined]
        with iceberg.update_schema(allow_incompatible_changes=True) as update:
            update.delete_column("v")
        with iceberg.update_schema() as update:
            update.add_column("v", StringType())
        iceberg.append(pa.table({"id": pa.array([9], pa.decimal128(20, 0)), "v": ["y"]}))
    _grow(source, steps[1])
    with pytest.raises(MirrorError, match=r"table m\.d \(state\): could not apply the changes of GTID 0-1-\d+: \w+"):
        run_pipeline(str(source), str(out), table_format=table_format, spark=spark)
    again = next(t for t in open_lake(str(out), table_format, None).tables() if t.kind == "state" and t.name == "m.d")
    assert again.marker() is not None and again.marker().applied == before.applied  # type: ignore[union-attr]


@pytest.mark.parametrize("table_format", FORMATS)
def test_compaction_and_vacuum_keep_rows_and_position(
        table_format: str, sample_ibb: tuple[Path, Any], tmp_path: Path) -> None:
    from mariabinlog.spark.mirror.apply import Mirror
    from mariabinlog.spark.mirror.job import open_lake

    directory, _ = sample_ibb
    lake = open_lake(str(tmp_path), table_format, None)
    mirror = Mirror(lake)
    for rows, end in _stretches(str(directory), 60)[:6]:
        if rows is not None:
            mirror.apply(rows, end, None)
    tables = [lake.cdc(), *lake.tables()]
    before = {(t.kind, t.name): (rows_of(t.read()), t.marker(), _files(t)) for t in tables if t is not None}
    for table in tables:
        assert table is not None
        table.compact()
        table.vacuum(0)
    for table in [lake.cdc(), *lake.tables()]:
        assert table is not None
        rows, marker, files = before[(table.kind, table.name)]
        assert rows_of(table.read()) == rows and table.marker() == marker
        assert _files(table) <= files
    state = next(t for t in lake.tables() if t.kind == "state" and t.name == "shop.orders")
    assert _files(state) == 1 and before[("state", "shop.orders")][2] > 1


def _files(table: Any) -> int:
    """Data files on disk under a table's directory."""
    root = table.location.removeprefix("file://")
    return sum(1 for _, _, names in os.walk(root) for n in names if n.endswith(".parquet"))


def test_the_history_cut_at_a_position_orders_ddl_of_every_domain() -> None:
    """A position's GTID state says which DDL lies before it, whatever the statements' domains
    (a statement of domain 1 is before a position whose state holds its sequence number)."""
    from mariabinlog.spark.mirror.position import gtids_behind, history_until, records_before, version

    ddl = [{"gtid": gtid, "file": "mysql-bin.000001", "pos": pos, "database": "d", "query": f"CREATE TABLE t{i} (a INT)",
            "server_charset": None, "tables": [["d", f"t{i}"]]}
           for i, (gtid, pos) in enumerate([("0-1-5", 100), ("1-2-3", 200), ("0-1-9", 300), ("2-1-1", 400)])]
    history = {"format": "mariabinlog-schema-history", "version": 1, "source": "test",
               "snapshot": {"tables": [], "database_charsets": {}}, "ddl": ddl}

    def at(state: str, offset: int = 16384) -> dict[str, object]:
        return {"stream": "ibb", "file": "binlog-000002.ibb", "offset": offset, "gtid_state": state}

    assert records_before(history, None) == 0
    assert records_before(history, at("0-1-4")) == 0
    assert records_before(history, at("0-1-5")) == 1
    assert records_before(history, at("0-1-8,1-2-3")) == 2  # domain 1's statement too
    assert records_before(history, at("0-1-9,1-2-3")) == 3
    assert records_before(history, at("0-1-20,1-2-3,2-1-1")) == 4
    text, count = history_until(history, at("0-1-9,1-2-3"))
    assert count == 3 and [r["gtid"] for r in json.loads(text)["ddl"]] == ["0-1-5", "1-2-3", "0-1-9"]
    assert gtids_behind(at("0-1-5,1-2-3"), at("0-1-9,1-2-4,2-1-2")) == 4 + 1 + 2
    assert version(at("", 81920)) == (2 << 32) + 81920 > version(at("", 16384)) > version(None) == -1
