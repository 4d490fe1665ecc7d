"""Helpers of the point-in-time recovery tests: the command line in its own process, backups,
archives, a stock server on a restored datadir.  Imported by name (see ``conftest.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, find_program
from replication_helpers import repl_url  # noqa: F401 - re-exported for the PITR tests

from mariabinlog.replication.net import Connection

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO / "src"))


def mariabinlog(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the command line in its own process."""
    result = subprocess.run(
        [sys.executable, "-m", "mariabinlog", *args], env=ENV, capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        pytest.fail(f"mariabinlog {' '.join(args)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result


def root_url(server: MariaDBServer) -> str:
    """root's URL (no password)."""
    return f"mariadb://root@127.0.0.1:{server.port}"


def backup_program() -> str:
    """``mariadb-backup``; a test that needs it fails when it is missing."""
    found = find_program("mariadb-backup")
    if found is None:
        pytest.fail("mariadb-backup not found (bash scripts/setup.sh installs Debian's mariadb-backup)", pytrace=False)
    return found


def take_backup(server: MariaDBServer, target: Path) -> None:
    """A full ``mariadb-backup --backup`` of ``server`` into ``target``."""
    result = subprocess.run(
        [backup_program(), "--backup", f"--socket={server.socket}", "--user=root", f"--target-dir={target}"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def archive_catch_up(server: MariaDBServer, directory: Path) -> None:
    """``archive`` until it has caught up with ``server`` (it ends by itself)."""
    mariabinlog("archive", "--from", repl_url(server), "--dir", str(directory), "--quiet", "--heartbeat", "0.5")


def last_gtid(conn: Connection) -> str:
    """The GTID of the session's last transaction."""
    return conn.text("SELECT @@last_gtid") or ""


def commit_many(conn: Connection, statements: list[str]) -> None:
    """Each statement as its own transaction (autocommit)."""
    for statement in statements:
        conn.query(statement)


def start_stock_server(datadir: Path) -> MariaDBServer:
    """A stock ``mariadbd --no-defaults --datadir=NEW`` (the harness's options) on a restored
    datadir (named ``data``, as the harness names its datadirs)."""
    assert datadir.name == "data"
    return MariaDBServer(datadir.parent, ["--default-time-zone=+00:00"]).start()
