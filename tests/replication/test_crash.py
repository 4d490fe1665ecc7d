"""SIGKILL at random points during load: the archiver and the command-line replica restart and end
with exactly the primary's data and GTIDs, none missing, none twice.

Each test runs the real ``mariabinlog`` command in a child process against real servers, kills
it with SIGKILL several times while writers keep the primary busy (inserts, updates and
stand-alone DDL in several domains), restarts it each time, and finally lets it catch up.
The seed of the kill times is printed, so a failure can be replayed.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mariadb_server import MariaDBServer, MariaDBServerFactory
from replication_helpers import (
    PRIMARY_OPTIONS,
    REPL_PASSWORD,
    REPL_USER,
    binlog_gtids,
    create_repl_user,
    gtid_binlog_pos,
)

from mariabinlog.codec.gtid import ConnectState
from mariabinlog.engine import Engine
from mariabinlog.replication.sources import ArchiveReader, archive_pages
from mariabinlog.schema import SchemaHistory
from mariabinlog.schema.history import SCHEMA_HISTORY_FILE

REPO = Path(__file__).resolve().parents[2]
#: Kills per test; MARIABINLOG_REPLICATION_KILLS=50 for a longer run.
KILLS = int(os.environ.get("MARIABINLOG_REPLICATION_KILLS", "5"))
DOMAINS = (0, 1, 2, 3)


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mariabinlog", *args]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO / "src"))


def _kill_cycles(command: list[str], seed: int, low: float, high: float,
                 after_kill: Callable[[], None] | None = None, started: Callable[[], bool] | None = None) -> int:
    """Start ``command`` and SIGKILL it after a random time, :data:`KILLS` times; how many were
    killed.  ``after_kill`` checks what each kill left; with ``started`` the random time counts
    from when it says the command is under way (at most 60 s after the start)."""
    rng = random.Random(seed)
    killed = 0
    for _ in range(KILLS):
        child = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while started is not None and not started() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(low, high))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            killed += 1
        _, err = child.communicate(timeout=60)
        if child.returncode not in (-signal.SIGKILL, 0):
            pytest.fail(f"{command[3]} failed on its own ({child.returncode}): {err.decode()[-2000:]}")
        if after_kill is not None:
            after_kill()
    return killed


def _kill_under_load_then_catch_up(command: list[str], load: Any, low: float, high: float,
                                   after_kill: Callable[[], None] | None = None,
                                   started: Callable[[], bool] | None = None) -> None:
    """SIGKILL ``command`` at random points while ``load`` writes (:func:`_kill_cycles`), then
    run it once more without ``--stop-never`` so it catches up and exits cleanly."""
    seed = random.randrange(1 << 30)
    print(f"kill seed {seed}")
    with load:
        killed = _kill_cycles(command, seed, low, high, after_kill, started)
    assert killed >= KILLS - 1
    final = subprocess.run([c for c in command if c != "--stop-never"], env=_env(), capture_output=True, timeout=300)
    assert final.returncode == 0, final.stderr.decode()


@pytest.fixture
def busy_primary(mariadb_server_factory: MariaDBServerFactory, load_factory):  # type: ignore[no-untyped-def]
    """A fresh primary with one table per domain and writers running in four domains (with DDL)."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="crash-primary")
    create_repl_user(server)
    server.pipe(
        "CREATE DATABASE k;\n"
        + "".join(
            f"CREATE TABLE k.t{d} (id BIGINT PRIMARY KEY AUTO_INCREMENT, domain INT, n INT, payload TEXT) ENGINE=InnoDB;\n"
            for d in DOMAINS
        )
    )
    load = load_factory(server, "k.t{domain}", DOMAINS, pause=0.003, ddl=True)
    yield server, load
    server.stop()


def _url(server: MariaDBServer, user: str = "root", password: str = "") -> str:
    secret = f":{password}" if password else ""
    return f"mariadb://{user}{secret.replace('ä', '%C3%A4')}@127.0.0.1:{server.port}"


def _last_reported(progress: Path) -> ConnectState | None:
    """The last durable position the archiver reported (its progress JSON lines) before it died."""
    if not progress.exists():
        return None
    lines = [line for line in progress.read_text().splitlines(keepends=True) if line.endswith("\n")]
    reported = [json.loads(line).get("durable_position") for line in lines]
    last = next((p for p in reversed(reported) if p is not None), None)
    return None if last is None else ConnectState.parse(last)


def test_archiver_survives_sigkill(busy_primary, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    primary, load = busy_primary
    directory = tmp_path / "arch"
    progress = tmp_path / "progress.jsonl"
    command = _command("archive", "--from", _url(primary, REPL_USER, REPL_PASSWORD), "--dir", str(directory),
                       "--stop-never", "--heartbeat", "0.5", "--max-binlog-size", "128K", "--quiet",
                       "--progress-json", str(progress), "--progress-interval", "0.05")
    checked = []

    def durable_kept() -> None:
        """No group the archiver had reported durable is gone after the kill; none is twice."""
        reported = _last_reported(progress)
        if not directory.exists():  # killed before the engine made it
            assert reported is None
            return
        Engine.open(str(directory), restart_marker=False).close()  # recovery, as the next run does
        archived = [g.gtid for g in ArchiveReader(archive_pages(str(directory)), None).groups()]
        assert len(set(archived)) == len(archived), "a group was stored twice"
        if reported is None:
            return
        last = ConnectState()
        for gtid in archived:
            last.update(gtid)
        for gtid in reported.values():
            held = last.get(gtid.domain)
            assert held is not None and held.seq >= gtid.seq, f"reported durable {gtid}, archive ends at {held}"
        checked.append(reported)
        progress.unlink()

    # killed anywhere from its first report on, while it archives
    _kill_under_load_then_catch_up(command, load, 0.0, 1.6, durable_kept,
                                   lambda: progress.exists() and progress.stat().st_size > 0)
    assert checked, "no kill came after a reported durable position"
    # Then compare with the primary's binlog.
    archived = [str(g.gtid) for g in ArchiveReader(archive_pages(str(directory)), None).groups()]
    assert not [g for g, n in Counter(archived).items() if n > 1], "a group was stored twice"
    assert archived == binlog_gtids(primary)
    # The schema history survived the kills: every table DDL of the primary once, in order, each
    # with the primary's GTID position once its group was logged (what places it against the
    # rows of the other domains).
    history = SchemaHistory.load(directory / SCHEMA_HISTORY_FILE)
    assert [(r.gtid, r.gtid_pos) for r in history.records] == _ddl_positions(primary)


def _ddl_positions(server: MariaDBServer) -> list[tuple[str, str]]:
    """(GTID, ``@@gtid_binlog_pos`` right after it) of every table DDL in ``server``'s binlog."""
    position: dict[int, str] = {}
    found, standalone = [], None
    for row in server.rows("SHOW BINARY LOGS"):
        for event in server.binlog_events(row[0]):
            if event["Event_type"] == "Gtid":
                match = re.search(r"GTID (\d+)-\d+-\d+", event["Info"])
                assert match, event
                gtid = match.group(0).split()[-1]
                position[int(match.group(1))] = gtid
                standalone = None if event["Info"].startswith("BEGIN") else gtid
            elif event["Event_type"] == "Query" and standalone is not None:
                statement = re.sub(r"^use `[^`]*`; ", "", event["Info"]).upper()
                if statement.startswith(("CREATE TABLE", "DROP TABLE", "CREATE DATABASE")):
                    found.append((standalone, ",".join(position[d] for d in sorted(position))))
                standalone = None
    return found


def test_replicate_survives_sigkill(busy_primary, mariadb_server_factory: MariaDBServerFactory) -> None:  # type: ignore[no-untyped-def]
    primary, load = busy_primary
    target = mariadb_server_factory("--log-bin", "--server-id=2", name="crash-target")
    command = _command("replicate", "--from", _url(primary, REPL_USER, REPL_PASSWORD), "--to", _url(target),
                       "--stop-never", "--heartbeat", "0.5", "--parallel", "4", "--quiet")
    _kill_under_load_then_catch_up(command, load, 0.8, 2.5)
    tables = [f"k.t{d}" for d in DOMAINS]
    assert target.checksum_table(*tables) == primary.checksum_table(*tables)
    assert sorted(r[0] for r in target.rows("SHOW TABLES FROM k")) == sorted(r[0] for r in primary.rows("SHOW TABLES FROM k"))
    position = target.rows("SELECT domain_id, server_id, seq_no FROM mariabinlog.gtid_slave_pos ORDER BY domain_id")
    assert ConnectState.parse(",".join("-".join(r) for r in position)) == ConnectState.parse(gtid_binlog_pos(primary))
    # Every source GTID is in the target's binlog exactly once, each domain in order.
    source = binlog_gtids(primary)
    applied = [g for g in binlog_gtids(target) if g.split("-")[1] == "1"]
    assert not [g for g, n in Counter(applied).items() if n > 1], "a group was applied twice"
    for domain in {g.split("-")[0] for g in source}:
        assert [g for g in applied if g.split("-")[0] == domain] == [g for g in source if g.split("-")[0] == domain]
