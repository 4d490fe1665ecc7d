"""Conversions both ways: legacy -> `.ibb` (through the engine) -> legacy (MDEV-37605).

* Round trip of every corpus workload: the real ``mariadb-binlog`` prints the
  same event groups for the converted files as for the originals (GTIDs, the
  statements, XA START/COMMIT texts, ``###`` row lines with ``-v`` and ``-vv``,
  the Xid/XA ends), and reads the converted files without a complaint.
* The converted files' structure: names, ``Generated output file`` lines,
  prologue (Format_description, Gtid_list from the page-1 GTID state,
  Binlog_checkpoint), ``log_pos`` of every event = its end offset, rotation
  at restart markers and by ``--max-binlog-size`` without splitting groups.
* The `.ibb` directory the engine wrote passes the offline checker.
* The option combinations the C tool rejects, with its messages.
* Replay: the dump of the `.ibb` files piped into a fresh server reproduces
  the recorded ``CHECKSUM TABLE`` values.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from mariabinlog.codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    ROTATE_EVENT,
    decode_event,
)
from mariabinlog.codec.events.stream import iter_legacy_events
from mariabinlog.engine.check import check_directory
from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.listing import binary_logs

from corpus_data import CORPUS, corpus_glob

WORKLOADS = [p.name for p in corpus_glob("binlogs/*")]
TOOL = shutil.which("mariadb-binlog")
needs_tool = pytest.mark.skipif(TOOL is None, reason="mariadb-binlog is not installed")


def run(args: list[str]) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(args, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def legacy_files(workload: str) -> list[str]:
    return sorted(str(p) for p in (CORPUS / "binlogs" / workload).glob("mysql-bin.*"))


def to_ibb(files: list[str], directory: Path, max_size: int = 65536) -> list[str]:
    status, out, err = run(
        ["--skip-gtid-strict-mode", f"--max-binlog-size={max_size}", f"--convert-to-engine-binlog={directory}", *files]
    )
    assert status == 0, err
    assert out == b""
    return [str(directory / name) for name, _ in binary_logs(str(directory))]


def to_legacy(ibb_files: list[str], base: Path, *options: str) -> tuple[list[str], str]:
    status, out, err = run(["--skip-gtid-strict-mode", "--convert-engine-binlog", "-r", str(base), *options, *ibb_files])
    assert status == 0, err
    assert out == b""
    names = sorted(str(p) for p in base.parent.glob(base.name + ".*"))
    return names, err


def real_tool(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [TOOL, "--no-defaults", "--skip-gtid-strict-mode", *args],  # type: ignore[list-item]
        capture_output=True,
        env={**os.environ, "TZ": "UTC"},
        check=False,
        timeout=300,
    )


_HEADER = re.compile(
    r"^#\d{6} +\d+:\d\d:\d\d server id \d+ +end_log_pos \d+ (?:CRC32 0x[0-9a-f]{8} )?\t(.*)$"
)


def groups_summary(text: str) -> list[tuple[str, str]]:
    """What must survive a conversion, from mariadb-binlog's text: per ``# at`` block the
    GTID line, the statement (Query blocks and the START TRANSACTION / XA START of GTID
    blocks), the ends of groups (Xid, XA PREPARE) and the ``###`` lines."""
    summary = []
    text = text.split("\n# End of log file\n")[0]
    for block in re.split(r"^# at \d+\n", text, flags=re.MULTILINE)[1:]:
        lines = block.split("\n")
        match = _HEADER.match(lines[0])
        kind = match.group(1) if match else lines[0]
        statement = [
            line
            for line in lines[1:]
            if line and not line.startswith(("SET ", "/*", "use ", "#", "DELIMITER", "BINLOG '", "'/*!*/;"))
            and not re.fullmatch(r"[A-Za-z0-9+/=]{1,76}", line)
        ]
        if kind.startswith(("GTID ", "Query", "Xid", "XA PREPARE")):
            summary.append((kind.split("\t")[0].split(" = ")[0], "\n".join(statement)))
        summary += [("row", line) for line in lines if line.startswith("###")]
    return summary


# ---------------------------------------------------------------------------- round trip


#: Every workload converts, XA PREPARE / XA COMMIT groups included (their GTID events are copied whole).
CONVERTIBLE = list(WORKLOADS)


@needs_tool
@pytest.mark.parametrize("workload", CONVERTIBLE)
def test_round_trip_through_ibb(workload: str, tmp_path: Path) -> None:
    original = legacy_files(workload)
    ibb_files = to_ibb(original, tmp_path / "ibb")
    # A small --max-binlog-size makes the bigger workloads rotate over several files.
    converted, err = to_legacy(ibb_files, tmp_path / "conv", "--max-binlog-size=16384")
    assert err.splitlines() == [f"Generated output file: {name}" for name in converted]
    for options in ([], ["-v"], ["-vv", "--base64-output=decode-rows"]):
        before = real_tool(*options, *original)
        after = real_tool(*options, *converted)
        assert after.returncode == 0 and after.stderr == b"", after.stderr
        expected = groups_summary(before.stdout.decode("utf-8", "replace"))
        got = groups_summary(after.stdout.decode("utf-8", "replace"))
        assert got == expected, next((i, e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g)
        assert len(expected) > 5


def test_converted_files_structure(tmp_path: Path) -> None:
    ibb_files = to_ibb(legacy_files("w07_gtid_domains"), tmp_path / "ibb", max_size=65536)
    (tmp_path / "out").mkdir()
    converted, err = to_legacy(ibb_files, tmp_path / "out" / "conv", "--max-binlog-size=4096")
    assert [Path(c).name for c in converted] == [f"conv.{i:06d}" for i in range(1, len(converted) + 1)]
    assert len(converted) >= 3
    state: dict[tuple[int, int], int] = {}
    for index, path in enumerate(converted):
        data = Path(path).read_bytes()
        events = list(iter_legacy_events(data))
        codes = [data[ev.position + 4] for ev in events]  # type: ignore[attr-defined]
        assert codes[:4] == [FORMAT_DESCRIPTION_EVENT, GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT, GTID_EVENT]
        for ev in events:
            start, end = ev.position, ev.end_position  # type: ignore[attr-defined]
            assert struct.unpack_from("<I", data, start + 13)[0] == end  # log_pos = end offset
            assert struct.unpack_from("<I", data, start + 9)[0] == end - start
        fd = decode_event(data, 4)
        assert fd.server_version.startswith("12.") and fd.checksum_alg == 0
        fd_end = events[0].end_position  # type: ignore[attr-defined]
        assert struct.unpack_from("<I", data, fd_end - 4)[0] == zlib.crc32(data[4 : fd_end - 4])
        gtid_list = decode_event(data, events[1].position)  # type: ignore[attr-defined]
        assert {(d, s): n for d, s, n in gtid_list.gtids} == state
        checkpoint = decode_event(data, events[2].position)  # type: ignore[attr-defined]
        assert checkpoint.filename == f"conv.{index + 1:06d}".encode()
        for ev in events:
            if data[ev.position + 4] == GTID_EVENT:  # type: ignore[attr-defined]
                g = decode_event(data, ev.position)  # type: ignore[attr-defined]
                state[(g.domain_id, g.server_id)] = g.seq_no
        if index < len(converted) - 1:
            assert codes[-1] == ROTATE_EVENT
            rotate = decode_event(data, events[-1].position)  # type: ignore[attr-defined]
            assert rotate.next_file == f"conv.{index + 2:06d}".encode() and rotate.next_position == 4
        else:
            assert ROTATE_EVENT not in codes
    # The default base name is legacy_log, in the working directory.
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        status, _, err = run(["--skip-gtid-strict-mode", "--convert-engine-binlog", *ibb_files])
    finally:
        os.chdir(cwd)
    assert status == 0 and err == "Generated output file: legacy_log.000001\n"
    assert (tmp_path / "legacy_log.000001").stat().st_size > 4000


def test_initial_gtid_list_comes_from_the_state_record(tmp_path: Path) -> None:
    ibb_files = to_ibb(legacy_files("w02_types_full"), tmp_path / "ibb", max_size=65536)
    later = ibb_files[3:]
    converted, _ = to_legacy(later, tmp_path / "conv")
    data = Path(converted[0]).read_bytes()
    events = list(iter_legacy_events(data))
    gtid_list = decode_event(data, events[1].position)  # type: ignore[attr-defined]
    first_gtid = next(
        decode_event(data, ev.position) for ev in events if data[ev.position + 4] == GTID_EVENT  # type: ignore[attr-defined]
    )
    # The state before the first group printed from file 3 (groups continuing from file 2 are skipped).
    assert gtid_list.gtids and gtid_list.gtids[-1][2] < first_gtid.seq_no


@needs_tool
def test_restart_marker_starts_a_new_file(tmp_path: Path) -> None:
    """Two servers' binlogs in one `.ibb` stream: the second restart marker rotates."""
    files = legacy_files("w04_statement") + legacy_files("w05_mixed")
    ibb_files = to_ibb(files, tmp_path / "ibb", max_size=1 << 20)
    converted, _ = to_legacy(ibb_files, tmp_path / "conv")
    assert len(converted) == 2
    text = real_tool(converted[0]).stdout.decode()
    assert "Rotate to conv.000002  pos: 4" in text
    second = real_tool(converted[1]).stdout.decode()
    assert "Binlog checkpoint conv.000002" in second and "CREATE DATABASE w05_mixed" in second
    assert "Gtid list [0-1-30]" in second


def test_engine_directory_passes_the_checker(tmp_path: Path) -> None:
    to_ibb(legacy_files("w06_big_trx") + legacy_files("w10_compressed"), tmp_path / "ibb", max_size=65536)
    report = check_directory(str(tmp_path / "ibb"))
    assert report.ok, report.summary()


# ---------------------------------------------------------------------------- rejections

REJECTIONS = [
    ("-R", "ERROR: The --convert-engine-binlog option does not support --read-from-remote-server"),
    ("--raw", "ERROR: The --convert-engine-binlog option cannot be combined with --raw"),
    ("--flashback", "ERROR: The --convert-engine-binlog option cannot be combined with --flashback"),
    (
        "--stop-datetime=2030-01-01 00:00:00",
        "ERROR: The --convert-engine-binlog option cannot be combined with --stop-datetime",
    ),
    ("--stop-position=100000", "ERROR: The --convert-engine-binlog option cannot be combined with --stop-position"),
    (
        "--start-position=0-1-3",
        "ERROR: The --convert-engine-binlog option does not support GTID values for --start-position or --stop-position",
    ),
    (
        "--stop-position=0-1-3",
        "ERROR: The --convert-engine-binlog option does not support GTID values for --start-position or --stop-position",
    ),
    ("--database=x", "ERROR: The --convert-engine-binlog option cannot be combined with --database"),
    ("--do-domain-ids=1", "ERROR: The --convert-engine-binlog option cannot be combined with --do-domain-ids"),
    ("--rewrite-db=a->b", "ERROR: The --convert-engine-binlog option cannot be combined with --rewrite-db"),
]


@pytest.mark.parametrize(("option", "message"), REJECTIONS, ids=[r[0] for r in REJECTIONS])
def test_convert_engine_binlog_rejections(option: str, message: str, tmp_path: Path) -> None:
    ibb = tmp_path / "binlog-000000.ibb"
    ibb.write_bytes(bytes(4 * 16384))
    status, out, err = run(["--convert-engine-binlog", "-r", str(tmp_path / "conv"), option, str(ibb)])
    assert (status, out, err) == (1, b"", message + "\n")
    assert not list(tmp_path.glob("conv.*"))


def test_inputs_of_the_wrong_kind(tmp_path: Path) -> None:
    legacy = legacy_files("w01_basic_row")[:1]
    status, _, err = run(["--convert-engine-binlog", "-r", str(tmp_path / "c"), *legacy])
    assert (status, err) == (1, "ERROR: The --convert-engine-binlog option requires InnoDB-engine binlog input files\n")
    ibb_files = to_ibb(legacy, tmp_path / "ibb")
    status, _, err = run([f"--convert-to-engine-binlog={tmp_path / 'other'}", *ibb_files])
    assert status == 1 and "requires legacy binlog input files" in err
    status, _, err = run([f"--convert-to-engine-binlog={tmp_path / 'ibb'}", *legacy])
    assert status == 1 and "already holds binlog files" in err
    status, _, err = run(["--convert-to-engine-binlog", str(tmp_path / "x"), "--table=t", *legacy])
    assert (status, err) == (1, "ERROR: The --convert-to-engine-binlog option cannot be combined with --table\n")
    status, _, err = run(["--max-binlog-size=100", "--convert-engine-binlog", "-r", str(tmp_path / "m"), *ibb_files])
    assert status == 0
    assert err.splitlines()[0] == "Warning: option 'max-binlog-size': unsigned value 100 adjusted to 4096"


# ---------------------------------------------------------------------------- replay


@pytest.mark.timeout(900)
def test_ibb_dump_replays_to_the_recorded_checksums(
    mariadb_server_factory: object, corpus_dir: Path, tmp_path: Path
) -> None:
    from mariadb_server import CORPUS_OPTIONS

    server = mariadb_server_factory(*CORPUS_OPTIONS, "--skip-log-bin", name="ibb-replay")  # type: ignore[operator]
    for workload in CONVERTIBLE:
        ibb_files = to_ibb(legacy_files(workload), tmp_path / workload, max_size=65536)
        status, out, err = run(["--skip-gtid-strict-mode", *ibb_files])
        assert status == 0, err
        server.pipe(out)
        rows = (corpus_dir / "checksums" / f"{workload}.tsv").read_text().splitlines()
        head = rows[0].split("\t")
        for line in rows[1:]:
            record = dict(zip(head, line.split("\t")))
            db, table = record["table"].split(".", 1)
            checksum = server.checksum_table(f"`{db}`.`{table}`")[f"{db}.{table}"]
            count = server.rows(f"SELECT COUNT(*) FROM `{db}`.`{table}`")[0][0]
            assert (str(checksum), count) == (record["checksum"], record["rows"]), (workload, record)
