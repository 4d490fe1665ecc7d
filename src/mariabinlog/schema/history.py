"""The schema history: every table's columns as of every position of a binlog stream.

A :class:`SchemaHistory` starts from a snapshot (empty, a saved history, a
``mariadb-dump --no-data`` file, or what a live server's information_schema
said) and follows the stream's DDL: feed it each Query event with
:meth:`SchemaHistory.observe_query`.  :meth:`SchemaHistory.table` answers "what
does this table look like now"; :meth:`SchemaHistory.table_at` answers it for
any earlier position of the stream, so a reader that jumps around (Spark) can
ask too.  A statement the parser cannot read is logged once (warning with its
GTID and text) and the tables it names stay unknown (positional ``@N`` names)
until their next CREATE.

Saved as JSON (:meth:`save`/:meth:`load`): the snapshot plus each applied DDL
statement with its position, replayed on load.
"""

from __future__ import annotations

import json
import logging
import os
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..codec import charsets
from ..codec.columns import collation_codec
from ..codec.events import Q_CHARSET_CODE, Q_CHARSET_DATABASE_CODE, QueryEvent
from ..errors import SchemaHistoryError, UnparsedDDLError
from .ddl import Catalog
from .model import Table

log = logging.getLogger(__name__)

FORMAT_VERSION = 1

#: The file name of a schema history kept beside the binlogs it describes (an archive's
#: `.ibb` directory; the pipeline's output), where readers look for it.
SCHEMA_HISTORY_FILE = "schema-history.json"

#: A stream position: (file name, offset); the snapshot sits before every position.
Position = tuple[str, int]
_START: Position = ("", -1)


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

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {k: getattr(self, k) for k in ("file", "pos", "gtid", "database", "query", "server_charset")}
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
        # (db, table) -> positions and the table from each position on (None = dropped/unknown)
        self._versions: dict[tuple[str, str], tuple[list[Position], list[Table | None]]] = {}
        # (db, table) -> the GTID of the statement of each version (None: the snapshot, or none logged)
        self._version_gtids: dict[tuple[str, str], list[str | None]] = {}
        for key, table in self.snapshot.tables.items():
            self._versions[key] = ([_START], [table])
            self._version_gtids[key] = [None]
        # GTID -> index in records, and the catalog after each record (for re-reading a known stream)
        self._gtids: dict[str, int] = {}
        self._after: list[Catalog] = []

    # -- following the stream -------------------------------------------------

    def observe_query(self, event: QueryEvent, *, file: str, pos: int, gtid: str | None) -> list[tuple[str, str]]:
        """Apply the Query event's statement if it is DDL; returns the tables it changed.

        A statement of a GTID the history already holds (a saved history read with its
        stream again, a group fetched again after a crash) is not applied twice: the
        history moves to its state after that statement instead.
        """
        if event.error_code:
            return []
        if gtid is not None and gtid in self._gtids:
            index = self._gtids[gtid]
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
        """Apply one statement at (file, pos); see :meth:`Catalog.apply` (``warn``: log an unreadable one)."""
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
        record = DdlRecord(file, pos, gtid, database, query, server_charset, tuple(changed), error)
        self.records.append(record)
        self._after.append(self.catalog.copy())
        if gtid is not None:
            self._gtids[gtid] = len(self.records) - 1
        for key in dict.fromkeys(changed):
            positions, tables = self._versions.setdefault(key, ([], []))
            positions.append((file, pos))
            tables.append(self.catalog.tables.get(key))
            self._version_gtids.setdefault(key, []).append(gtid)
        return changed

    # -- questions ------------------------------------------------------------

    def rewind(self, gtid: str) -> None:
        """Set the current state to just before the group ``gtid`` (domain-server-seq).

        For reading a stream from its middle with a saved history: the state after
        the last recorded DDL of the same domain with a lower sequence number (the
        snapshot when there is none).
        """
        domain, _, seq = gtid.split("-")
        index = -1
        for i, record in enumerate(self.records):
            parts = (record.gtid or "").split("-")
            if len(parts) == 3 and parts[0] == domain and int(parts[2]) < int(seq):
                index = i
        self.catalog = self._after[index].copy() if index >= 0 else self.snapshot.copy()

    def table(self, database: str, name: str) -> Table | None:
        """The table as the stream has it now (None: unknown to the history)."""
        return self.catalog.get(database, name)

    def table_at(self, database: str, name: str, file: str, pos: int) -> Table | None:
        """The table as it was when the event at (file, pos) was logged."""
        versions = self._versions.get((database, name))
        if versions is None:
            return None
        index = bisect_right(versions[0], (file, pos)) - 1
        return versions[1][index] if index >= 0 else None

    def table_for_event(self, database: str, name: str, file: str, pos: int, gtid: str | None) -> Table | None:
        """The table as it was for a row event of group ``gtid`` at (file, pos), whatever the
        files the rows are read from: a statement of the same GTID domain precedes it when
        its sequence number is not higher (CREATE ... SELECT logs its rows in the statement's
        own group), other statements when their (file, pos) is not later.  So rows of an
        ``.ibb`` archive, whose history records the upstream positions, find their shape."""
        versions = self._versions.get((database, name))
        if versions is None:
            return None
        domain, _, seq = (gtid or "").partition("-")
        seq = seq.partition("-")[2]
        for index in range(len(versions[0]) - 1, -1, -1):
            at = versions[0][index]
            version_gtid = self._version_gtids[(database, name)][index]
            if at == _START:
                return versions[1][index]
            parts = (version_gtid or "").split("-")
            if seq and len(parts) == 3 and parts[0] == domain:
                if int(parts[2]) <= int(seq):
                    return versions[1][index]
            elif at <= (file, pos):
                return versions[1][index]
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
        """Rebuild a history: the snapshot, then its DDL replayed at their positions."""
        if data.get("format") != "mariabinlog-schema-history" or data.get("version") != FORMAT_VERSION:
            raise SchemaHistoryError(f"{where}: not a schema history of format version {FORMAT_VERSION}")
        tables = [Table.from_json(t) for t in data["snapshot"]["tables"]]
        snapshot = Catalog({t.key: t for t in tables}, dict(data["snapshot"].get("database_charsets", {})))
        history = cls(snapshot, source=data.get("source", where))
        for record in data["ddl"]:
            history.apply(
                record["query"],
                record["database"],
                file=record["file"],
                pos=record["pos"],
                gtid=record["gtid"],
                server_charset=record.get("server_charset"),
                warn=False,
            )
        return history

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SchemaHistory:
        """Read a history written by :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SchemaHistoryError(f"{path}: cannot read the schema history: {error}") from error
        return cls.from_json(data, where=str(path))
