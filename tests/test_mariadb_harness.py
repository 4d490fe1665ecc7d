"""The real-MariaDB harness works: a ROW binlog is written, listed, read by the real tool and replayed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pymysql
import pytest

from mariadb_server import MariaDBClientError, MariaDBServer, MariaDBServerFactory, program

pytestmark = pytest.mark.mariadb

SCHEMA = """
CREATE DATABASE h;
CREATE TABLE h.t (
  id BIGINT PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  note TEXT,
  at DATETIME(6)
) ENGINE=InnoDB;
"""


@pytest.fixture(scope="module")
def row_server(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    server = mariadb_server_factory(
        "--log-bin", "--binlog-format=ROW", "--server-id=7", "--gtid-domain-id=3", name="row"
    )
    server.pipe(SCHEMA)
    server.pipe(
        "INSERT INTO h.t VALUES (1, 'one', 'tab\\there', '2024-02-29 23:59:59.123456'),"
        " (2, 'two', NULL, NULL), (3, 'three', 'x', '1970-01-01 00:00:00');\n"
        "UPDATE h.t SET name = 'TWO' WHERE id = 2;\n"
        "DELETE FROM h.t WHERE id = 3;\n"
    )
    return server


def test_sql_and_rows(row_server: MariaDBServer) -> None:
    assert row_server.rows("SELECT id, name, note FROM h.t ORDER BY id") == [
        ("1", "one", "tab\there"),
        ("2", "TWO", "NULL"),
    ]
    assert row_server.sql("SELECT @@binlog_format, @@server_id") == "ROW\t7\n"
    with pytest.raises(MariaDBClientError, match="1064"):
        row_server.sql("SELEC 1")


def test_binlog_events_list_gtids(row_server: MariaDBServer) -> None:
    events = row_server.binlog_events()
    types = [event["Event_type"] for event in events]
    assert types[0] == "Format_desc"
    assert "Gtid" in types
    assert {"Table_map", "Write_rows_v1", "Update_rows_v1", "Delete_rows_v1"} <= set(types)
    gtids = [event["Info"] for event in events if event["Event_type"] == "Gtid"]
    assert all("GTID 3-7-" in info for info in gtids), gtids


def test_real_tool_reads_and_replays_the_binlog(
    row_server: MariaDBServer, mariadb_server_factory: MariaDBServerFactory
) -> None:
    row_server.flush_binlogs()
    files = row_server.binlog_files()
    assert [path.name for path in files] == ["mysql-bin.000001", "mysql-bin.000002"]
    first = files[0]
    assert first.is_file() and first.read_bytes()[:4] == b"\xfebin"

    decoded = subprocess.run(
        [program("mariadb-binlog"), "--no-defaults", "--base64-output=decode-rows", "--verbose", str(first)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "GTID 3-7-" in decoded
    assert "### INSERT INTO `h`.`t`" in decoded
    assert "### UPDATE `h`.`t`" in decoded
    assert "### DELETE FROM `h`.`t`" in decoded

    replayable = subprocess.run(
        [program("mariadb-binlog"), "--no-defaults", str(first)], capture_output=True, check=True
    ).stdout
    replica = mariadb_server_factory("--binlog-format=ROW", name="replay")
    replica.pipe(replayable)
    assert replica.checksum_table("h.t") == row_server.checksum_table("h.t")
    assert replica.checksum_table("h.missing") == {"h.missing": None}


def test_tcp_port_is_loopback_and_serves_pymysql(row_server: MariaDBServer) -> None:
    connection = pymysql.connect(**row_server.connect_kwargs())  # type: ignore[arg-type]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*), @@bind_address FROM h.t")
            assert cursor.fetchone() == (2, "127.0.0.1")
    finally:
        connection.close()


def test_stop_is_clean_and_restart_keeps_data(mariadb_server_factory: MariaDBServerFactory) -> None:
    server = mariadb_server_factory("--log-bin", name="restart")
    server.sql("CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY); INSERT INTO r.t VALUES (1)")
    socket_path = server.socket
    server.stop()
    assert not server.running and not socket_path.exists()
    assert "Shutdown complete" in server.error_log.read_text()
    server.start()
    assert server.rows("SELECT id FROM r.t") == [("1",)]
    assert [path.name for path in server.binlog_files()] == ["mysql-bin.000001", "mysql-bin.000002"]
    assert all(Path(path).is_file() for path in server.binlog_files())
