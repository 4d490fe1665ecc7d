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


def test_remote_dump_refuses_offsets_and_reports_a_dead_server(primary: MariaDBServer) -> None:
    ours = _remote([sys.executable, "-m", "mariabinlog", "dump"], primary, "--start-position=4", "mysql-bin.000001")
    assert ours.returncode != 0 and b"by GTID only" in ours.stderr
    dead = subprocess.run(
        [sys.executable, "-m", "mariabinlog", "dump", "-R", "--host=127.0.0.1", "--port=1", "--start-position=0-1-1"],
        capture_output=True,
        timeout=60,
    )
    assert dead.returncode != 0 and dead.stderr
