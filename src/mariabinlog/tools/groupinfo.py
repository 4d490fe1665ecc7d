"""What an event group did, in one line: the listing of ``mariabinlog find``.

:func:`summarize` reads a group's decoded events (any object with ``gtid``, ``events`` and
``timestamp``: the replication layer's event groups, read from an archive by the command
line) and says which tables it changed, how many rows per operation, whether it was DDL or a
logged statement, and its statement text (the Annotate_rows text of row changes, the Query
text of statements).  :class:`GroupQuery` is ``find``'s filter: ``--statement``, ``--table``,
``--op``, ``--since``/``--until``.  Times are shown and read in the local time zone, as
``mariadb-binlog --start-datetime`` reads them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlglot

from ..codec import events as E
from ..codec.gtid import Gtid
from ..codec.rows import row_decoder
from ..errors import DecodeError, OptionError
from ..schema import SchemaHistory

#: ``--op`` values.
OPS = ("insert", "update", "delete", "ddl")
_TRANSACTION_WORDS = frozenset({b"BEGIN", b"COMMIT", b"ROLLBACK"})


class GroupLike(Protocol):
    """An event group: its GTID, its decoded events (GTID event first) and commit time."""

    gtid: Gtid
    events: list[E.Event]

    @property
    def timestamp(self) -> int: ...


@dataclass
class GroupSummary:
    """One group as ``find`` lists it."""

    gtid: Gtid
    timestamp: int
    #: Rows per operation ('insert', 'update', 'delete'), in the order first seen.
    rows: dict[str, int] = field(default_factory=dict)
    #: Tables changed ('db.table'), in the order first seen.
    tables: list[str] = field(default_factory=list)
    #: Statement texts: Annotate_rows of row changes, Query events' SQL (not BEGIN/COMMIT).
    statements: list[str] = field(default_factory=list)
    ddl: bool = False
    #: The group holds statements other than BEGIN/COMMIT that are not DDL (statement-logged DML).
    statement_logged: bool = False

    @property
    def ops(self) -> list[str]:
        """The operations of the group (``ddl`` for DDL)."""
        return [*self.rows, *(["ddl"] if self.ddl else [])]

    def time_text(self) -> str:
        """The commit time, local, ``YYYY-MM-DD HH:MM:SS``."""
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.timestamp))

    def line(self, width: int = 200) -> str:
        """GTID, time, changes, tables, statement: tab-separated, the GTID first (``cut -f1``)."""
        changes = ", ".join(f"{op} {count}" for op, count in self.rows.items())
        if self.ddl:
            changes = ", ".join(filter(None, ["ddl", changes]))
        elif self.statement_logged:
            changes = ", ".join(filter(None, ["statement", changes]))
        text = " ".join(" ".join(self.statements).split())
        if len(text) > width:
            text = text[: width - 3] + "..."
        return "\t".join((str(self.gtid), self.time_text(), changes or "-", ",".join(self.tables) or "-", text))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (``find --format json``)."""
        return {
            "gtid": str(self.gtid),
            "timestamp": self.timestamp,
            "time": self.time_text(),
            "rows": self.rows,
            "tables": self.tables,
            "ddl": self.ddl,
            "statement_logged": self.statement_logged,
            "statements": self.statements,
        }


def _text(data: bytes) -> str:
    return bytes(data).decode("utf-8", "replace")


def summarize(group: GroupLike, history: SchemaHistory | None = None) -> GroupSummary:
    """What ``group`` did.  ``history`` (the archive's schema history) names the tables of
    DDL statements; without one, DDL lists no tables."""
    summary = GroupSummary(group.gtid, group.timestamp)
    head = group.events[0]
    summary.ddl = bool(isinstance(head, E.GtidEvent) and head.flags2 & E.FL_DDL)
    maps: dict[int, E.TableMapEvent] = {}

    def table(name: str) -> None:
        if name not in summary.tables:
            summary.tables.append(name)

    for event in group.events[1:]:
        if isinstance(event, E.TableMapEvent):
            maps[event.table_id] = event
        elif isinstance(event, E.RowsEvent):
            table_map = maps.get(event.table_id)
            if table_map is None:
                raise DecodeError(f"GTID {group.gtid}: rows event for table id {event.table_id} without a Table_map")
            table(f"{table_map.schema}.{table_map.table}")
            count = len(row_decoder(table_map).decode(event, raw=True))
            summary.rows[event.kind] = summary.rows.get(event.kind, 0) + count
        elif isinstance(event, E.AnnotateRowsEvent):
            summary.statements.append(_text(event.query))
        elif isinstance(event, E.QueryEvent):
            query = bytes(event.query)
            if query in _TRANSACTION_WORDS:
                continue
            summary.statements.append(_text(query))
            if summary.ddl:
                if history is not None:
                    named = history.observe_query(event, file="", pos=0, gtid=str(group.gtid))
                    for database, name in named:
                        table(f"{database}.{name}")
            elif not query.upper().startswith((b"XA ", b"SAVEPOINT", b"ROLLBACK TO", b"RELEASE SAVEPOINT")):
                summary.statement_logged = True
                for name in statement_tables(_text(query), _text(event.database)):
                    table(name)
    return summary


def statement_tables(sql: str, database: str) -> list[str]:
    """The tables a logged DML statement names (``db.table``; ``database`` for unqualified ones),
    read with sqlglot's MySQL dialect; none when it cannot be parsed."""
    try:
        tree = sqlglot.parse_one(sql, read="mysql")
    except sqlglot.errors.SqlglotError:
        return []
    if tree is None:
        return []
    nodes = list(tree.find_all(sqlglot.exp.Table))
    # ``DELETE o FROM orders o``: the target named by its alias is not a table of its own.
    aliases = {node.alias for node in nodes if node.alias}
    names = []
    for node in nodes:
        if node.name and not (not node.db and node.name in aliases):
            names.append(f"{node.db or database}.{node.name}")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class GroupQuery:
    """``find``'s filter; every given criterion must match (``tables`` and ``ops``: any of them)."""

    statement: re.Pattern[str] | None = None
    tables: frozenset[str] = frozenset()
    ops: frozenset[str] = frozenset()
    since: int | None = None
    until: int | None = None

    @classmethod
    def build(
        cls,
        *,
        statement: str | None = None,
        tables: Sequence[str] = (),
        ops: Sequence[str] = (),
        since: int | None = None,
        until: int | None = None,
    ) -> GroupQuery:
        """From the command line's values: ``statement`` a case-insensitive regular expression,
        ``tables`` as ``DB.TABLE``."""
        pattern = None
        if statement is not None:
            try:
                pattern = re.compile(statement, re.IGNORECASE)
            except re.error as err:
                raise OptionError(f"--statement {statement!r}: not a regular expression: {err}") from None
        for name in tables:
            if "." not in name:
                raise OptionError(f"--table {name!r}: give it as DB.TABLE")
        for op in ops:
            if op not in OPS:
                raise OptionError(f"--op {op!r}: one of {', '.join(OPS)}")
        return cls(pattern, frozenset(tables), frozenset(ops), since, until)

    def early(self, timestamp: int) -> bool:
        """Whether a group of ``timestamp`` is before ``--since`` (cheap, before summarizing)."""
        return self.since is not None and timestamp < self.since

    def matches(self, summary: GroupSummary) -> bool:
        """Whether ``summary`` passes every criterion."""
        if self.since is not None and summary.timestamp < self.since:
            return False
        if self.until is not None and summary.timestamp >= self.until:
            return False
        if self.tables and not self.tables.intersection(summary.tables):
            return False
        if self.ops and not self.ops.intersection(summary.ops):
            return False
        if self.statement is not None and not any(self.statement.search(s) for s in summary.statements):
            return False
        return True


def find_groups(
    groups: Iterable[GroupLike], query: GroupQuery, history: SchemaHistory | None = None
) -> Iterable[GroupSummary]:
    """The summaries of ``groups`` that ``query`` matches, in order."""
    for group in groups:
        if query.early(group.timestamp):
            head = group.events[0]
            if history is not None and isinstance(head, E.GtidEvent) and head.flags2 & E.FL_DDL:
                summarize(group, history)  # keep the history's DDL in step
            continue
        summary = summarize(group, history)
        if query.matches(summary):
            yield summary


def print_json(summary: GroupSummary) -> str:
    """One JSON line."""
    return json.dumps(summary.to_json(), ensure_ascii=False)
