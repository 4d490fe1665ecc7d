"""What the schema-history tests share: server options, the workload's common tail, the
binlogs a workload leaves, and a typed read of a source table to compare state tables with.

The typed read is PyMySQL (already a dependency): the server's own protocol types (int,
Decimal, float, date, datetime, timedelta, str, bytes) need no parsing of the ``mariadb``
client's text, so the state tables are compared with what the server itself says.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

SERVER_OPTIONS = ("--log-bin", "--binlog-format=ROW", "--default-time-zone=+00:00", "--character-set-server=utf8mb4",
                  "--collation-server=utf8mb4_general_ci")

#: Every workload has a table dropped and recreated with another shape...
RECREATED_TABLE = """
CREATE TABLE u (a INT, b VARCHAR(5)) CHARACTER SET latin1;
INSERT INTO u VALUES (1, 'é');
DROP TABLE u;
CREATE TABLE u (k BIGINT UNSIGNED PRIMARY KEY, note TEXT, flag ENUM('y','n'));
INSERT INTO u VALUES (18446744073709551615, 'recreated', 'n');
"""

#: ... and ends with a change logged as a statement (no table holds it); the binlog is then
#: closed so it can be read whole.
STATEMENT_AND_CLOSE = """
CREATE TABLE stm (a INT);
SET SESSION binlog_format=STATEMENT;
INSERT INTO stm VALUES (1);
SET SESSION binlog_format=ROW;
FLUSH BINARY LOGS;
"""

WORKLOAD_TAIL = RECREATED_TABLE + STATEMENT_AND_CLOSE


def closed_binlogs(server: Any) -> list[Path]:
    """The binlog files ``server`` has closed (the workload ends with FLUSH BINARY LOGS)."""
    files = list(server.binlog_files()[:-1])
    assert files, f"no closed binlog written by {server}: the workload ends with FLUSH BINARY LOGS"
    return files


def binlog_dir(server: Any, tmp_path: Path, name: str) -> str:
    """The closed binlog files of ``server`` copied into a directory of their own."""
    target = tmp_path / name
    target.mkdir()
    for f in closed_binlogs(server):
        (target / f.name).write_bytes(f.read_bytes())
    return str(target)


def _arrow_type(column: dict[str, Any]) -> pa.DataType:
    """The type a typed state column must have, from information_schema.COLUMNS (written here
    from the documented mapping, not taken from the code under test)."""
    data_type, column_type = column["DATA_TYPE"], column["COLUMN_TYPE"]
    unsigned = "unsigned" in column_type
    if data_type == "bigint":
        return pa.decimal128(20, 0) if unsigned else pa.int64()
    if data_type in ("tinyint", "smallint", "mediumint", "int", "year", "bit"):
        return pa.int64()
    if data_type == "decimal":
        return pa.decimal128(column["NUMERIC_PRECISION"], column["NUMERIC_SCALE"])
    if data_type in ("float", "double"):
        return pa.float64()
    if data_type == "date":
        return pa.date32()
    if data_type == "datetime":
        return pa.timestamp("us")
    if data_type == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if data_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        return pa.binary()
    return pa.string()  # time, char, varchar, text types, enum, set, json


def _time_text(value: datetime.timedelta) -> str:
    """A TIME as the rows view renders it: MariaDB's ``-838:59:59`` with six fractional digits
    when there is a fraction (the binlog's value does not say the column's precision)."""
    micros = abs(value) // datetime.timedelta(microseconds=1)
    seconds, micro = divmod(micros, 1_000_000)
    sign = "-" if value < datetime.timedelta(0) else ""
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{micro:06d}" if micro else "")


def _value(value: Any, column: dict[str, Any], arrow_type: pa.DataType) -> Any:
    """A PyMySQL value as the typed state holds it (zero dates are null, as in the typed view)."""
    if value is None:
        return None
    if column["DATA_TYPE"] == "bit":
        return int.from_bytes(value, "big")
    if isinstance(value, str) and column["DATA_TYPE"] in ("date", "datetime", "timestamp"):
        return None  # PyMySQL gives a zero or invalid date as its text
    if isinstance(value, datetime.timedelta):
        return _time_text(value)
    if arrow_type == pa.timestamp("us", tz="UTC"):
        return value.replace(tzinfo=datetime.UTC)
    if isinstance(arrow_type, pa.Decimal128Type):
        return Decimal(value)
    if pa.types.is_int64(arrow_type) and isinstance(value, Decimal):
        return int(value)
    return value


def typed_select(server: Any, database: str, table: str) -> tuple[list[dict[str, Any]], pa.Schema]:
    """``SELECT *`` of a source table through PyMySQL, values as a typed state table holds
    them, and the schema the state table must have."""
    import pymysql

    connection = pymysql.connect(**server.connect_kwargs(), charset="utf8mb4")
    try:
        with connection.cursor(pymysql.cursors.DictCursor) as cursor:
            cursor.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE "
                           "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                           "ORDER BY ORDINAL_POSITION", (database, table))
            columns = list(cursor.fetchall())
            cursor.execute(f"SELECT * FROM `{database}`.`{table}`")
            rows = list(cursor.fetchall())
    finally:
        connection.close()
    assert columns, f"{database}.{table} does not exist on {server}"
    schema = pa.schema([pa.field(c["COLUMN_NAME"], _arrow_type(c)) for c in columns])
    typed = [{c["COLUMN_NAME"]: _value(row[c["COLUMN_NAME"]], c, schema.field(c["COLUMN_NAME"]).type) for c in columns}
             for row in rows]
    return typed, schema


def _sort_key(row: dict[str, Any]) -> list[str]:
    return [repr(v) for v in row.values()]


def assert_state_equals_select(state: pa.Table, server: Any, database: str, table: str) -> None:
    """The state table has the source table's columns, types and rows (in any order)."""
    expected, schema = typed_select(server, database, table)
    assert [(f.name, f.type) for f in state.schema] == [(f.name, f.type) for f in schema], \
        f"columns and types of {database}.{table}"
    got = sorted(state.to_pylist(), key=_sort_key)
    want = sorted(expected, key=_sort_key)
    extra = [row for row in got if row not in want]
    missing = [row for row in want if row not in got]
    assert got == want, f"rows of {database}.{table}: state only {extra}, server only {missing}"


# -- several GTID domains ---------------------------------------------------------------------------

#: Issue 30 as filed: DDL in domain 0, rows of one table in domains 0, 1 and 2 (keys near 2^64).
ISSUE_30_WORKLOAD = """
CREATE DATABASE d; CREATE TABLE d.t (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(20));
CREATE TABLE d.k (a INT, b VARCHAR(10));
INSERT INTO d.t VALUES (18446744073709551610, 'dom0');
SET SESSION gtid_domain_id=1; INSERT INTO d.t VALUES (18446744073709551611, 'dom1'), (5, 'dom1b');
SET SESSION gtid_domain_id=2; INSERT INTO d.t VALUES (7, 'dom2');
SET SESSION gtid_domain_id=0;
"""

#: Domain of every DDL statement of :func:`domains_workload`; rows are written in all four.
DDL_DOMAIN = 1
DOMAINS = (0, 1, 2, 3)
_TOP = 18446744073709551615  # 2^64 - 1


def domains_workload() -> str:
    """Rows in GTID domains 0..3, interleaved group by group, and DDL in domain 1 only between
    the phases: ADD COLUMN (a keyed table, a keyless one), DROP COLUMN, RENAME COLUMN, CHANGE,
    RENAME TABLE; a BIGINT UNSIGNED key near 2^64 (moved once), a keyless table with duplicate
    rows deleted one at a time (``DELETE ... LIMIT 1``), a FLUSH BINARY LOGS in the middle.
    Every statement of a phase runs in each domain in turn, so each DDL statement has rows of
    every domain right before and right after it."""
    out = [f"SET SESSION gtid_domain_id={DDL_DOMAIN};", "CREATE DATABASE m;", "USE m;",
           "CREATE TABLE m.acct (id BIGINT UNSIGNED PRIMARY KEY, owner VARCHAR(20), bal DECIMAL(12,2), "
           "flag TINYINT UNSIGNED, gone INT) DEFAULT CHARSET=utf8mb4;",
           "CREATE TABLE m.evt (kind VARCHAR(10), n INT UNSIGNED);",
           "CREATE TABLE m.item (id INT PRIMARY KEY, name VARCHAR(20), qty INT UNSIGNED);",
           "CREATE TABLE m.old (id INT PRIMARY KEY, label VARCHAR(10));"]
    ddl = {
        0: ["ALTER TABLE m.acct ADD COLUMN tier VARCHAR(5) NOT NULL DEFAULT 'std' AFTER owner;",
            "ALTER TABLE m.evt ADD COLUMN at_ INT AFTER kind;",
            "ALTER TABLE m.item ADD COLUMN price DECIMAL(8,2) DEFAULT 1.50;"],
        1: ["ALTER TABLE m.acct DROP COLUMN gone;", "ALTER TABLE m.item DROP COLUMN qty;", "FLUSH BINARY LOGS;"],
        2: ["ALTER TABLE m.acct RENAME COLUMN owner TO holder;", "RENAME TABLE m.old TO m.renamed;",
            "ALTER TABLE m.item CHANGE name title VARCHAR(30);"],
    }
    for phase in range(4):
        owner = "owner" if phase < 3 else "holder"
        tier = "" if phase == 0 else ", tier"
        tier_value = "" if phase == 0 else ", 'gold'"
        gone = ", gone" if phase < 2 else ""
        name = "name" if phase < 3 else "title"
        old = "m.old" if phase < 3 else "m.renamed"
        for i in range(3):
            for domain in DOMAINS:
                k = phase * 100 + i * 10 + domain
                key = _TOP - k
                other = _TOP - (phase * 100 + i * 10 + (domain + 1) % 4) if (i or phase) else key
                statements = [
                    f"INSERT INTO m.acct (id, {owner}{tier}, bal, flag{gone}) VALUES ({key}, 'p{phase}d{domain}'"
                    f"{tier_value}, {k}.25, {255 - domain}{', 1' if gone else ''});",
                    f"UPDATE m.acct SET bal = bal + 1, flag = {domain} WHERE id = {other};",
                    f"INSERT INTO m.evt (kind, n) VALUES ('dup', {domain}), ('dup', {domain}), ('p{phase}', {k});",
                    f"DELETE FROM m.evt WHERE kind = 'dup' AND n = {(domain + phase) % 4} LIMIT 1;",
                    f"INSERT INTO m.item (id, {name}) SELECT seq + {k * 20}, CONCAT('i', seq) FROM seq_1_to_6;",
                    f"DELETE FROM m.item WHERE id = {k * 20 + 1 + domain};",
                    f"UPDATE m.item SET {name} = 'upd{domain}' WHERE id = {k * 20 + 2};",
                    f"INSERT INTO {old} VALUES ({k}, 'l{domain}');",
                ]
                out.append(f"SET SESSION gtid_domain_id={domain};")
                out += statements
        if phase == 1:
            out += [f"SET SESSION gtid_domain_id={(i + 2) % 4}; UPDATE m.acct SET id = id - 1000000 "
                    f"WHERE id = {_TOP - 1};" for i in range(1)]
        out.append(f"SET SESSION gtid_domain_id={DDL_DOMAIN};")
        out += ddl.get(phase, [])
    out.append("SET SESSION gtid_domain_id=0;")
    return "\n".join(out) + "\n"
