"""Diagnostics go through ``logging``: ``mariabinlog -v/-vv/--log-level`` and ``dump --log-level``.

In ``dump``, ``-v`` keeps its mariadb-binlog meaning (row verbosity), so the dump's own
diagnostics are asked for with ``--log-level``; they never change what goes to stdout.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mariabinlog.cli import main as cli_main


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mariabinlog", *args], capture_output=True, env=env, timeout=120, check=False
    )


@pytest.fixture
def binlog(corpus_dir: Path) -> Path:
    path = corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001"
    assert path.is_file(), f"corpus file {path} is missing"
    return path


def test_dump_log_level_debug_adds_diagnostics_on_stderr_only(tool_env: dict[str, str], binlog: Path) -> None:
    plain = _run(tool_env, "dump", "-v", str(binlog))
    debug = _run(tool_env, "dump", "-v", "--log-level=debug", str(binlog))
    assert plain.returncode == debug.returncode == 0
    assert debug.stdout == plain.stdout  # -v is still row verbosity
    assert plain.stderr == b""
    assert f"mariabinlog.tools.dump.dumper: DEBUG: reading '{binlog}'".encode() in debug.stderr


def test_dump_refuses_an_unknown_log_level(tool_env: dict[str, str], binlog: Path) -> None:
    result = _run(tool_env, "dump", "--log-level=loud", str(binlog))
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.startswith(b"ERROR: Unknown log level 'loud'")


@pytest.mark.parametrize(
    ("options", "level"),
    [([], logging.WARNING), (["-v"], logging.INFO), (["-vv"], logging.DEBUG), (["--log-level", "error"], logging.ERROR)],
)
def test_command_line_flags_set_the_mariabinlog_logger_level(
    options: list[str], level: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main([*options, "files", str(tmp_path)]) == 0
    assert logging.getLogger("mariabinlog").getEffectiveLevel() == level
    assert capsys.readouterr().out == "Log_name\tFile_size\n"
    logging.getLogger("mariabinlog.test").error("seen")
    logging.getLogger("mariabinlog.test").debug("only at debug")
    expected = "mariabinlog.test: ERROR: seen\n"
    if level <= logging.DEBUG:
        expected += "mariabinlog.test: DEBUG: only at debug\n"
    assert capsys.readouterr().err == expected
    logging.getLogger("mariabinlog").setLevel(logging.WARNING)
