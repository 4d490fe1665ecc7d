"""Helpers of the replication tests: accounts, connection options, waiting, load writers, GTIDs.

Imported by name (``tests/replication`` is put on ``sys.path`` by its ``conftest.py``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import pytest
from mariadb_server import MariaDBServer

from mariabinlog.replication.net import Connection, ConnectionOptions

REPL_USER = "repl"
REPL_PASSWORD = "r3pl-pässword"

#: Options of every primary in these tests (ROW binlog with CRC32 checksums, annotations).
PRIMARY_OPTIONS = (
    "--log-bin",
    "--binlog-format=ROW",
    "--binlog-checksum=CRC32",
    "--binlog-annotate-row-events=ON",
    "--default-time-zone=+00:00",
    "--character-set-server=utf8mb4",
)


def create_repl_user(server: MariaDBServer) -> None:
    """A replication account with a password (mysql_native_password)."""
    server.sql(
        f"CREATE USER IF NOT EXISTS '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}';"
        f" GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO '{REPL_USER}'@'%'"
    )


def repl_url(target: MariaDBServer | int) -> str:
    """The replication account's URL for a server, or for a port on 127.0.0.1 (a relay's);
    its password's ``ä`` percent-encoded."""
    port = target if isinstance(target, int) else target.port
    return f"mariadb://{REPL_USER}:{REPL_PASSWORD.replace('ä', '%C3%A4')}@127.0.0.1:{port}"


def repl_options(server: MariaDBServer, **overrides: object) -> ConnectionOptions:
    """Connection options of the replication user over TCP on 127.0.0.1."""
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": server.port,
        "user": REPL_USER,
        "password": REPL_PASSWORD,
        "read_timeout": 30.0,
    }
    values.update(overrides)
    return ConnectionOptions(**values)  # type: ignore[arg-type]


def root_options(server: MariaDBServer, **overrides: object) -> ConnectionOptions:
    """Connection options of root (no password) over TCP on 127.0.0.1."""
    values: dict[str, object] = {"host": "127.0.0.1", "port": server.port, "user": "root", "read_timeout": 60.0}
    values.update(overrides)
    return ConnectionOptions(**values)  # type: ignore[arg-type]


def gtid_binlog_pos(server: MariaDBServer) -> str:
    """``@@gtid_binlog_pos`` of ``server``."""
    return server.rows("SELECT @@gtid_binlog_pos")[0][0]


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``predicate`` every 50 ms; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class Load:
    """A background writer: one thread per domain writing small transactions until stopped.

    ``table`` may contain ``{domain}`` (one table per domain).  Every 7th transaction is an
    UPDATE of an earlier row; with ``ddl`` the first domain also creates and drops a table
    every 40 transactions (stand-alone DDL groups).
    """

    def __init__(
        self, server: MariaDBServer, table: str, domains: tuple[int, ...], pause: float = 0.002, *, ddl: bool = False
    ) -> None:
        self.server = server
        self.table = table
        self.domains = domains
        self.pause = pause
        self.ddl = ddl
        self.stop_event = threading.Event()
        self.errors: list[BaseException] = []
        self.counts = dict.fromkeys(domains, 0)
        self.threads = [threading.Thread(target=self._run, args=(d,), daemon=True) for d in domains]

    def _run(self, domain: int) -> None:
        table = self.table.format(domain=domain)
        database = table.split(".")[0]
        try:
            with Connection.open(root_options(self.server)) as conn:
                conn.query(f"SET SESSION gtid_domain_id={domain}")
                while not self.stop_event.is_set():
                    n = self.counts[domain] + 1
                    if self.ddl and domain == self.domains[0] and n % 40 == 0:
                        conn.query(f"CREATE TABLE {database}.ddl_{n} (x INT PRIMARY KEY) ENGINE=InnoDB")
                        if n > 40:
                            conn.query(f"DROP TABLE {database}.ddl_{n - 40}")
                    elif n % 7 == 0:
                        conn.query(f"UPDATE {table} SET payload = CONCAT(payload, 'u') WHERE domain={domain} AND n={n - 3}")
                    else:
                        conn.query(f"INSERT INTO {table} (domain, n, payload) VALUES ({domain}, {n}, REPEAT('x', {n % 300}))")
                    self.counts[domain] = n
                    time.sleep(self.pause)
        except BaseException as err:  # reported by stop()
            self.errors.append(err)

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stop the writers and re-raise the first error one of them hit."""
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=30)
        if self.errors:
            raise self.errors[0]

    def __exit__(self, *exc: object) -> None:
        self.stop()


def binlog_gtids(server: MariaDBServer) -> list[str]:
    """GTIDs of every event group in ``server``'s binlog files, in binlog order (SHOW BINLOG EVENTS)."""
    gtids = []
    for row in server.rows("SHOW BINARY LOGS"):
        for event in server.binlog_events(row[0]):
            if event["Event_type"] == "Gtid":
                match = re.search(r"GTID (\d+-\d+-\d+)", event["Info"])
                assert match, event
                gtids.append(match.group(1))
    return gtids


WORKLOAD = """
CREATE DATABASE live;
CREATE TABLE live.types (
  id BIGINT PRIMARY KEY, i TINYINT UNSIGNED, s SMALLINT, m MEDIUMINT, d DECIMAL(30,10), f FLOAT, g DOUBLE,
  c CHAR(10) CHARACTER SET latin1, v VARCHAR(300), b VARBINARY(50), t MEDIUMTEXT, bl LONGBLOB,
  dt DATETIME(6), ts TIMESTAMP(3) NULL, da DATE, ti TIME(2), y YEAR, e ENUM('a','b','c'), st SET('x','y','z'),
  bi BIT(13), j JSON, u UUID, ip INET6, pt POINT
) ENGINE=InnoDB;
"""

DOMAIN_TABLE = "CREATE TABLE live.d{n} (id INT PRIMARY KEY AUTO_INCREMENT, k INT, note VARCHAR(200), KEY(k)) ENGINE=InnoDB"


def mixed_workload(server: MariaDBServer) -> None:
    """DDL, every column type, UPDATE/DELETE, a 20000-row transaction, then four domains (10-13)
    each writing its own table, partly in STATEMENT format."""
    server.pipe(WORKLOAD + ";\n".join(DOMAIN_TABLE.format(n=n) for n in range(4)) + ";\n")
    rows = []
    for i in range(1, 41):
        rows.append(
            f"({i}, {i % 256}, {-i * 7}, {i * 1000}, {i}.{i:010d}, {i / 3}, {i / 7}, 'é{i}', REPEAT('ü', {i * 7}),"
            f" x'{i:04x}00ff', REPEAT('text ', {i * 50}), REPEAT(x'00ff10', {i * 400}), '2024-02-29 12:34:56.{i:06d}',"
            f" FROM_UNIXTIME({1700000000 + i}), '2000-01-{1 + i % 28:02d}', '-{i}:30:00.5', {1990 + i},"
            f" '{'abc'[i % 3]}', 'x,z', b'{i:013b}', '{{\"k\": {i}}}', 'e2c0c4a6-3a48-11ef-8a5b-{i:012x}',"
            f" '2001:db8::{i:x}', POINT({i}, {-i}))"
        )
    server.pipe("INSERT INTO live.types VALUES " + ",\n".join(rows) + ";\n")
    server.pipe(
        "UPDATE live.types SET v = CONCAT(v, '!'), j = JSON_SET(j, '$.u', 1) WHERE id % 3 = 0;\n"
        "DELETE FROM live.types WHERE id % 10 = 0;\n"
        "ALTER TABLE live.types ADD COLUMN extra INT DEFAULT 42;\n"
        # A big transaction: several MB in one group.
        "CREATE TABLE live.big (id INT PRIMARY KEY AUTO_INCREMENT, k INT, note VARCHAR(200)) ENGINE=InnoDB;\n"
        "BEGIN; INSERT INTO live.big (k, note) SELECT seq, REPEAT('big', 60) FROM live.seq_1_to_20000;"
        " UPDATE live.big SET k = k + 1 WHERE id % 2 = 0; COMMIT;\n"
    )
    for n in range(4):
        statements = [f"SET SESSION gtid_domain_id={10 + n};"]
        for i in range(30):
            statements.append(f"INSERT INTO live.d{n} (k, note) VALUES ({i}, 'domain {n} row {i}');")
            if i % 5 == 4:
                statements.append(f"UPDATE live.d{n} SET note = CONCAT(note, ' u') WHERE k = {i - 2};")
        statements.append(f"SET SESSION binlog_format=STATEMENT; INSERT INTO live.d{n} (k, note) VALUES (RAND() * 0 + 1, @@hostname IS NOT NULL);")
        server.pipe("\n".join(statements) + "\n")


LIVE_TABLES = ["live.types", "live.big", "live.d0", "live.d1", "live.d2", "live.d3"]
