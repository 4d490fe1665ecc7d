"""Protocol robustness with a real primary behind a damaging proxy: a corrupted event, a malformed
packet, a connection dropped in the middle of an event.  Each gives a clear error or a clean
resume, and nothing is written wrongly: only complete, intact event groups reach an archive or
a target, and a rerun completes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from replication_helpers import (
    PRIMARY_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    Proxy,
    binlog_gtids,
    create_repl_user,
    repl_options,
)

from mariabinlog.cli import main as cli_main
from mariabinlog.codec.gtid import ConnectState
from mariabinlog.replication.client import BinlogClient
from mariabinlog.codec.groups import clear_log_pos
from mariabinlog.replication.sources import ArchiveReader, ReadOnlyPages


def _url(port: int) -> str:
    return f"mariadb://{REPL_USER}:{REPL_PASSWORD.replace('ä', '%C3%A4')}@127.0.0.1:{port}"


@pytest.fixture(scope="module")
def origin(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    """A primary with 80 small transactions in two domains, after some DDL."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="robust-primary")
    create_repl_user(server)
    statements = ["CREATE DATABASE r;", "CREATE TABLE r.a (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;",
                  "CREATE TABLE r.b (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;"]
    for i in range(40):
        statements.append(f"SET gtid_domain_id=0; INSERT INTO r.a VALUES ({i}, REPEAT('a', {i + 40}));")
        statements.append(f"SET gtid_domain_id=5; INSERT INTO r.b VALUES ({i}, REPEAT('b', {i + 40}));")
    server.pipe("\n".join(statements) + "\n")
    return server


@pytest.fixture
def proxies() -> list[Proxy]:
    made: list[Proxy] = []
    yield made
    for proxy in made:
        proxy.close()


def _archived(directory: Path) -> list:  # type: ignore[type-arg]
    return list(ArchiveReader(ReadOnlyPages(str(directory)), None).groups())


def _assert_intact_prefix(origin: MariaDBServer, directory: Path) -> int:
    """The archive holds a prefix of the primary's groups, each byte-identical (log_pos aside)."""
    stored = _archived(directory)
    direct = list(BinlogClient(repl_options(origin), blocking=False).groups())[: len(stored)]
    assert [str(g.gtid) for g in stored] == [str(g.gtid) for g in direct]
    for mine, theirs in zip(stored, direct, strict=True):
        assert mine.raw[1:] == [clear_log_pos(raw) for raw in theirs.raw[1:]], mine.gtid
    return len(stored)


def test_corrupted_event_stops_the_archiver_with_nothing_wrong_stored(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], capsys: pytest.CaptureFixture[str]
) -> None:
    proxy = Proxy(origin.port, corrupt_event=60)
    proxies.append(proxy)
    directory = tmp_path / "corrupt"
    assert cli_main(["archive", "--quiet", "--from", _url(proxy.address[1]), "--dir", str(directory)]) == 1
    assert proxy.damaged.is_set()
    assert "event CRC32 mismatch" in capsys.readouterr().err
    stored = _assert_intact_prefix(origin, directory)
    assert 0 < stored < len(binlog_gtids(origin))
    # Straight to the primary, the archive completes.
    assert cli_main(["archive", "--quiet", "--from", _url(origin.port), "--dir", str(directory)]) == 0
    assert [str(g.gtid) for g in _archived(directory)] == binlog_gtids(origin)


def test_malformed_packet_stops_replicate_with_nothing_wrong_applied(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, proxies: list[Proxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = mariadb_server_factory("--log-bin", "--server-id=2", name="robust-target")
    proxy = Proxy(origin.port, garbage_event=70)
    proxies.append(proxy)
    url = f"mariadb://root@127.0.0.1:{target.port}"
    assert cli_main(["replicate", "--quiet", "--from", _url(proxy.address[1]), "--to", url]) == 1
    assert "dump packet starts with 0x42" in capsys.readouterr().err
    applied = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos ORDER BY domain_id")
    position = ConnectState.parse(",".join("-".join(row) for row in applied))
    # Every recorded group's data is there, nothing after it (each domain ends with 40 inserts).
    gtids = binlog_gtids(origin)
    assert len(position), "nothing was applied before the damage"
    for domain, table in ((0, "r.a"), (5, "r.b")):
        if domain not in position:
            continue
        others = sum(1 for g in gtids if g.startswith(f"{domain}-")) - 40
        ids = [int(row[0]) for row in target.rows(f"SELECT id FROM {table} ORDER BY id")]
        assert ids == list(range(position[domain].seq - others))
    assert cli_main(["replicate", "--quiet", "--from", _url(origin.port), "--to", url]) == 0
    assert target.checksum_table("r.a", "r.b") == origin.checksum_table("r.a", "r.b")


def test_connection_dropped_inside_an_event_is_resumed(origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy]) -> None:
    proxy = Proxy(origin.port, drop_event=50)
    proxies.append(proxy)
    directory = tmp_path / "dropped"
    assert cli_main(["archive", "--quiet", "--from", _url(proxy.address[1]), "--dir", str(directory)]) == 0
    assert proxy.damaged.is_set() and proxy.connections == 2
    assert [str(g.gtid) for g in _archived(directory)] == binlog_gtids(origin)
    _assert_intact_prefix(origin, directory)
