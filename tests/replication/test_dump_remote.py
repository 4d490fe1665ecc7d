"""`mariabinlog dump --read-from-remote-server` against a real primary, next to the real tool."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from mariadb_server import MariaDBServer, program
from replication_helpers import REPL_PASSWORD, REPL_USER

ROWS_SQL = (
    "CREATE DATABASE rd; CREATE TABLE rd.t (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(8,2));"
    " INSERT INTO rd.t VALUES (1, 'a', 1.50), (2, 'b', -2.25);"
    " UPDATE rd.t SET v = 'bb' WHERE id = 2; DELETE FROM rd.t WHERE id = 1;"
)
GTID = re.compile(rb"^#.*\bGTID (\d+-\d+-\d+)", re.M)


def _remote(tool: list[str], server: MariaDBServer, *options: str) -> subprocess.CompletedProcess[bytes]:
    args = [
        *tool,
        "--read-from-remote-server",
        "--host=127.0.0.1",
        f"--port={server.port}",
        f"--user={REPL_USER}",
        f"--password={REPL_PASSWORD}",
        "-v",
        "--base64-output=decode-rows",
        *options,
    ]
    return subprocess.run(args, capture_output=True, timeout=60, env={**os.environ, "TZ": "UTC"})


def test_remote_dump_by_gtid_matches_the_real_tool(primary: MariaDBServer) -> None:
    before = primary.rows("SELECT @@gtid_binlog_pos")[0][0] or "0-1-0"
    primary.sql(ROWS_SQL)
    log_name = primary.binlog_files()[-1].name
    real = _remote(
        [program("mariadb-binlog"), "--no-defaults"], primary, f"--start-position={before}", log_name
    )
    ours = _remote([sys.executable, "-m", "mariabinlog", "dump"], primary, f"--start-position={before}", log_name)
    assert real.returncode == 0, real.stderr
    assert ours.returncode == 0, ours.stderr
    real_gtids = GTID.findall(real.stdout)
    assert len(real_gtids) == 5  # CREATE DATABASE, CREATE TABLE, INSERT, UPDATE, DELETE
    assert GTID.findall(ours.stdout) == real_gtids
    real_rows = [line for line in real.stdout.splitlines() if line.startswith(b"###")]
    assert real_rows and [line for line in ours.stdout.splitlines() if line.startswith(b"###")] == real_rows


def _both(server: MariaDBServer, *options: str) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """The real tool and ours, each run once with the same ``-R`` options (no -v: whole output compared)."""

    def run(tool: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*tool, "-R", "--host=127.0.0.1", f"--port={server.port}", f"--user={REPL_USER}",
             f"--password={REPL_PASSWORD}", *options],
            capture_output=True, timeout=60, env={**os.environ, "TZ": "UTC"},
        )

    return run([program("mariadb-binlog"), "--no-defaults"]), run(
        [sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"]
    )


def test_remote_dump_by_file_is_byte_identical(primary: MariaDBServer) -> None:
    """Offsets, stop position and --to-last-log across a rotation: stdout, stderr and status as the real tool."""
    primary.sql("CREATE DATABASE IF NOT EXISTS bf; CREATE TABLE bf.t (id INT PRIMARY KEY, v TEXT);"
                " INSERT INTO bf.t VALUES (1, 'x'), (2, 'y')")
    first = primary.binlog_files()[-1].name
    primary.flush_binlogs()
    primary.sql("INSERT INTO bf.t VALUES (3, 'z')")
    events = primary.binlog_events(first)
    middle = events[len(events) // 2]["Pos"]
    cases = [
        [first],
        [f"--start-position={middle}", first],
        [f"--stop-position={middle}", first],
        ["--to-last-log", first],
        ["--to-last-log", "--base64-output=decode-rows", "-vv", first],
        ["--result-file=/dev/stdout", first],
        ["no-such-file.000009"],
    ]
    for case in cases:
        real, ours = _both(primary, *case)
        assert real.stdout.count(b"# at ") > 0 or real.returncode != 0, case
        assert ours.stdout == real.stdout, case
        assert ours.stderr == real.stderr, case
        assert ours.returncode == real.returncode, case


def test_remote_dump_reports_a_dead_server_as_the_real_tool() -> None:
    def run(tool: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*tool, "-R", "--host=127.0.0.1", "--port=1", "mysql-bin.000001"],
                              capture_output=True, timeout=60)

    real = run([program("mariadb-binlog"), "--no-defaults"])
    ours = run([sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"])
    assert real.returncode == 1 and real.stderr.startswith(b"ERROR: Failed on connect: ")
    assert (ours.returncode, ours.stdout, ours.stderr) == (real.returncode, real.stdout, real.stderr)
