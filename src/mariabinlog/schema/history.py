"""The schema history: every table's columns as of every position of a binlog stream.

A :class:`SchemaHistory` starts from a snapshot (empty, a saved history, a
``mariadb-dump --no-data`` file, or what a live server's information_schema
said) and follows the stream's DDL: feed it each group's GTID with
:meth:`SchemaHistory.observe_group` and each Query event with
:meth:`SchemaHistory.observe_query`.  :meth:`SchemaHistory.table` answers "what
does this table look like now"; :meth:`SchemaHistory.table_for_event` answers it
for any event of the stream, by the event's place in it, so a reader that jumps
around (Spark) or reads another copy of the stream (an ``.ibb`` archive of a
primary, a replica's binlog) can ask too.  A statement the parser cannot read is
logged once (warning with its GTID and text) and the tables it names stay unknown
(positional ``@N`` names) until their next CREATE.

Where a statement stands: MariaDB's GTID domains are independent streams, so a
statement's GTID orders it only within its own domain.  Each statement is recorded
with the stream's GTID position once its group is logged (``gtid_pos``: the last
GTID of every domain, as ``@@gtid_binlog_pos`` reads right after it): an event of
group ``d-s-n`` comes after the statement when ``n`` is above the position's
sequence number for domain ``d`` (or it is the statement's own group).  That is the
binlog's own order, in every copy of the stream that keeps its GTIDs (the
primary's files, an archive, a replica's binlog), whatever their file names and
offsets, from any point of it, as long as sequence numbers grow within each domain
(what ``gtid_strict_mode`` enforces and MariaDB's own GTID positions assume).
Streams without GTIDs (MySQL, MariaDB before 10.0) are placed by (file number,
offset) in the files the history was recorded from.

Saved as JSON (:meth:`save`/:meth:`load`, format version 2): the snapshot plus
each applied DDL statement with its place, replayed on load.  Version 1 files
(no ``gtid_pos``) are refused with a :class:`SchemaHistoryError` that says how to
make them again.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..codec import charsets
from ..codec.columns import collation_codec
from ..codec.events import Q_CHARSET_CODE, Q_CHARSET_DATABASE_CODE, QueryEvent
from ..codec.gtid import BinlogState, ConnectState, Gtid
from ..errors import GtidError, SchemaHistoryError, UnparsedDDLError
from .ddl import Catalog
from .model import Table

log = logging.getLogger(__name__)

FORMAT_VERSION = 2

#: The file name of a schema history kept beside the binlogs it describes (an archive's
#: `.ibb` directory; the pipeline's output), where readers look for it.
SCHEMA_HISTORY_FILE = "schema-history.json"

_FILE_NUMBER = re.compile(r"(\d+)(?:\.ibb)?$")


def file_order(name: str, pos: int) -> tuple[int, str, int]:
    """A key that orders (file, offset) places as the binlog does: files by their number
    (``mysql-bin.999999`` before ``mysql-bin.1000000``), then the offset."""
    match = _FILE_NUMBER.search(name)
    return (int(match.group(1)), "", pos) if match else (-1, name, pos)


def gtid_pos_text(position: ConnectState) -> str:
    """A GTID position as ``@@gtid_binlog_pos`` writes it, domains in order."""
    return ",".join(map(str, sorted(position.values())))


def _gtid(text: str | None) -> Gtid | None:
    """``domain-server-seq`` (None: no GTID or not one)."""
    if not text:
        return None
    parts = text.split("-")
    if len(parts) != 3 or not (parts[0].isdigit() and parts[1].isdigit() and parts[2].isdigit()):
        return None
    return Gtid(int(parts[0]), int(parts[1]), int(parts[2]))


class Place:
    """Where a DDL statement stands in the stream it was recorded from (see the module
    docstring): its GTID and the GTID position once its group is logged, and its (file,
    offset) there."""

    __slots__ = ("gtid", "gtid_pos", "order")

    def __init__(self, file: str, pos: int, gtid: str | None, gtid_pos: str | None) -> None:
        self.gtid = _gtid(gtid)
        self.gtid_pos = None if gtid_pos is None else {g.domain: g.seq for g in ConnectState.parse(gtid_pos).values()}
        self.order = file_order(file, pos)

    def before(self, file: str, pos: int, gtid: Gtid | None, *, own_group: bool) -> bool:
        """Whether the statement was logged before the event at ``file``/``pos`` of group
        ``gtid`` (``own_group``: whether the statement's own group counts as after it)."""
        if gtid is not None and self.gtid_pos is not None:
            mine = self.gtid
            if mine is not None and mine.domain == gtid.domain and mine.seq == gtid.seq:
                return own_group
            last = self.gtid_pos.get(gtid.domain)
            return last is None or gtid.seq > last
        return self.order <= file_order(file, pos)


@dataclass(frozen=True)
class DdlRecord:
    """One DDL statement of the stream, as applied (or found unreadable)."""

    file: str
    pos: int
    gtid: str | None
    database: str
    query: str
    server_charset: str | None
    tables: tuple[tuple[str, str], ...]
    error: str | None = None
    #: The stream's GTID position once the statement's group is logged (``d-s-n,...``, the
    #: group's own GTID included); None for a stream without GTIDs.
    gtid_pos: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {k: getattr(self, k) for k in ("file", "pos", "gtid", "gtid_pos", "database", "query", "server_charset")}
        out["tables"] = [list(t) for t in self.tables]
        if self.error is not None:
            out["error"] = self.error
        return out


class SchemaHistory:
    """Tables as of each position of one stream (see the module docstring)."""

    def __init__(self, snapshot: Catalog | None = None, *, source: str = "empty") -> None:
        self.snapshot = snapshot.copy() if snapshot is not None else Catalog()
        self.catalog = self.snapshot.copy()
        self.source = source
        self.records: list[DdlRecord] = []
        #: The GTID position of the stream followed so far: the last GTID of every domain.
        self.position = ConnectState()
        # (db, table) -> the table from each version on (None = dropped), and where each
        # version starts (None: the snapshot, before everything)
        self._versions: dict[tuple[str, str], tuple[list[Place | None], list[Table | None]]] = {}
        for key, table in self.snapshot.tables.items():
            self._versions[key] = ([None], [table])
        # GTID (or, without one, (file, offset)) -> index in records, the catalog after each
        # record (for re-reading a known stream), and each record's place
        self._known: dict[str | tuple[str, int], int] = {}
        self._after: list[Catalog] = []
        self._places: list[Place] = []

    # -- following the stream -------------------------------------------------

    def observe_group(self, gtid: str | None) -> None:
        """The stream followed reached the event group ``gtid`` (``domain-server-seq``):
        statements recorded from here on stand after it."""
        parsed = _gtid(gtid)
        if parsed is not None:
            self.position.update(parsed)

    def observe_gtid(self, gtid: Gtid) -> None:
        """:meth:`observe_group` of a GTID at hand (no text to parse)."""
        self.position.update(gtid)

    def observe_gtid_list(self, gtids: Iterable[tuple[int, int, int]]) -> None:
        """The stream followed states its binlog state (a Gtid_list event at a file's start,
        an archive's GTID state): the position is that state's last GTID of each domain."""
        self.position = BinlogState.from_list(Gtid(*g) for g in gtids).connect_state()

    def observe_query(self, event: QueryEvent, *, file: str, pos: int, gtid: str | None) -> list[tuple[str, str]]:
        """Apply the Query event's statement if it is DDL; returns the tables it changed.

        A statement of a GTID the history already holds (a saved history read with its
        stream again, a group fetched again after a crash; without GTIDs, of the same file
        and offset) is not applied twice: the history moves to its state after that
        statement instead.
        """
        self.observe_group(gtid)
        if event.error_code:
            return []
        index = self._known.get(gtid if gtid is not None else (file, pos), -1)
        if index >= 0:
            self.catalog = self._after[index].copy()
            return list(self.records[index].tables)
        charset = event.status(Q_CHARSET_CODE)
        server = charsets.COLLATIONS.get(charset[2]) if isinstance(charset, tuple) else None
        # The statement is in the client's charset (utf-8 when the event does not say).
        codec = (collation_codec(charset[0]) if isinstance(charset, tuple) else None) or "utf-8"
        text = bytes(event.query).decode(codec, "replace")
        db_collation = event.status(Q_CHARSET_DATABASE_CODE)
        database = bytes(event.database).decode("utf-8", "surrogateescape")
        if isinstance(db_collation, int) and database and database not in self.catalog.database_charsets:
            entry = charsets.COLLATIONS.get(db_collation)
            if entry is not None:
                self.catalog.database_charsets[database] = entry[0]
        return self.apply(text, database, file=file, pos=pos, gtid=gtid, server_charset=server[0] if server else None)

    def apply(
        self,
        query: str,
        database: str,
        *,
        file: str = "",
        pos: int = 0,
        gtid: str | None = None,
        server_charset: str | None = None,
        warn: bool = True,
    ) -> list[tuple[str, str]]:
        """Apply one statement at (file, pos) of group ``gtid``; see :meth:`Catalog.apply`
        (``warn``: log an unreadable one).  It is recorded with the history's GTID position,
        ``gtid`` included."""
        position = self.position.copy()
        own = _gtid(gtid)
        if own is not None:
            position.update(own)
        gtid_pos = gtid_pos_text(position) if len(position) else None
        return self._apply(query, database, file, pos, gtid, server_charset, warn, gtid_pos)

    def _apply(self, query: str, database: str, file: str, pos: int, gtid: str | None, server_charset: str | None,
               warn: bool, gtid_pos: str | None) -> list[tuple[str, str]]:
        error = None
        try:
            changed = self.catalog.apply(query, database, server_charset)
        except UnparsedDDLError as failure:
            error = failure.reason
            changed = list(failure.tables)
            (log.warning if warn else log.debug)(
                "schema history: cannot read DDL at %s:%d (GTID %s), %s; table(s) %s fall back to positional "
                "names until their next CREATE: %s",
                file,
                pos,
                gtid or "none",
                failure.reason,
                ", ".join(f"{d}.{t}" for d, t in changed) or "unknown",
                query,
            )
            for key in changed:
                self.catalog.tables[key] = Table(key[0], key[1], (), unknown=f"{failure.reason} (GTID {gtid})")
        if changed is None:
            return []
        record = DdlRecord(file, pos, gtid, database, query, server_charset, tuple(changed), error, gtid_pos)
        place = Place(file, pos, gtid, gtid_pos)
        self.records.append(record)
        self._after.append(self.catalog.copy())
        self._places.append(place)
        self._known[gtid if gtid is not None else (file, pos)] = len(self.records) - 1
        for key in dict.fromkeys(changed):
            places, tables = self._versions.setdefault(key, ([], []))
            places.append(place)
            tables.append(self.catalog.tables.get(key))
        return changed

    # -- questions ------------------------------------------------------------

    def rewind(self, gtid: str) -> None:
        """Set the current state to just before the group ``gtid`` (domain-server-seq).

        For following a stream from its middle with a saved history: the state after the
        last recorded statement that stands before that group (by its GTID position, so
        statements of every domain count), the snapshot when there is none.
        """
        event = _gtid(gtid)
        index = -1
        for i, place in enumerate(self._places):
            if event is not None and place.gtid_pos is not None and place.before("", -1, event, own_group=False):
                index = i
        self.catalog = self._after[index].copy() if index >= 0 else self.snapshot.copy()

    def table(self, database: str, name: str) -> Table | None:
        """The table as the stream has it now (None: unknown to the history)."""
        return self.catalog.get(database, name)

    def table_for_event(self, database: str, name: str, file: str, pos: int, gtid: str | None) -> Table | None:
        """The table as it was for an event of group ``gtid`` at (``file``, ``pos``) of the
        stream being read: the version of the last statement that stands before the event
        (module docstring: by the statement's GTID position when both have GTIDs, so the
        file names and offsets of the copy being read do not matter; else by file number
        and offset).  Rows of a statement's own group (``CREATE ... SELECT``) come after it.
        None: no such table there."""
        versions = self._versions.get((database, name))
        if versions is None:
            return None
        event = _gtid(gtid)
        places, tables = versions
        for index in range(len(places) - 1, -1, -1):
            place = places[index]
            if place is None or place.before(file, pos, event, own_group=True):
                return tables[index]
        return None

    def tables_after(self, count: int) -> dict[tuple[str, str], Table]:
        """The tables as the stream had them after its first ``count`` DDL records (the
        snapshot's for 0), as the same :class:`Table` versions the other questions answer
        with: a consumer that applied the stream up to a record can tell by incarnation and
        column identity which of its tables were since renamed, altered, emptied or dropped."""
        if not 0 <= count <= len(self.records):
            raise ValueError(f"the history holds {len(self.records)} DDL records, not {count}")
        return dict((self._after[count - 1] if count else self.snapshot).tables)

    def incarnations(self, database: str, name: str) -> list[int]:
        """The incarnations of the tables known under this name at some point of the stream."""
        versions = self._versions.get((database, name))
        tables = versions[1] if versions is not None else []
        return list(dict.fromkeys(t.incarnation for t in tables if t is not None and t.unknown is None))

    def lost_incarnations(self) -> set[int]:
        """The incarnations the history lost track of (a statement it could not read made
        their table unknown): their rows' later shape is unknown, not gone."""
        lost = set()
        for _, tables in self._versions.values():
            for before, after in zip(tables, tables[1:]):
                if before is not None and before.unknown is None and after is not None and after.unknown is not None:
                    lost.add(before.incarnation)
        return lost

    def current_incarnations(self) -> dict[int, Table]:
        """The tables the stream leaves, by incarnation (see :class:`~.model.Table`)."""
        return {table.incarnation: table for table in self.catalog.tables.values() if table.unknown is None}

    # -- persistence ----------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The snapshot and the applied DDL, JSON-ready."""
        return {
            "format": "mariabinlog-schema-history",
            "version": FORMAT_VERSION,
            "source": self.source,
            "gtid_pos": gtid_pos_text(self.position),
            "snapshot": {
                "tables": [t.to_json() for t in self.snapshot.tables.values()],
                "database_charsets": self.snapshot.database_charsets,
            },
            "ddl": [r.to_json() for r in self.records],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the history to ``path`` atomically (temporary file, then rename)."""
        target = Path(path)
        temp = target.with_name(target.name + ".tmp")
        temp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(temp, target)

    @classmethod
    def from_json(cls, data: dict[str, Any], *, where: str = "<json>") -> SchemaHistory:
        """Rebuild a history: the snapshot, then its DDL replayed at their places."""
        if not isinstance(data, dict) or data.get("format") != "mariabinlog-schema-history":
            raise SchemaHistoryError(f"{where}: not a schema history (no \"format\": \"mariabinlog-schema-history\")")
        if data.get("version") == 1:
            raise SchemaHistoryError(
                f"{where}: a schema history of format version 1 (an older mariabinlog) records no GTID position "
                "per statement, so rows of other GTID domains than a statement's cannot be placed against it; "
                "make it again from the binlogs: mariabinlog dump --format=schema-history [--schema-file=FILE | "
                "--schema-from=URL] BINLOGS > history.json (for an archive, of its own binlog-*.ibb files into "
                "its schema-history.json, with the archive stopped)")
        if data.get("version") != FORMAT_VERSION:
            raise SchemaHistoryError(f"{where}: schema history format version {data.get('version')!r} is not "
                                     f"{FORMAT_VERSION}, the one this mariabinlog reads")
        try:
            tables = [Table.from_json(t) for t in data["snapshot"]["tables"]]
            snapshot = Catalog({t.key: t for t in tables}, dict(data["snapshot"].get("database_charsets", {})))
            history = cls(snapshot, source=data.get("source", where))
            for record in data["ddl"]:
                history._apply(record["query"], record["database"], record["file"], record["pos"], record["gtid"],
                               record.get("server_charset"), False, record["gtid_pos"])
            history.position = ConnectState.parse(data["gtid_pos"])
        except (KeyError, TypeError, GtidError) as error:
            raise SchemaHistoryError(f"{where}: not a valid schema history: {error!r}") from error
        return history

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SchemaHistory:
        """Read a history written by :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SchemaHistoryError(f"{path}: cannot read the schema history: {error}") from error
        return cls.from_json(data, where=str(path))
