"""What a replica's apply connection does when the target cuts it in the middle of a packet of
groups: it learns from the position table which groups committed and applies the rest, once.

A primary without strict mode (MariaDB's default) logs lower sequence numbers after higher
ones, so "committed" cannot be "sequence number at or below the position": with a batch of
3-1-100, 3-1-50, 3-1-101 cut after the first, that rule took the first two for applied and the
replica silently lost 3-1-50 (MariaDB numbers the group after it 101: one past the domain's
highest).  The cut is made deterministic with a row lock: a second
session holds the row the second group updates, and is killed while it waits for it.
"""

from __future__ import annotations

import re
import threading

import pytest
from hostile_peers import CuttingRelay
from mariadb_server import MariaDBServer, MariaDBServerFactory
from replication_helpers import (
    PRIMARY_OPTIONS,
    binlog_gtids,
    create_repl_user,
    gtid_binlog_pos,
    repl_options,
    repl_url,
    root_options,
    wait_for,
)

from mariabinlog.cli import main as cli_main
from mariabinlog.codec.gtid import ConnectState, Gtid
from mariabinlog.replication.apply import PositionTable, Replicator, TargetSession
from mariabinlog.replication.client import BinlogClient
from mariabinlog.replication.net import Connection


def _out_of_order_primary(factory: MariaDBServerFactory) -> MariaDBServer:
    primary = factory(*PRIMARY_OPTIONS, "--server-id=1", name="cut-primary")
    create_repl_user(primary)
    primary.sql(
        "SET gtid_domain_id=3; CREATE DATABASE cut; CREATE TABLE cut.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;"
        " INSERT INTO cut.t VALUES (1, 0), (2, 0), (3, 0);"
        " SET gtid_seq_no=100; UPDATE cut.t SET v = 1 WHERE id = 1;"
        " SET gtid_seq_no=50; UPDATE cut.t SET v = 1 WHERE id = 2; UPDATE cut.t SET v = 1 WHERE id = 3"
    )
    return primary


def test_a_batch_cut_after_a_higher_sequence_number_applies_the_lower_ones_after_it(
    mariadb_server_factory: MariaDBServerFactory,
) -> None:
    primary = _out_of_order_primary(mariadb_server_factory)
    groups = [g for g in BinlogClient(repl_options(primary), blocking=False).groups() if g.gtid.domain == 3]
    assert [str(g.gtid) for g in groups] == ["3-1-1", "3-1-2", "3-1-3", "3-1-100", "3-1-50", "3-1-101"]
    setup, batch = groups[:3], groups[3:]

    target = mariadb_server_factory("--server-id=5", name="cut-target")
    options = root_options(target)
    table = PositionTable(channel="cut")
    admin = Connection.open(options)
    for statement in table.create():
        admin.query(statement)
    session = TargetSession(options, table, lock=table.lock(0), lock_wait=30)
    for group in setup:
        session.apply(group)
    assert session.committed(batch) == 0  # the position is 3-1-3, before the batch

    holder = Connection.open(options)
    holder.query("BEGIN")
    holder.rows("SELECT v FROM cut.t WHERE id = 2 FOR UPDATE")  # 3-1-50's row
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(session.apply_many(batch)))
    worker.start()
    waiting: list[tuple[bytes | None, ...]] = []

    def blocked() -> bool:
        """3-1-100 committed, and the batch's session waits in the row lookup of 3-1-50."""
        if table.read(admin)[0].get(3) != Gtid(3, 1, 100):
            return False
        waiting[:] = admin.rows("SELECT id FROM information_schema.processlist WHERE state LIKE '%find_row%'")
        return bool(waiting)

    wait_for(blocked, timeout=30, what="the batch waiting for 3-1-50's row")
    admin.query(f"KILL CONNECTION {int(waiting[0][0] or 0)}")
    worker.join(60)
    holder.query("ROLLBACK")
    assert not worker.is_alive()

    assert result == [1]  # 3-1-100 committed; 3-1-50 and 3-1-101 did not
    position, _ = table.read(admin)
    assert position.get(3) == Gtid(3, 1, 100)
    assert session.committed(batch) == 1
    assert session.apply_many(batch[1:]) == 2
    assert session.committed(batch) == 3
    assert target.checksum_table("cut.t") == primary.checksum_table("cut.t")
    assert target.rows("SELECT id, v FROM cut.t ORDER BY id") == [("1", "1"), ("2", "1"), ("3", "1")]
    session.close()
    admin.close()
    holder.close()


def test_a_pending_ddl_below_its_domains_highest_sequence_number_runs_again(
    mariadb_server_factory: MariaDBServerFactory,
) -> None:
    """After a crash between a stand-alone group (DDL) and its position, the next run asks the
    target's binlog whether the DDL ran: it did if its GTID is the last its server logged in
    the domain, not if that one is merely at or past it (3-1-50 logged after 3-1-100)."""
    target = mariadb_server_factory("--log-bin", "--server-id=5", name="pending-target")
    options = root_options(target)
    table = PositionTable(channel="pending")
    conn = Connection.open(options)
    for statement in table.create():
        conn.query(statement)
    conn.query("SET gtid_domain_id=3, server_id=1, gtid_seq_no=100; CREATE DATABASE p")
    conn.query(b"SET sql_log_bin=0; " + table.upsert(Gtid(3, 1, 100)) + b"; " + table.mark_pending(Gtid(3, 1, 50)))
    replicator = Replicator(options, table=table, lock_wait=5)
    assert replicator.prepare(None).get(3) == Gtid(3, 1, 100)
    assert replicator.pending == {3: Gtid(3, 1, 50)}  # it did not run: the DDL is run again

    conn.query("SET sql_log_bin=1, gtid_domain_id=3, server_id=1, gtid_seq_no=50; CREATE TABLE p.t (id INT)")
    assert "3-1-50" in (conn.text("SELECT @@gtid_binlog_state") or "").split(",")  # the last logged, not the highest
    assert replicator.prepare(None).get(3) == Gtid(3, 1, 50)
    assert replicator.pending == {}
    conn.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_replicate_through_a_target_link_cut_again_and_again_applies_each_group_once(
    mariadb_server_factory: MariaDBServerFactory, seed: int
) -> None:
    """Production's shape on the target side of a bad network: three domains of small
    transactions (one of them logged below its domain's highest sequence number) applied by
    four connections, the target link cut six times at random places (in start-up and in packets
    of groups).
    Each cut is a reconnect that applies what had not committed, and only that: the target ends
    equal, every GTID logged there once and in its domain's order."""
    primary = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name=f"relay-primary-{seed}")
    create_repl_user(primary)
    statements = ["CREATE DATABASE rl;"]
    for domain in (0, 5, 7):
        statements.append(f"SET gtid_domain_id={domain}; CREATE TABLE rl.t{domain} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;")
    for i in range(500):
        for domain in (0, 5, 7):
            statements.append(f"SET gtid_domain_id={domain}; INSERT INTO rl.t{domain} VALUES ({i}, {i});")
            if i % 3 == 0:
                statements.append(f"SET gtid_domain_id={domain}; UPDATE rl.t{domain} SET v = v + 1 WHERE id = {i // 2};")
        if i == 400:
            statements.append("SET gtid_domain_id=5, gtid_seq_no=40; DELETE FROM rl.t5 WHERE id = 7;")
    primary.pipe("\n".join(statements) + "\n")
    target = mariadb_server_factory("--log-bin", "--server-id=2", name=f"relay-target-{seed}")
    relay = CuttingRelay(target.port, cuts=6, low=3000, high=24000, seed=seed)
    try:
        assert cli_main([
            "replicate", "--quiet", "--skip-gtid-strict-mode", "--parallel", "4",
            "--from", repl_url(primary),
            "--to", f"mariadb://root@127.0.0.1:{relay.address[1]}",
        ]) == 0
    finally:
        relay.close()
    assert relay.cut == 6
    tables = ("rl.t0", "rl.t5", "rl.t7")
    assert target.checksum_table(*tables) == primary.checksum_table(*tables)
    applied = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos ORDER BY domain_id")
    assert ConnectState.parse(",".join("-".join(row) for row in applied)) == ConnectState.parse(gtid_binlog_pos(primary))
    theirs = binlog_gtids(primary)
    mine = [g for g in binlog_gtids(target) if not re.match(r"\d+-2-", g)]
    for domain in ("0", "5", "7"):
        assert [g for g in mine if g.startswith(f"{domain}-")] == [g for g in theirs if g.startswith(f"{domain}-")]


def test_an_apply_connection_cut_in_its_handshake_is_retried(mariadb_server_factory: MariaDBServerFactory) -> None:
    """A cut while an apply connection is being made (its first, and the reconnect after it)
    is a lost connection like any other: retried, not the end of the run (it was, from the
    first packet of groups a worker sent)."""
    primary = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="handshake-primary")
    create_repl_user(primary)
    primary.sql("CREATE DATABASE hs; CREATE TABLE hs.t (id INT PRIMARY KEY) ENGINE=InnoDB; SET gtid_domain_id=9;"
                " INSERT INTO hs.t VALUES (1); INSERT INTO hs.t VALUES (2); INSERT INTO hs.t VALUES (3)")
    target = mariadb_server_factory("--log-bin", "--server-id=2", name="handshake-target")
    # Start-up's connection and domain 0's worker (the DDL) pass; domain 9's worker, whose first
    # groups are plain rows sent as one packet, is cut in its handshake, and so is its reconnect.
    relay = CuttingRelay(target.port, cuts=2, low=40, high=40, seed=0, spare=2)
    try:
        assert cli_main([
            "replicate", "--quiet", "--parallel", "2", "--from", repl_url(primary),
            "--to", f"mariadb://root@127.0.0.1:{relay.address[1]}",
        ]) == 0
    finally:
        relay.close()
    assert relay.cut == 2
    assert target.checksum_table("hs.t") == primary.checksum_table("hs.t")
