"""``mariabinlog events`` and ``mariabinlog files`` against what a live server showed.

* ``events FILE``: byte for byte the ``SHOW BINLOG EVENTS IN 'FILE'`` output the
  recording server gave (``tests/corpus/events/<workload>/<file>.tsv``, as
  ``mariadb -B`` prints it), for every corpus binlog file.
* ``events`` on `.ibb` files: the same events (types, server ids, Info) as the
  legacy files they were converted from, minus the legacy-only framing events.
* ``files DIR``: SHOW BINARY LOGS for a corpus directory (sizes from the
  manifest README), for a directory with an index file, and for an `.ibb`
  directory written by the engine (pre-allocated empty files not listed).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.listing import ListingSink, as_utf8mb3, batch_escape, binary_logs

from corpus_data import corpus_glob

EVENT_LISTINGS = corpus_glob("events/*/*.tsv")


def run_events(args: list[str]) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(["--skip-gtid-strict-mode", *args], stdout=out, stderr=err, sink=ListingSink)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("listing", EVENT_LISTINGS, ids=[f"{p.parent.name}/{p.stem}" for p in EVENT_LISTINGS])
def test_events_match_show_binlog_events(listing: Path, corpus_dir: Path) -> None:
    binlog = corpus_dir / "binlogs" / listing.parent.name / listing.stem
    status, out, err = run_events([str(binlog)])
    assert status == 0, err
    assert out == listing.read_bytes()


def test_events_command_line(corpus_dir: Path, tool_env: dict[str, str]) -> None:
    """The subcommand itself, with a dump filter: a window of positions of one file."""
    binlog = corpus_dir / "binlogs" / "w08_gtid_out_of_order" / "mysql-bin.000001"
    result = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "events", "--start-position=705", "--stop-position=1377", str(binlog)],
        capture_output=True,
        env=tool_env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    expected = (corpus_dir / "events" / "w08_gtid_out_of_order" / "mysql-bin.000001.tsv").read_bytes().split(b"\n")
    rows = result.stdout.split(b"\n")
    assert rows[0] == expected[0]
    window = [r for r in expected[1:] if r and 705 <= int(r.split(b"\t")[1]) < 1377]
    # check_header prints the Format_description before jumping to the start position.
    assert rows[1].split(b"\t")[2] == b"Format_desc"
    assert [r for r in rows[2:] if r] == window


def test_info_text_conversion() -> None:
    assert as_utf8mb3("abc é 中".encode()) == "abc é 中".encode()
    assert as_utf8mb3("emoji😀!".encode()) == b"emoji????!"
    assert as_utf8mb3(b"latin1 \xe4 x") == b"latin1 ? x"
    assert batch_escape(b"a\tb\nc\\d\0") == b"a\\tb\\nc\\\\d\\0"


def test_events_on_ibb_files(corpus_dir: Path, tmp_path: Path) -> None:
    legacy = sorted((corpus_dir / "binlogs" / "w02_types_full").glob("mysql-bin.*"))
    ibb_dir = tmp_path / "ibb"
    status = dump_main(
        ["--max-binlog-size=65536", f"--convert-to-engine-binlog={ibb_dir}", *map(str, legacy)],
        stdout=io.BytesIO(),
        stderr=io.StringIO(),
    )
    assert status == 0
    ibb_files = [str(ibb_dir / name) for name, _ in binary_logs(str(ibb_dir))]
    assert len(ibb_files) > 1
    status, out, err = run_events(ibb_files)
    assert status == 0, err
    got = [row.split(b"\t") for row in out.split(b"\n")[1:] if row]
    framing = {b"Rotate", b"Gtid_list", b"Binlog_checkpoint", b"Format_desc"}
    expected = []
    for path in legacy:
        rows = (corpus_dir / "events" / "w02_types_full" / f"{path.name}.tsv").read_bytes().split(b"\n")[1:]
        expected += [r.split(b"\t") for r in rows if r and r.split(b"\t")[2] not in framing]
    assert [r[2:4] + r[5:] for r in got if r[2] != b"Format_desc"] == [r[2:4] + r[5:] for r in expected]
    # Positions are those of the commit records (past the header page), shared by a group's events.
    assert all(row[0].startswith(b"binlog-") and int(row[1]) >= 16384 for row in got)
    starts = {}
    for row in got:
        if row[2] == b"Gtid":
            group_pos = row[1]
        starts.setdefault(group_pos, set()).add(row[1]) if row[2] != b"Format_desc" else None
    assert all(len(positions) == 1 for positions in starts.values())


def test_files_legacy_directory(corpus_dir: Path, tmp_path: Path) -> None:
    directory = corpus_dir / "binlogs" / "w01_basic_row"
    assert binary_logs(str(directory)) == [
        ("mysql-bin.000001", 9938),
        ("mysql-bin.000002", 9690),
        ("mysql-bin.000003", 1990),
    ]
    # With an index file (as the server keeps one), its list and order count.
    for path in sorted(directory.iterdir()):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "notes.txt").write_text("not a binlog\n")
    (tmp_path / "mysql-bin.index").write_text("./mysql-bin.000002\n./mysql-bin.000003\n")
    assert binary_logs(str(tmp_path)) == [("mysql-bin.000002", 9690), ("mysql-bin.000003", 1990)]
    os.remove(tmp_path / "mysql-bin.index")
    assert [n for n, _ in binary_logs(str(tmp_path))] == ["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000003"]


def test_files_command_on_ibb_directory(corpus_dir: Path, tmp_path: Path, tool_env: dict[str, str]) -> None:
    ibb_dir = tmp_path / "ibb"
    legacy = sorted((corpus_dir / "binlogs" / "w02_types_full").glob("mysql-bin.*"))
    assert dump_main(
        ["--max-binlog-size=65536", f"--convert-to-engine-binlog={ibb_dir}", *map(str, legacy)],
        stdout=io.BytesIO(),
        stderr=io.StringIO(),
    ) == 0
    result = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "files", str(ibb_dir)], capture_output=True, env=tool_env, check=True
    )
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "Log_name\tFile_size"
    names = [line.split("\t")[0] for line in lines[1:]]
    on_disk = sorted(p.name for p in ibb_dir.glob("binlog-*.ibb"))
    # Every file with data, in order; the engine's pre-allocated next file (there when its
    # background thread got to it before the close) is not a log yet.
    assert names == on_disk[: len(names)] and len(names) >= 4 and len(on_disk) - len(names) in (0, 1)
    for extra in on_disk[len(names) :]:
        assert (ibb_dir / extra).read_bytes()[:4] == b"\0\0\0\0"
    assert all(int(line.split("\t")[1]) == 65536 for line in lines[1:])
    missing = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "files", str(tmp_path / "nope")], capture_output=True, env=tool_env, check=False
    )
    assert missing.returncode == 1 and b"not a directory" in missing.stderr
