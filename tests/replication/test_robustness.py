"""Hostile peers on loopback, with real servers.

Our clients behind a corrupting proxy (:class:`hostile_peers.Proxy`) in front of a real primary
with CRC32 checksums: flipped body and length bytes, a wrong packet marker, truncated, cut and
stalled packets, duplicated and replayed packets, huge length chains.  Each gives a logged
reconnect that resumes from the last complete group, or a typed error naming the primary, the
binlog position and GTID; nothing malformed is ever stored or applied, and a rerun completes.

Hostile clients against ``serve`` (idle connections, huge packet headers followed by nothing,
garbage handshakes, wrong passwords, slow and stuck readers) while a real MariaDB replica keeps
replicating from it: each is dropped or refused within its limit and the replica ends equal.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_peers import DumpReader, Proxy, closed_after, garbage_handshake, huge_header, idle_connections, login
from mariadb_server import MariaDBServer, MariaDBServerFactory, free_port
from replication_helpers import (
    PRIMARY_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    binlog_gtids,
    create_repl_user,
    gtid_binlog_pos,
    repl_options,
    repl_url,
    wait_for,
)

from mariabinlog.cli import main as cli_main
from mariabinlog.codec.wire import protocol as P
from mariabinlog.codec.gtid import ConnectState
from mariabinlog.errors import ConnectionLostError
from mariabinlog.replication.archive import Archiver
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import ConnectionOptions
from mariabinlog.codec.groups import clear_log_pos
from mariabinlog.replication.server import BinlogServer, ServerConfig, hash_password
from mariabinlog.replication.sources import ArchiveReader, archive_pages

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def origin(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    """A primary with 80 small transactions in two domains after some DDL, then one of ~6 MB
    (more than loopback's socket buffers hold, so that a reader that stops reading blocks ``serve``)."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="robust-primary")
    create_repl_user(server)
    statements = ["CREATE DATABASE r;", "CREATE TABLE r.a (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;",
                  "CREATE TABLE r.b (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;"]
    for i in range(40):
        statements.append(f"SET gtid_domain_id=0; INSERT INTO r.a VALUES ({i}, REPEAT('a', {i + 40}));")
        statements.append(f"SET gtid_domain_id=5; INSERT INTO r.b VALUES ({i}, REPEAT('b', {i + 40}));")
    statements.append("SET gtid_domain_id=7; CREATE TABLE r.big (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;")
    statements.append("SET gtid_domain_id=7; INSERT INTO r.big SELECT seq, REPEAT('g', 90) FROM r.seq_1_to_60000;")
    server.pipe("\n".join(statements) + "\n")
    return server


@pytest.fixture
def proxies() -> Iterator[list[Proxy]]:
    made: list[Proxy] = []
    yield made
    for proxy in made:
        proxy.close()


def _archived(directory: Path) -> list:  # type: ignore[type-arg]
    return list(ArchiveReader(archive_pages(str(directory)), None).groups())


def _assert_intact_prefix(origin: MariaDBServer, directory: Path) -> int:
    """The archive holds a prefix of the primary's groups, each byte-identical (log_pos aside)."""
    stored = _archived(directory)
    direct = list(BinlogClient(repl_options(origin), blocking=False).groups())[: len(stored)]
    assert [str(g.gtid) for g in stored] == [str(g.gtid) for g in direct]
    for mine, theirs in zip(stored, direct, strict=True):
        assert mine.raw[1:] == [clear_log_pos(raw) for raw in theirs.raw[1:]], mine.gtid
    return len(stored)


def _assert_complete(origin: MariaDBServer, directory: Path) -> None:
    assert _assert_intact_prefix(origin, directory) == len(binlog_gtids(origin))


# --------------------------------------------------------------------------- a damaging proxy


@pytest.mark.parametrize(
    "damage", ["flip-body", "flip-length", "garbage", "truncate", "cut", "duplicate", "replay", "chain"]
)
def test_damage_on_the_way_is_a_logged_reconnect_and_the_archive_ends_equal(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    proxy = Proxy(origin.port, damage=damage, at=60)
    proxies.append(proxy)
    directory = tmp_path / damage
    assert cli_main(["archive", "--quiet", "--from", repl_url(proxy.address[1]), "--dir", str(directory)]) == 0
    assert proxy.damaged.is_set() and proxy.connections == 2
    _assert_complete(origin, directory)
    warning = capsys.readouterr().err.splitlines()[0]
    assert warning.startswith(f"mariabinlog.replication.client: WARNING: repl@127.0.0.1:{proxy.address[1]} "), warning
    assert "mysql-bin.000001 at " in warning or "mysql-bin.000001, offset " in warning, warning
    assert ", last GTID " in warning and "; reconnecting in 0.5 s from " in warning, warning
    if damage in ("duplicate", "chain"):
        assert ("packets out of order" if damage == "duplicate" else "carries an event of") in warning, warning
    if damage == "chain":  # refused from its first bytes: at most the part in flight went out
        assert proxy.sent_bytes < 2 * 0xFFFFFF


@pytest.mark.parametrize("damage", ["flip-length", "truncate", "cut", "duplicate", "replay"])
def test_an_archive_through_a_flaky_network_ends_equal(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], damage: str
) -> None:
    """Damage again and again, each time at another place of the stream: a reconnect each."""
    proxy = Proxy(origin.port, damage=damage, at=25, times=4, moving=True)
    proxies.append(proxy)
    directory = tmp_path / damage
    assert cli_main(["archive", "--quiet", "--from", repl_url(proxy.address[1]), "--dir", str(directory)]) == 0
    assert proxy.connections == 5
    _assert_complete(origin, directory)


def test_a_stalled_stream_is_a_reconnect(origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy]) -> None:
    proxy = Proxy(origin.port, damage="stall", at=30)
    proxies.append(proxy)
    options = repl_options(origin, port=proxy.address[1], read_timeout=1.0)
    archiver = Archiver(str(tmp_path / "stalled"))
    archiver.run(BinlogClient(options, blocking=False, reconnect_delay=0.1))
    archiver.close()
    assert proxy.connections == 2
    _assert_complete(origin, tmp_path / "stalled")


def test_a_primary_that_stays_away_is_retried_ever_later(caplog: pytest.LogCaptureFixture) -> None:
    """Each failed attempt doubles the wait before the next, and past ``reconnect`` attempts
    the error is raised."""
    port = free_port()  # every connect is refused
    client = BinlogClient(ConnectionOptions(host="127.0.0.1", port=port), blocking=False, reconnect=3,
                          reconnect_delay=0.1)
    with caplog.at_level("WARNING", logger="mariabinlog.replication.client"), pytest.raises(ConnectionLostError):
        list(client.groups())
    waits = [record.getMessage().split("; reconnecting ")[1].split(" from ")[0] for record in caplog.records]
    assert waits == ["in 0.1 s", "in 0.2 s", "in 0.4 s"]


def test_an_archive_that_cannot_reach_its_primary_leaves_no_preallocated_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    directory = tmp_path / "unreached"
    # Two attempts, 0.5 and 1 s apart: time enough for the engine's background thread to have
    # made its first file at full size, which the failed run must cut back.
    assert cli_main(["archive", "--quiet", "--reconnect", "2", "--from", f"mariadb://root@127.0.0.1:{port}",
                     "--dir", str(directory)]) == 1
    assert f"cannot connect to root@127.0.0.1:{port}" in capsys.readouterr().err
    files = list(directory.glob("binlog-*.ibb"))
    assert files and all(path.stat().st_size <= 1 << 16 for path in files)


def test_net_timeout_bounds_a_stall_while_catching_up(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path, proxies: list[Proxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stream stalled while the primary still sends its backlog (no heartbeats come then)
    counts as lost after ``--net-timeout`` s, not MariaDB's default 60: ``archive`` and
    ``replicate`` reconnect from the last complete group and end equal."""
    archive_proxy = Proxy(origin.port, damage="stall", at=30)
    proxies.append(archive_proxy)
    directory = tmp_path / "stalled"
    assert cli_main(["archive", "--quiet", "--net-timeout", "1", "--from", repl_url(archive_proxy.address[1]),
                     "--dir", str(directory)]) == 0
    assert archive_proxy.connections == 2
    assert "no data for 1.0 s; reconnecting" in capsys.readouterr().err
    _assert_complete(origin, directory)

    target = mariadb_server_factory("--log-bin", "--server-id=2", name="stalled-target")
    replicate_proxy = Proxy(origin.port, damage="stall", at=30)
    proxies.append(replicate_proxy)
    url = f"mariadb://root@127.0.0.1:{target.port}"
    assert cli_main(["replicate", "--quiet", "--net-timeout", "1", "--from", repl_url(replicate_proxy.address[1]),
                     "--to", url, "--parallel", "2"]) == 0
    assert replicate_proxy.connections == 2
    assert "no data for 1.0 s; reconnecting" in capsys.readouterr().err
    assert target.checksum_table("r.a", "r.b", "r.big") == origin.checksum_table("r.a", "r.b", "r.big")


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_net_timeout_must_be_a_positive_number(value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(["archive", "--net-timeout", value, "--from", "mariadb://root@127.0.0.1:1", "--dir",
                  str(tmp_path / "never")])
    assert exit_.value.code == 2
    assert "--net-timeout" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_a_damaged_event_met_twice_at_one_place_stops_the_archive_naming_it(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], capsys: pytest.CaptureFixture[str]
) -> None:
    """The same damage on every connection is the primary's own: stop after one retry, say where."""
    proxy = Proxy(origin.port, damage="flip-body", at=60, times=99)
    proxies.append(proxy)
    directory = tmp_path / "corrupt"
    assert cli_main(["archive", "--quiet", "--from", repl_url(proxy.address[1]), "--dir", str(directory)]) == 1
    assert proxy.connections == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"mariabinlog: repl@127.0.0.1:{proxy.address[1]} mysql-bin.000001, offset "), error
    assert ", last GTID " in error and "event CRC32 mismatch" in error, error
    stored = _assert_intact_prefix(origin, directory)
    assert 0 < stored < len(binlog_gtids(origin))
    # The engine was sound: it closed as at any end, its last file cut to its content.
    assert all(path.stat().st_size < 1 << 30 for path in directory.glob("binlog-*.ibb"))
    # Straight to the primary, the archive completes.
    assert cli_main(["archive", "--quiet", "--from", repl_url(origin.port), "--dir", str(directory)]) == 0
    _assert_complete(origin, directory)


def test_a_chain_claiming_more_than_max_allowed_packet_is_refused_from_its_header(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], capsys: pytest.CaptureFixture[str]
) -> None:
    proxy = Proxy(origin.port, damage="chain", at=60, forge=True, times=99)
    proxies.append(proxy)
    directory = tmp_path / "chain"
    args = ["archive", "--quiet", "--from", repl_url(proxy.address[1]), "--dir", str(directory)]
    started = time.monotonic()
    assert cli_main([*args, "--max-allowed-packet", "64M"]) == 1
    assert time.monotonic() - started < 10 and proxy.connections == 1 and proxy.sent_bytes < 2 * 0xFFFFFF
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"repl@127.0.0.1:{proxy.address[1]} mysql-bin.000001" in error, error
    assert f"event of {70 * 0xFFFFFF - 1} bytes announced, more than the {64 << 20} bytes allowed" in error, error
    assert 0 < _assert_intact_prefix(origin, directory)


def test_replicate_applies_nothing_malformed(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, proxies: list[Proxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = mariadb_server_factory("--log-bin", "--server-id=2", name="robust-target")
    proxy = Proxy(origin.port, damage="garbage", at=70, times=99)
    proxies.append(proxy)
    url = f"mariadb://root@127.0.0.1:{target.port}"
    assert cli_main(["replicate", "--quiet", "--from", repl_url(proxy.address[1]), "--to", url]) == 1
    assert "dump packet starts with 0x42" in capsys.readouterr().err
    applied = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos ORDER BY domain_id")
    position = ConnectState.parse(",".join("-".join(row) for row in applied))
    # Every recorded group's data is there, nothing after it (domains 0 and 5 end with 40 inserts).
    gtids = binlog_gtids(origin)
    assert len(position), "nothing was applied before the damage"
    for domain, table in ((0, "r.a"), (5, "r.b")):
        if domain not in position:
            continue
        others = sum(1 for g in gtids if g.startswith(f"{domain}-")) - 40
        ids = [int(row[0]) for row in target.rows(f"SELECT id FROM {table} ORDER BY id")]
        assert ids == list(range(position[domain].seq - others))
    assert cli_main(["replicate", "--quiet", "--from", repl_url(origin.port), "--to", url]) == 0
    assert target.checksum_table("r.a", "r.b", "r.big") == origin.checksum_table("r.a", "r.b", "r.big")


@pytest.mark.parametrize("damage", ["cut", "duplicate", "flip-body"])
def test_replicate_through_a_flaky_network_ends_equal(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, proxies: list[Proxy], damage: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three domains applied in parallel while the stream is damaged again and again, each time
    at another place: every damage is a reconnect from the last complete group, and the
    target ends equal to the primary, every group applied once."""
    target = mariadb_server_factory("--log-bin", "--server-id=2", name=f"flaky-{damage}")
    proxy = Proxy(origin.port, damage=damage, at=25, times=4, moving=True)
    proxies.append(proxy)
    url = f"mariadb://root@127.0.0.1:{target.port}"
    assert cli_main(["replicate", "--quiet", "--from", repl_url(proxy.address[1]), "--to", url, "--parallel", "4"]) == 0
    assert proxy.connections == 5
    assert capsys.readouterr().err.count("reconnecting in") == 4
    tables = ("r.a", "r.b", "r.big")
    assert target.checksum_table(*tables) == origin.checksum_table(*tables)
    applied = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos ORDER BY domain_id")
    assert ConnectState.parse(",".join("-".join(row) for row in applied)) == ConnectState.parse(gtid_binlog_pos(origin))
    # Each group once: the target logged each of the primary's GTIDs once, in its domain's order.
    mine = [g for g in binlog_gtids(target) if "-2-" not in g]
    assert sorted(mine) == sorted(binlog_gtids(origin))
    for domain in ("0", "5", "7"):
        assert [g for g in mine if g.startswith(f"{domain}-")] == [g for g in binlog_gtids(origin) if g.startswith(f"{domain}-")]


def _dump_remote(port: int, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mariabinlog", "dump", "--no-defaults", "-R", "--host=127.0.0.1", f"--port={port}",
         f"--user={REPL_USER}", f"--password={REPL_PASSWORD}", "-v", "--base64-output=decode-rows", *args,
         "mysql-bin.000001"],
        capture_output=True, timeout=120,
    )


@pytest.mark.parametrize(("damage", "says"), [("duplicate", "packets out of order"), ("cut", "inside a packet")])
def test_dump_remote_prints_nothing_twice_and_names_the_server(
    origin: MariaDBServer, proxies: list[Proxy], damage: str, says: str
) -> None:
    direct = _dump_remote(origin.port)
    assert direct.returncode == 0, direct.stderr
    proxy = Proxy(origin.port, damage=damage, at=60)
    proxies.append(proxy)
    damaged = _dump_remote(proxy.address[1])
    assert damaged.returncode == 1 and proxy.damaged.is_set()
    # What was printed is the direct output up to the damaged event, not one event more.
    assert damaged.stdout and direct.stdout.startswith(damaged.stdout)
    assert len(damaged.stdout) < len(direct.stdout)
    error = damaged.stderr.decode()
    assert error.startswith("ERROR: Got error reading packet from server: "), error
    assert f"127.0.0.1:{proxy.address[1]} mysql-bin.000001" in error and says in error, error


def test_archive_quiet_prints_only_its_final_line(
    origin: MariaDBServer, tmp_path: Path, proxies: list[Proxy], capsys: pytest.CaptureFixture[str]
) -> None:
    proxy = Proxy(origin.port, damage="cut", at=60)  # the reconnect makes the run last 0.5 s and more
    proxies.append(proxy)
    args = ["--from", repl_url(proxy.address[1]), "--dir", str(tmp_path / "quiet"), "--progress-interval", "0.02"]
    assert cli_main(["--log-level", "ERROR", "archive", "--quiet", *args]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("archive: stopped, "), lines


# --------------------------------------------------------------------------- hostile clients of serve

LIMITS = {
    "connect_timeout": 2.0, "net_read_timeout": 1.0, "net_write_timeout": 2.0, "max_connections": 12,
    "login_delay": 0.05, "login_delay_max": 0.5,
}


class Served:
    """``origin`` archived (and followed) into a directory, served with tight limits, and a real
    replica replicating from the server."""

    def __init__(self, origin: MariaDBServer, replica: MariaDBServer, directory: Path) -> None:
        self.origin = origin
        self.replica = replica
        self.archiver = Archiver(str(directory))
        self.client = BinlogClient(repl_options(origin), heartbeat=0.5)
        self.thread = threading.Thread(target=self._archive, daemon=True)
        self.thread.start()
        config = ServerConfig(str(directory), {REPL_USER: hash_password(REPL_PASSWORD)}, **LIMITS)  # type: ignore[arg-type]
        self.server = BinlogServer(config).start()
        self.address = self.server.address
        self.rows = 0
        self.wait_equal()
        replica.sql(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={self.address[1]}, MASTER_USER='{REPL_USER}',"
            f" MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_HEARTBEAT_PERIOD=0.5; START SLAVE"
        )
        self.wait_equal()

    def _archive(self) -> None:
        try:
            self.archiver.run(self.client)
        except ConnectionLostError:
            if self.client.reconnect:  # not stopped by close()
                raise

    def write_and_wait_equal(self) -> None:
        """New groups on the primary; the replica gets them through the archive and the server."""
        self.rows += 1
        self.origin.sql(f"SET gtid_domain_id=9; CREATE TABLE IF NOT EXISTS r.live (id INT PRIMARY KEY);"
                        f" INSERT INTO r.live VALUES ({self.rows})")
        self.wait_equal()
        tables = ("r.a", "r.b", "r.big", "r.live")
        assert self.replica.checksum_table(*tables) == self.origin.checksum_table(*tables)

    def wait_equal(self) -> None:
        position = ConnectState.parse(gtid_binlog_pos(self.origin))

        def caught_up() -> bool:
            if self.archiver.progress.position != position:
                return False
            status = self.replica.records("SHOW SLAVE STATUS")
            if not status:
                return True
            if status[0]["Last_IO_Error"] or status[0]["Last_SQL_Error"]:
                pytest.fail(f"replica stopped: {status[0]['Last_IO_Error']} {status[0]['Last_SQL_Error']}")
            return ConnectState.parse(self.replica.rows("SELECT @@gtid_slave_pos")[0][0]) == position

        wait_for(caught_up, 60, f"the replica to reach {position}")

    def sessions_back_to_the_replica(self) -> None:
        wait_for(lambda: self.server.sessions == 1 and self.server.admission.connections == 1, 10,
                 "the server to hold only the replica's connection")

    def close(self) -> None:
        self.replica.sql("STOP SLAVE")
        self.server.stop()
        self.archiver.stop()
        self.client.reconnect = 0
        self.client.close()
        self.thread.join(timeout=30)
        self.archiver.close()


@pytest.fixture(scope="module")
def served(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    replica = mariadb_server_factory("--server-id=3", name="hostile-replica")
    setup = Served(origin, replica, tmp_path_factory.mktemp("served"))
    yield setup
    setup.close()


def test_idle_connections_are_refused_past_max_connections_and_dropped_after_connect_timeout(served: Served) -> None:
    started = time.monotonic()
    socks = idle_connections(served.address, 20, source="127.0.0.2")
    try:
        refused = [closed_after(sock, 1.5) is not None for sock in socks[11:]]
        assert all(refused), "connections past max_connections (12, one the replica's) must be refused at once"
        held = [closed_after(sock, 5) for sock in socks[:11]]
        assert all(t is not None for t in held) and time.monotonic() - started < 6, held
    finally:
        for sock in socks:
            sock.close()
    served.sessions_back_to_the_replica()
    served.write_and_wait_equal()


def test_a_huge_packet_header_or_garbage_is_dropped_at_once(served: Served) -> None:
    for make in (huge_header, garbage_handshake, garbage_handshake, garbage_handshake):
        with make(served.address, source="127.0.0.3") as sock:
            assert (closed_after(sock, 1.5) or 9) < 1.5, make.__name__  # not by connect_timeout (2 s)
    served.sessions_back_to_the_replica()
    served.write_and_wait_equal()


def test_wrong_passwords_get_1045_ever_later_and_one_at_a_time(served: Served) -> None:
    attacker = "127.0.0.4"
    answers = [login(served.address, REPL_USER, "wrong", source=attacker) for _ in range(8)]
    assert all(isinstance(a, P.ErrPacket) and a.code == 1045 for a, _ in answers), answers[-1]
    assert answers[-1][1] >= LIMITS["login_delay_max"] > answers[0][1]  # slowed down: 0.05 s, doubling, 0.5 s
    # While it is slowed down, the address gets one login at a time; the right password waits too.
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(login(served.address, REPL_USER, "wrong", source=attacker)[0]))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.code for r in results) == [1045, 1129, 1129, 1129]  # type: ignore[attr-defined]
    ok, seconds = login(served.address, REPL_USER, REPL_PASSWORD, source=attacker)
    assert isinstance(ok, P.OkPacket) and seconds >= LIMITS["login_delay_max"]
    ok, seconds = login(served.address, REPL_USER, REPL_PASSWORD, source=attacker)  # a good login cleared it
    assert isinstance(ok, P.OkPacket) and seconds < LIMITS["login_delay_max"]
    served.sessions_back_to_the_replica()
    served.write_and_wait_equal()


def test_a_slow_reader_gets_everything_and_a_stuck_one_is_dropped(served: Served) -> None:
    # ~6 MB at 3 MB/s: what the socket buffers do not take goes out over more than a second,
    # as fast as the reader takes it (a send limit of 1 s in all cut such a replica before);
    # the stuck reader takes nothing for net_write_timeout and is dropped.
    slow = DumpReader(served.address, REPL_USER, REPL_PASSWORD, rate=3 << 20)
    stuck = DumpReader(served.address, REPL_USER, REPL_PASSWORD, rate=0)
    try:
        wait_for(lambda: served.server.sessions == 2, 10, "the server to drop the stuck reader")
        slow.thread.join(timeout=30)
        assert slow.ended == "EndOfStream" and slow.finished - slow.started > 1.0
        groups = len(binlog_gtids(served.origin))
        assert slow.events > 3 * groups
    finally:
        slow.close()
        stuck.close()
    served.sessions_back_to_the_replica()
    served.write_and_wait_equal()


def test_a_real_replica_fed_by_serve_through_a_flaky_network_ends_equal(
    origin: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, proxies: list[Proxy], tmp_path: Path
) -> None:
    """A native replica reading ``serve`` through a network that cuts four connections, each
    at another place of the stream (inside groups of three domains): the replica reconnects
    by GTID each time, ``serve`` resumes it there, and it ends equal, each group once."""
    directory = tmp_path / "archive"
    assert cli_main(["archive", "--quiet", "--from", repl_url(origin.port), "--dir", str(directory)]) == 0
    server = BinlogServer(ServerConfig(str(directory), {REPL_USER: hash_password(REPL_PASSWORD)})).start()
    replica = mariadb_server_factory("--log-bin", "--log-slave-updates", "--server-id=3", name="flaky-replica")
    try:
        proxy = Proxy(server.address[1], damage="cut", at=25, times=4, moving=True)
        proxies.append(proxy)
        replica.sql(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={proxy.address[1]}, MASTER_USER='{REPL_USER}',"
            f" MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE"
        )
        position = ConnectState.parse(gtid_binlog_pos(origin))

        def caught_up() -> bool:
            status = replica.records("SHOW SLAVE STATUS")[0]
            assert not status["Last_SQL_Error"], status["Last_SQL_Error"]
            return ConnectState.parse(replica.rows("SELECT @@gtid_slave_pos")[0][0]) == position

        wait_for(caught_up, 120, f"the replica to reach {position}")
        assert proxy.connections == 5
        tables = ("r.a", "r.b", "r.big")
        assert replica.checksum_table(*tables) == origin.checksum_table(*tables)
        assert binlog_gtids(replica) == binlog_gtids(origin)
    finally:
        replica.sql("STOP SLAVE")
        server.stop()
