"""``mariabinlog replicate`` against real target servers: the corpus replayed from its binlog
files (every column type, statement and mixed format, compressed events, big transactions,
several domains), positions, filters, strict mode, refusals, resume, and a live primary with
per-domain parallel apply."""

from __future__ import annotations

import csv

import pytest
from mariadb_server import CORPUS_OPTIONS, MariaDBServer, MariaDBServerFactory
from replication_helpers import (
    LIVE_TABLES,
    binlog_gtids,
    gtid_binlog_pos,
    mixed_workload,
    root_options,
)

from mariabinlog.cli import main as cli_main
from mariabinlog.codec.gtid import ConnectState

from corpus_data import CORPUS, corpus_path


def _replay_rows() -> list[dict[str, str]]:
    with corpus_path("replay.tsv").open(newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


REPLAY = _replay_rows()


def url(server: MariaDBServer) -> str:
    """The server's root URL over TCP."""
    return f"mariadb://root@127.0.0.1:{server.port}"


def expected_checksums(workload: str) -> dict[str, int]:
    """``checksums/<workload>.tsv`` of the corpus: table -> CHECKSUM TABLE ... EXTENDED."""
    with (CORPUS / "checksums" / f"{workload}.tsv").open(newline="") as handle:
        return {row["table"]: int(row["checksum"]) for row in csv.DictReader(handle, delimiter="\t")}


def position(target: MariaDBServer, channel: str) -> ConnectState:
    """The channel's recorded position in the target."""
    rows = target.rows(
        f"SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos WHERE channel='{channel}' ORDER BY domain_id"
    )
    return ConnectState.parse(",".join(f"{d}-{s}-{n}" for d, s, n in rows))


def replicate(*args: str) -> int:
    """Run ``mariabinlog replicate ARGS`` in-process; its exit status."""
    return cli_main(["replicate", "--quiet", *args])


@pytest.fixture(scope="module")
def target(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    """A target with the corpus server's options, logging what it applies."""
    return mariadb_server_factory(*CORPUS_OPTIONS, "--log-bin", "--server-id=99", name="target")


@pytest.mark.parametrize("row", REPLAY, ids=lambda r: r["workload"])
def test_corpus_replays_to_recorded_checksums(row: dict[str, str], target: MariaDBServer) -> None:
    workload = row["workload"]
    files = [str(CORPUS / f) for f in row["files"].split()]
    options = row["options"].split()
    assert replicate("--from", *files, "--to", url(target), "--channel", workload, "--parallel", "1", *options) == 0
    expected = expected_checksums(workload)
    assert target.checksum_table(*expected) == expected
    # The position is the last GTID of every domain, and the target's binlog kept the GTIDs.
    last = ConnectState()
    for gtid in _file_gtids(files):
        last.update(gtid)
    assert position(target, workload) == last


def _file_gtids(files: list[str]) -> list:  # type: ignore[type-arg]
    from mariabinlog.replication.sources import FileSource

    return [group.gtid for group in FileSource(files).groups()]


def _xa_prepared(server: MariaDBServer) -> list[str]:
    """The xids (gtrid + bqual) the server holds prepared."""
    return sorted(row[3] for row in server.rows("XA RECOVER"))


@pytest.mark.parametrize("preserve", [True, False], ids=["preserved-gtids", "new-gtids"])
def test_xa_resumes_after_a_crash_between_prepare_or_commit_and_its_position(
    preserve: bool, mariadb_server_factory: MariaDBServerFactory
) -> None:
    """A crash right after XA PREPARE / XA COMMIT ran but before the position was recorded:
    the rerun finds the prepared xid (XA RECOVER) or its absence (XAER_NOTA) and goes on,
    applying nothing twice."""
    files = [str(CORPUS / "binlogs" / "w09_xa" / "mysql-bin.000001")]
    server = mariadb_server_factory(*CORPUS_OPTIONS, "--log-bin", "--server-id=98", name="xa-target")
    extra = [] if preserve else ["--no-preserve-gtids"]
    table = "mariabinlog.gtid_slave_pos"
    # Up to and including xa1's PREPARE (0-1-3); xa1 is then prepared on the target.
    assert replicate("--from", *files, "--to", url(server), "--stop-position", "0-1-3", *extra) == 0
    assert _xa_prepared(server) == ["xa1"]
    # The crash: the position still says 0-1-2 with 0-1-3 pending (the row the applier wrote first).
    server.sql(f"UPDATE {table} SET seq_no=2, pending_server_id=1, pending_seq_no=3 WHERE domain_id=0")
    assert replicate("--from", *files, "--to", url(server), "--stop-position", "0-1-4", *extra) == 0
    assert _xa_prepared(server) == []
    assert server.rows("SELECT id, v FROM w09_xa.x") == [("1", "xa1 upd")]
    # The same after xa1's XA COMMIT (0-1-4) ran.
    server.sql(f"UPDATE {table} SET seq_no=3, pending_server_id=1, pending_seq_no=4 WHERE domain_id=0")
    assert replicate("--from", *files, "--to", url(server), *extra) == 0
    expected = expected_checksums("w09_xa")
    assert server.checksum_table(*expected) == expected
    assert _xa_prepared(server) == []
    assert position(server, "default") == ConnectState.parse("0-1-10,1-2-2")


def test_strict_mode_stops_before_an_out_of_order_gtid(target: MariaDBServer, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted((CORPUS / "binlogs" / "w08_gtid_out_of_order").glob("mysql-bin.*"))]
    target.sql("DROP DATABASE IF EXISTS w08_ooo")
    # Domain 1 writes tables that domain 0 creates: apply serially.
    assert replicate("--from", *files, "--to", url(target), "--channel", "strict", "--parallel", "1") == 1
    assert "GTID 1-2-5 is out of order" in capsys.readouterr().err
    assert position(target, "strict")[1] == ConnectState.parse("1-2-10")[1]
    # Without strict mode the rest follows, from where the first run stopped.
    assert replicate("--from", *files, "--to", url(target), "--channel", "strict", "--parallel", "1",
                     "--skip-gtid-strict-mode") == 0
    expected = expected_checksums("w08_gtid_out_of_order")
    assert target.checksum_table(*expected) == expected


def test_start_stop_positions_and_filters_then_resume(target: MariaDBServer) -> None:
    files = [str(p) for p in sorted((CORPUS / "binlogs" / "w07_gtid_domains").glob("mysql-bin.*"))]
    gtids = _file_gtids(files)
    target.sql("DROP DATABASE IF EXISTS w07_dom")
    channel = "filters"
    # Phase 1: domain 0 only, up to its 8th group.
    stop0 = [g for g in gtids if g.domain == 0][7]
    assert replicate("--from", *files, "--to", url(target), "--channel", channel, "--stop-position", str(stop0)) == 0
    assert position(target, channel) == ConnectState([stop0])
    # Phase 2: the rest of domains 0 and 1, not domain 2 (skipped groups are not recorded).
    assert replicate("--from", *files, "--to", url(target), "--channel", channel, "--ignore-domain-ids", "2") == 0
    last = {d: [g for g in gtids if g.domain == d][-1] for d in (0, 1, 2)}
    assert position(target, channel) == ConnectState([last[0], last[1]])
    # Phase 3: domain 2 alone, from its beginning; then everything is there exactly once.
    assert replicate("--from", *files, "--to", url(target), "--channel", channel, "--do-domain-ids", "2") == 0
    assert position(target, channel) == ConnectState([last[0], last[1], last[2]])
    expected = expected_checksums("w07_gtid_domains")
    assert target.checksum_table(*expected) == expected
    # A fourth run finds nothing to do.
    assert replicate("--from", *files, "--to", url(target), "--channel", channel) == 0
    assert target.checksum_table(*expected) == expected




@pytest.mark.parametrize("parallel", ["1", "4"])
def test_live_primary_serial_and_per_domain_parallel(
    mariadb_server_factory: MariaDBServerFactory, parallel: str
) -> None:
    primary = mariadb_server_factory("--log-bin", "--binlog-format=ROW", "--server-id=1", name="live-primary")
    replica = mariadb_server_factory("--log-bin", "--server-id=2", name=f"live-target-{parallel}")
    mixed_workload(primary)
    assert replicate("--from", url(primary), "--to", url(replica), "--parallel", parallel) == 0
    assert replica.checksum_table(*LIVE_TABLES) == primary.checksum_table(*LIVE_TABLES)
    assert position(replica, "default") == ConnectState.parse(gtid_binlog_pos(primary))
    # Groups kept their GTIDs and each domain its order in the target's binlog.
    source = binlog_gtids(primary)
    applied = [g for g in binlog_gtids(replica) if not g.endswith("-2-1") and "-2-" not in g]
    for domain in {g.split("-")[0] for g in source}:
        assert [g for g in applied if g.split("-")[0] == domain] == [g for g in source if g.split("-")[0] == domain]
    primary.stop()
    replica.stop()


def test_unreachable_source_and_bad_options(target: MariaDBServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert replicate("--from", "mariadb://root@127.0.0.1:1", "--to", url(target), "--channel", "none",
                     "--reconnect", "1") == 1
    assert "cannot connect" in capsys.readouterr().err
    assert replicate("--from", "/nonexistent/binlog", "--to", url(target)) == 1
    assert "cannot read /nonexistent/binlog" in capsys.readouterr().err
    assert replicate("--from", str(CORPUS / "README.md"), "--to", url(target), "--do-domain-ids", "1",
                     "--ignore-domain-ids", "2") == 1
    assert "cannot be used together" in capsys.readouterr().err
    assert root_options(target).port == target.port



def test_a_run_waits_for_an_earlier_runs_sessions_before_it_reads_its_position(
    mariadb_server_factory: MariaDBServerFactory,
) -> None:
    """A killed ``replicate``'s session goes on applying the packet of groups it was sent until
    the server sees the client gone; a run started at once read a position those groups then
    passed, and applied them again (the crash soak's restart: duplicate key, once packets
    held 64 groups).  Each apply connection holds a named lock of its channel, and a new run
    waits for all of them before it reads the position; a second run beside a live one is
    refused, naming the target."""
    import threading
    import time

    from mariabinlog.errors import ReplicationError
    from mariabinlog.replication.apply import PositionTable, Replicator, TargetSession
    from mariabinlog.replication.net import Connection, ConnectionOptions

    server = mariadb_server_factory(*CORPUS_OPTIONS, "--log-bin", "--server-id=97", name="lock-target")
    options = ConnectionOptions.from_url(url(server))
    table = PositionTable(channel="locks")
    earlier = Connection.open(options)  # an earlier run's apply connection 3, still on the server
    assert earlier.scalar(f"SELECT GET_LOCK('{table.lock(3)}', 0)") == b"1"
    with pytest.raises(ReplicationError, match=f"another replicate is applying channel 'locks' to 127.0.0.1:{server.port}"):
        Replicator(options, table=table, lock_wait=0.5).prepare(None)
    threading.Timer(1.0, earlier.close).start()  # the server ends that session
    started = time.monotonic()
    Replicator(options, table=table, lock_wait=30).prepare(None)
    assert time.monotonic() - started >= 0.9
    # A live run's apply connections hold their locks: a second run for the channel is refused,
    # and so is a second apply connection with the same lock.
    live = TargetSession(options, table, lock=table.lock(0), lock_wait=0.5)
    live.connect()
    with pytest.raises(ReplicationError, match="another replicate is applying channel 'locks'"):
        Replicator(options, table=table, lock_wait=0.5).prepare(None)
    with pytest.raises(ReplicationError, match=f"its connection holds {table.lock(0)}"):
        TargetSession(options, table, lock=table.lock(0), lock_wait=0.5).connect()
    live.close()
    Replicator(options, table=table, lock_wait=0.5).prepare(None)
