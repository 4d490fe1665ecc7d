"""Must-show of issue 17: every long option of the real ``mariadb-binlog --help``, on the
command line and written in an option file, gives what the real tool gives on corpus
files: the same stdout, the same first stderr line and the same exit status.

The option list is parsed from the real tool's ``--help`` when the test runs, so an
option the installed tool gains is tried too (and fails here until it has a value below).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mariadb_server import program

from mariabinlog.tools.dump.help import check_complete
from mariabinlog.tools.dump.options import OPTIONS

HELP_LINE = re.compile(r"^  (?:-(?P<short>.), )?--(?P<name>[a-z0-9-]+)(?P<arg>\[?=(?:name|#)\]?)?", re.M)

#: A value for each option that takes one (inputs, not results: the outputs are compared).
VALUES = {
    "base64-output": "decode-rows",
    "character-sets-dir": "/usr/share/mariadb/charsets",
    "database": "test",
    "default-auth": "mysql_native_password",
    "host": "127.0.0.1",
    "local-load": "/tmp",
    "offset": "3",
    "password": "secret",
    "plugin-dir": "/tmp",
    "port": "3307",
    "protocol": "TCP",
    "result-file": "RESULT",
    "ignore-domain-ids": "1",
    "do-domain-ids": "0",
    "ignore-server-ids": "2",
    "do-server-ids": "1",
    "server-id": "1",
    "set-charset": "utf8mb4",
    "socket": "/nonexistent.sock",
    "ssl-ca": "/nonexistent-ca.pem",
    "ssl-capath": "/nonexistent",
    "ssl-cert": "/nonexistent-cert.pem",
    "ssl-cipher": "AES128-SHA",
    "ssl-key": "/nonexistent-key.pem",
    "ssl-crl": "/nonexistent.crl",
    "ssl-crlpath": "/nonexistent",
    "tls-version": "TLSv1.2",
    "start-datetime": "2000-01-01 00:00:00",
    "start-position": "256",
    "stop-datetime": "2030-01-01 00:00:00",
    "stop-never-slave-server-id": "7",
    "stop-position": "2000",
    "table": "t1",
    "user": "nobody",
    "open-files-limit": "128",
    "binlog-row-event-max-size": "1048576",
    "rewrite-db": "test->renamed",
}
#: Printed differently on purpose: our help and version are ours (exit status still compared).
OWN_TEXT = {"help", "version"}


def real_options() -> list[tuple[str, bool]]:
    """(long option, takes a value) for every option line of the real ``mariadb-binlog --help``."""
    text = subprocess.run([program("mariadb-binlog"), "--no-defaults", "--help"], capture_output=True,
                          text=True, timeout=60, check=True).stdout
    found = [(m["name"], bool(m["arg"])) for m in HELP_LINE.finditer(text)]
    assert len(found) > 50, f"could not parse the option list of mariadb-binlog --help:\n{text[:2000]}"
    return found


def real_tool() -> list[str]:
    """The real tool, started as ``mariadb-binlog`` (its messages name argv[0])."""
    return ["mariadb-binlog"]


def _env_path() -> str:
    """PATH with the real tool's folder first, so ``mariadb-binlog`` is the one the harness found."""
    return os.path.dirname(program("mariadb-binlog")) + os.pathsep + os.environ.get("PATH", "")


def _run(tool: list[str], args: list[str], cwd: Path) -> tuple[bytes, bytes, int, bytes]:
    result = subprocess.run([*tool, *args], capture_output=True, timeout=120, cwd=cwd,
                            env={**os.environ, "TZ": "UTC", "HOME": str(cwd), "PATH": _env_path()}, stdin=subprocess.DEVNULL)
    written = (cwd / "RESULT").read_bytes() if (cwd / "RESULT").exists() else b""
    return result.stdout, result.stderr.split(b"\n", 1)[0], result.returncode, written


def test_every_real_option_on_the_command_line_and_in_an_option_file(corpus_dir: Path, tmp_path: Path) -> None:
    binlog = corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001"
    assert binlog.is_file(), f"{binlog} is missing: the corpus is made by the corpus script"
    ours_names = {name for name, _, _, _ in OPTIONS}
    our_tool = [sys.executable, "-m", "mariabinlog", "dump"]
    differences = []
    for name, takes_value in real_options():
        assert name in ours_names, f"--{name} of the real tool is not an option of mariabinlog dump"
        if takes_value:
            assert name in VALUES, f"--{name} takes a value: give it one in VALUES"
        value = VALUES.get(name)
        arg = f"--{name}={value}" if takes_value else f"--{name}"
        cnf = tmp_path / "my.cnf"
        cnf.write_text(f"[mariadb-binlog]\n{name.replace('-', '_')}" + (f"={value}\n" if takes_value else "\n"))
        for mode, args in (("command line", ["--no-defaults", arg, str(binlog)]),
                           ("option file", [f"--defaults-file={cnf}", str(binlog)])):
            outcomes = []
            for tool in (real_tool(), our_tool):
                work = tmp_path / "work"
                work.mkdir(exist_ok=True)
                (work / "RESULT").unlink(missing_ok=True)
                outcomes.append(_run(tool, args, work))
            real, ours = outcomes
            if name in OWN_TEXT:
                real, ours = real[2:3], ours[2:3]
            if real != ours:
                differences.append(f"--{name} ({mode}):\n  real {real[1:3]!r}\n  ours {ours[1:3]!r}")
    assert not differences, "\n".join(differences)


def test_help_lists_every_option_the_parser_takes() -> None:
    missing, unknown = check_complete()
    assert not missing and not unknown, (missing, unknown)
    text = subprocess.run([sys.executable, "-m", "mariabinlog", "dump", "--help"], capture_output=True, text=True,
                          timeout=60, check=True).stdout
    for name, _ in real_options():
        assert f"--{name}" in text, f"--{name} is missing from mariabinlog dump --help"
    assert "Default options are read from the following files" in text


def test_print_defaults_as_the_real_tool(tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nuser=me\n[mariadb-binlog]\nshort-form\nloose-nothing=1\n[mysql]\nskip-me\n")
    runs = [subprocess.run([*tool, f"--defaults-file={cnf}", "--print-defaults"], capture_output=True, timeout=60,
                           env={**os.environ, "PATH": _env_path()})
            for tool in (real_tool(), [sys.executable, "-m", "mariabinlog", "dump"])]
    assert runs[0].returncode == 0 and b"would have been started" in runs[0].stdout
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)


def test_a_broken_option_file_aborts_as_the_real_tool(tmp_path: Path) -> None:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("short-form\n")
    runs = [subprocess.run([*tool, f"--defaults-file={cnf}", "x"], capture_output=True, timeout=60,
                           env={**os.environ, "PATH": _env_path()})
            for tool in (real_tool(), [sys.executable, "-m", "mariabinlog", "dump"])]
    assert runs[0].returncode == 1
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)


@pytest.mark.parametrize("form", ["skip-print-row-count", "disable-print-row-count", "print-row-count=0",
                                  "print_row_count=OFF", "enable-short-form", "short-form=ON", "loose-short-form",
                                  "loose-no-such-option", "loose-no-such-option=1"])
def test_option_file_forms(form: str, corpus_dir: Path, tmp_path: Path) -> None:
    binlog = corpus_dir / "binlogs" / "w01_basic_row" / "mysql-bin.000001"
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\n{form}\n")
    runs = [subprocess.run([*tool, f"--defaults-file={cnf}", "-v", str(binlog)], capture_output=True, timeout=60,
                           env={**os.environ, "TZ": "UTC", "PATH": _env_path()})
            for tool in (real_tool(), [sys.executable, "-m", "mariabinlog", "dump"])]
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)


def test_each_command_has_its_own_help_and_the_version_says_what_it_follows() -> None:
    from mariabinlog.cli import COMMANDS

    helps = {}
    for command in COMMANDS:
        result = subprocess.run([sys.executable, "-m", "mariabinlog", command.name, "--help"], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, (command.name, result.stderr)
        helps[command.name] = result.stdout
    assert len(set(helps.values())) == len(helps), "two commands print the same help"
    assert "SHOW BINLOG EVENTS" in helps["events"]
    version = subprocess.run([sys.executable, "-m", "mariabinlog", "dump", "--version"], capture_output=True,
                             text=True, timeout=60)
    real = subprocess.run([program("mariadb-binlog"), "--version"], capture_output=True, text=True, timeout=60)
    real_version = real.stdout.split()[2]  # "mariadb-binlog Ver 3.5 for ..."
    assert version.returncode == 0 and f"mariadb-binlog {real_version}" in version.stdout, version.stdout
