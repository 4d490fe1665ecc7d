"""``mariabinlog dump`` against the real ``mariadb-binlog``: whole outputs, byte for byte.

1. Every corpus manifest entry: stdout equals the golden stdout exactly (not only
   the GTID and ``###`` lines compare.py checks), stderr equals the golden
   stderr and the exit status matches.  All entries are deterministic; none is
   excluded.
2. Options the corpus does not record (``-s``, ``-H``, ``-d``, ``-T``,
   ``--rewrite-db``, datetimes, ``--flashback`` ...) against the installed tool,
   when there is one.
3. Bad input: truncated file, bit-flipped event (CRC), wrong magic, missing or
   empty file: a message naming the file and the offset, a non-zero exit, and
   everything valid before the damage printed.
4. `.ibb` files written from a corpus binlog's events print the same groups.
"""

from __future__ import annotations

import gzip
import io
import os
import shlex
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from mariabinlog.codec.ibb import CommitRecord, GtidState, PageWriter, RecordType
from mariabinlog.codec.events.stream import iter_legacy_events
from mariabinlog.engine.files import IbbDirectory, binlog_name, ibb_file_no
from mariabinlog.errors import FlashbackError
from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.printer.rowsizes import flashback_rows

from corpus_data import CORPUS, corpus_path
TOOL = shutil.which("mariadb-binlog")


def _manifest() -> list[dict[str, str]]:
    path = corpus_path("manifest.tsv")
    lines = [
        line.rstrip("\n")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def _golden(rel: str) -> bytes:
    path = CORPUS / rel
    if not path.exists():
        path = CORPUS / (rel + ".gz")
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


@pytest.fixture(autouse=True)
def _utc(utc: None) -> None:
    """Every test here reads header comment times in UTC (conftest's ``utc``)."""


def run_dump(args: list[str]) -> tuple[int, bytes, str]:
    out = io.BytesIO()
    err = io.StringIO()
    status = dump_main(args, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------- 1. corpus


ENTRIES = _manifest()


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_manifest_entry_full_text(entry: dict[str, str], corpus_dir: Path) -> None:
    files = [str(corpus_dir / f) for f in entry["files"].split()]
    status, out, err = run_dump(shlex.split(entry["options"]) + files)
    golden = _golden(entry["golden"])
    assert out == golden, _first_difference(golden, out)
    assert err == (corpus_dir / entry["stderr"]).read_text()
    assert status == int(entry["exit_code"])


def _first_difference(expected: bytes, got: bytes) -> str:
    a, b = expected.split(b"\n"), got.split(b"\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {i + 1}: expected {x[:200]!r}, got {y[:200]!r}"
    return f"expected {len(a)} lines, got {len(b)}"


# ---------------------------------------------------------------------------- 2. other options

EXTRA_RUNS = [
    ("-s", ["w01_basic_row/mysql-bin.000001"]),
    ("-s -v", ["w04_statement/mysql-bin.000001"]),
    ("-H", ["w01_basic_row/mysql-bin.000001"]),
    ("-H -v", ["w10_compressed/mysql-bin.000001"]),
    ("--skip-annotate-row-events -v", ["w05_mixed/mysql-bin.000001"]),
    ("--base64-output=never -vv", ["w02_types_full/mysql-bin.000002"]),
    (
        "--skip-print-row-count --skip-print-row-event-positions",
        ["w01_basic_row/mysql-bin.000002"],
    ),
    ("-d w01_basic", ["w01_basic_row/mysql-bin.000001"]),
    ("-d other", ["w01_basic_row/mysql-bin.000001"]),
    ("-T audit -v", ["w01_basic_row/mysql-bin.000001"]),
    ("-T inno", ["w01_basic_row/mysql-bin.000001"]),
    ("--rewrite-db=w04_stmt->renamed -v", ["w04_statement/mysql-bin.000001"]),
    ("--rewrite-db=w01_basic->zz", ["w01_basic_row/mysql-bin.000001"]),
    # The rows of a renamed map name the new database too (they named the old one).
    ("--rewrite-db=w01_basic->zz -v", ["w01_basic_row/mysql-bin.000001"]),
    ("--rewrite-db=w01_basic->zz -vv --flashback", ["w01_basic_row/mysql-bin.000001"]),
    ("-o 7", ["w01_basic_row/mysql-bin.000001"]),
    ("--set-charset=latin1 -D", ["w04_statement/mysql-bin.000002"]),
    (
        "--start-datetime='2023-11-14 22:13:40' --stop-datetime='2023-11-14 22:14:30'",
        ["w01_basic_row/mysql-bin.000001", "w01_basic_row/mysql-bin.000002"],
    ),
    (
        "--start-position=1652 --stop-position=99999999",
        ["w01_basic_row/mysql-bin.000001", "w01_basic_row/mysql-bin.000002"],
    ),
    ("--start-position=99999", ["w01_basic_row/mysql-bin.000001"]),
    (
        "--base64-output=decode-rows --start-position=1652",
        ["w01_basic_row/mysql-bin.000001"],
    ),
    ("--print-table-metadata", ["w03_types_minimal/mysql-bin.000002"]),
    ("-v", ["w09_xa/mysql-bin.000001", "w11_checksum_none/mysql-bin.000001"]),
    ("--flashback", ["w01_basic_row/mysql-bin.000003"]),
    ("--flashback -v", ["w05_mixed/mysql-bin.000001"]),
    ("--flashback", ["w10_compressed/mysql-bin.000002"]),
    (
        "--flashback -vv --base64-output=decode-rows",
        ["w02_types_full/mysql-bin.000001"],
    ),
    (
        "--flashback --start-position=0-1-3 --stop-position=0-1-9 -v",
        ["w09_xa/mysql-bin.000001"],
    ),
    (
        "--flashback",
        ["w03_types_minimal/mysql-bin.000002"],
    ),  # MINIMAL update images: the tool gives up
    ("--st=4", ["w01_basic_row/mysql-bin.000001"]),
    ("--foo", ["w01_basic_row/mysql-bin.000001"]),
    ("--base64-output=always", ["w01_basic_row/mysql-bin.000001"]),
    ("--rewrite-db=abc", ["w01_basic_row/mysql-bin.000001"]),
]


@pytest.mark.skipif(TOOL is None, reason="mariadb-binlog is not installed")
@pytest.mark.parametrize(
    ("options", "files"), EXTRA_RUNS, ids=[f"{o} {' '.join(f)}" for o, f in EXTRA_RUNS]
)
def test_matches_real_tool(options: str, files: list[str], corpus_dir: Path) -> None:
    paths = [str(corpus_dir / "binlogs" / f) for f in files]
    args = shlex.split(options) + paths
    real = subprocess.run(
        [TOOL, "--no-defaults", *args],  # type: ignore[list-item]
        capture_output=True,
        check=False,
        env={**os.environ, "TZ": "UTC"},
        timeout=120,
    )
    status, out, err = run_dump(args)
    assert out == real.stdout, _first_difference(real.stdout, out)
    assert err == real.stderr.decode().replace(f"{TOOL}: ", "mariadb-binlog: ")
    assert status == real.returncode


# ---------------------------------------------------------------------------- 3. bad input


@pytest.fixture
def sample(corpus_dir: Path) -> Path:
    return corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001"


def _event_starts(data: bytes) -> list[int]:
    return [ev.position for ev in iter_legacy_events(data)]  # type: ignore[misc]


def test_truncated_file(sample: Path, tmp_path: Path) -> None:
    data = sample.read_bytes()
    starts = _event_starts(data)
    cut_event = starts[len(starts) // 2]
    bad = tmp_path / "truncated-bin.000001"
    bad.write_bytes(data[: cut_event + 30])
    status, out, err = run_dump([str(bad)])
    _, full, _ = run_dump([str(sample)])
    assert status != 0
    assert str(bad) in err and f"offset {cut_event}" in err and "truncated" in err
    assert full.startswith(out) and b"# at %d\n" % starts[len(starts) // 2 - 1] in out


def test_bit_flipped_event_fails_its_crc(sample: Path, tmp_path: Path) -> None:
    data = bytearray(sample.read_bytes())
    starts = _event_starts(bytes(data))
    victim = starts[18]  # a Write_rows event
    assert data[victim + 4] == 23
    data[starts[19] - 10] ^= 0x10  # inside its row image
    bad = tmp_path / "flipped-bin.000001"
    bad.write_bytes(bytes(data))
    status, out, err = run_dump([str(bad)])
    _, full, _ = run_dump([str(sample)])
    assert status != 0
    assert str(bad) in err and f"offset {victim}" in err and "crc" in err.lower()
    assert full.startswith(out) and b"# at %d\n" % starts[17] in out
    # Checksum verification can be switched off (the C tool's default).
    status, _, _ = run_dump(["--skip-verify-binlog-checksum", str(bad)])
    assert status == 0


def test_wrong_magic(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-binlog"
    bad.write_bytes(b"hello, world\n")
    status, out, err = run_dump([str(bad)])
    assert status == 1
    assert "not a binary log file" in err and str(bad) in err and "offset 0" in err
    assert out.endswith(b"DELIMITER /*!*/;\n")


def test_missing_and_empty_files(tmp_path: Path, sample: Path) -> None:
    missing = tmp_path / "nope-bin.000009"
    status, out, err = run_dump([str(sample), str(missing)])
    assert status == 1
    assert f"File '{missing}' not found" in err
    assert b"Rotate to mysql-bin.000002" in out  # the first file was printed whole
    empty = tmp_path / "empty-bin.000001"
    empty.write_bytes(b"")
    status, _, err = run_dump([str(empty)])
    assert status == 1 and str(empty) in err and "empty file" in err


def test_garbage_after_valid_events(sample: Path, tmp_path: Path) -> None:
    data = sample.read_bytes()
    bad = tmp_path / "garbage-bin.000001"
    bad.write_bytes(data + b"\x00" * 7)
    status, out, err = run_dump([str(bad)])
    assert status == 1 and f"offset {len(data)}" in err and str(bad) in err
    assert b"Rotate to mysql-bin.000002" in out


def _in_use_copy(sample: Path, target: Path, keep: int | None) -> Path:
    """``sample`` with LOG_EVENT_BINLOG_IN_USE_F set on its Format_description.

    The CRC stays: a server checksums its Format_description without that flag
    (``mariadb-binlog --verify-binlog-checksum`` accepts exactly that).
    """
    data = bytearray(sample.read_bytes())
    struct.pack_into("<H", data, 4 + 17, struct.unpack_from("<H", data, 4 + 17)[0] | 1)
    target.write_bytes(bytes(data[:keep]))
    return target


def test_in_use_binlog_ends_quietly_at_damage(sample: Path, tmp_path: Path) -> None:
    """A binlog not closed properly: a torn last event is its end (exit 0), as the tool does."""
    data = sample.read_bytes()
    cut = _event_starts(data)[40] + 20
    path = _in_use_copy(sample, tmp_path / "active-bin.000001", cut)
    status, out, err = run_dump([str(path)])
    assert status == 0
    assert (
        b"# Warning: this binlog is either in use or was not closed properly.\n" in out
    )
    assert "'Event truncated'" in err
    assert out.endswith(b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n")
    if TOOL is not None:
        real = subprocess.run(
            [TOOL, "--no-defaults", str(path)],
            capture_output=True,
            check=False,
            env={**os.environ, "TZ": "UTC"},
        )
        assert (status, out, err) == (
            real.returncode,
            real.stdout,
            real.stderr.decode(),
        )


def test_standard_input(sample: Path) -> None:
    import sys

    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(sample.read_bytes()))
    try:
        status, out, _ = run_dump(["-"])
    finally:
        sys.stdin = saved
    assert status == 0
    assert out == run_dump([str(sample)])[1]


# ---------------------------------------------------------------------------- 4. .ibb


def _ibb_from_legacy(legacy: Path, directory: Path, pages_per_file: int) -> list[Path]:
    """Write the GTID groups of a legacy binlog as `.ibb` COMMIT records (events without CRC)."""
    data = legacy.read_bytes()
    fd = b""
    groups: list[list[bytes]] = []
    for ev in iter_legacy_events(data):
        raw = bytearray(data[ev.position : ev.end_position])  # type: ignore[misc]
        code = raw[4]
        if code == 15:  # the restart-marker FD: checksum OFF, log_pos 0
            raw[-5] = 0
            raw[13:17] = bytes(4)
            fd = bytes(raw)
            continue
        if code in (
            4,
            161,
            163,
        ):  # Rotate, Binlog_checkpoint, Gtid_list: not in .ibb files
            continue
        raw = raw[:-4]
        raw[9:13] = struct.pack("<I", len(raw))
        raw[13:17] = bytes(4)
        if code == 162:
            groups.append([])
        groups[-1].append(bytes(raw))
    writer = PageWriter(
        0,
        pages_per_file=pages_per_file,
        state_payload=lambda f, p: GtidState(()).encode(),
    )
    files: dict[int, dict[int, bytes]] = {}

    def collect() -> None:
        for page in writer.drain():
            files.setdefault(page.file_no, {})[page.page_no] = page.data

    writer.write_record(RecordType.COMMIT, CommitRecord((), fd).encode())
    for group in groups:
        writer.write_record(
            RecordType.COMMIT, CommitRecord((), b"".join(group)).encode()
        )
        collect()
    partial = writer.partial_page()
    if partial is not None:
        files.setdefault(partial.file_no, {})[partial.page_no] = partial.data
    paths = []
    for file_no, pages in sorted(files.items()):
        path = directory / binlog_name(file_no)
        path.write_bytes(
            b"".join(pages.get(i, bytes(16384)) for i in range(max(max(pages) + 1, 4)))
        )
        paths.append(path)
    return paths


def _groups_text(out: bytes) -> list[bytes]:
    """Lines that must agree between legacy and `.ibb` dumps (positions, CRCs, base64 dropped)."""
    keep = []
    for line in out.split(b"\n"):
        if line.startswith(
            (
                b"# at",
                b"DELIMITER",
                b"/*M!100101",
                b"/*M!100001 SET @@session.gtid_domain",
                b"/*M!100001 SET @@session.server_id",
            )
        ):
            continue
        if line and all(
            c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
            for c in line
        ):
            continue
        if (
            b"Gtid list" in line
            or b"Binlog checkpoint" in line
            or b"Rotate to" in line
            or line.startswith(b"# 0-")
        ):
            continue
        if line in (b"BINLOG '", b"'/*!*/;"):
            continue
        if b" end_log_pos " in line:
            line = line.split(b" end_log_pos ")[0] + b"\t" + line.split(b"\t", 1)[1]
        keep.append(line)
    return keep


def test_ibb_stream_prints_the_legacy_groups(corpus_dir: Path, tmp_path: Path) -> None:
    legacy = corpus_dir / "binlogs" / "w02_types_full" / "mysql-bin.000001"
    paths = _ibb_from_legacy(legacy, tmp_path, pages_per_file=6)
    assert len(paths) > 2  # a large group continues over several files
    status, out, err = run_dump(["-vv", *map(str, paths)])
    assert status == 0, err
    _, ref, _ = run_dump(["-vv", str(legacy)])
    assert _groups_text(out) == _groups_text(ref)
    assert b"end_log_pos 0 \tGTID 0-1-1 ddl" in out and b"# at 4\n" in out


def test_ibb_file_alone_skips_foreign_records(corpus_dir: Path, tmp_path: Path) -> None:
    legacy = corpus_dir / "binlogs" / "w02_types_full" / "mysql-bin.000001"
    paths = _ibb_from_legacy(legacy, tmp_path, pages_per_file=6)
    status, out, _ = run_dump([str(paths[1])])  # only continuation chunks start there
    assert status == 0 and b"GTID" not in out
    status, out, _ = run_dump(
        ["--start-position=0-1-20", "--stop-position=0-1-21", *map(str, paths)]
    )
    assert status == 0
    assert [
        line.split(b"\t")[1] for line in out.split(b"\n") if b"\tGTID " in line
    ] == [b"GTID 0-1-21 trans"]


def test_empty_preallocated_ibb_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / binlog_name(3)
    path.write_bytes(bytes(4 * 16384))
    status, out, err = run_dump([str(path)])
    assert (
        status == 0
        and err == ""
        and out.endswith(b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n")
    )


def test_ibb_directory_page_source(corpus_dir: Path, tmp_path: Path) -> None:
    paths = _ibb_from_legacy(
        corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001", tmp_path, 4
    )
    assert ibb_file_no(str(paths[0])) == 0 and ibb_file_no("mysql-bin.000001") is None
    with IbbDirectory(str(tmp_path)) as source:
        assert bytes(source.page(0, 0)[:4]) == b"\xfe\xfe\x0d\x01"  # type: ignore[index]
        assert source.page(0, 4) is None and source.page(9, 0) is None
        assert source.name(0) == str(tmp_path / "binlog-000000.ibb")
        assert source.size(0) == 4 * 16384


def test_flashback_of_a_row_image_of_no_bytes_is_the_tools_error() -> None:
    """A Rows event whose column bitmap names no column has row images of no bytes (no NULL
    bitmap, no value); ``--flashback`` stops with the real tool's "Error row length: 0"
    instead of measuring empty rows forever (a hang found by the suite's `dump` fuzzing;
    the input is ``fuzz/crashes/dump/flashback-row-image-of-no-bytes``)."""
    for update in (False, True):
        with pytest.raises(FlashbackError):
            flashback_rows((4, 4), update, 2, b"\x00", None, b"\x01" * 16, 0, 16)
    # a bitmap naming a column measures a row as before
    row = b"\x00" + b"\x07\x00\x00\x00"
    assert flashback_rows((4,), False, 1, b"\x01", None, row * 2, 0, 10) == row * 2


def test_a_rows_column_count_whose_bitmap_passes_the_event_is_invalid() -> None:
    """The server's reader refuses a Rows event whose column bitmap would end past the event
    ("Found invalid event"); a count of 2^64 - 1 reached the compiled row counter as an
    ``OverflowError`` (found by fuzzing: ``fuzz/crashes/dump/rows-column-count-past-the-event``)."""
    from mariabinlog.codec.events.rows import rows_bitmaps
    from mariabinlog.errors import DecodeError

    width_max = b"\xfe" + b"\xff" * 8
    with pytest.raises(DecodeError, match="runs past the event"):
        rows_bitmaps(width_max + b"\x00" * 32, 0, False, 41)
    with pytest.raises(DecodeError):
        rows_bitmaps(b"\x10\xff", 0, False, 2)  # 16 columns: two bitmap bytes, one there
    assert rows_bitmaps(b"\x10\xff\xff", 0, False, 3) == (16, b"\xff\xff", None, 3)
    assert rows_bitmaps(b"\x08\x01\x02\x00", 0, True, 4) == (8, b"\x01", b"\x02", 3)
    with pytest.raises(DecodeError, match="runs past the event"):
        rows_bitmaps(b"\x08\x01\x02\x00", 0, True, 2)  # an update's after-image bitmap too


def test_the_decoder_frames_a_rows_event_within_the_event() -> None:
    """The codec's event decoder reads a rows event's bitmaps with ``rows_bitmaps``, the text
    printer's framing: a bitmap running past the event is invalid even when the bytes after
    the event (the next event's) would supply it."""
    from mariabinlog.codec.events import DecodeContext, decode_event
    from mariabinlog.errors import DecodeError

    body = b"\x2a\x00\x00\x00\x00\x00\x01\x00" + b"\x10"  # Write_rows_v1: table 42, 16 columns
    header = struct.pack("<IBIIIH", 0, 23, 1, 19 + len(body) + 2, 0, 0)
    event = header + body + b"\xff\xff"
    assert decode_event(event, 0, len(event), DecodeContext()).width == 16
    with pytest.raises(DecodeError, match="runs past the event"):
        decode_event(event + b"\xff" * 8, 0, len(event) - 1, DecodeContext())


def test_a_rows_event_that_ends_before_its_post_header_is_invalid() -> None:
    """A Rows event whose body is shorter than its post-header (table id and flags) is invalid
    to the server's reader; ``rows_head`` read on into the next bytes, and ``--flashback``,
    which rewrites the flags in the event's own bytes, died with ``struct.error`` (found by
    the dump fuzz target, stop 37; its input was lost, libFuzzer's alarm fired while the
    traceback printed)."""
    from mariabinlog.codec.events.rows import rows_head
    from mariabinlog.errors import TruncatedError

    head = b"\x2a\x00\x00\x00\x00\x00" + b"\x01\x00"  # table id 42, STMT_END_F
    assert rows_head(head + b"\xee" * 4, 0, 8, 8) == (42, 1, 6)
    assert rows_head(head[:4] + head[6:], 0, 6, 6) == (42, 1, 4)  # 4-byte table ids
    for end in (0, 5, 7):
        with pytest.raises(TruncatedError, match="rows event post-header"):
            rows_head(head + b"\xee" * 4, 0, 8, end)
    with pytest.raises(TruncatedError):
        rows_head(head, 0, 6, 5)
