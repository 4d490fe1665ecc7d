"""The replication client against a real MariaDB primary: GTID streaming, heartbeats, fake and
real rotates, Format_description and Gtid_list handling, reconnect-resume, errors."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from mariadb_server import MariaDBServer
from replication_helpers import (
    REPL_PASSWORD,
    binlog_gtids,
    gtid_binlog_pos,
    repl_options,
    root_options,
)

from mariabinlog.codec.events import (
    CHECKSUM_CRC32,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    ROTATE_EVENT,
    FormatDescriptionEvent,
    HeartbeatEvent,
    RotateEvent,
)
from mariabinlog.codec.gtid import ConnectState
from mariabinlog.codec.wire.protocol import ServerError
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import Connection, ConnectionLostError

SCHEMA = """
CREATE DATABASE IF NOT EXISTS c;
CREATE TABLE IF NOT EXISTS c.t (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(100)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS c.load (id BIGINT PRIMARY KEY AUTO_INCREMENT, domain INT, n INT, payload TEXT) ENGINE=InnoDB;
"""


@pytest.fixture(scope="module")
def history(primary: MariaDBServer) -> MariaDBServer:
    """Some groups in two domains and two binlog files."""
    primary.pipe(SCHEMA)
    for i in range(5):
        primary.sql(f"INSERT INTO c.t (v) VALUES ('row {i}')")
    primary.sql("SET gtid_domain_id=7; INSERT INTO c.t (v) VALUES ('d7 a'), ('d7 b'); UPDATE c.t SET v='u' WHERE id=1")
    primary.flush_binlogs()
    primary.sql("DELETE FROM c.t WHERE id=2")
    return primary


def test_stream_matches_show_binlog_events(history: MariaDBServer) -> None:
    client = BinlogClient(repl_options(history), blocking=False)
    events = list(client.events())
    fake = events[0]
    assert fake.event.type_code == ROTATE_EVENT and fake.event.flags & LOG_EVENT_ARTIFICIAL_F
    assert fake.event.timestamp == 0 and fake.event.log_pos == 0
    assert isinstance(fake.event, RotateEvent) and fake.event.next_file == b"mysql-bin.000001"
    fd = events[1].event
    assert isinstance(fd, FormatDescriptionEvent) and fd.checksum_alg == CHECKSUM_CRC32
    assert events[2].event.type_code == GTID_LIST_EVENT
    # Every real event, in order, at the offsets SHOW BINLOG EVENTS reports.
    expected = []
    for name, *_ in history.rows("SHOW BINARY LOGS"):
        expected += [(name, int(e["Pos"]), int(e["End_log_pos"]), e["Event_type"]) for e in history.binlog_events(name)]
    real = [e for e in events if not e.event.flags & LOG_EVENT_ARTIFICIAL_F]
    got = [(e.file, e.position, e.end_position, e.event.name) for e in real]
    assert got == expected
    assert all(e.has_checksum for e in real)
    assert client.file == expected[-1][0] and client.file_position == expected[-1][2]


def test_groups_from_a_gtid_position(history: MariaDBServer) -> None:
    gtids = binlog_gtids(history)
    start = gtids[3]
    client = BinlogClient(repl_options(history), start=start, blocking=False)
    got = [str(group.gtid) for group in client.groups()]
    domain = start.split("-")[0]
    # Groups of the start's domain after it, and every group of other domains (not in the state).
    expected = [g for g in gtids if g.split("-")[0] != domain or gtids.index(g) > 3]
    assert got == expected
    assert client.position == ConnectState.parse(gtid_binlog_pos(history))


def test_full_connect_state_streams_nothing_more(history: MariaDBServer) -> None:
    client = BinlogClient(repl_options(history), start=gtid_binlog_pos(history), blocking=False)
    events = list(client.events())
    names = {e.event.name for e in events if e.event.type_code not in (ROTATE_EVENT, FORMAT_DESCRIPTION_EVENT)}
    assert names <= {"Gtid_list", "Binlog_checkpoint"}
    assert list(client.groups()) == []


def test_heartbeats_when_idle(history: MariaDBServer) -> None:
    client = BinlogClient(repl_options(history), start=gtid_binlog_pos(history), heartbeat=0.25)
    beats: list[HeartbeatEvent] = []
    started = time.monotonic()
    for placed in client.events():
        if placed.event.type_code == HEARTBEAT_LOG_EVENT:
            assert isinstance(placed.event, HeartbeatEvent)
            beats.append(placed.event)
            if len(beats) == 1:  # registered (COM_REGISTER_SLAVE) while streaming
                assert str(client.server_id) in [row[0] for row in history.rows("SHOW SLAVE HOSTS")]
            if len(beats) == 3:
                break
        assert time.monotonic() - started < 20
    assert client.idle
    current = history.rows("SHOW MASTER STATUS")[0]
    assert {b.log_ident for b in beats} == {current[0].encode()}
    assert beats[-1].log_pos == int(current[1])


def test_rotate_and_new_file_mid_stream(history: MariaDBServer) -> None:
    start = gtid_binlog_pos(history)
    client = BinlogClient(repl_options(history), start=start, heartbeat=0.5)
    files: list[str] = []
    got: list[str] = []

    def writer() -> None:
        history.sql("INSERT INTO c.t (v) VALUES ('before flush')")
        history.flush_binlogs()
        history.sql("INSERT INTO c.t (v) VALUES ('after flush')")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for group in client.groups():
            got.append(str(group.gtid))
            files.append(group.source)
            if len(got) == 2:
                break
    finally:
        thread.join(timeout=60)
    assert got == binlog_gtids(history)[-2:]
    assert files[0] != files[1] and files[1] == history.rows("SHOW MASTER STATUS")[0][0]


def test_reconnect_resumes_without_losing_or_repeating_groups(history: MariaDBServer, load_factory) -> None:  # type: ignore[no-untyped-def]
    start = gtid_binlog_pos(history)
    before = len(binlog_gtids(history))
    client = BinlogClient(repl_options(history), start=start, heartbeat=0.5, reconnect_delay=0.05)
    got: list[str] = []
    drops = 0
    load = load_factory(history, "c.load", (0, 3, 4), pause=0.001)
    with Connection.open(root_options(history)) as admin:

        def kill_dump() -> None:
            for row in admin.rows("SHOW PROCESSLIST"):
                if row[4] == b"Binlog Dump":
                    admin.query(f"KILL CONNECTION {int(row[0])}")

        load.__enter__()
        deadline = time.monotonic() + 120
        stopped = False
        for group in client.groups():
            got.append(str(group.gtid))
            if not stopped and len(got) % 150 == 0:
                if drops < 3:
                    kill_dump()  # the primary drops us
                elif drops < 5:
                    client.close()  # we drop the connection ourselves
                drops += 1
            if not stopped and drops >= 6:
                load.stop()
                stopped = True
                final = ConnectState.parse(gtid_binlog_pos(history))
            if stopped and ConnectState.parse(str(client.position)) == final:
                break
            assert time.monotonic() < deadline, "stream did not catch up"
    assert client.connects >= 6
    counts = Counter(got)
    assert not [g for g, n in counts.items() if n > 1], "groups delivered twice"
    assert got == binlog_gtids(history)[before:]


def test_unknown_gtid_is_refused_like_a_replica_sees_it(history: MariaDBServer) -> None:
    client = BinlogClient(repl_options(history), start="0-1-999999", blocking=False)
    with pytest.raises(ServerError) as info:
        list(client.groups())
    assert info.value.code == 1236
    assert "connecting slave requested to start from GTID 0-1-999999, which is not in the master's binlog" in str(info.value)


def test_wrong_password_and_no_server(history: MariaDBServer) -> None:
    with pytest.raises(ServerError) as info:
        Connection.open(repl_options(history, password=REPL_PASSWORD + "x"))
    assert info.value.code == 1045
    client = BinlogClient(repl_options(history, port=1), blocking=False, reconnect=1, reconnect_delay=0.01)
    with pytest.raises(ConnectionLostError, match="cannot connect"):
        list(client.groups())


def test_unix_socket_and_declared_checksum_none(history: MariaDBServer) -> None:
    options = repl_options(history, socket=str(history.socket))
    client = BinlogClient(options, blocking=False, checksum="NONE")
    groups = list(client.groups())
    assert [str(g.gtid) for g in groups] == binlog_gtids(history)
    # Events keep the footers they have on disk; groups carry them stripped.
    assert all(len(g.raw[0]) == int.from_bytes(g.raw[0][9:13], "little") for g in groups)


def test_connection_query_errors_and_results(history: MariaDBServer) -> None:
    with Connection.open(root_options(history)) as conn:
        results = conn.query("SELECT 1 AS a, NULL AS b; SELECT 'x'")
        assert [r.rows for r in results] == [((b"1", None),), ((b"x",),)]  # type: ignore[union-attr]
        with pytest.raises(ServerError) as info:
            conn.query("SELECT 1; SELEC 2")
        assert info.value.code == 1064
        assert conn.scalar("SELECT 42") == b"42"  # the connection is still usable
        conn.ping()
