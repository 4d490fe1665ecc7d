"""Damaged `.ibb` input: a clear error naming the file and the offset, a non-zero exit,
and everything that was valid before the damage printed.

The files are written by the storage engine (a corpus workload converted with
``--convert-to-engine-binlog``, 64 KiB files so that groups and OOB data
cross file boundaries), then damaged: a flipped byte (page CRC), a file cut
in the middle of a page or at a page boundary, a file left out of the
sequence, files named in the wrong order.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from mariabinlog.tools.dump.cli import dump_main
from mariabinlog.tools.listing import binary_logs

PAGE = 16384


def run(args: list[str]) -> tuple[int, bytes, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = dump_main(args, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def engine_files(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ibb") / "binlog"
    legacy = sorted(str(p) for p in (corpus_dir / "binlogs" / "w02_types_full").glob("mysql-bin.*"))
    status, _, err = run(["--max-binlog-size=65536", f"--convert-to-engine-binlog={directory}", *legacy])
    assert status == 0, err
    return directory


@pytest.fixture
def copy(engine_files: Path, tmp_path: Path) -> list[Path]:
    """A private copy of the engine's files (without its redo log): the ones with data, in order."""
    names = [name for name, _ in binary_logs(str(engine_files))]
    assert len(names) >= 5
    for name in names:
        shutil.copy(engine_files / name, tmp_path / name)
    return [tmp_path / name for name in names]


def _assert_valid_prefix(out: bytes, full: bytes) -> None:
    """What was printed is the start of the undamaged dump, up to the damaged event."""
    assert full.startswith(out) and b"DELIMITER /*!*/;\n# at 4\n" in out


def _gtids(out: bytes) -> list[bytes]:
    return re.findall(rb"\tGTID (\d+-\d+-\d+)", out)


def test_undamaged_copy_reads(copy: list[Path]) -> None:
    status, out, err = run(["-v", *map(str, copy)])
    assert (status, err) == (0, "")
    assert len(_gtids(out)) == 35


def test_corrupt_page_crc(copy: list[Path]) -> None:
    _, full, _ = run([*map(str, copy)])
    victim = copy[2]
    data = bytearray(victim.read_bytes())
    data[2 * PAGE + 700] ^= 0x40
    victim.write_bytes(bytes(data))
    status, out, err = run([*map(str, copy)])
    assert status == 1
    assert err.startswith(f"ERROR: Could not read binlog: {victim}, offset {3 * PAGE - 4}: page 2: invalid CRC-32C")
    _assert_valid_prefix(out, full)
    assert 0 < len(_gtids(out)) < len(_gtids(full))


def test_file_cut_inside_a_page(copy: list[Path]) -> None:
    _, full, _ = run([*map(str, copy)])
    victim = copy[3]
    victim.write_bytes(victim.read_bytes()[: 2 * PAGE + 1234])
    status, out, err = run([*map(str, copy)])
    assert status == 1
    assert err == (
        f"ERROR: Could not read binlog: {victim}, offset {2 * PAGE}: file truncated: page 2 has only 1234 of"
        f" {PAGE} bytes (expected a file of whole {PAGE}-byte pages)\n"
    )
    _assert_valid_prefix(out, full)
    assert len(_gtids(out)) < len(_gtids(full))


def test_file_cut_at_a_page_boundary(copy: list[Path]) -> None:
    _, full, _ = run([*map(str, copy)])
    victim = copy[3]
    victim.write_bytes(victim.read_bytes()[: 2 * PAGE])
    status, out, err = run([*map(str, copy)])
    assert status == 1
    assert err.startswith("ERROR: Could not read binlog: ") and str(victim) in err and "offset " in err
    assert f"'{victim}' has only {2 * PAGE} bytes: truncated?" in err
    _assert_valid_prefix(out, full)


def test_missing_middle_file(copy: list[Path]) -> None:
    _, full, _ = run([*map(str, copy)])
    named = copy[:2] + copy[3:]
    status, out, err = run([*map(str, named)])
    assert status == 1
    assert err == (
        f"ERROR: Could not read binlog: {copy[3]}, offset 0: not the next file: binlog-000002.ibb missing"
        f" between file number 1 ('{copy[1]}') and file number 3\n"
    )
    _assert_valid_prefix(out, full)
    # The same when the file is gone from the directory too: the record that
    # continues into it cannot be completed.
    copy[2].unlink()
    status, out, err = run([*map(str, named)])
    assert status == 1 and f"{copy[2]} does not exist" in err and "offset" in err
    _assert_valid_prefix(out, full)


def test_files_in_the_wrong_order(copy: list[Path]) -> None:
    _, full, _ = run([*map(str, copy)])
    named = [copy[0], copy[2], copy[1], *copy[3:]]
    status, out, err = run([*map(str, named)])
    assert status == 1
    assert err == (
        f"ERROR: Could not read binlog: {copy[2]}, offset 0: out of order: file number 2 named after file"
        f" number 0 ('{copy[0]}'); name the files in ascending order\n"
    )
    _assert_valid_prefix(out, full)
    status, _, err = run([str(copy[1]), str(copy[0])])
    assert status == 1 and "out of order: file number 0 named after file number 1" in err
