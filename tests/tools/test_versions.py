"""Every binlog the real ``mariadb-binlog`` reads: the ones MariaDB ships in its test data.

Debian's ``mariadb-test-data`` (installed by ``scripts/setup.sh``) holds binlogs written by
MySQL 4.0 to 8.0 and MariaDB 5.5 to 10.6, some of them damaged on purpose.  They are found
by their magic (``\\xfebin``), never by a list of names, and nothing of them is copied into
this repository.

1. ``mariabinlog dump`` against the installed ``mariadb-binlog --no-defaults`` (TZ=UTC) in
   six modes: stdout and exit status equal.  Cases still known to differ are listed in
   ``KNOWN_DIFFERENT`` and run as strict xfails, so a fix that makes one equal fails the
   test until the entry is removed.
2. The other readers (``--format=json``, ``events``, conversion to ``.ibb``) on the same
   files: a result or a clear refusal, never a traceback.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mariabinlog.codec.events import RowsEvent, reframe
from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events
from mariabinlog.errors import MariabinlogError
from mariabinlog.tools.dump.cli import dump_main

TEST_DATA = Path("/usr/share/mysql/mysql-test")
MAGIC = b"\xfebin"
TOOL = shutil.which("mariadb-binlog")
MISSING = (
    f"no binlog file found under {TEST_DATA}: the Debian package mariadb-test-data is missing;"
    " `bash scripts/setup.sh` installs it"
)

MODES: dict[str, list[str]] = {
    "plain": [],
    "v": ["-v"],
    "vv": ["-vv", "--base64-output=decode-rows"],
    "hexdump": ["--hexdump"],
    "short-form": ["--short-form"],
    "flashback": ["--flashback"],
}

#: (file below TEST_DATA, mode) pairs whose output still differs from the real tool's.
#: Listed by file; see docs/versions.md for what each lacks.
_ALL = frozenset(MODES)
_DIFFERENT_FILES: dict[str, frozenset[str]] = {
    # MySQL 5.1.15-5.1.17's pre-GA rows events under --flashback: the real tool crashes
    # (SIGSEGV) on the first two and rewrites the third's events in ways not followed here.
    "suite/binlog/std_data/ver_5_1-telco.001": frozenset({"flashback"}),
    "suite/binlog/std_data/ver_5_1_17.001": frozenset({"flashback"}),
    "suite/binlog/std_data/bug32407.001": frozenset({"flashback"}),
}
KNOWN_DIFFERENT = frozenset((name, mode) for name, modes in _DIFFERENT_FILES.items() for mode in modes)


def _binlogs() -> list[Path]:
    """Every file under TEST_DATA that starts with the binlog magic."""
    found = []
    for root, _dirs, files in os.walk(TEST_DATA):
        for name in files:
            path = Path(root) / name
            try:
                with path.open("rb") as handle:
                    if handle.read(4) == MAGIC:
                        found.append(path)
            except OSError:
                continue
    return sorted(found)


BINLOGS = _binlogs()


def _name(path: Path | None) -> str:
    return "missing" if path is None else str(path.relative_to(TEST_DATA))


def _cases() -> Iterator[object]:
    if not BINLOGS:
        yield pytest.param(None, "plain", id="mariadb-test-data-missing")
        return
    for path in BINLOGS:
        for mode in MODES:
            marks = []
            if (_name(path), mode) in KNOWN_DIFFERENT:
                marks.append(pytest.mark.xfail(strict=True, reason="known difference (docs/versions.md)"))
            yield pytest.param(path, mode, id=f"{_name(path)}:{mode}", marks=marks)


@pytest.fixture()
def utc() -> Iterator[None]:
    """The dump's local times in UTC, as the real tool runs with TZ=UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def _need_data(path: Path | None) -> Path:
    if path is None:
        pytest.fail(MISSING)
    if TOOL is None:
        pytest.fail("mariadb-binlog is not installed: `bash scripts/setup.sh` installs mariadb-client")
    return path


def test_the_test_data_holds_the_binlogs_of_issue_18() -> None:
    """35 binlog files in MariaDB 10.11's test data (a smaller count means a broken install)."""
    assert len(BINLOGS) >= 35, MISSING


@pytest.mark.parametrize(("path", "mode"), list(_cases()))
def test_dump_equals_the_real_tool(
    path: Path | None, mode: str, utc: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdout and exit status of ``mariabinlog dump`` equal ``mariadb-binlog``'s."""
    binlog = _need_data(path)
    args = MODES[mode]
    # LOAD DATA events make both tools rebuild their files in TMPDIR (and print the
    # names): the same private, empty directory for each.
    load_dir = tmp_path / "load"
    load_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(load_dir))
    real = subprocess.run(
        [TOOL, "--no-defaults", *args, str(binlog)],
        capture_output=True,
        check=False,
        env={**os.environ, "TZ": "UTC"},
        timeout=120,
    )
    real_files = {p.name: p.read_bytes() for p in load_dir.iterdir()}
    for leftover in load_dir.iterdir():
        leftover.unlink()
    out = io.BytesIO()
    err = io.StringIO()
    status = dump_main([*args, str(binlog)], stdout=out, stderr=err)
    assert status == real.returncode, err.getvalue()
    assert out.getvalue() == real.stdout
    assert {p.name: p.read_bytes() for p in load_dir.iterdir()} == real_files


@pytest.mark.parametrize("path", BINLOGS or [None], ids=[_name(p) for p in BINLOGS] or ["mariadb-test-data-missing"])
def test_every_reader_reads_or_refuses_clearly(path: Path | None, tmp_path: Path, tool_env: dict[str, str]) -> None:
    """The codec's event stream (what the Spark source and replication read), JSON output,
    the event listing and conversion to .ibb: a result or a typed error, no traceback."""
    binlog = _need_data(path)
    decoder = EventStreamDecoder()
    try:
        for event in iter_legacy_events(binlog.read_bytes(), decoder=decoder):
            if isinstance(event, RowsEvent):
                decoder.table_map_for(event)
    except MariabinlogError as exc:
        assert exc.offset is not None, str(exc)
    out = io.BytesIO()
    err = io.StringIO()
    status = dump_main(["--format=json", str(binlog)], stdout=out, stderr=err)
    assert status == 0 or "ERROR" in err.getvalue(), err.getvalue()
    listing = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "events", str(binlog)],
        capture_output=True,
        check=False,
        env=tool_env,
        timeout=120,
    )
    assert b"Traceback" not in listing.stderr, listing.stderr.decode(errors="replace")
    assert listing.returncode in (0, 1)
    target = tmp_path / "ibb"
    try:
        status = dump_main(
            [f"--convert-to-engine-binlog={target}", "--max-binlog-size=1048576", str(binlog)],
            stdout=io.BytesIO(),
            stderr=(err := io.StringIO()),
        )
        # A file without GTID groups (before MariaDB 10.0, or MySQL) cannot become .ibb: refused by name.
        assert status == 0 or "cannot be converted" in err.getvalue() or "ERROR" in err.getvalue(), err.getvalue()
    finally:
        shutil.rmtree(target, ignore_errors=True)


@pytest.mark.parametrize("type_code", [28, 29, 36, 37, 39, 41, 33, 34, 35])
def test_ignorable_events_are_named_as_the_tool_names_them(
    type_code: int, utc: None, tmp_path: Path
) -> None:
    """MySQL-only events flagged ignorable (and MySQL's GTID events, flagged or not) print as
    ``# Ignorable event type N (name)`` with the real tool's names."""
    sources = [p for p in BINLOGS if p.name == "mdev-39404-binlog.000001"]
    binlog = _need_data(sources[0] if sources else None)
    data = binlog.read_bytes()
    fd_end = 4 + int.from_bytes(data[4 + 9 : 4 + 13], "little")
    flags = 0 if type_code in (33, 34, 35) else 0x80
    body = b"\x00" * 8
    header = (1700000000).to_bytes(4, "little") + bytes((type_code,)) + (1).to_bytes(4, "little")
    event = header + (19 + len(body)).to_bytes(4, "little") + (0).to_bytes(4, "little") + flags.to_bytes(2, "little") + body
    path = tmp_path / "ignorable-bin.000001"
    path.write_bytes(data[:fd_end] + reframe(event, log_pos=fd_end + len(event) + 4, checksum=True))
    real = subprocess.run(
        [TOOL, "--no-defaults", str(path)], capture_output=True, check=False, env={**os.environ, "TZ": "UTC"}, timeout=60
    )
    out = io.BytesIO()
    status = dump_main([str(path)], stdout=out, stderr=io.StringIO())
    assert (status, out.getvalue()) == (real.returncode, real.stdout)
