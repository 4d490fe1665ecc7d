"""`mariabinlog dump --read-from-remote-server` against a real primary, next to the real tool."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from mariadb_server import MariaDBServer, MariaDBServerFactory, program
from replication_helpers import PRIMARY_OPTIONS, REPL_PASSWORD, REPL_USER, create_repl_user

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
    """Offsets, GTIDs, stop positions and --to-last-log across a rotation: stdout, stderr and
    status as the real tool."""
    before = primary.rows("SELECT @@gtid_binlog_pos")[0][0] or "0-1-0"
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
        ["--to-last-log", f"--start-position={middle}", first],
        ["--result-file=/dev/stdout", first],
        [f"--start-position={before}", first],
        [f"--start-position={before}", "--to-last-log", "-v", "--base64-output=decode-rows", first],
        ["no-such-file.000009"],
    ]
    for case in cases:
        real, ours = _both(primary, *case)
        assert real.stdout.count(b"# at ") > 0 or real.returncode != 0, case
        assert ours.stdout == real.stdout, case
        assert ours.stderr == real.stderr, case
        assert ours.returncode == real.returncode, case


def test_remote_dump_of_several_files_and_of_domains_across_a_rotation(primary: MariaDBServer) -> None:
    """Each named file in turn on its own connection (--start-position for the first,
    --stop-position for the last), and a domain filter over a --to-last-log stream: the
    Format_description of the next file stays off after a group the filter turned off.
    Both printed only the first file, or that Format_description, before."""
    before = primary.rows("SELECT @@gtid_binlog_pos")[0][0] or "0-1-0"
    primary.sql("CREATE DATABASE IF NOT EXISTS mf; CREATE TABLE IF NOT EXISTS mf.t (id INT PRIMARY KEY, v INT)")
    primary.sql("SET SESSION gtid_domain_id=0; INSERT INTO mf.t VALUES (1, 1);"
                " SET SESSION gtid_domain_id=7; INSERT INTO mf.t VALUES (2, 2)")
    first = primary.binlog_files()[-1].name
    primary.flush_binlogs()
    primary.sql("SET SESSION gtid_domain_id=0; INSERT INTO mf.t VALUES (3, 3)")
    second = primary.binlog_files()[-1].name
    primary.flush_binlogs()
    primary.sql("SET SESSION gtid_domain_id=7; UPDATE mf.t SET v = 4 WHERE id = 2")
    third = primary.binlog_files()[-1].name
    middle = primary.binlog_events(second)[2]["Pos"]
    cases = [
        [first, second, third],
        [f"--start-position={middle}", "--stop-position=400", second, third],
        [second, "no-such-file.000009", third],
        ["--to-last-log", second, third],
        ["--do-domain-ids=0", f"--start-position={before}", "--to-last-log", first],
        ["--ignore-domain-ids=7", f"--start-position={before}", "--to-last-log", first],
        ["--do-domain-ids=7", first, second],
    ]
    for case in cases:
        real, ours = _both(primary, *case)
        assert real.stdout.count(b"DELIMITER /*!*/;") >= 1, (case, real.stderr)
        assert ours.stdout == real.stdout, case
        assert ours.stderr == real.stderr, case
        assert ours.returncode == real.returncode, case
    # The domain filter case: the second file's Format_description comes after domain 7's
    # group (off), the third's after domain 0's (on).
    real, _ = _both(primary, *cases[4])
    assert real.stdout.count(b"\tStart: binlog") == 2


def test_remote_dump_reports_a_dead_server_and_a_missing_file_name_as_the_real_tool() -> None:
    for args, first_words in ((["mysql-bin.000001"], b"ERROR: Failed on connect: "),
                              (["--start-position=0-1-1"], b"ERROR: Please provide the log file(s)")):
        def run(tool: list[str]) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([*tool, "-R", "--host=127.0.0.1", "--port=1", *args],  # noqa: B023
                                  capture_output=True, timeout=60)

        real = run([program("mariadb-binlog"), "--no-defaults"])
        ours = run([sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"])
        assert real.returncode == 1 and real.stderr.startswith(first_words), real.stderr
        assert (ours.returncode, ours.stdout, ours.stderr) == (real.returncode, real.stdout, real.stderr)


def test_remote_raw_writes_the_real_tools_files(primary: MariaDBServer, tmp_path: Path) -> None:
    """--raw (with --to-last-log, a --result-file prefix, an ignored --stop-position): same files, same bytes."""
    first = primary.binlog_files()[0].name
    primary.flush_binlogs()
    primary.sql("CREATE DATABASE IF NOT EXISTS rw; CREATE TABLE IF NOT EXISTS rw.t (id INT PRIMARY KEY); INSERT INTO rw.t VALUES (1)")
    cases = [["--raw", first], ["--raw", "--to-last-log", "--result-file=pfx-", first],
             ["--raw", "--stop-position=300", first]]
    for index, case in enumerate(cases):
        folders = []
        for who, tool in (("real", [program("mariadb-binlog"), "--no-defaults"]),
                          ("ours", [sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"])):
            folder = tmp_path / f"{who}{index}"
            folder.mkdir()
            result = subprocess.run(
                [*tool, "-R", "--host=127.0.0.1", f"--port={primary.port}", f"--user={REPL_USER}",
                 f"--password={REPL_PASSWORD}", *case], capture_output=True, timeout=60, cwd=folder)
            folders.append((folder, result))
        (real_dir, real), (our_dir, ours) = folders
        assert real.returncode == 0, real.stderr
        assert (ours.returncode, ours.stdout, ours.stderr) == (real.returncode, real.stdout, real.stderr), case
        real_files = {p.name: p.read_bytes() for p in real_dir.iterdir()}
        assert real_files and {p.name: p.read_bytes() for p in our_dir.iterdir()} == real_files, case
        assert real_files[next(iter(sorted(real_files)))] == (primary.binlog_basename().parent / first).read_bytes()


def test_remote_stop_never_across_a_server_restart(
    mariadb_server_factory: MariaDBServerFactory, tmp_path: Path
) -> None:
    """--stop-never follows the primary; a restart of the primary ends both tools the same way."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="restart")
    create_repl_user(server)
    server.sql("CREATE DATABASE sn; CREATE TABLE sn.t (id INT PRIMARY KEY); INSERT INTO sn.t VALUES (1)")
    log = server.binlog_files()[0].name
    procs = []
    for who, tool in (("real", [program("mariadb-binlog"), "--no-defaults"]),
                      ("ours", [sys.executable, "-m", "mariabinlog", "dump", "--no-defaults"])):
        out = (tmp_path / f"{who}.out").open("wb")
        err = (tmp_path / f"{who}.err").open("wb")
        procs.append((subprocess.Popen(
            [*tool, "-R", "--stop-never", "--host=127.0.0.1", f"--port={server.port}", f"--user={REPL_USER}",
             f"--password={REPL_PASSWORD}", log], stdout=out, stderr=err, env={**os.environ, "TZ": "UTC"}), out, err))
    time.sleep(2)
    server.sql("INSERT INTO sn.t VALUES (2)")
    time.sleep(1)
    server.stop()
    server.start()
    server.sql("INSERT INTO sn.t VALUES (3)")
    codes = []
    for proc, out, err in procs:
        try:
            codes.append(proc.wait(timeout=20))
        except subprocess.TimeoutExpired:
            proc.terminate()
            codes.append(proc.wait(timeout=20))
        out.close()
        err.close()
    real_out, ours_out = ((tmp_path / f"{w}.out").read_bytes() for w in ("real", "ours"))
    real_err, ours_err = ((tmp_path / f"{w}.err").read_bytes() for w in ("real", "ours"))
    assert b"INSERT INTO sn.t VALUES (2)" in real_out
    assert (codes[1], ours_out, ours_err) == (codes[0], real_out, real_err)
