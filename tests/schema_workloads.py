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
