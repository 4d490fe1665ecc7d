"""A bundled sample binlog, written by the project's own storage engine.

:func:`write_sample` makes the sample the ``pipeline`` command runs on without a SOURCE: a
directory of ``binlog-NNNNNN.ibb`` files written through :class:`mariabinlog.engine.Engine`
(small files, GTID state records every two pages, a low spill size): three live tables with
column names and primary keys in their table maps, inserts, updates and deletes in three GTID
domains written by three servers over two hours, a bulk load into an archive table (a fourth
domain) written out-of-band while other transactions commit, groups that cross file boundaries
and two FLUSH BINARY LOGS.

:class:`SampleBuilder` makes the event groups (GTID, Table_map, rows, Xid events encoded by the
codec); :func:`commit_group` hands one to the engine.
"""

from __future__ import annotations

import datetime
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..codec.columns import (
    MYSQL_TYPE_DATETIME2,
    MYSQL_TYPE_DOUBLE,
    MYSQL_TYPE_LONG,
    MYSQL_TYPE_LONGLONG,
    MYSQL_TYPE_NEWDECIMAL,
    MYSQL_TYPE_TIMESTAMP2,
    MYSQL_TYPE_VARCHAR,
    DefaultCharset,
    MysqlDateTime,
    MysqlTimestamp,
    OptionalMetadata,
)
from ..codec.events import (
    DELETE_ROWS_EVENT_V1,
    FL_ALLOW_PARALLEL,
    FL_DDL,
    FL_STANDALONE,
    FL_TRANSACTIONAL,
    STMT_END_F,
    UPDATE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT_V1,
    GtidEvent,
    QueryEvent,
    RowsEvent,
    TableMapEvent,
    XidEvent,
)
from ..codec.groups import gtid_of
from ..codec.gtid import Gtid
from ..codec.rows import RowChange, encode_rows
from ..engine import Engine, Transaction

UTF8MB4_GENERAL_CI = 45
SAMPLE_START = 1_704_067_200  # 2024-01-01 00:00:00 UTC
#: Engine settings of the sample: 8-page files, states every 2 pages, spill past 16 KiB.
SAMPLE_ENGINE = {
    "max_binlog_size": 8 * 16384,
    "state_interval": 2 * 16384,
    "spill_size": 16 * 1024,
    "oob_piece_size": 4 * 1024,
    "durability": 0,
    "redo_capacity": 1 << 20,
}


def commit_group(engine: Engine, events: Sequence[bytes], trx: Transaction | None = None) -> Gtid:
    """Commit an event group built by :class:`SampleBuilder` (the engine writes the GTID event
    again from its fields); ``trx`` holds the rest of the group when it was written out-of-band."""
    gtid, flags2, timestamp = gtid_of(events[0])
    body = b"" if trx is not None else b"".join(events[1:])
    engine.commit(body, trx=trx, gtid=gtid, flags2=flags2, timestamp=timestamp)
    return gtid


# ------------------------------------------------------------------------------------------------
# Sample content


@dataclass
class SampleColumn:
    """One column of a sample table: name, type code, metadata, whether it is UNSIGNED, and its
    SQL type as the table's CREATE TABLE declares it (what a schema history reads)."""

    name: str
    type_code: int
    meta: int = 0
    unsigned: bool = False
    sql: str = field(kw_only=True)


@dataclass
class SampleTable:
    """A sample table and the rows it holds now (by primary key)."""

    table_id: int
    database: str
    name: str
    columns: list[SampleColumn]
    rows: dict[Any, tuple[Any, ...]] = field(default_factory=dict)

    def table_map(self, server_id: int, timestamp: int) -> TableMapEvent:
        """Its Table_map event with FULL optional metadata (names, charset, signedness, key)."""
        numeric = [c for c in self.columns if c.type_code in _NUMERIC]
        bits = bytearray((len(numeric) + 7) // 8)
        for i, column in enumerate(numeric):
            if column.unsigned:
                bits[i // 8] |= 0x80 >> (i % 8)
        meta = OptionalMetadata(
            signedness=bytes(bits),
            default_charset=DefaultCharset(UTF8MB4_GENERAL_CI),
            column_names=tuple(c.name for c in self.columns),
            simple_primary_key=(0,),
        )
        count = len(self.columns)
        return TableMapEvent(
            table_id=self.table_id,
            schema=self.database,
            table=self.name,
            column_types=bytes(c.type_code for c in self.columns),
            column_meta=tuple(c.meta for c in self.columns),
            null_bitmap=bytes(b"\xfe" + b"\xff" * ((count + 7) // 8 - 1))[: (count + 7) // 8],
            optional_metadata=meta,
            server_id=server_id,
            timestamp=timestamp,
        )

    def create_statement(self) -> bytes:
        """The CREATE TABLE of the DDL group, as MariaDB would log it: the key column NOT NULL
        (its table map's null bitmap), the others nullable, utf8mb4 strings."""
        columns = ", ".join(f"`{c.name}` {c.sql}" + (" NOT NULL" if i == 0 else "")
                            for i, c in enumerate(self.columns))
        return (f"CREATE TABLE `{self.name}` ({columns}, PRIMARY KEY (`{self.columns[0].name}`))"
                " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4").encode()


_NUMERIC = frozenset((MYSQL_TYPE_LONG, MYSQL_TYPE_LONGLONG, MYSQL_TYPE_NEWDECIMAL, MYSQL_TYPE_DOUBLE))
_ROWS_TYPE = {"insert": WRITE_ROWS_EVENT_V1, "update": UPDATE_ROWS_EVENT_V1, "delete": DELETE_ROWS_EVENT_V1}


def sample_tables() -> list[SampleTable]:
    """The sample tables (fresh, empty): three live tables, then the bulk-load archive."""
    return [
        SampleTable(101, "shop", "customers", [
            SampleColumn("id", MYSQL_TYPE_LONG, unsigned=True, sql="INT UNSIGNED"),
            SampleColumn("name", MYSQL_TYPE_VARCHAR, 256, sql="VARCHAR(64)"),
            SampleColumn("email", MYSQL_TYPE_VARCHAR, 512, sql="VARCHAR(128)"),
            SampleColumn("created", MYSQL_TYPE_DATETIME2, 0, sql="DATETIME"),
            SampleColumn("balance", MYSQL_TYPE_NEWDECIMAL, (12 << 8) | 2, sql="DECIMAL(12,2)"),
        ]),
        SampleTable(102, "shop", "orders", [
            SampleColumn("id", MYSQL_TYPE_LONGLONG, sql="BIGINT"),
            SampleColumn("customer_id", MYSQL_TYPE_LONG, unsigned=True, sql="INT UNSIGNED"),
            SampleColumn("amount", MYSQL_TYPE_NEWDECIMAL, (10 << 8) | 2, sql="DECIMAL(10,2)"),
            SampleColumn("status", MYSQL_TYPE_VARCHAR, 64, sql="VARCHAR(16)"),
            SampleColumn("placed", MYSQL_TYPE_TIMESTAMP2, 3, sql="TIMESTAMP(3)"),
        ]),
        SampleTable(103, "inventory", "items", [
            SampleColumn("sku", MYSQL_TYPE_VARCHAR, 128, sql="VARCHAR(32)"),
            SampleColumn("qty", MYSQL_TYPE_LONG, sql="INT"),
            SampleColumn("price", MYSQL_TYPE_DOUBLE, 8, sql="DOUBLE"),
        ]),
        SampleTable(104, "shop", "order_archive", [
            SampleColumn("id", MYSQL_TYPE_LONGLONG, sql="BIGINT"),
            SampleColumn("amount", MYSQL_TYPE_NEWDECIMAL, (10 << 8) | 2, sql="DECIMAL(10,2)"),
            SampleColumn("archived", MYSQL_TYPE_DATETIME2, 0, sql="DATETIME"),
        ]),
    ]


class SampleBuilder:
    """Deterministic event groups over :func:`sample_tables` (GTID, Table_map, rows, Xid)."""

    def __init__(self, seed: int = 7) -> None:
        self.rnd = random.Random(seed)
        self.tables = sample_tables()
        self.seqs: dict[int, int] = {}
        self.xid = 1000
        self.clock = SAMPLE_START
        self.next_id = {t.table_id: 1 for t in self.tables}

    def _gtid(self, domain: int, server: int, flags: int) -> bytes:
        seq = self.seqs.get(domain, 0) + 1
        self.seqs[domain] = seq
        return GtidEvent(seq_no=seq, domain_id=domain, flags2=flags, server_id=server, timestamp=self.clock).encode()

    def ddl(self, table: SampleTable, domain: int = 0, server: int = 1) -> list[bytes]:
        """A standalone DDL group creating ``table``."""
        gtid = self._gtid(domain, server, FL_STANDALONE | FL_DDL)
        query = QueryEvent(query=table.create_statement(), database=table.database.encode(), server_id=server,
                           timestamp=self.clock)
        return [gtid, query.encode()]

    def _new_row(self, table: SampleTable) -> tuple[Any, ...]:
        rnd, n = self.rnd, self.next_id[table.table_id]
        self.next_id[table.table_id] = n + 1
        if table.name == "customers":
            return (n, f"customer {n} ⚑", f"c{n}@example.com", _datetime(self.clock),
                    Decimal(rnd.randint(0, 1_000_000)) / 100)
        if table.name == "orders":
            return (n, rnd.randint(1, 50), Decimal(rnd.randint(100, 99_999)) / 100,
                    rnd.choice(("new", "paid", "shipped")), MysqlTimestamp(self.clock, rnd.randint(0, 999) * 1000))
        if table.name == "order_archive":
            return (n, Decimal(rnd.randint(100, 99_999)) / 100, _datetime(self.clock))
        return (f"SKU-{n:05d}", rnd.randint(0, 500), round(rnd.uniform(1, 100), 2))

    def _changed(self, table: SampleTable, row: tuple[Any, ...]) -> tuple[Any, ...]:
        rnd = self.rnd
        if table.name == "customers":
            return row[:4] + (Decimal(rnd.randint(0, 1_000_000)) / 100,)
        if table.name == "orders":
            return row[:3] + (rnd.choice(("paid", "shipped", "returned")),) + row[4:]
        return (row[0], rnd.randint(0, 500), row[2])

    def transaction(self, domain: int, server: int, changes: int) -> list[bytes]:
        """One transaction of ``changes`` random inserts, updates and deletes on the live tables."""
        rnd = self.rnd
        per_table: dict[int, list[tuple[str, RowChange]]] = {}
        for _ in range(changes):
            table = rnd.choice(self.tables[:3])
            op = "insert" if len(table.rows) < 5 else rnd.choice(("insert", "insert", "update", "delete"))
            if op == "insert":
                row = self._new_row(table)
                table.rows[row[0]] = row
                change = RowChange("insert", None, row)
            else:
                key = rnd.choice(sorted(table.rows))
                before = table.rows[key]
                if op == "update":
                    after = self._changed(table, before)
                    table.rows[key] = after
                    change = RowChange("update", before, after)
                else:
                    del table.rows[key]
                    change = RowChange("delete", before, None)
            per_table.setdefault(table.table_id, []).append((op, change))
        return self._group(domain, server, per_table)

    def bulk_load(self, domain: int, server: int, rows: int) -> list[bytes]:
        """A large transaction inserting ``rows`` rows into the archive table, which nothing else
        touches (so other groups may commit while it is written)."""
        table = self.tables[3]
        changes = []
        for _ in range(rows):
            row = self._new_row(table)
            table.rows[row[0]] = row
            changes.append(("insert", RowChange("insert", None, row)))
        return self._group(domain, server, {table.table_id: changes})

    def _group(self, domain: int, server: int, per_table: dict[int, list[tuple[str, RowChange]]]) -> list[bytes]:
        events = [self._gtid(domain, server, FL_TRANSACTIONAL | FL_ALLOW_PARALLEL)]
        for table in self.tables:
            items = per_table.get(table.table_id)
            if not items:
                continue
            table_map = table.table_map(server, self.clock)
            events.append(table_map.encode())
            runs = _runs(items)
            for i, (op, run) in enumerate(runs):
                events.append(_rows_event(table_map, op, run, server, self.clock, last=i == len(runs) - 1))
        self.xid += 1
        events.append(XidEvent(xid=self.xid, server_id=server, timestamp=self.clock).encode())
        return events

    def tick(self, seconds: int) -> None:
        """Advance the sample clock."""
        self.clock += seconds


    def lifecycle(self, table: SampleTable, domain: int = 0, server: int = 1) -> list[bytes]:
        """One transaction on ``table`` alone: three inserts, an update and a delete (a table
        with the inventory table's columns)."""
        changes: list[tuple[str, RowChange]] = []
        for _ in range(3):
            row = self._new_row(table)
            table.rows[row[0]] = row
            changes.append(("insert", RowChange("insert", None, row)))
        first, second = sorted(table.rows)[:2]
        after = self._changed(table, table.rows[first])
        changes.append(("update", RowChange("update", table.rows[first], after)))
        table.rows[first] = after
        changes.append(("delete", RowChange("delete", table.rows.pop(second), None)))
        return self._group(domain, server, {table.table_id: changes})


def many_tables(count: int) -> list[SampleTable]:
    """``count`` tables ``db<i % 5>.t<i>`` with the inventory table's columns."""
    columns = sample_tables()[2].columns
    return [SampleTable(1000 + i, f"db{i % 5}", f"t{i:04d}", columns) for i in range(count)]


def write_many_tables(directory: str, count: int, *, seed: int = 7) -> SampleInfo:
    """A binlog touching ``count`` tables (:func:`many_tables`), one :meth:`SampleBuilder.lifecycle`
    transaction each, a minute apart; for tests whose cost must not grow with the tables."""
    os.makedirs(directory, exist_ok=True)
    builder = SampleBuilder(seed)
    builder.tables = many_tables(count)
    builder.next_id = {t.table_id: 1 for t in builder.tables}
    gtids: list[str] = []
    engine = Engine.open(directory, server_id=1, **SAMPLE_ENGINE)
    try:
        for table in builder.tables:
            gtids.append(str(commit_group(engine, builder.lifecycle(table))))
            builder.tick(60)
    finally:
        engine.close()
    return SampleInfo(gtids, {f"{t.database}.{t.name}": dict(t.rows) for t in builder.tables})


def _datetime(epoch: int) -> MysqlDateTime:

    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    return MysqlDateTime(moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


def _runs(items: list[tuple[str, RowChange]]) -> list[tuple[str, list[RowChange]]]:
    runs: list[tuple[str, list[RowChange]]] = []
    for op, change in items:
        if runs and runs[-1][0] == op and len(runs[-1][1]) < 200:
            runs[-1][1].append(change)
        else:
            runs.append((op, [change]))
    return runs


def _rows_event(table_map: TableMapEvent, op: str, changes: list[RowChange], server: int, timestamp: int,
                *, last: bool) -> bytes:
    width = len(table_map.column_types)
    present = b"\xff" * ((width + 7) // 8)
    data = encode_rows(table_map, op, changes, present, present if op == "update" else None)
    event = RowsEvent(
        _ROWS_TYPE[op],
        table_id=table_map.table_id,
        width=width,
        present_before=present,
        present_after=present if op == "update" else None,
        rows_data=data,
        rows_flags=STMT_END_F if last else 0,
        server_id=server,
        timestamp=timestamp,
    )
    return event.encode()


@dataclass
class SampleInfo:
    """What :func:`write_sample` wrote: the GTIDs in order and the final rows per table."""

    gtids: list[str]
    tables: dict[str, dict[Any, tuple[Any, ...]]]


def write_sample(directory: str, *, seed: int = 7, transactions: int = 600) -> SampleInfo:
    """Write the sample binlog into ``directory`` with the engine (see the module docstring)."""
    os.makedirs(directory, exist_ok=True)
    builder = SampleBuilder(seed)
    gtids: list[str] = []
    engine = Engine.open(directory, server_id=1, **SAMPLE_ENGINE)
    try:
        for table in builder.tables:
            gtids.append(str(commit_group(engine, builder.ddl(table))))
        servers = {0: 1, 1: 2, 2: 3}
        big: tuple[list[bytes], Transaction] | None = None
        for i in range(transactions):
            domain = builder.rnd.choice((0, 0, 1, 2))
            gtids.append(str(commit_group(engine, builder.transaction(domain, servers[domain],
                                                                      builder.rnd.randint(1, 6)))))
            builder.tick(builder.rnd.randint(1, 20))
            if i == transactions // 3:
                # A bulk load (domain 3) runs while others commit: its OOB data interleaves.
                events = builder.bulk_load(3, 4, 3000)
                trx = engine.begin()
                trx.write(b"".join(events[1:]))
                big = (events, trx)
            if big is not None and i == transactions // 3 + 5:
                gtids.append(str(commit_group(engine, big[0], big[1])))
                big = None
            if i in (transactions // 2, 4 * transactions // 5):
                engine.flush()
    finally:
        engine.close()
    return SampleInfo(gtids, {f"{t.database}.{t.name}": dict(t.rows) for t in builder.tables})


__all__ = ["SampleBuilder", "SampleInfo", "commit_group", "many_tables", "write_many_tables", "write_sample"]
