"""Issue 30: rows of every GTID domain reach the typed state and change tables, whatever domain
ran the DDL, through an `.ibb` archive made by ``mariabinlog archive`` and through the legacy files.

Three real primaries that differ only in ``binlog_row_metadata`` (NO_LOG, the default, FULL and
MINIMAL) run the issue's own workload and a larger one (rows in domains 0..3 interleaved group
by group, every DDL in domain 1: ADD/DROP/RENAME COLUMN, CHANGE, RENAME TABLE; BIGINT UNSIGNED
keys near 2^64, one moved; a keyless table with duplicate rows deleted by ``DELETE ... LIMIT
1``; a FLUSH BINARY LOGS in the middle).  Every state table, and every change table replayed,
is read back with pyarrow and compared with ``SELECT *`` of the primary (PyMySQL).  The reads
are cut into many small splits, so most splits start in another domain than the DDL's.

The same archive feeds the other readers that name rows by the schema history: the streaming
``rows`` view and ``dump --format=json|debezium`` with the archive's saved history, also from
the middle of the stream and for one domain only; their row images equal those of the FULL
primary's own binlog (the server's names, not the history's).  ``replicate`` applies the
archive to a fresh server, which ends equal to the primary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from schema_workloads import (
    DDL_DOMAIN,
    ISSUE_30_WORKLOAD,
    SERVER_OPTIONS,
    binlog_dir,
    domains_workload,
    typed_select,
    assert_state_equals_select,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

METADATA = ("NO_LOG", "FULL", "MINIMAL")
#: Source tables at the end, with their key column (None: no key).
TABLES = {"d.t": "id", "m.acct": "id", "m.evt": None, "m.item": "id", "m.renamed": "id"}
#: Splits this small cut every file into many, most starting in a domain other than the DDL's.
READ = {"maxPartitionBytes": "16k"}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mariabinlog", *args]


@pytest.fixture(scope="module")
def primaries(mariadb_server_factory: Any) -> dict[str, Any]:
    """A primary per ``binlog_row_metadata`` that ran both workloads (binlogs closed)."""
    out = {}
    for metadata in METADATA:
        server = mariadb_server_factory(*SERVER_OPTIONS, "--server-id=1", f"--binlog-row-metadata={metadata}",
                                        name=f"domains-{metadata}")
        server.pipe(ISSUE_30_WORKLOAD + domains_workload() + "FLUSH BINARY LOGS;\n")
        out[metadata] = server
    return out


@pytest.fixture(scope="module")
def sources(primaries: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    """(metadata, "archive" | "files") -> directory: an archive ``mariabinlog archive`` wrote
    (small `.ibb` files, so it has several) and a copy of the primary's closed binlog files."""
    out = {}
    for metadata, server in primaries.items():
        root = tmp_path_factory.mktemp(f"domains-{metadata}")
        archive = root / "archive"
        done = subprocess.run(_command("archive", "--from", f"mariadb://root@127.0.0.1:{server.port}", "--dir",
                                       str(archive), "--max-binlog-size", "64K", "--quiet"),
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr.decode()
        assert len(list(archive.glob("binlog-*.ibb"))) > 1 and (archive / "schema-history.json").exists()
        out[(metadata, "archive")] = str(archive)
        out[(metadata, "files")] = binlog_dir(server, root, "files")
    return out


def _replayed(changes: list[dict[str, Any]], key: str | None) -> list[dict[str, Any]]:
    """The rows a typed change table leaves when replayed in its order (by key, or counted)."""
    if key is None:
        counts: Counter[str] = Counter()
        images: dict[str, dict[str, Any]] = {}
        for change in changes:
            if change["op"] != "insert":
                counts[repr(change["before"])] -= 1
            if change["op"] != "delete":
                counts[repr(change["after"])] += 1
                images[repr(change["after"])] = change["after"]
        assert all(n >= 0 for n in counts.values()), "a keyless row deleted more often than written"
        return [images[r] for r, n in counts.items() for _ in range(n)]
    rows: dict[Any, dict[str, Any]] = {}
    for change in changes:
        if change["op"] != "insert":
            assert change["before"][key] in rows, f"change of an unknown row: {change}"
            rows.pop(change["before"][key])
        if change["op"] != "delete":
            rows[change["after"][key]] = change["after"]
    return list(rows.values())


@pytest.mark.parametrize("via", ["archive", "files"])
@pytest.mark.parametrize("metadata", METADATA)
def test_state_and_change_tables_equal_select(spark: Any, primaries: dict[str, Any],
                                              sources: dict[tuple[str, str], str], metadata: str, via: str,
                                              tmp_path: Path) -> None:
    from mariabinlog.spark.pipeline import run_pipeline

    server = primaries[metadata]
    result = run_pipeline(sources[(metadata, via)], str(tmp_path / "out"), spark=spark, read_options=READ)
    assert sorted(result.states) == sorted(TABLES), "a state table per table with rows (d.k never had one)"
    cdc = pq.read_table(result.cdc).to_pylist()
    assert Counter((r["database"], r["table"]) for r in cdc)[("d", "t")] == 4
    for name, key in TABLES.items():
        database, table = name.split(".")
        state = pq.read_table(result.states[name])
        assert_state_equals_select(state, server, database, table)
        changes = pq.read_table(result.changes[name])
        assert changes.schema.field("after").type.num_fields == len(state.schema)
        expected, _ = typed_select(server, database, table)
        replayed = _replayed(changes.to_pylist(), key)
        assert sorted(map(repr, replayed)) == sorted(map(repr, expected)), f"changes of {name} replayed"
    # Every domain's rows are in the change tables (the issue: only the DDL's domain was).
    domains = Counter(int(c["gtid"].split("-")[0]) for c in pq.read_table(result.changes["m.acct"]).to_pylist())
    assert sorted(domains) == [0, 1, 2, 3]
    issue = pq.read_table(result.changes["d.t"]).to_pylist()
    assert sorted(c["gtid"].split("-")[0] for c in issue) == ["0", "1", "1", "2"]


def _images(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(database, table, kind, rows) of every rows event of a ``dump --format=json`` output."""
    return [(o["database"], o["table"], o["kind"], o["rows"]) for o in lines if "rows" in o]


def _dump(*args: str, quiet: bool = False) -> list[dict[str, Any]]:
    """``mariabinlog dump`` output as JSON objects (``quiet``: check that it named every row)."""
    done = subprocess.run(_command("dump", *args), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    if quiet:
        assert b"WARNING" not in done.stderr, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_json_and_debezium_of_the_archive_name_every_domain(sources: dict[tuple[str, str], str]) -> None:
    """The NO_LOG archive dumped with its saved history (whole, from a GTID in the middle, and
    one domain only, whose groups never hold the DDL) names every row as the FULL primary's own
    binlog does."""
    archive = Path(sources[("NO_LOG", "archive")])
    files = sorted(Path(sources[("FULL", "files")]).glob("mysql-bin.*"))
    saved = f"--schema-history={archive / 'schema-history.json'}"
    ibb = sorted(str(p) for p in archive.glob("binlog-*.ibb"))
    whole = _dump("--format=json", *map(str, files))
    # A position in the middle: after half of each domain's groups.
    seqs = Counter(o["domain_id"] for o in whole if o["type"] == "Gtid")
    start = ",".join(f"{d}-1-{n // 2}" for d, n in sorted(seqs.items()))
    assert len(seqs) == 4
    # The FULL files are named by the binlog itself (their history, built from the DDL read
    # from the middle, does not know the tables and says so); the archive's by its saved history.
    for options in ([], [f"--start-position={start}"], [f"--do-domain-ids={(DDL_DOMAIN + 2) % 4}"]):
        want = _images(_dump("--format=json", *options, *map(str, files)))
        got = _images(_dump("--format=json", saved, *options, *ibb, quiet=True))
        assert want and got == want, f"dump --format=json {options}"
    domain = f"--do-domain-ids={(DDL_DOMAIN + 3) % 4}"
    want = [(r["value"]["op"], r["value"]["before"], r["value"]["after"]) for r in
            _dump("--format=debezium", domain, *map(str, files)) if r["value"] and "op" in r["value"]]
    got = [(r["value"]["op"], r["value"]["before"], r["value"]["after"]) for r in
           _dump("--format=debezium", saved, domain, *ibb, quiet=True) if r["value"] and "op" in r["value"]]
    assert want and got == want


def test_stream_of_the_archive_names_every_domain(spark: Any, sources: dict[tuple[str, str], str],
                                                  tmp_path: Path) -> None:
    """The streaming ``rows`` view of the NO_LOG archive (its saved history, small micro-batches)
    equals the batch ``rows`` view of the FULL primary's files."""
    columns = ["database", "table", "op", "key_columns", "before", "after"]
    stream = (spark.readStream.format("mariabinlog").option("view", "rows").option("maxGroupsPerTrigger", "150")
              .load(sources[("NO_LOG", "archive")]))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (stream.select("gtid", *columns).writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(600)

    def row(values: dict[str, Any]) -> str:
        return repr({c: sorted(dict(v).items()) if c in ("before", "after") and v is not None else v
                     for c, v in values.items()})

    got = sorted(row(r) for r in pq.read_table(out).select(columns).to_pylist())
    full = spark.read.format("mariabinlog").option("view", "rows").load(sources[("FULL", "files")])
    want = sorted(row(r.asDict()) for r in full.select(*columns).collect())
    assert len(got) == len(want) > 100 and got == want


def test_replicate_the_archive(mariadb_server_factory: Any, primaries: dict[str, Any],
                               sources: dict[tuple[str, str], str]) -> None:
    """``replicate --from ARCHIVE`` leaves a server equal to the primary.  One worker: the
    workload updates rows other domains inserted, which only the binlog's own order applies
    (domains in parallel assume independent domains, as MariaDB's parallel replication does)."""
    target = mariadb_server_factory(*SERVER_OPTIONS, "--server-id=2", name="domains-target")
    done = subprocess.run(_command("replicate", "--from", sources[("NO_LOG", "archive")], "--to",
                                   f"mariadb://root@127.0.0.1:{target.port}", "--parallel", "1", "--quiet"),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    for name in TABLES:
        database, table = name.split(".")
        got, want = typed_select(target, database, table)[0], typed_select(primaries["NO_LOG"], database, table)[0]
        assert sorted(map(repr, got)) == sorted(map(repr, want)), name


def test_rows_that_cannot_be_carried_fail_the_job_unless_skipped(spark: Any, primaries: dict[str, Any],
                                                                 sources: dict[tuple[str, str], str],
                                                                 tmp_path: Path) -> None:
    """A history that disagrees with the binlog (the archive's, two ALTERs edited: m.acct's
    ``tier`` a CHAR where the server has a VARCHAR, m.item's ``price`` defaulting to ``'x'``)
    leaves rows of m.acct logged after its ALTER with positional names, and rows of m.item
    logged before its ALTER with a carried ``price`` that is no DECIMAL: they stay in the CDC
    table, the job names table, GTID and why and fails without writing those tables; with
    ``--skip-uncarried-rows`` it writes them without those rows and the report lists them."""
    from mariabinlog.errors import UncarriedRowsError
    from mariabinlog.spark.pipeline import run_pipeline
    from mariabinlog.spark.tables import NAMES_UNKNOWN

    history = json.loads((Path(sources[("NO_LOG", "archive")]) / "schema-history.json").read_text())
    edits = {"ALTER TABLE m.acct ADD COLUMN tier": ("tier VARCHAR(5)", "tier CHAR(5)"),
             "ALTER TABLE m.item ADD COLUMN price": ("DEFAULT 1.50", "DEFAULT 'x'")}
    for record in history["ddl"]:
        for start, (old, new) in edits.items():
            if record["query"].startswith(start):
                assert old in record["query"]
                record["query"] = record["query"].replace(old, new)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(history))
    files, out = sources[("NO_LOG", "files")], tmp_path / "out"
    read = {**READ, "schemaHistory": str(wrong)}
    with pytest.raises(UncarriedRowsError) as caught:
        run_pipeline(files, str(out), spark=spark, read_options=read)
    rows = caught.value.rows
    by_why: Counter[tuple[str, str]] = Counter()
    for name, _, why, n in rows:
        by_why[(name, why)] += n
    assert sorted(by_why) == [("m.acct", NAMES_UNKNOWN), ("m.item", "a value of column price cannot be read as "
                                                                    "decimal(8,2)")]
    message = str(caught.value)
    assert f"{rows[0][0]} GTID {rows[0][1]}: {rows[0][3]} row(s): {rows[0][2]}" in message
    assert "--skip-uncarried-rows" in message
    assert not (out / "state" / "m.acct").exists() and not (out / "changes" / "m.item").exists()
    assert_state_equals_select(pq.read_table(out / "state" / "m.renamed"), primaries["NO_LOG"], "m", "renamed")
    cdc = pq.read_table(out / "cdc" / "database=m" / "table=acct").to_pylist()
    positional = [r for r in cdc if any(k.startswith("@") for k, _ in (r["after"] or r["before"]))]
    assert len(positional) == by_why[("m.acct", NAMES_UNKNOWN)]
    # Every domain's rows are among them: the edited ALTER stands before rows of all four.
    assert {r["gtid"].split("-")[0] for r in positional} == {"0", "1", "2", "3"}
    skipped = run_pipeline(files, str(out), spark=spark, read_options=read, skip_uncarried=True)
    assert skipped.uncarried == rows
    assert "could not be carried" in skipped.summary and (out / "report" / "uncarried.csv").is_file()
    for name in ("m.acct", "m.item"):
        state = pq.read_table(skipped.states[name])
        assert 0 < state.num_rows < len(typed_select(primaries["NO_LOG"], *name.split("."))[0]), name
