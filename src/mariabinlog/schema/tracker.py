"""Follow a stream with a schema history and give each Table_map the metadata it lacks.

A :class:`SchemaTracker` is what a reader (the JSON and Debezium writers, the
text printer's ``--schema-metadata``, Spark) holds: it feeds group GTIDs and Query
events to the history and, for each Table_map, returns a copy carrying the
history's optional metadata when the agreement check passes (see :mod:`.agree`),
or the event unchanged with one warning naming table, GTID and the difference when
it does not.  The table a map is checked against is the history's table at the
map's place in the binlog (:meth:`~.history.SchemaHistory.table_for_event`), so a
saved history answers for a stream read from its middle, for one GTID domain of
it, or for another copy of it (an archive of the primary that recorded it).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

from ..codec.events import QueryEvent, TableMapEvent
from ..codec.gtid import Gtid
from .agree import Resolution, resolve
from .history import SchemaHistory
from .model import Table

log = logging.getLogger(__name__)


def typed_map_at(history: SchemaHistory, event: TableMapEvent, file: str, pos: int,
                 gtid: str | None) -> tuple[TableMapEvent, str | None]:
    """``event`` of group ``gtid`` at (file, pos), typed by a complete history: (the typed
    copy or the event, the problem).

    Stateless, for readers that visit the stream out of order: the history must already
    hold the stream's DDL (a saved history, ``dump --format=schema-history``, an archive's
    ``schema-history.json``).  With a GTID the place is the group's in its domain (any copy
    of the stream); without one, ``file`` (the binlog's base name) and ``pos`` (the event's
    offset; for `.ibb` files, its commit record's) in the files the history was recorded
    from.
    """
    table = history.table_for_event(event.schema, event.table, file, pos, gtid)
    resolution = resolve(table, event.column_types, tuple(event.column_meta), event.optional_metadata)
    if resolution.metadata is None or resolution.metadata is event.optional_metadata:
        return event, resolution.problem
    typed = copy.copy(event)
    typed.optional_metadata = resolution.metadata
    typed.decoder = None
    return typed, resolution.problem


class SchemaTracker:
    """A history plus the agreement check, applied event by event."""

    def __init__(self, history: SchemaHistory | None = None) -> None:
        self.history = history if history is not None else SchemaHistory()
        self._warned: set[tuple[str, str, str]] = set()
        #: (database, table) -> the history's table behind the last Table_map resolved for it
        self.current: dict[tuple[str, str], Table | None] = {}
        #: Table_map problems seen, each once: (database, table, first gtid, difference), in order.
        self.problems: list[tuple[str, str, str | None, str]] = []
        # A history with recorded DDL (saved by an earlier run) is rewound to the first group read,
        # and answers by place; one this tracker builds from the stream it follows in order
        # answers with the state it has followed to.
        self._positioned = self._follows = not self.history.records
        # Resolutions by (table version, map shape): a binlog repeats the same Table_map per transaction.
        self._resolved: dict[tuple[int, bytes, tuple[int, ...], Any], tuple[Table | None, Resolution]] = {}
        # The typed copy of a map object with the history's metadata, for readers that keep one
        # decoded object per distinct map (the entry holds both, so their ids stay their own).
        self._typed: dict[tuple[int, int], tuple[TableMapEvent, Any, TableMapEvent]] = {}

    @property
    def follows_stream(self) -> bool:
        """True for a history this tracker builds from the stream it follows in order: a
        table's version then changes only at the DDL the stream brings."""
        return self._follows

    def _position(self, gtid: str | None) -> None:
        if not self._positioned and gtid is not None:
            self.history.rewind(gtid)
            self._positioned = True

    def observe_group(self, gtid: str | None) -> None:
        """A GTID event: the stream reached the group ``gtid``."""
        self._position(gtid)
        self.history.observe_group(gtid)

    def observe_group_gtid(self, gtid: Gtid) -> None:
        """:meth:`observe_group` of a GTID at hand, in a history that follows the stream (whose
        position is set: nothing to rewind)."""
        self.history.observe_gtid(gtid)

    def observe_gtid_list(self, gtids: Iterable[tuple[int, int, int]]) -> None:
        """A Gtid_list event: the binlog state where a file starts."""
        self.history.observe_gtid_list(gtids)

    def observe_query(self, event: QueryEvent, *, file: str, pos: int, gtid: str | None) -> list[tuple[str, str]]:
        """Apply a Query event's DDL to the history."""
        self._position(gtid)
        return self.history.observe_query(event, file=file, pos=pos, gtid=gtid)

    def typed_map(self, event: TableMapEvent, gtid: str | None, file: str | None = None, pos: int = 0) -> TableMapEvent:
        """``event`` with the history's metadata, or unchanged (``@N`` names) after a warning.

        The history's table is the one at the map's place: with ``file`` (a reader that
        visits the stream out of order names every map's place) or a saved history, by its
        group's GTID, else by file and offset; in a history this tracker builds from the
        stream it follows in order, the table it has followed to."""
        self._position(gtid)
        self.history.observe_group(gtid)
        if file is None and (self._follows or gtid is None):
            table = self.history.table(event.schema, event.table)
        else:
            table = self.history.table_for_event(event.schema, event.table, file or "", pos, gtid)
        self.current[(event.schema, event.table)] = table
        resolution = self._resolve(table, event)
        if resolution.problem is not None:
            self._warn(event, gtid, resolution.problem, full=resolution.metadata is not None)
            if resolution.metadata is None:
                self.current[(event.schema, event.table)] = None
        metadata = resolution.metadata
        if metadata is None or metadata is event.optional_metadata:
            return event
        key = (id(event), id(metadata))
        found = self._typed.get(key)
        if found is not None and found[0] is event and found[1] is metadata:
            return found[2]
        typed = copy.copy(event)
        typed.optional_metadata = metadata
        typed.decoder = None
        if len(self._typed) > 4096:
            self._typed.clear()
        self._typed[key] = (event, metadata, typed)
        return typed

    def _resolve(self, table: Table | None, event: TableMapEvent) -> Resolution:
        logged = event.optional_metadata
        key = (id(table), bytes(event.column_types), tuple(event.column_meta), logged)
        hit = self._resolved.get(key)
        if hit is not None and hit[0] is table:
            return hit[1]
        resolution = resolve(table, event.column_types, tuple(event.column_meta), logged)
        if len(self._resolved) > 4096:
            self._resolved.clear()
        self._resolved[key] = (table, resolution)  # keeps the table alive, so its id stays its own
        return resolution

    def _warn(self, event: TableMapEvent, gtid: str | None, problem: str, *, full: bool) -> None:
        key = (event.schema, event.table, problem)
        if key in self._warned:
            return
        self._warned.add(key)
        self.problems.append((event.schema, event.table, gtid, problem))
        if full:
            log.warning(
                "schema history disagrees with the binlog's own metadata for %s.%s at GTID %s: %s "
                "(the binlog's names are used)",
                event.schema,
                event.table,
                gtid or "none",
                problem,
            )
        else:
            log.warning(
                "rows of %s.%s at GTID %s are decoded with positional names @1..@%d: %s",
                event.schema,
                event.table,
                gtid or "none",
                event.column_count,
                problem,
            )
