"""primary -> ``mariabinlog archive`` (.ibb through the engine) -> ``mariabinlog serve`` -> a real
MariaDB replica, and the archive's and server's own guarantees and errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory, program
from replication_helpers import (
    LIVE_TABLES,
    PRIMARY_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    binlog_gtids,
    create_repl_user,
    gtid_binlog_pos,
    mixed_workload,
    repl_url,
    wait_for,
)

from mariabinlog.cli import main as cli_main
from mariabinlog.codec.events import (
    CHECKSUM_OFF,
    LOG_EVENT_ARTIFICIAL_F,
    FormatDescriptionEvent,
    HeartbeatEvent,
    RotateEvent,
)
from mariabinlog.codec.gtid import BinlogState, ConnectState, GtidList
from mariabinlog.codec.wire.protocol import ServerError
from mariabinlog.engine import Engine
from mariabinlog.engine.files import binlog_name
from mariabinlog.engine.view import view
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import ConnectionOptions
from mariabinlog.replication.server import BinlogServer, ServerConfig, hash_password
from mariabinlog.replication.sources import ArchiveReader, archive_pages

REPO = Path(__file__).resolve().parents[2]


def archive(*args: str) -> int:
    """``mariabinlog archive ARGS`` in-process."""
    return cli_main(["archive", "--quiet", *args])


def archived_gtids(directory: Path) -> list[str]:
    """GTIDs of every group in an archive, in order."""
    return [str(g.gtid) for g in ArchiveReader(archive_pages(str(directory)), None).groups()]


def engine_state(directory: Path) -> BinlogState:
    """The archive engine's GTID state (opens and closes the engine)."""
    engine = Engine.open(directory, restart_marker=False)
    try:
        return engine.gtid_state()
    finally:
        engine.close()


@pytest.fixture(scope="module")
def source(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    """A primary with the mixed workload (DDL, all types, a big transaction, domains 10-13)."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="arch-primary")
    create_repl_user(server)
    mixed_workload(server)
    return server


@pytest.fixture
def binlog_server(tmp_path: Path) -> Iterator[callable]:  # type: ignore[valid-type]
    """Start in-process binlog servers over a directory; all are stopped at the end."""
    servers: list[BinlogServer] = []

    def start(directory: Path, **options: object) -> BinlogServer:
        config = ServerConfig(str(directory), {REPL_USER: hash_password(REPL_PASSWORD)}, server_id=1, **options)  # type: ignore[arg-type]
        server = BinlogServer(config).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_archive_is_the_stream_and_restart_continues(source: MariaDBServer, tmp_path: Path) -> None:
    directory = tmp_path / "arch"
    assert archive("--from", repl_url(source), "--dir", str(directory), "--max-binlog-size", "256K") == 0
    assert archived_gtids(directory) == binlog_gtids(source)
    assert engine_state(directory) == BinlogState.from_list(GtidList.parse(source.rows("SELECT @@gtid_binlog_state")[0][0]))
    assert len(list(directory.glob("binlog-*.ibb"))) > 3  # the 20000-row transaction spans files
    # More data; a restart asks only for what is missing.
    source.sql("SET gtid_domain_id=11; INSERT INTO live.d1 (k, note) VALUES (900, 'after restart')")
    assert archive("--from", repl_url(source), "--dir", str(directory), "--max-binlog-size", "256K") == 0
    assert archived_gtids(directory) == binlog_gtids(source)


def _small_groups(source: MariaDBServer, count: int) -> None:
    source.pipe(
        "CREATE TABLE IF NOT EXISTS live.small (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(40)) ENGINE=InnoDB;\n"
        + "".join(f"INSERT INTO live.small (note) VALUES ('small {i}');\n" for i in range(count))
    )


def test_archive_purge_options(source: MariaDBServer, tmp_path: Path) -> None:
    directory = tmp_path / "purged"
    options = ["--max-binlog-size", "64K", "--max-total-size", "256K", "--purge-interval", "0.01"]
    assert archive("--from", repl_url(source), "--dir", str(directory), *options) == 0
    # The big groups' out-of-band data keeps their files; many small groups later, they can go.
    _small_groups(source, 2500)
    assert archive("--from", repl_url(source), "--dir", str(directory), *options) == 0
    files = sorted(directory.glob("binlog-*.ibb"))
    assert files[0].name != "binlog-000000.ibb"
    assert sum(f.stat().st_size for f in files[:-1]) <= 256 * 1024 + 64 * 1024
    # The state survives purging; what is left reads back in order.
    assert engine_state(directory).connect_state() == ConnectState.parse(gtid_binlog_pos(source))
    left = archived_gtids(directory)
    assert left and left == binlog_gtids(source)[-len(left) :]


def _wait_replica(replica: MariaDBServer, position: str, timeout: float = 120) -> None:
    def caught_up() -> bool:
        status = replica.records("SHOW SLAVE STATUS")[0]
        if status["Last_IO_Error"] or status["Last_SQL_Error"]:
            pytest.fail(f"replica stopped: {status['Last_IO_Error']} {status['Last_SQL_Error']}")
        return ConnectState.parse(replica.rows("SELECT @@gtid_slave_pos")[0][0]) == ConnectState.parse(position)

    wait_for(caught_up, timeout, f"the replica to reach {position}")


def test_primary_archive_serve_real_replica(
    source: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path, binlog_server
) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path / "chain"
    # The archiver runs as its own process, following the primary, while the server serves.
    command = [sys.executable, "-m", "mariabinlog", "archive", "--from", repl_url(source), "--dir",
               str(directory), "--stop-never", "--heartbeat", "0.5", "--max-binlog-size", "1M", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    archiver = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    replica = mariadb_server_factory("--server-id=3", "--default-time-zone=+00:00", name="chain-replica")
    try:
        wait_for(lambda: directory.is_dir() and any(directory.glob("binlog-*.ibb")), 60, "the archive")
        server = binlog_server(directory)
        host, port = server.address
        replica.sql(
            f"CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, MASTER_USER='{REPL_USER}',"
            f" MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_HEARTBEAT_PERIOD=1;"
            " START SLAVE"
        )
        _wait_replica(replica, gtid_binlog_pos(source))
        assert replica.checksum_table(*LIVE_TABLES) == source.checksum_table(*LIVE_TABLES)
        # Live: new writes in several domains flow primary -> archiver -> server -> replica.
        source.pipe(
            "SET gtid_domain_id=12; INSERT INTO live.d2 (k, note) SELECT seq, 'live' FROM live.seq_1_to_500;\n"
            "SET gtid_domain_id=0; ALTER TABLE live.types ADD COLUMN later VARCHAR(10) DEFAULT 'x';\n"
            "SET gtid_domain_id=13; UPDATE live.d3 SET note = 'changed' WHERE k < 10;\n"
        )
        _wait_replica(replica, gtid_binlog_pos(source))
        assert replica.checksum_table(*LIVE_TABLES) == source.checksum_table(*LIVE_TABLES)
        status = replica.records("SHOW SLAVE STATUS")[0]
        assert status["Master_Log_File"].startswith("binlog-") and int(status["Read_Master_Log_Pos"]) > 4
    finally:
        archiver.send_signal(signal.SIGTERM)
        _, err = archiver.communicate(timeout=60)
        replica.sql("STOP SLAVE")
    assert archiver.returncode == 0, err.decode()


def _answers(primary: ConnectionOptions, served: ConnectionOptions, **client: object) -> list[object]:
    """What the primary and the binlog server answer the same request with: groups or an error."""
    answers: list[object] = []
    for options in (primary, served):
        try:
            answers.append([str(g.gtid) for g in BinlogClient(options, reconnect=0, **client).groups()])  # type: ignore[arg-type]
        except ServerError as err:
            answers.append((err.code, err.message))
    return answers


def test_server_refuses_like_a_primary(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path / "errors"
    assert archive("--from", repl_url(source), "--dir", str(directory)) == 0
    server = binlog_server(directory)
    host, port = server.address
    served = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=10)
    primary = ConnectionOptions(host="127.0.0.1", port=source.port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=10)
    # Wrong credentials.
    with pytest.raises(ServerError) as info:
        list(BinlogClient(ConnectionOptions(host=host, port=port, user=REPL_USER, password="nope"), blocking=False).groups())
    assert info.value.code == 1045 and "Access denied for user 'repl'" in info.value.message
    # A GTID the binlog does not have, beyond it and before it: the primary's own errors.
    for start in ("10-1-999999", "10-7-3", "0-1-1,10-1-999999"):
        answers = _answers(primary, served, start=start, blocking=False)
        assert isinstance(answers[0], tuple) and answers[0] == answers[1], start
    # Everything after a GTID, non-blocking: the same groups as the primary sends.
    start = binlog_gtids(source)[5]
    expected = [str(g.gtid) for g in BinlogClient(primary, start=start, blocking=False).groups()]
    got = [str(g.gtid) for g in BinlogClient(served, start=start, blocking=False).groups()]
    assert got == expected


def test_server_reports_purged_positions(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path / "purged-serve"
    options = ["--max-binlog-size", "64K", "--max-total-size", "128K", "--purge-interval", "0.01"]
    assert archive("--from", repl_url(source), "--dir", str(directory), *options) == 0
    _small_groups(source, 1000)
    assert archive("--from", repl_url(source), "--dir", str(directory), *options) == 0
    server = binlog_server(directory)
    host, port = server.address
    served = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=10)
    with pytest.raises(ServerError) as info:
        list(BinlogClient(served, start="", blocking=False, reconnect=0).groups())
    assert info.value.code == 1236
    assert info.value.message == (
        "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old"
        " and required binlog files have been purged."
    )
    # The newest position still works.
    assert list(BinlogClient(served, start=gtid_binlog_pos(source), blocking=False).groups()) == []


def test_client_reads_an_engine_binlog_style_stream(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path / "engine-style"
    assert archive("--from", repl_url(source), "--dir", str(directory), "--max-binlog-size", "256K") == 0
    server = binlog_server(directory, engine_style=True)
    host, port = server.address
    options = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=10)
    events = list(BinlogClient(options, blocking=False).events())
    first = events[0].event
    assert isinstance(first, FormatDescriptionEvent) and first.flags & LOG_EVENT_ARTIFICIAL_F
    assert first.checksum_alg == CHECKSUM_OFF and not any(e.has_checksum for e in events)
    rotates = [e.event for e in events if isinstance(e.event, RotateEvent)]
    assert rotates and all(r.flags & LOG_EVENT_ARTIFICIAL_F and r.next_position == 0 for r in rotates)
    assert [r.next_file.decode() for r in rotates] == sorted({r.next_file.decode() for r in rotates})
    assert all(e.position == 0 and e.end_position == 0 for e in events)
    groups = list(BinlogClient(options, blocking=False).groups())
    assert [str(g.gtid) for g in groups] == binlog_gtids(source)
    assert {g.source for g in groups} == {r.next_file.decode() for r in rotates}
    # Heartbeats of an engine-style primary name the current .ibb file.
    client = BinlogClient(options, start=gtid_binlog_pos(source), heartbeat=0.2)
    for placed in client.events():
        if isinstance(placed.event, HeartbeatEvent):
            assert placed.event.log_ident.decode().startswith("binlog-")
            break
    client.close()


def test_serve_and_replicate_commands(source: MariaDBServer, mariadb_server_factory: MariaDBServerFactory, tmp_path: Path) -> None:
    directory = tmp_path / "cli"
    assert archive("--from", repl_url(source), "--dir", str(directory)) == 0
    port_file = tmp_path / "port"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    serve = subprocess.Popen(
        [sys.executable, "-m", "mariabinlog", "serve", "--dir", str(directory), "--port", "0", "--port-file",
         str(port_file), "--account", f"{REPL_USER}:{REPL_PASSWORD}"],
        env=env, stderr=subprocess.PIPE,
    )
    try:
        wait_for(port_file.exists, 30, "the server's port file")
        port = int(port_file.read_text())
        # replicate from the served archive (a primary URL), with JSON progress.
        target = mariadb_server_factory("--server-id=5", name="cli-target")
        progress = tmp_path / "progress.jsonl"
        status = cli_main(["replicate", "--quiet", "--from", f"mariadb://{REPL_USER}:{REPL_PASSWORD.replace('ä', '%C3%A4')}"
                           f"@127.0.0.1:{port}", "--to", f"mariadb://root@127.0.0.1:{target.port}",
                           "--progress-json", str(progress), "--progress-interval", "0.05"])
        assert status == 0
        assert target.checksum_table(*LIVE_TABLES) == source.checksum_table(*LIVE_TABLES)
        reports = [json.loads(line) for line in progress.read_text().splitlines()]
        final = reports[-1]
        assert final["state"] == "done" and final["job"] == "replicate"
        assert ConnectState.parse(final["position"]) == ConnectState.parse(gtid_binlog_pos(source))
        assert final["groups"] == len(binlog_gtids(source)) and {"events_per_s", "seconds_behind"} <= set(final)
    finally:
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate(timeout=30)
    assert serve.returncode == 0, err.decode()
    assert b"listening on 127.0.0.1:" in err


def test_server_strict_hole_and_until_like_a_primary(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    """``@slave_gtid_strict_mode`` with a start GTID inside a hole, and ``@slave_until_gtid``
    (START SLAVE UNTIL master_gtid_pos): the binlog server answers as the real primary."""
    # Domain 20 gets a hole: 20-1-1, then 20-1-3 and 20-1-4 (20-1-2 never existed).
    source.pipe(
        "SET SESSION gtid_domain_id=20, SESSION server_id=1, SESSION gtid_seq_no=1;\n"
        "CREATE TABLE live.holes (id INT PRIMARY KEY) ENGINE=InnoDB;\n"
        "SET SESSION gtid_seq_no=3; INSERT INTO live.holes VALUES (3);\n"
        "INSERT INTO live.holes VALUES (4);\n"
    )
    directory = tmp_path / "strict-until"
    assert archive("--from", repl_url(source), "--dir", str(directory)) == 0
    server = binlog_server(directory)
    host, port = server.address
    served = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=20)
    primary = ConnectionOptions(host="127.0.0.1", port=source.port, user=REPL_USER, password=REPL_PASSWORD, read_timeout=20)
    everything = gtid_binlog_pos(source)
    others = ",".join(g for g in everything.split(",") if not g.startswith("20-"))
    # Strict: the primary's hole error; not strict: the stream from 20-1-3 on.
    strict = _answers(primary, served, start=f"{others},20-1-2", strict=True, blocking=False)
    assert strict[0] == strict[1]
    assert strict[0] == (1236, "The binlog on the master is missing the GTID 20-1-2 requested by the slave (even though"
                         " both a prior and a subsequent sequence number does exist), and GTID strict mode is enabled")
    loose = _answers(primary, served, start=f"{others},20-1-2", strict=False, blocking=False)
    assert loose[0] == loose[1] == ["20-1-3", "20-1-4"]
    # The start GTID itself exists: strict mode is content.
    assert _answers(primary, served, start=f"{others},20-1-1", strict=True, blocking=False) == [
        ["20-1-3", "20-1-4"]] * 2
    # UNTIL: a blocking dump that ends by itself once every named domain reached its GTID;
    # domains not named are not sent at all.
    gtids = binlog_gtids(source)
    domain_11 = [g for g in gtids if g.startswith("11-")]
    start = gtids[3]
    until = f"11-{domain_11[10].split('-', 1)[1]},20-1-3"
    answers = _answers(primary, served, start=start, until=until, blocking=True)
    assert answers[0] == answers[1]
    assert answers[0] == [g for g in gtids[4:] if g.startswith("11-")][:11] + ["20-1-1", "20-1-3"]


def test_a_lower_sequence_number_reaches_replicas_as_from_the_primary(
    mariadb_server_factory: MariaDBServerFactory, tmp_path: Path, binlog_server
) -> None:  # type: ignore[no-untyped-def]
    """A primary without strict mode logs a GTID below its domain's last one (a failover to a
    replica that was behind does the same) and sends it on, and its replicas apply it. The
    archive stored it, but its reader skipped every group at or below the domain's last
    sequence number read: ``serve`` never sent it (a native replica fed by it lost the row)
    and ``replicate`` from the archive dropped it silently. Now both carry it, and
    ``replicate`` in strict mode (its default, as mariadb-binlog's) stops and names it."""
    primary = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="ooo-primary")
    create_repl_user(primary)
    primary.sql(
        "SET gtid_domain_id=4; CREATE DATABASE oo; CREATE TABLE oo.t (id INT PRIMARY KEY, v INT);"
        " INSERT INTO oo.t VALUES (1, 1); INSERT INTO oo.t VALUES (2, 2);"
        " SET gtid_seq_no=2; INSERT INTO oo.t VALUES (10, 10);"
        " UPDATE oo.t SET v = v + 1; SET gtid_domain_id=0; INSERT INTO oo.t VALUES (20, 20)"
    )
    assert binlog_gtids(primary).count("4-1-2") == 2
    directory = tmp_path / "ooo"
    assert archive("--from", repl_url(primary), "--dir", str(directory)) == 0
    assert archived_gtids(directory) == binlog_gtids(primary)
    expected = primary.checksum_table("oo.t")

    target = mariadb_server_factory("--server-id=5", name="ooo-target")
    to = f"mariadb://root@127.0.0.1:{target.port}"
    assert cli_main(["replicate", "--quiet", "--from", str(directory), "--to", to]) == 1
    # Run again, it resumes after 4-1-4 and still refuses the lower 4-1-2 in strict mode.
    assert cli_main(["replicate", "--quiet", "--from", str(directory), "--to", to]) == 1
    assert cli_main(["replicate", "--quiet", "--skip-gtid-strict-mode", "--from", str(directory), "--to", to]) == 0
    assert target.checksum_table("oo.t") == expected

    server = binlog_server(directory)
    host, port = server.address
    replica = mariadb_server_factory("--server-id=3", name="ooo-replica")
    replica.sql(
        f"CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, MASTER_USER='{REPL_USER}',"
        f" MASTER_PASSWORD='{REPL_PASSWORD}', MASTER_USE_GTID=slave_pos; START SLAVE"
    )
    try:
        _wait_replica(replica, gtid_binlog_pos(primary))
        assert replica.checksum_table("oo.t") == expected
    finally:
        replica.sql("STOP SLAVE")


def test_serve_lists_its_binlogs_and_status_as_a_primary(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    """SHOW BINARY LOGS and SHOW MASTER STATUS (CDC clients such as Debezium ask both before
    they dump), to the real mariadb client: the archive's files and end, as ``mariabinlog
    engine files`` and ``engine status`` read them. They were refused (1235) before."""
    directory = tmp_path / "listed"
    assert archive("--from", repl_url(source), "--dir", str(directory), "--max-binlog-size", "256K") == 0
    host, port = binlog_server(directory).address
    result = subprocess.run(
        [program("mariadb"), "--no-defaults", f"--host={host}", f"--port={port}", f"--user={REPL_USER}",
         f"--password={REPL_PASSWORD}", "-N", "-B", "-e", "SHOW BINARY LOGS; SHOW MASTER STATUS"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    seen = view(str(directory))
    assert len(seen.files) > 1
    listed = [f"{binlog_name(n)}\t{size}" for n, size in seen.files]
    end_file, end_offset = seen.end
    assert result.stdout.splitlines() == [*listed, f"{binlog_name(end_file)}\t{end_offset}\t\t"]


def test_serve_keeps_no_descriptor_per_query_or_dump(source: MariaDBServer, tmp_path: Path, binlog_server) -> None:  # type: ignore[no-untyped-def]
    """Each query of a GTID variable, and each dump, opened the archive's files and left them
    open: the fuzzing campaign's `serve` target ran out of descriptors after 746,781 inputs
    ("Too many open files"), and a long-running `serve` would, one replica reconnect or
    `SELECT @@gtid_binlog_pos` at a time."""
    directory = tmp_path / "fds"
    assert archive("--from", repl_url(source), "--dir", str(directory)) == 0
    host, port = binlog_server(directory).address
    options = ConnectionOptions(host=host, port=port, user=REPL_USER, password=REPL_PASSWORD)
    position = gtid_binlog_pos(source)

    def session() -> None:
        client = BinlogClient(options, reconnect=0, heartbeat=0, blocking=False, start=position)
        assert list(client.groups()) == []  # dumps from the end: nothing after it, and asks for GTID variables
        subprocess.run(
            [program("mariadb"), "--no-defaults", f"--host={host}", f"--port={port}", f"--user={REPL_USER}",
             f"--password={REPL_PASSWORD}", "-e", "SELECT @@gtid_binlog_pos; SELECT @@gtid_binlog_state"],
            check=True, capture_output=True, timeout=60,
        )

    session()  # whatever is opened once (imports, the first connection) is not counted
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        session()
    assert len(os.listdir("/proc/self/fd")) <= before + 2
