"""The archive follows a new primary after a failover, and ``restore`` replays across the switch.

Primary A (server id 1) and its replica B (server id 2, ``--log-slave-updates``, so B's binlog
holds A's groups under A's GTIDs), two GTID domains.  A backup of A; the archive copies A;
A goes away; B is promoted; ``archive --from B`` goes on from the same directory; a restore to
a point after the switch equals B at that point.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from replication_helpers import PRIMARY_OPTIONS, create_repl_user, root_options, wait_for
from pitr_helpers import archive_catch_up, backup_program, mariabinlog, repl_url, start_stock_server, take_backup

from mariabinlog.codec.gtid import ConnectState
from mariabinlog.replication.net import Connection

TABLES = ("app.accounts", "app.events")


def _write(server: MariaDBServer, tag: str, count: int) -> str:
    """``count`` small transactions in domain 1 (app.events) then domain 0 (app.accounts);
    returns the last GTID (domain 0)."""
    with Connection.open(root_options(server)) as conn:
        conn.query("SET gtid_domain_id=1")
        for i in range(count):
            conn.query(f"INSERT INTO app.events (note) VALUES ('{tag} {i}')")
        conn.query("SET gtid_domain_id=0")
        for i in range(count):
            conn.query(f"UPDATE app.accounts SET balance = balance + {i} WHERE id = {1 + i % 20}")
        return conn.text("SELECT @@last_gtid") or ""


def test_archive_follows_the_promoted_replica_and_restore_crosses_the_switch(
    mariadb_server_factory: MariaDBServerFactory, tmp_path: Path
) -> None:
    backup_program()
    options = (*PRIMARY_OPTIONS, "--log-slave-updates", "--innodb-flush-log-at-trx-commit=2")
    a = mariadb_server_factory(*options, "--server-id=1", name="failover-a")
    b = mariadb_server_factory(*options, "--server-id=2", name="failover-b")
    create_repl_user(a)
    b.sql(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={a.port}, MASTER_USER='root',"
          " MASTER_USE_GTID=slave_pos; START SLAVE")
    a.sql("CREATE DATABASE app;"
          " CREATE TABLE app.accounts (id INT PRIMARY KEY, balance BIGINT);"
          " CREATE TABLE app.events (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(60))")
    a.sql("INSERT INTO app.accounts SELECT ROW_NUMBER() OVER (), 0 FROM information_schema.COLLATIONS LIMIT 20")
    backup = tmp_path / "backup"
    take_backup(a, backup)
    archive = tmp_path / "archive"
    _write(a, "on A", 150)
    archive_catch_up(a, archive)
    _write(a, "on A, late", 50)
    archive_catch_up(a, archive)

    def replica_caught_up() -> bool:
        status = b.records("SHOW SLAVE STATUS")[0]
        if status["Last_IO_Error"] or status["Last_SQL_Error"]:
            pytest.fail(f"replica stopped: {status['Last_IO_Error']} {status['Last_SQL_Error']}")
        wanted = ConnectState.parse(a.rows("SELECT @@gtid_binlog_pos")[0][0])
        return ConnectState.parse(b.rows("SELECT @@gtid_slave_pos")[0][0]) == wanted

    wait_for(replica_caught_up, 120, "B to catch up with A")

    # Failover: A is gone, B is promoted and takes the writes.
    a.stop()
    b.sql("STOP SLAVE; RESET SLAVE ALL")
    _write(b, "on B", 100)
    archive_catch_up(b, archive)  # the same archive, another primary: it goes on
    target = _write(b, "on B, before the point", 30)
    assert target.startswith("0-2-")
    expected = b.checksum_table(*TABLES)
    position = b.rows("SELECT @@gtid_binlog_pos")[0][0]
    _write(b, "on B, after the point", 30)
    archive_catch_up(b, archive)

    state = mariabinlog("engine", "status", str(archive)).stdout
    assert ConnectState.parse(_field(state, "Gtid_Binlog_Pos")) == ConnectState.parse(
        b.rows("SELECT @@gtid_binlog_pos")[0][0]
    )
    found = mariabinlog("find", "--archive", str(archive), "--table", "app.accounts", "--since", "2000-01-01 00:00:00")
    servers = {line.split("\t")[0].split("-")[1] for line in found.stdout.splitlines()}
    assert servers == {"1", "2"}  # groups of both primaries, in one archive

    datadir = tmp_path / "restored" / "data"
    out = mariabinlog("restore", "--backup", str(backup), "--archive", str(archive), "--datadir", str(datadir),
                      "--stop-gtid", target, "--quiet", timeout=600).stdout
    assert ConnectState.parse(out.strip().removeprefix("restore: reached ")) == ConnectState.parse(position)
    restored = start_stock_server(datadir)
    try:
        assert restored.checksum_table(*TABLES) == expected
        assert ConnectState.parse(restored.rows("SELECT @@gtid_slave_pos")[0][0]) == ConnectState.parse(position)
    finally:
        restored.stop()

    # The old primary comes back: it lacks B's groups, so the archive refuses to follow it.
    a.start()
    result = mariabinlog("archive", "--from", repl_url(a), "--dir", str(archive), "--quiet", check=False)
    assert result.returncode == 1
    assert f"does not hold the archive's position {b.rows('SELECT @@gtid_binlog_pos')[0][0]}" in result.stderr


def _field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return line.partition(":")[2].strip()
    raise AssertionError(f"{name} not in {text!r}")
