"""``mariabinlog undo``'s policy: the inverse of chosen event groups, and the check that no
later group changed the same rows.

The inversion is ``--flashback``'s (``Rows_log_event::change_to_flashback_event``, in
:mod:`.printer.rowsizes`): within a group the statements come newest first, each statement's
rows events in reverse order with Write and Delete swapped, the rows of each event reversed
and the two images of each updated row swapped.  Each inverted statement is a ``BINLOG
'...'`` statement (its Table_map events, then its inverted rows events), so the server's own
row applier does the work, exactly as for ``mariadb-binlog --flashback | mariadb``; a group
becomes one transaction.

Refused (:class:`~mariabinlog.errors.UndoError`): groups that hold statements other than
BEGIN/COMMIT (statement-logged DML, DDL: there is nothing to invert), XA groups, and row
images that are not full (``binlog_row_image=FULL`` is needed to restore a row).

Conflicts (:class:`~mariabinlog.errors.UndoConflictError`): a row is named by its primary
key (from the Table_map's metadata with ``binlog_row_metadata=FULL``, else from the
archive's schema history, which knows the keys of a default ``NO_LOG`` server's tables from
its DDL), or by all of its values when the table has no key.  A later group of the archive
that changed one of the rows an undone group changed, or a later DDL on one of its tables,
is a conflict: reverting would overwrite that later change.

Groups are given as objects with ``gtid``, ``events``, ``raw`` and ``fd`` (the replication
layer's event groups, which the command line reads from the archive).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..codec import events as E
from ..codec.gtid import Gtid
from ..codec.rows import row_decoder
from ..errors import FlashbackError, UndoConflictError, UndoError
from ..schema import SchemaHistory
from .printer.rows import UNCOMPRESSED_TYPE
from .printer.rowsizes import FLASHBACK_TYPE, flashback_rows, full_size_codes, size_codes
from .printer.rowsql import rows_sql

_TRANSACTION_WORDS = frozenset({b"BEGIN", b"COMMIT", b"ROLLBACK"})
_XA = E.FL_PREPARED_XA | E.FL_COMPLETED_XA

#: A row's identity: (database, table, key values or all values).
RowKey = tuple[str, str, tuple[Any, ...]]


class UndoGroupLike(Protocol):
    """An event group with its events' bytes (no CRC) and the Format_description in force."""

    gtid: Gtid
    events: list[E.Event]
    raw: list[bytes]
    fd: E.FormatDescriptionEvent | None

    @property
    def timestamp(self) -> int: ...


@dataclass
class GroupUndo:
    """The inverse of one group: ``BINLOG`` statements, newest statement first."""

    gtid: Gtid
    timestamp: int
    fd: E.FormatDescriptionEvent | None
    statements: list[bytes] = field(default_factory=list)
    #: The ``###`` lines of each inverted statement (what ``-v --flashback`` prints).
    decoded: list[bytes] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    rows: int = 0
    keys: set[RowKey] = field(default_factory=set)

    def transaction(self) -> list[bytes]:
        """The statements that undo the group in one transaction (after the Format_description)."""
        return [b"BEGIN", *self.statements, b"COMMIT"]

    def script(self) -> bytes:
        """The group's undo as SQL text, the decoded rows as comments (``undo --dry-run``)."""
        head = b"# undo of %s: %d rows of %s\n" % (str(self.gtid).encode(), self.rows, ", ".join(self.tables).encode())
        out = [head, b"BEGIN;\n"]
        for statement, decoded in zip(self.statements, self.decoded):
            out.append(statement + b";\n")
            out.append(decoded if decoded.endswith(b"\n") else decoded + b"\n")
        out.append(b"COMMIT;\n")
        return b"".join(out)


def _full(bitmap: bytes | None, width: int) -> bool:
    return bitmap is not None and all(bitmap[i >> 3] >> (i & 7) & 1 for i in range(width))


def _table_name(table_map: E.TableMapEvent) -> str:
    return f"{table_map.schema}.{table_map.table}"


class _Keys:
    """Row identities of rows events: primary key values, or whole rows for keyless tables."""

    def __init__(self, history: SchemaHistory | None) -> None:
        self.history = history

    def indexes(self, table_map: E.TableMapEvent, gtid: Gtid) -> tuple[int, ...]:
        meta = table_map.optional_metadata
        keys = meta.key_indexes(table_map.column_count) if meta is not None else ()
        if keys:
            return keys
        if self.history is not None:
            table = self.history.table_for_event(table_map.schema, table_map.table, "", 0, str(gtid))
            if table is not None and table.unknown is None and len(table.columns) == table_map.column_count:
                return table.key_indexes()
        return ()

    def of(self, table_map: E.TableMapEvent, event: E.RowsEvent, gtid: Gtid) -> Iterator[RowKey]:
        """The identities of the rows ``event`` changed (before and after images)."""
        indexes = self.indexes(table_map, gtid)
        for change in row_decoder(table_map).decode(event, raw=True):
            for image in (change.before, change.after):
                if image is None:
                    continue
                values = tuple(image[i] for i in indexes) if indexes else tuple(image)
                yield (table_map.schema, table_map.table, values)


def _refuse_statements(group: UndoGroupLike) -> None:
    head = group.events[0]
    if isinstance(head, E.GtidEvent) and head.flags2 & _XA:
        raise UndoError(f"GTID {group.gtid} is part of an XA transaction: undo does not invert XA groups")
    for event in group.events[1:]:
        if isinstance(event, E.QueryEvent) and bytes(event.query) not in _TRANSACTION_WORDS:
            kind = "DDL" if isinstance(head, E.GtidEvent) and head.flags2 & E.FL_DDL else "statement-logged"
            text = " ".join(bytes(event.query).decode("utf-8", "replace").split())[:120]
            raise UndoError(
                f"GTID {group.gtid} is {kind} ({text!r}): only row-logged changes can be inverted"
                " (binlog_format=ROW)"
            )


def invert_group(group: UndoGroupLike, tables: frozenset[str], keys: _Keys) -> GroupUndo:
    """The inverse of ``group``'s row changes (of ``tables`` only, when given)."""
    _refuse_statements(group)
    undo = GroupUndo(group.gtid, group.timestamp, group.fd)
    maps: dict[int, tuple[E.TableMapEvent, bytes]] = {}
    statement: list[tuple[E.TableMapEvent, bytes, E.RowsEvent]] = []
    inverted: list[tuple[bytes, bytes]] = []
    for event, raw in zip(group.events[1:], group.raw[1:], strict=True):
        if isinstance(event, E.TableMapEvent):
            maps[event.table_id] = (event, raw)
            continue
        if not isinstance(event, E.RowsEvent):
            continue
        found = maps.get(event.table_id)
        if found is None:
            raise UndoError(f"GTID {group.gtid}: a rows event for table id {event.table_id} without its Table_map")
        table_map, map_raw = found
        name = _table_name(table_map)
        if not tables or name in tables:
            statement.append((table_map, map_raw, event))
        if event.stmt_end:
            if statement:
                inverted.append(_invert_statement(group.gtid, statement, undo, keys))
            statement = []
    if statement:
        raise UndoError(f"GTID {group.gtid}: the group ends inside a rows statement (no STMT_END_F)")
    for binlog, decoded in reversed(inverted):
        undo.statements.append(binlog)
        undo.decoded.append(decoded)
    return undo


def _invert_statement(
    gtid: Gtid, statement: list[tuple[E.TableMapEvent, bytes, E.RowsEvent]], undo: GroupUndo, keys: _Keys
) -> tuple[bytes, bytes]:
    """One statement's inverse: the ``BINLOG`` statement and its ``###`` lines."""
    map_raws: dict[int, bytes] = {}
    events: list[bytes] = []
    decoded: list[bytes] = []
    last = len(statement) - 1
    for index, (table_map, map_raw, event) in enumerate(reversed(statement)):
        name = _table_name(table_map)
        width = event.width
        if width != table_map.column_count or not _full(event.present_before, width) or (
            event.present_after is not None and not _full(event.present_after, width)
        ):
            raise UndoError(
                f"GTID {gtid}: the rows of {name} are logged with partial images; undo needs"
                " binlog_row_image=FULL to restore them"
            )
        map_raws.setdefault(table_map.table_id, map_raw)
        undo.keys.update(keys.of(table_map, event, gtid))
        if name not in undo.tables:
            undo.tables.append(name)
        code = UNCOMPRESSED_TYPE.get(event.type_code, event.type_code)
        code = FLASHBACK_TYPE.get(code, code)
        try:
            sizes = size_codes(table_map.column_types, table_map.column_meta)
            rows = flashback_rows(
                full_size_codes(table_map.column_types, table_map.column_meta, sizes), event.kind == "update", width, event.present_before,
                event.present_after, event.rows_data, 0, len(event.rows_data),
            )
        except FlashbackError:
            raise UndoError(f"GTID {gtid}: a row of {name} cannot be measured for inversion") from None
        flags = event.rows_flags | E.STMT_END_F if index == last else event.rows_flags & ~E.STMT_END_F
        reverse = E.RowsEvent(
            code,
            table_id=event.table_id,
            width=width,
            present_before=event.present_before,
            present_after=event.present_after,
            rows_data=rows,
            rows_flags=flags,
            extra_data=event.extra_data,
            timestamp=event.timestamp,
            server_id=event.server_id,
            log_pos=0,
            flags=event.flags,
        )
        undo.rows += len(row_decoder(table_map).decode(reverse, raw=True))
        events.append(reverse.encode())
        decoded.append(rows_sql(table_map, reverse, verbose=1))
    data = b"".join(map_raws.values()) + b"".join(events)
    return b"BINLOG '" + base64.b64encode(data) + b"'", b"".join(decoded)


@dataclass
class UndoPlan:
    """The groups to undo, newest first, and what later groups touched their rows."""

    groups: list[GroupUndo]
    conflicts: dict[str, list[str]]


def plan_undo(
    groups: Iterable[UndoGroupLike],
    gtids: Iterable[Gtid],
    *,
    tables: Iterable[str] = (),
    history: SchemaHistory | None = None,
    force: bool = False,
) -> UndoPlan:
    """Read the archive's ``groups`` in order once: invert the ``gtids`` and check every later
    group against the rows they changed.  Raises UndoError for unknown GTIDs and groups that
    cannot be inverted, UndoConflictError for conflicts unless ``force``."""
    wanted = list(dict.fromkeys(gtids))
    chosen = frozenset(tables)
    keys = _Keys(history)
    found: dict[Gtid, GroupUndo] = {}
    conflicts: dict[str, list[str]] = {}
    for group in groups:
        if group.gtid in wanted:
            undo = invert_group(group, chosen, keys)
            found[group.gtid] = undo
            continue
        if not found:
            if history is not None:
                _observe_ddl(group, history)
            continue
        _check_later(group, found, keys, history, conflicts)
    missing = [str(g) for g in wanted if g not in found]
    if missing:
        raise UndoError(f"GTID {', '.join(missing)} not found in the archive")
    if conflicts and not force:
        lines = "; ".join(f"{undone} was changed later by {', '.join(later)}" for undone, later in conflicts.items())
        raise UndoConflictError(
            f"refusing to undo: later groups changed the same rows ({lines}); undo those first, or use --force",
            conflicts,
        )
    ordered = [found[g] for g in reversed(list(found))]
    empty = [str(u.gtid) for u in ordered if not u.statements]
    if empty:
        raise UndoError(f"GTID {', '.join(empty)} changed no rows{' of the chosen tables' if chosen else ''}")
    return UndoPlan(ordered, conflicts)


def _observe_ddl(group: UndoGroupLike, history: SchemaHistory) -> list[tuple[str, str]]:
    head = group.events[0]
    named: list[tuple[str, str]] = []
    if isinstance(head, E.GtidEvent) and head.flags2 & (E.FL_DDL | E.FL_STANDALONE):
        for event in group.events[1:]:
            if isinstance(event, E.QueryEvent):
                named += history.observe_query(event, file="", pos=0, gtid=str(group.gtid))
    return named


def _check_later(
    group: UndoGroupLike,
    found: dict[Gtid, GroupUndo],
    keys: _Keys,
    history: SchemaHistory | None,
    conflicts: dict[str, list[str]],
) -> None:
    """Record ``group`` against every undone group before it that changed the same rows."""
    touched: set[RowKey] = set()
    ddl_tables: set[str] = set()
    if history is not None:
        ddl_tables = {f"{db}.{name}" for db, name in _observe_ddl(group, history)}
    watched = {name for undone in found.values() for name in undone.tables}
    maps: dict[int, E.TableMapEvent] = {}
    for event in group.events[1:]:
        if isinstance(event, E.TableMapEvent):
            maps[event.table_id] = event
        elif isinstance(event, E.RowsEvent):
            table_map = maps.get(event.table_id)
            if table_map is None or _table_name(table_map) not in watched:
                continue
            touched.update(keys.of(table_map, event, group.gtid))
    for undone in found.values():
        if (touched and not touched.isdisjoint(undone.keys)) or ddl_tables.intersection(undone.tables):
            conflicts.setdefault(str(undone.gtid), []).append(str(group.gtid))
