"""Point-in-time recovery and undo against real servers and a real ``mariadb-backup``.

One module-wide scenario (``story``) on a private primary: a full backup taken while a
writer commits; then thousands of small transactions in two GTID domains; a ``DROP TABLE``
by mistake, more work; a ``DELETE`` of many rows by mistake, more work; an UPDATE whose rows
are changed again later; a statement-logged UPDATE.  The archive copies it all.  The tests
find the mistakes (``find``), restore to just before the DROP by GTID and by time (checksums
equal to the ones taken just before it, on a stock ``mariadbd`` started on the new datadir),
kill a restore mid-replay and rerun it, undo the DELETE on the live primary, and see undo
refuse what it must.  Everything runs through the ``mariabinlog`` command line in its own
process, as users run it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from pitr_helpers import (
    ENV,
    archive_catch_up,
    backup_program,
    commit_many,
    last_gtid,
    mariabinlog,
    repl_url,
    root_url,
    start_stock_server,
    take_backup,
)
from replication_helpers import PRIMARY_OPTIONS, create_repl_user, root_options, wait_for

from mariabinlog.replication.net import Connection

#: The user tables of the story, checksummed before the DROP.
TABLES = ("shop.orders", "shop.items", "shop.audit", "shop.victim", "ledger.entries")
#: Rows the mistaken DELETE removes.
DELETED = 400


@dataclass
class Story:
    primary: MariaDBServer
    backup: Path
    archive: Path
    work: Path
    drop_gtid: str = ""
    drop_time: str = ""
    before_drop: dict[str, int | None] = field(default_factory=dict)
    position_before_drop: str = ""
    delete_gtid: str = ""
    orders_before_delete: int | None = None
    orders_after_delete: int | None = None
    changed_gtid: str = ""
    changed_later_gtid: str = ""
    statement_gtid: str = ""


@pytest.fixture(scope="module")
def story(mariadb_server_factory: MariaDBServerFactory, tmp_path_factory: pytest.TempPathFactory) -> Story:
    """The scenario of the module docstring, archived; the primary keeps running."""
    backup_program()
    work = tmp_path_factory.mktemp("pitr")
    primary = mariadb_server_factory(
        *PRIMARY_OPTIONS, "--server-id=1", "--innodb-flush-log-at-trx-commit=2", name="pitr-primary"
    )
    create_repl_user(primary)
    story = Story(primary, work / "backup", work / "archive", work)
    primary.sql(
        "CREATE DATABASE shop; CREATE DATABASE ledger;"
        " CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2), created DATETIME(3));"
        " CREATE TABLE shop.items (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40), qty INT);"
        " CREATE TABLE shop.audit (at DATETIME, note VARCHAR(80));"  # no key: rows are named by all their values
        " CREATE TABLE shop.victim (id INT PRIMARY KEY, payload TEXT);"
        " CREATE TABLE ledger.entries (id INT PRIMARY KEY AUTO_INCREMENT, amount INT)"
    )
    with Connection.open(root_options(primary)) as conn:
        commit_many(conn, [
            f"INSERT INTO shop.orders VALUES ({i}, 'c{i}', {i}.25, '2026-01-01 10:00:00.{i % 1000:03d}')"
            for i in range(1, 601)
        ])
        commit_many(conn, [f"INSERT INTO shop.victim VALUES ({i}, REPEAT('v', {i}))" for i in range(1, 51)])

        # The backup, taken while a writer commits.
        stop = threading.Event()

        def writer() -> None:
            with Connection.open(root_options(primary)) as own:
                n = 0
                while not stop.is_set():
                    n += 1
                    own.query(f"INSERT INTO shop.items (name, qty) VALUES ('during-backup-{n}', {n})")

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            time.sleep(0.3)
            take_backup(primary, story.backup)
            time.sleep(0.3)
        finally:
            stop.set()
            thread.join()
        archive_catch_up(primary, story.archive)  # an archive that follows along, run now and then

        # Many small transactions in two domains after the backup.
        conn.query("SET gtid_domain_id=1")
        commit_many(conn, [f"INSERT INTO ledger.entries (amount) VALUES ({i})" for i in range(700)])
        conn.query("SET gtid_domain_id=0")
        commit_many(conn, [f"UPDATE shop.items SET qty = qty + 1 WHERE id = {1 + i % 50}" for i in range(700)])
        commit_many(conn, [f"INSERT INTO shop.audit VALUES ('2026-01-02 00:00:00', 'note {i}')" for i in range(100)])

        # Just before the mistake: what a restore must give back.
        story.before_drop = primary.checksum_table(*TABLES)
        story.position_before_drop = conn.text("SELECT @@gtid_binlog_pos") or ""
        now = time.time()
        time.sleep(int(now) + 1.05 - now)  # the DROP is the first group of its second
        story.drop_time = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        conn.query("DROP TABLE shop.victim")
        story.drop_gtid = last_gtid(conn)
        commit_many(conn, [f"INSERT INTO shop.items (name, qty) VALUES ('after-drop-{i}', {i})" for i in range(20)])

        # The DELETE by mistake, then more work on other tables.
        story.orders_before_delete = primary.checksum_table("shop.orders")["shop.orders"]
        conn.query(f"DELETE FROM shop.orders WHERE id > {600 - DELETED}")
        story.delete_gtid = last_gtid(conn)
        story.orders_after_delete = primary.checksum_table("shop.orders")["shop.orders"]
        commit_many(conn, [f"INSERT INTO shop.audit VALUES ('2026-01-03 00:00:00', 'after delete {i}')" for i in range(20)])

        # A group whose rows are changed again later, and a statement-logged group.
        conn.query("UPDATE shop.items SET qty = 1000 WHERE id IN (3, 4)")
        story.changed_gtid = last_gtid(conn)
        conn.query("INSERT INTO ledger.entries (amount) VALUES (1)")
        conn.query("UPDATE shop.items SET qty = 2000 WHERE id = 4")
        story.changed_later_gtid = last_gtid(conn)
        conn.query("SET SESSION binlog_format=STATEMENT")
        conn.query("UPDATE shop.items SET name = 'stmt' WHERE id = 5")
        story.statement_gtid = last_gtid(conn)
        conn.query("SET SESSION binlog_format=ROW")
    archive_catch_up(primary, story.archive)
    return story


def restore(story: Story, datadir: Path, *stop: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``mariabinlog restore`` of the story's backup and archive into ``datadir``."""
    return mariabinlog(
        "restore", "--backup", str(story.backup), "--archive", str(story.archive), "--datadir", str(datadir),
        *stop, "--quiet", check=check, timeout=600,
    )


def checksums_of_restored(datadir: Path) -> dict[str, int | None]:
    """Start a stock server on the restored datadir, checksum the story's tables, stop it."""
    server = start_stock_server(datadir)
    try:
        assert server.rows("SHOW DATABASES LIKE 'mariabinlog%'") == []
        return server.checksum_table(*TABLES)
    finally:
        server.stop()


# --------------------------------------------------------------------------- find


def test_find_names_the_drop_and_the_delete(story: Story) -> None:
    drop = mariabinlog("find", "--archive", str(story.archive), "--op", "ddl", "--statement", r"drop\s+table").stdout
    lines = drop.splitlines()
    assert len(lines) == 1, drop
    gtid, when, changes, tables, text = lines[0].split("\t")
    assert (gtid, changes, tables) == (story.drop_gtid, "ddl", "shop.victim")
    assert when == story.drop_time and "DROP TABLE `shop`.`victim`" in text

    delete = mariabinlog("find", "--archive", str(story.archive), "--table", "shop.orders", "--op", "delete").stdout
    assert [line.split("\t")[:3:2] for line in delete.splitlines()] == [[story.delete_gtid, f"delete {DELETED}"]]

    since = mariabinlog("find", "--archive", str(story.archive), "--since", story.drop_time, "--format", "json",
                        "--table", "shop.items").stdout
    found = [json.loads(line) for line in since.splitlines()]
    assert found and all(item["time"] >= story.drop_time for item in found)
    assert {item["gtid"] for item in found} >= {story.changed_gtid, story.changed_later_gtid, story.statement_gtid}
    statement = next(item for item in found if item["gtid"] == story.statement_gtid)
    assert statement["statement_logged"] and statement["rows"] == {}


# --------------------------------------------------------------------------- restore


def test_restore_before_the_drop_by_gtid(story: Story, tmp_path: Path) -> None:
    datadir = tmp_path / "by-gtid" / "data"
    out = restore(story, datadir, "--stop-before-gtid", story.drop_gtid).stdout
    assert out.splitlines() == [f"restore: reached {story.position_before_drop}"]
    assert checksums_of_restored(datadir) == story.before_drop
    # Run again: it says where it is and changes nothing.
    again = restore(story, datadir, "--stop-before-gtid", story.drop_gtid).stdout
    assert again.strip() == f"restore: reached {story.position_before_drop}"


def test_restore_before_the_drop_by_time(story: Story, tmp_path: Path) -> None:
    datadir = tmp_path / "by-time" / "data"
    out = restore(story, datadir, "--stop-datetime", story.drop_time).stdout
    assert out.strip() == f"restore: reached {story.position_before_drop}"
    assert checksums_of_restored(datadir) == story.before_drop


def test_restore_killed_mid_replay_then_rerun(story: Story, tmp_path: Path) -> None:
    datadir = tmp_path / "killed" / "data"
    progress = tmp_path / "progress.jsonl"
    command = [sys.executable, "-m", "mariabinlog", "restore", "--backup", str(story.backup), "--archive",
               str(story.archive), "--datadir", str(datadir), "--stop-before-gtid", story.drop_gtid, "--quiet",
               "--parallel", "2", "--progress-interval", "0.1", "--progress-json", str(progress)]
    process = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def applying() -> bool:
        if process.poll() is not None:
            pytest.fail(f"restore ended before it was killed: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        if not progress.exists():
            return False
        lines = progress.read_text().splitlines()
        return bool(lines) and json.loads(lines[-1])["groups"] >= 100

    wait_for(applying, 300, "the replay to apply 100 groups")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    state = json.loads((datadir / "mariabinlog_restore.json").read_text())
    assert state["stage"] == "replaying"
    out = restore(story, datadir, "--stop-before-gtid", story.drop_gtid).stdout
    assert out.strip() == f"restore: reached {story.position_before_drop}"
    assert checksums_of_restored(datadir) == story.before_drop


def test_restore_refuses_a_gap_naming_the_missing_gtids(story: Story, tmp_path: Path) -> None:
    late = tmp_path / "late-archive"
    domain, server, seq = (int(x) for x in story.drop_gtid.split("-"))
    start = f"{domain}-{server}-{seq - 10}"
    mariabinlog("archive", "--from", repl_url(story.primary), "--dir", str(late), "--start-position", start, "--quiet")
    datadir = tmp_path / "gap" / "data"
    result = mariabinlog(
        "restore", "--backup", str(story.backup), "--archive", str(late), "--datadir", str(datadir),
        "--stop-before-gtid", story.drop_gtid, check=False,
    )
    assert result.returncode == 1
    assert "does not reach back to the backup's position" in result.stderr
    backup_seq = int((story.backup / "xtrabackup_binlog_info").read_text().split()[2].split(",")[0].split("-")[2])
    assert f"missing GTIDs 0-*-{backup_seq + 1} to 0-*-{seq - 10}" in result.stderr
    assert not datadir.exists()


def test_restore_refuses_a_stop_point_not_in_the_archive(story: Story, tmp_path: Path) -> None:
    datadir = tmp_path / "nowhere" / "data"
    result = restore(story, datadir, "--stop-gtid", "0-1-999999", check=False)
    assert result.returncode == 1 and "0-1-999999 is not in the archive" in result.stderr
    assert not datadir.exists()


# --------------------------------------------------------------------------- undo


def test_undo_dry_run_prints_and_changes_nothing(story: Story) -> None:
    out = mariabinlog("undo", "--archive", str(story.archive), "--gtid", story.delete_gtid, "--dry-run").stdout
    assert out.count("### INSERT INTO `shop`.`orders`") == DELETED
    assert "BEGIN;" in out and "COMMIT;" in out and "BINLOG '" in out
    assert story.primary.checksum_table("shop.orders")["shop.orders"] == story.orders_after_delete


def test_undo_refuses_rows_changed_later(story: Story) -> None:
    before = story.primary.checksum_table("shop.items")
    result = mariabinlog("undo", "--to", root_url(story.primary), "--archive", str(story.archive),
                         "--gtid", story.changed_gtid, check=False)
    assert result.returncode == 1
    assert f"{story.changed_gtid} was changed later by {story.changed_later_gtid}" in result.stderr
    assert story.primary.checksum_table("shop.items") == before


def test_undo_refuses_statement_logged_groups(story: Story) -> None:
    result = mariabinlog("undo", "--to", root_url(story.primary), "--archive", str(story.archive),
                         "--gtid", story.statement_gtid, check=False)
    assert result.returncode == 1 and "statement-logged" in result.stderr


def test_undo_the_delete_on_the_live_server(story: Story) -> None:
    out = mariabinlog("undo", "--to", root_url(story.primary), "--archive", str(story.archive),
                      "--gtid", story.delete_gtid, "--table", "shop.orders").stdout
    assert out.strip() == f"undo: reverted {story.delete_gtid} ({DELETED} rows of shop.orders)"
    assert story.primary.checksum_table("shop.orders")["shop.orders"] == story.orders_before_delete
