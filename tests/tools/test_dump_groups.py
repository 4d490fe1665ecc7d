"""``dump``'s compiled whole-group paths (``_dumpfast.print_groups``, ``json_groups``,
``debezium_groups``) against the
event-by-event path, and both against the real ``mariadb-binlog``.

The compiled path prints the ordinary OLTP transaction (GTID, Annotate_rows, Table_map,
rows events, Xid) a whole group at a time and hands anything else to the Python printer
event by event.  Every corpus binlog, with every option the compiled path honours, prints
the same bytes, stderr and exit status both ways.  A binlog written by a real server in
production's shape (four GTID domains, four concurrent clients, small transactions, group
commit ids, a DDL and a MyISAM statement between them, a multi-line statement) is printed
by the compiled path almost whole and equals the real tool's output; a stop position inside
a group, a flipped byte, a cut-off file and the strict-mode validator's stop give the same
output as the event-by-event path.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.codec.events.stream import iter_legacy_events
from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.debezium import DebeziumSink
from mariabinlog.tools.jsonout import JsonSink
from mariabinlog.tools.printer import base
from mariabinlog.tools.printer.printer import Printer

from corpus_data import corpus_glob

pytestmark = pytest.mark.skipif(base._fast is None, reason="the _dumpfast extension is not built (pip install -e .)")

TOOL = shutil.which("mariadb-binlog")
BINLOGS = corpus_glob("binlogs/*/mysql-bin.0*")

#: The options that change what the compiled path prints (each also turns it off or on).
OPTION_SETS = [
    [],
    ["-v"],
    ["-vv"],
    ["-vv", "--base64-output=decode-rows"],
    ["-v", "--skip-annotate-row-events"],
    ["-v", "--print-row-count=0"],
    ["--print-row-count=0"],
    ["-v", "--print-row-event-positions=0"],
    ["-v", "--skip-verify-binlog-checksum"],
    ["-v", "--skip-gtid-strict-mode"],
    ["--format=json"],
    ["--format=json", "--skip-verify-binlog-checksum"],
    ["--format=debezium"],
    ["--format=debezium", "--skip-verify-binlog-checksum", "--topic-prefix=shop"],
]


@pytest.fixture(autouse=True)
def _utc(utc: None) -> None:
    """Every test here reads header comment times in UTC (conftest's ``utc``)."""


class Counted:
    """The text printer's, the JSON and the Debezium writers' print_groups wrapped: how many
    bytes of input the compiled paths printed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        for cls in (Printer, JsonSink, DebeziumSink):
            self._wrap(monkeypatch, cls)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, cls: Any) -> None:
        real = cls.print_groups

        def print_groups(sink: Any, data: Any, pos: int, *args: Any) -> tuple[int, bool]:
            reached, stopped = real(sink, data, pos, *args)
            self.bytes += reached - pos
            return reached, stopped

        monkeypatch.setattr(cls, "print_groups", print_groups)


def dump(args: list[str]) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(["--no-defaults", *args], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def both_ways(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[tuple[int, bytes, str], int]:
    """The dump through the compiled groups, checked equal to the event-by-event dump; the
    result and the input bytes the compiled path printed."""
    with monkeypatch.context() as m:
        counted = Counted(m)
        fast = dump(args)
    with monkeypatch.context() as m:
        m.setattr(Printer, "_group_cfg", lambda self, verify, at: None)
        for sink in (JsonSink, DebeziumSink):
            m.setattr(sink, "print_groups", lambda self, data, pos, *rest: (pos, False))
        slow = dump(args)
    assert fast[0] == slow[0]
    assert fast[2] == slow[2]
    if fast[1] != slow[1]:
        at = next((i for i, (a, b) in enumerate(zip(fast[1], slow[1])) if a != b), min(len(fast[1]), len(slow[1])))
        line = slow[1].count(b"\n", 0, at) + 1
        pytest.fail(f"outputs differ at byte {at} (line {line}): {fast[1][at - 80:at + 80]!r} vs {slow[1][at - 80:at + 80]!r}")
    return fast, counted.bytes


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "plain")
@pytest.mark.parametrize("path", BINLOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_prints_the_same_both_ways(path: Path, options: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    both_ways(monkeypatch, [*options, str(path)])


def test_the_compiled_path_prints_the_row_binlogs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a path that never runs: it prints most of the corpus's bulk row binlog."""
    path = next(p for p in BINLOGS if p.parent.name == "w02_types_full" and p.name.endswith("000001"))
    _, printed = both_ways(monkeypatch, ["-v", str(path)])
    assert printed > path.stat().st_size * 0.9


# ------------------------------------------------------------------ production's shape, a real server

CLIENTS = 4
GROUPS_PER_CLIENT = 150


def _client_script(client: int) -> str:
    """Small transactions of one client in its own domain: inserts, updates by a secondary key,
    a delete now and then; one multi-line statement (an Annotate_rows of several lines)."""
    domain = client % 4
    lines = [f"SET SESSION gtid_domain_id = {domain};"]
    for i in range(GROUPS_PER_CLIENT):
        k = client * 100000 + i
        lines.append("BEGIN;")
        lines.append(f"INSERT INTO oltp.t{domain} (k, c, amount) VALUES ({k}, 'row {k} of client {client}', {i}.25);")
        if i % 3 == 0:
            lines.append(f"UPDATE oltp.t{domain}\n  SET amount = amount + 1\n  WHERE k = {k};")
        if i % 7 == 6:
            lines.append(f"DELETE FROM oltp.t{domain} WHERE k = {k - 3};")
        lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def oltp_binlog(mariadb_server_factory: Any) -> Path:
    """A closed binlog of four domains written by four concurrent clients, commits grouped
    (binlog_commit_wait_count: GTIDs with commit ids), a DDL and a MyISAM statement mid-way."""
    server = mariadb_server_factory(
        "--log-bin", "--binlog-format=ROW", "--default-time-zone=+00:00",
        "--binlog-commit-wait-count=3", "--binlog-commit-wait-usec=20000",
        name="oltp-groups",
    )
    tables = "".join(
        f"CREATE TABLE oltp.t{d} (id INT AUTO_INCREMENT PRIMARY KEY, k INT, c VARCHAR(60), amount DECIMAL(12,2),"
        f" at DATETIME(6) DEFAULT '2025-01-01 00:00:00', KEY (k)) ENGINE=InnoDB;"
        for d in range(4)
    )
    server.pipe("CREATE DATABASE oltp;" + tables + "CREATE TABLE oltp.m (n INT) ENGINE=MyISAM;")
    clients = [
        subprocess.Popen(
            server.client_command(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(CLIENTS)
    ]
    for client, proc in enumerate(clients):
        assert proc.stdin is not None
        proc.stdin.write(_client_script(client).encode())
        proc.stdin.close()
    server.pipe("ALTER TABLE oltp.t0 ADD COLUMN note VARCHAR(10) NULL; INSERT INTO oltp.m VALUES (1);")
    for proc in clients:
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    server.pipe("FLUSH BINARY LOGS;")
    return server.binlog_files()[-2]


def test_production_shape_equals_the_real_tool(oltp_binlog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = list(iter_legacy_events(oltp_binlog.read_bytes()))
    gtids = [e for e in events if e.type_code == 162]
    assert len({g.domain_id for g in gtids}) == 4
    assert any(g.commit_id for g in gtids), "no group commit id: the workload did not commit in groups"
    for options in (["-v"], [], ["-vv", "--base64-output=decode-rows"]):
        (status, out, err), printed = both_ways(monkeypatch, [*options, str(oltp_binlog)])
        assert status == 0, err
        assert b" cid=" in out and b"#Q>   SET amount = amount + 1\n" in out
        assert printed > oltp_binlog.stat().st_size * 0.9
        if TOOL is not None:
            real = subprocess.run([TOOL, "--no-defaults", *options, str(oltp_binlog)], capture_output=True,
                                  env={**os.environ, "TZ": "UTC"}, check=True)
            assert out == real.stdout


def test_production_shape_as_json(oltp_binlog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON writer's compiled groups: the same lines as event by event, most of the binlog
    written by them, every row change once, the DDL's new column named after it."""
    (status, out, err), printed = both_ways(monkeypatch, ["--format=json", str(oltp_binlog)])
    assert status == 0, err
    assert printed > oltp_binlog.stat().st_size * 0.9
    lines = [json.loads(line) for line in out.splitlines()]
    assert any("commit_id" in line for line in lines)
    assert any(line.get("query", "").startswith("UPDATE oltp.t0\n  SET") for line in lines)
    notes = [r for line in lines if line.get("table") == "t0" for r in line.get("rows", ()) if "note" in r.get("after", {})]
    assert notes, "rows after the ALTER name the new column"
    changes = sum(len(line.get("rows", ())) for line in lines if line.get("table", "").startswith("t"))
    per_client = sum(1 + (i % 3 == 0) + (i % 7 == 6) for i in range(GROUPS_PER_CLIENT))  # insert, update, delete
    assert changes == CLIENTS * per_client


def test_production_shape_as_debezium(oltp_binlog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Debezium writer's compiled groups: the same records as event by event, most of the
    binlog written by them, one record per row change with its GTID, key and Annotate_rows."""
    (status, out, err), printed = both_ways(monkeypatch, ["--format=debezium", str(oltp_binlog)])
    assert status == 0, err
    assert printed > oltp_binlog.stat().st_size * 0.9
    records = [json.loads(line) for line in out.splitlines()]
    changes = [r for r in records if r["topic"].startswith("mariabinlog.oltp.t")]
    per_client = sum(1 + (i % 3 == 0) + (i % 7 == 6) for i in range(GROUPS_PER_CLIENT))
    assert len(changes) == CLIENTS * per_client
    assert {r["value"]["op"] for r in changes} == {"c", "u", "d"}
    assert all(r["key"] == {"id": (r["value"]["after"] or r["value"]["before"])["id"]} for r in changes)
    assert len({r["value"]["source"]["gtid"].split("-")[0] for r in changes}) == 4
    assert any(r["value"]["source"]["query"].startswith("UPDATE oltp.t0\n  SET") for r in changes)
    assert all(isinstance(r["value"]["after"]["at"], int) for r in changes if r["value"]["after"])


EDGE_TABLE = (
    "CREATE TABLE edge.v (id INT PRIMARY KEY, d DATE, dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),"
    " t6 TIME(6), ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, b1 BIT(1), b10 BIT(10), s SET('a','b\"q','c'),"
    " e ENUM('x','y'), bl BLOB, l1 VARCHAR(20) CHARACTER SET latin1, dec1 DECIMAL(20,10), dbl DOUBLE, y YEAR)"
)
EDGE_ROWS = [
    "(1, '0000-00-00', '0000-00-00 00:00:00', '1969-12-31 23:59:59.999', '0000-01-01 00:00:00.000001',"
    " '-838:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.5', b'1', b'1010101010', 'a,b\"q,c',"
    " 'y', X'00ff80', 'abc', '-0.0000012345', -0.0, 2155)",
    "(2, '2024-02-29', '2024-02-30 00:00:00', '1900-01-01 12:00:00.5', '9999-12-31 23:59:59.999999',"
    " '00:00:00.000001', '0000-00-00 00:00:00', NULL, b'0', b'0', '', 'x', 'text', 'plain', '0.0000000001', 1e300, 0)",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


def test_value_edges_through_the_compiled_json_and_debezium(mariadb_server_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Values at the edges a real server stores (zero and year-0 dates, dates no calendar
    has, negative and fractional times, zero TIMESTAMPs, BIT(1) and BIT(n), SET members with
    quotes, bytes, latin1 text, tiny DECIMALs, -0.0), key changes and MINIMAL images: the
    compiled JSON and Debezium lines equal the event-by-event ones, and the compiled paths
    write most of the binlog."""
    server = mariadb_server_factory(
        "--log-bin", "--binlog-format=ROW", "--binlog-row-metadata=FULL", "--default-time-zone=+00:00",
        "--sql-mode=ALLOW_INVALID_DATES", name="value-edges",
    )
    statements = [
        "CREATE DATABASE edge", EDGE_TABLE, *(f"INSERT INTO edge.v VALUES {row}" for row in EDGE_ROWS),
        "UPDATE edge.v SET id = id + 10, t6 = '12:00:00' WHERE id = 1",
        "UPDATE edge.v SET dbl = 2.5 WHERE id = 2",
        "SET SESSION binlog_row_image = MINIMAL", "UPDATE edge.v SET s = 'c' WHERE id = 2",
        "UPDATE edge.v SET id = 20 WHERE id = 2",
        "DELETE FROM edge.v WHERE id = 3",
    ]
    server.pipe("".join(f"{s};\n" for s in statements))
    server.pipe("FLUSH BINARY LOGS;")
    binlog = server.binlog_files()[-2]
    outputs = {}
    for fmt in ("--format=json", "--format=debezium"):
        (status, outputs[fmt], err), printed = both_ways(monkeypatch, [fmt, str(binlog)])
        assert status == 0, err
        assert printed > binlog.stat().st_size / 2, fmt
    # DECIMAL: every stored digit as the server prints it, never str(Decimal)'s exponent form
    assert b'"0.0000000001"' in outputs["--format=json"] and b"1E-10" not in outputs["--format=json"]
    records = [json.loads(line) for line in outputs["--format=debezium"].splitlines()]
    ops = [(r["value"]["op"], r["key"]) for r in records if r["topic"] == "mariabinlog.edge.v"]
    assert ops == [
        ("c", {"id": 1}), ("c", {"id": 2}), ("c", {"id": 3}),
        ("d", {"id": 1}), ("c", {"id": 11}),  # a key change: a delete and a create
        ("u", {"id": 2}), ("u", {"id": 2}),
        ("d", {"id": 2}), ("c", {"id": 20}),
        ("d", {"id": 3}),
    ]
    first, second = [r["value"]["after"] for r in records if r["topic"] == "mariabinlog.edge.v"][:2]
    assert first["dec1"] == "-0.0000012345" and second["dec1"] == "0.0000000001"
    assert first["d"] is None and first["b1"] is True and first["s"] == 'a,b"q,c' and first["t6"] == -3_020_399_999_999


def test_production_shape_stops_inside_a_group(oltp_binlog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--stop-position inside a group: the group is printed up to the event before it."""
    events = list(iter_legacy_events(oltp_binlog.read_bytes()))
    rows = [e for e in events if e.type_code in (23, 24, 25)]
    for e in (rows[len(rows) // 3], rows[2 * len(rows) // 3]):
        assert e.position is not None
        (status, out, err), _ = both_ways(monkeypatch, ["-v", f"--stop-position={e.position + 1}", str(oltp_binlog)])
        assert status == 0, err
        assert f"# at {e.position}\n".encode() in out and f"# at {e.end_position}\n".encode() not in out


@pytest.mark.parametrize("where", ["gtid", "table_map", "rows", "xid"])
def test_production_shape_damaged_inside_a_group(
    oltp_binlog: Path, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flipped byte (CRC checked, and not) and a file cut inside a group print the same as
    event by event: everything before the damage, then the error naming file and offset."""
    data = oltp_binlog.read_bytes()
    code = {"gtid": 162, "table_map": 19, "rows": 24, "xid": 16}[where]
    events = [e for e in iter_legacy_events(data) if e.type_code == code]
    target = events[len(events) // 2]
    assert target.position is not None and target.end_position is not None
    flipped = bytearray(data)
    flipped[target.position + 19] ^= 0x40
    damaged = tmp_path / "flipped.000001"
    damaged.write_bytes(bytes(flipped))
    (status, out, err), _ = both_ways(monkeypatch, ["-v", str(damaged)])
    assert status == 1 and f"offset {target.position}" in err
    both_ways(monkeypatch, ["-v", "--skip-verify-binlog-checksum", str(damaged)])
    both_ways(monkeypatch, ["--format=json", str(damaged)])
    both_ways(monkeypatch, ["--format=json", "--skip-verify-binlog-checksum", str(damaged)])
    both_ways(monkeypatch, ["--format=debezium", str(damaged)])
    cut = tmp_path / "cut.000001"
    cut.write_bytes(data[: target.end_position - 3])
    (status, out, err), _ = both_ways(monkeypatch, ["-v", str(cut)])
    assert status == 1 and str(cut) in err
    both_ways(monkeypatch, ["--format=json", str(cut)])
    both_ways(monkeypatch, ["--format=debezium", str(cut)])


def test_out_of_order_gtid_stops_strict_mode_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator's stop (accept says no) comes before the group, as event by event."""
    files = [str(p) for p in BINLOGS if p.parent.name == "w08_gtid_out_of_order"]
    (status, _, err), _ = both_ways(monkeypatch, ["-v", "--gtid-strict-mode", *files])
    assert status == 1 and "ERROR" in err


# ------------------------------------------------------------------ .ibb files

def _to_ibb(files: list[Path], directory: Path) -> list[str]:
    status, _, err = dump([f"--convert-to-engine-binlog={directory}", *(str(f) for f in files)])
    assert status == 0, err
    return sorted(str(p) for p in directory.glob("*.ibb"))


#: The engine takes GTIDs in order only: the out-of-order workload cannot become `.ibb` files.
IBB_WORKLOADS = sorted({p.parent.name for p in BINLOGS} - {"w08_gtid_out_of_order"})


@pytest.mark.parametrize("workload", IBB_WORKLOADS)
def test_corpus_as_ibb_prints_the_same_both_ways(workload: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`.ibb` groups (no footers, ``# at`` the start position) through the compiled path too."""
    files = _to_ibb([p for p in BINLOGS if p.parent.name == workload], tmp_path / "ibb")
    for options in (["-v"], ["-vv", "--base64-output=decode-rows"], ["--print-row-count=0"]):
        both_ways(monkeypatch, [*options, *files])


def test_production_shape_as_ibb(oltp_binlog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _to_ibb([oltp_binlog], tmp_path / "ibb")
    for options in (["-v"], [], ["--start-position=16384"]):
        (status, out, err), printed = both_ways(monkeypatch, [*options, *files])
        assert status == 0, err
        if not options or options == ["-v"]:
            assert printed > oltp_binlog.stat().st_size * 0.8
