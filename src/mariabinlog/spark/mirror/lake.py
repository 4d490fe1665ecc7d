"""The tables of a live mirror, whatever their format: what the mirror asks of a table.

A mirror's output directory holds a CDC table (``cdc``), and per source table a latest-state
table (``state/<db>.<table>``) and a typed change table (``changes/<db>.<table>``), as the batch
pipeline writes them, but each is a Delta table (:mod:`.delta`, committed with delta-rs) or an
Iceberg table (:mod:`.iceberg`, through pyiceberg and a catalog), changed in place commit by
commit.  Every commit the mirror makes carries a :class:`Marker` in the table's own commit
metadata: how far into the followed stream the table is applied, and which point of the schema
history its columns follow.  A restart reads the markers back and applies to each table only
what it lacks, so a kill between one table's commit and the next neither loses nor repeats a
change.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from .position import Offset, version

#: The kinds of per-source-table tables (directories under the output, as in the batch pipeline).
KINDS = ("state", "changes")
#: The name of the CDC table.
CDC = "cdc"
#: The application id of the mirror's Delta transactions (``txn`` actions) and the prefix of its
#: Iceberg properties.
APP = "mariabinlog"


def same_type(a: Any, b: Any) -> bool:
    """Whether two Arrow types hold the same column values: equal, or both text or both bytes
    in any of Arrow's widths (the formats read strings back as large or view strings)."""
    import pyarrow as pa

    if a.equals(b):
        return True
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    blob = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
    return (any(f(a) for f in text) and any(f(b) for f in text)) or (any(f(a) for f in blob) and any(f(b) for f in blob))


@dataclass(frozen=True)
class Marker:
    """What the mirror's last commit to a table says about it.

    ``applied``: every change of the stream below this position is in the table, none above it;
    ``shape``: the table's columns (and which incarnation of its source table it holds) are
    those the schema history gives at this position; ``source``: the source table ``db.table``
    it mirrored at ``shape`` (a table renamed since keeps its old name here until it is
    evolved)."""

    applied: Offset | None
    shape: Offset | None
    source: str = ""

    def text(self) -> str:
        """As JSON (the commit metadata's value)."""
        return json.dumps({"applied": self.applied, "shape": self.shape, "source": self.source},
                          separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def parse(cls, data: str) -> Marker:
        """Inverse of :meth:`text`."""
        parsed = json.loads(data)
        return cls(parsed.get("applied"), parsed.get("shape"), parsed.get("source", ""))

    @property
    def version(self) -> int:
        """``applied`` as one number (the Delta transaction version; -1: nothing applied)."""
        return version(self.applied)


@dataclass(frozen=True)
class Evolution:
    """How a table's image columns change in place: at the top level of a state table, inside
    its ``before`` and ``after`` structs for a change table (``paths``).  ``target`` is the
    table's new schema; ``renamed`` maps old column names to new ones, columns of neither the
    map nor ``target`` are dropped; ``added`` are new columns with the value rows already
    there get (None: null); ``retyped`` are the new names of columns whose type changes."""

    target: Any
    renamed: dict[str, str]
    added: dict[str, Any]
    retyped: frozenset[str] = frozenset()
    paths: tuple[tuple[str, ...], ...] = ((),)
    dropped: tuple[str, ...] = field(default=())


class LakeTable(ABC):
    """One table of the mirror (see the module docstring)."""

    def __init__(self, kind: str, name: str, location: str) -> None:
        self.kind = kind  # "cdc", "state" or "changes"
        self.name = name  # "db.table" (state and changes), "cdc"
        self.location = location

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}/{self.name} at {self.location})"

    @abstractmethod
    def marker(self) -> Marker | None:
        """The marker of the mirror's last commit (None: the table holds none)."""

    @abstractmethod
    def schema(self) -> Any:
        """The table's Arrow schema."""

    @abstractmethod
    def count(self) -> int:
        """How many rows the table holds (from its metadata)."""

    @abstractmethod
    def read(self, column: str | None = None, values: Any = None) -> Any:
        """The table's rows (an Arrow table), or those whose ``column`` is among ``values``."""

    @abstractmethod
    def append(self, data: Any, marker: Marker) -> None:
        """Add ``data`` (Arrow, the table's schema) in one commit."""

    @abstractmethod
    def upsert(self, keys: list[str], rows: Any, gone: Any, marker: Marker) -> None:
        """In one commit: ``rows`` replace the rows of their primary key (``keys``) or are
        added; the rows whose key ``gone`` (a table of the key columns) holds are deleted."""

    @abstractmethod
    def replace_copies(self, images: Any, copies: Any, marker: Marker) -> None:
        """In one commit, for a table without a key: every row equal to one of ``images``
        (nulls equal) is deleted, and ``copies`` are added."""

    @abstractmethod
    def evolve(self, change: Evolution, marker: Marker) -> bool:
        """Change the schema in place in one commit; False when the format cannot express the
        change (nothing done: the caller rewrites the table)."""

    @abstractmethod
    def rewrite(self, change: Evolution, data: Any, marker: Marker) -> None:
        """Replace the whole table, schema and rows, by ``data`` (``change``'s target, which
        says which columns are the old ones renamed) in one commit."""

    @abstractmethod
    def compact(self) -> None:
        """Merge the small files of frequent commits into fewer (keeps the marker)."""

    @abstractmethod
    def vacuum(self, retention_seconds: float) -> None:
        """Delete the files of versions older than the retention that no newer version uses."""


class Lake(ABC):
    """The tables of one mirror and their catalog (the directory for Delta).

    The mirror is its tables' only writer, so the tables are found once and then followed
    through the changes the mirror itself makes (:meth:`_remember`, :meth:`_forget`)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], LakeTable] | None = None

    def _all(self) -> dict[tuple[str, str], LakeTable]:
        if self._known is None:
            self._known = {(t.kind, t.name): t for t in self._find()}
        return self._known

    def _remember(self, table: LakeTable) -> LakeTable:
        self._all()[(table.kind, table.name)] = table
        return table

    def _forget(self, table: LakeTable) -> None:
        self._all().pop((table.kind, table.name), None)

    def tables(self) -> list[LakeTable]:
        """Every state and change table of the mirror."""
        return [table for key, table in sorted(self._all().items()) if key[0] != CDC]

    def cdc(self) -> LakeTable | None:
        """The CDC table (None: not created yet)."""
        return self._all().get((CDC, CDC))

    @abstractmethod
    def _find(self) -> list[LakeTable]:
        """Every table of the mirror, the CDC table included, as the format lists them."""

    @abstractmethod
    def create(self, kind: str, name: str, schema: Any, marker: Marker, partition_by: tuple[str, ...] = ()
               ) -> LakeTable:
        """A new empty table (its creation commit carries ``marker``)."""

    @abstractmethod
    def drop(self, table: LakeTable) -> None:
        """Remove the table (its source table was dropped, truncated or recreated)."""

    @abstractmethod
    def rename(self, table: LakeTable, name: str) -> LakeTable:
        """The table under another name (its source table was renamed)."""

    @abstractmethod
    def commit_files(self, kind: str, name: str, location: str, schema: Any, files: list[str], marker: Marker,
                     partition_by: tuple[str, ...] = ()) -> LakeTable:
        """Make the Parquet files a batch run wrote under ``location`` (``schema``) the first
        version of a new table carrying ``marker``."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every table of the mirror (before a full refresh)."""

    def describe(self) -> str:
        """Where the tables are, for messages."""
        return type(self).__name__

    def sweep(self) -> None:
        """Delete what a kill in the middle of a drop left (nothing, unless the format says)."""
