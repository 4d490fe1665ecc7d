"""``mariabinlog dump --format=json``: one JSON object per event.

* Every corpus file: one parseable line per event, positions, types, server
  ids and end positions equal to what SHOW BINLOG EVENTS listed, the group's
  GTID on every event of the group, and as many rows as ``mariadb-binlog -v``
  printed ``###`` statements.
* A live server with ``binlog_row_metadata=FULL``: column names, and every
  value typed as documented (numbers, DECIMAL strings, ISO-like temporal values
  with zero dates kept, ENUM/SET names, base64 bytes), MINIMAL images without
  the absent columns.
* The dump's filters apply; bad ``--format`` values are refused.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.tools.dump.cli import dump_main

from corpus_data import corpus_glob

LISTINGS = corpus_glob("events/*/*.tsv")


def run(args: list[str]) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(args, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def json_events(args: list[str]) -> list[dict[str, Any]]:
    status, out, err = run(["--format=json", *args])
    assert status == 0, err
    return [json.loads(line) for line in out.decode("utf-8").splitlines()]


@pytest.mark.parametrize("listing", LISTINGS, ids=[f"{p.parent.name}/{p.stem}" for p in LISTINGS])
def test_corpus_files(listing: Path, corpus_dir: Path) -> None:
    binlog = corpus_dir / "binlogs" / listing.parent.name / listing.stem
    events = json_events(["--skip-gtid-strict-mode", str(binlog)])
    rows = [line.split("\t") for line in listing.read_text(encoding="utf-8").splitlines()[1:]]
    assert [(e["pos"], e["type"], e["server_id"], e["end_log_pos"]) for e in events] == [
        (int(r[1]), r[2], int(r[3]), int(r[4])) for r in rows
    ]
    gtid = None
    for event in events:
        assert event["file"] == listing.stem
        if event["type"] == "Gtid":
            gtid = event["gtid"]
            assert gtid == f"{event['domain_id']}-{event['server_id']}-{event['seq_no']}"
        elif event["type"] in ("Table_map", "Annotate_rows") or event["type"].endswith(("_rows_v1", "_rows_compressed_v1")):
            assert event["gtid"] == gtid is not None
        if event["type"] in ("Format_desc", "Gtid_list", "Binlog_checkpoint", "Rotate"):
            assert event["gtid"] is None


def test_rows_match_the_real_tools_statement_count(corpus_dir: Path) -> None:
    for workload in ("w02_types_full", "w03_types_minimal", "w06_big_trx", "w10_compressed"):
        files = sorted(str(p) for p in (corpus_dir / "binlogs" / workload).glob("mysql-bin.*"))
        events = json_events(files)
        rows = sum(len(e["rows"]) for e in events if "rows" in e)
        entry = next(
            line.split("\t")
            for line in (corpus_dir / "manifest.tsv").read_text().splitlines()
            if line.split("\t")[2:3] == ["-v"] and line.split("\t")[6:7] == [workload] and len(line.split("\t")[1].split()) == len(files)
        )
        golden = corpus_dir / entry[3]
        text = (gzip.decompress(golden.read_bytes()) if golden.suffix == ".gz" else golden.read_bytes()).decode(
            "utf-8", "replace"
        )
        statements = sum(text.count(f"\n### {verb}") for verb in ("INSERT INTO", "UPDATE ", "DELETE FROM"))
        assert rows == statements, workload


def test_filters_apply(corpus_dir: Path) -> None:
    files = sorted(str(p) for p in (corpus_dir / "binlogs" / "w07_gtid_domains").glob("mysql-bin.*"))
    events = json_events(["--do-domain-ids=1", *files])
    gtids = [e["gtid"] for e in events if e["type"] == "Gtid"]
    assert gtids and all(g.startswith("1-") for g in gtids)
    window = ["--start-position=0-1-3", "--stop-position=0-1-5"]
    events = json_events([*window, *files])
    _, text, _ = run([*window, *files])
    assert [e["gtid"] for e in events if e["type"] == "Gtid"] == [
        g.decode() for g in re.findall(rb"\tGTID (\d+-\d+-\d+)", text)
    ] == ["0-1-4", "0-3-5"]
    tables = {e["table"] for e in json_events(["--table=d1", *files]) if "table" in e}
    assert tables == {"d1"}


def test_bad_format_options(corpus_dir: Path) -> None:
    binlog = str(corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001")
    assert run(["--format=yaml", binlog]) == (
        1,
        b"",
        "ERROR: Unknown output format 'yaml'. Alternatives are: 'text','json','debezium','schema-history'\n",
    )
    assert run(["--format=json", "--flashback", binlog]) == (
        1,
        b"",
        "ERROR: --flashback works only with the text output\n",
    )
    # The records name databases as logged: a rename is refused, not silently ignored.
    for fmt in ("json", "debezium"):
        assert run([f"--format={fmt}", "--rewrite-db=w01_basic->zz", binlog]) == (
            1,
            b"",
            "ERROR: --rewrite-db works only with the text output\n",
        )
    status, out, _ = run(["--format=text", binlog])
    assert status == 0 and out.startswith(b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;")


SCHEMA = """
SET SESSION sql_mode='';
CREATE DATABASE j;
CREATE TABLE j.t (
  id INT PRIMARY KEY,
  u BIGINT UNSIGNED,
  d DECIMAL(12,3),
  f DOUBLE,
  dt DATE,
  dtm DATETIME(6),
  ts TIMESTAMP(3) NULL,
  tm TIME,
  y YEAR,
  s VARCHAR(40) CHARACTER SET utf8mb4,
  l VARCHAR(20) CHARACTER SET latin1,
  b VARBINARY(8),
  bl BLOB,
  e ENUM('red','green','blue'),
  st SET('a','b','c'),
  bt BIT(5),
  js JSON
) ENGINE=InnoDB;
INSERT INTO j.t VALUES (1, 18446744073709551615, -12.500, 0.25, '2024-02-29', '2024-01-31 12:00:00.250000',
  '2024-01-31 12:00:00.125', '-838:59:59', 2024, 'héllo 😀', 'café', X'00FF10', X'DEADBEEF', 'green', 'a,c', b'10101',
  '{"k": [1, 2]}');
INSERT INTO j.t (id, dt, dtm, ts) VALUES (2, '0000-00-00', '2024-00-00 00:00:00', '0000-00-00 00:00:00');
UPDATE j.t SET s = 'bye', u = 7 WHERE id = 1;
SET SESSION binlog_row_image = MINIMAL;
UPDATE j.t SET f = 1.5 WHERE id = 2;
DELETE FROM j.t WHERE id = 2;
FLUSH BINARY LOGS;
"""


def test_live_server_full_metadata(mariadb_server_factory: Any) -> None:
    server = mariadb_server_factory(
        "--log-bin", "--binlog-format=ROW", "--binlog-row-metadata=FULL", "--default-time-zone=+00:00",
        name="json",
    )
    server.pipe(SCHEMA)
    files = [str(p) for p in server.binlog_files()[:-1]]
    events = json_events(files)
    table_map = next(e for e in events if e["type"] == "Table_map" and e["table"] == "t")
    columns = {c["name"]: c for c in table_map["columns"]}
    assert list(columns)[:3] == ["id", "u", "d"]
    assert columns["u"]["unsigned"] is True and columns["d"]["type"] == "DECIMAL(12,3)"
    assert columns["s"]["charset"].startswith("utf8mb4") and columns["l"]["charset"].startswith("latin1")
    assert columns["id"]["nullable"] is False and columns["s"]["nullable"] is True
    rows = [(e["kind"], r) for e in events if e.get("table") == "t" and "rows" in e for r in e["rows"]]
    assert [k for k, _ in rows] == ["insert", "insert", "update", "update", "delete"]
    first = rows[0][1]["after"]
    assert first == {
        "id": 1,
        "u": 18446744073709551615,
        "d": "-12.500",
        "f": 0.25,
        "dt": "2024-02-29",
        "dtm": "2024-01-31T12:00:00.250000",
        "ts": "2024-01-31T12:00:00.125000Z",
        "tm": "-838:59:59",
        "y": 2024,
        "s": "héllo 😀",
        "l": "café",
        "b": {"base64": base64.b64encode(b"\x00\xff\x10").decode()},
        "bl": {"base64": base64.b64encode(b"\xde\xad\xbe\xef").decode()},
        "e": "green",
        "st": ["a", "c"],
        "bt": 21,
        "js": '{"k": [1, 2]}',
    }
    zero = rows[1][1]["after"]
    assert (zero["dt"], zero["dtm"], zero["ts"], zero["s"]) == ("0000-00-00", "2024-00-00T00:00:00", "0000-00-00T00:00:00Z", None)
    update = rows[2][1]
    assert (update["before"]["s"], update["after"]["s"], update["after"]["u"]) == ("héllo 😀", "bye", 7)
    minimal = rows[3][1]
    assert minimal["before"] == {"id": 2} and minimal["after"] == {"f": 1.5}
    assert rows[4][1] == {"before": {"id": 2}}
    # The statements and the group's GTID travel with the rows.
    annotate = [e["query"] for e in events if e["type"] == "Annotate_rows"]
    assert any(q.startswith("INSERT INTO j.t VALUES (1, 18446744073709551615") for q in annotate)
    gtids = {e["gtid"] for e in events if e.get("table") == "t"}
    assert None not in gtids and len(gtids) == 5


@pytest.mark.parametrize("listing", LISTINGS, ids=[f"{p.parent.name}/{p.stem}" for p in LISTINGS])
def test_debezium_lines_are_the_records_as_json_dumps_writes_them(listing: Path, corpus_dir: Path) -> None:
    """The command puts a row change's line together itself (``DebeziumWriter.lines``); the
    Python API gives the records as dicts: each line is ``json.dumps`` of its record, byte
    for byte, key order included."""
    from mariabinlog.schema import SchemaTracker
    from mariabinlog.tools.debezium import DebeziumSink
    from mariabinlog.tools.dump.options import parse_options
    from mariabinlog.tools.jsonout import json_name

    args = ["--skip-gtid-strict-mode", str(corpus_dir / "binlogs" / listing.parent.name / listing.stem)]
    status, out, err = run(["--format=debezium", *args])
    assert status == 0, err
    collected: list[dict[str, Any]] = []
    opts, _, _ = parse_options(args)
    assert dump_main(args, stdout=io.BytesIO(), sink=lambda write: DebeziumSink(write, opts, SchemaTracker(), collected)) == 0

    def line(record: dict[str, Any]) -> bytes:
        text = json.dumps(record, ensure_ascii=False)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return json_name(text).encode("utf-8")

    assert out.splitlines() == [line(r) for r in collected]


def test_debezium_keys_a_table_whose_primary_key_has_a_prefix(mariadb_server_factory: Any) -> None:
    """A primary key on a column prefix is logged as PRIMARY_KEY_WITH_PREFIX, not
    SIMPLE_PRIMARY_KEY: Debezium's record key is still the key's whole columns (it was null)."""
    server = mariadb_server_factory("--log-bin", "--binlog-format=ROW", "--binlog-row-metadata=FULL", name="prefix-key")
    server.pipe(
        "CREATE DATABASE k; CREATE TABLE k.p (name VARCHAR(100), n INT, v INT, PRIMARY KEY (name(8), n)) ENGINE=InnoDB;"
        " INSERT INTO k.p VALUES ('long enough name', 1, 10); UPDATE k.p SET v = 11; FLUSH BINARY LOGS;\n"
    )
    status, out, err = run(["--format=debezium", *(str(p) for p in server.binlog_files()[:-1])])
    assert status == 0, err
    records = [json.loads(line) for line in out.decode("utf-8").splitlines()]
    keys = [(r["value"]["op"], r["key"]) for r in records if r["topic"].endswith(".k.p")]
    assert keys == [("c", {"name": "long enough name", "n": 1}), ("u", {"name": "long enough name", "n": 1})]
