"""A mirror's tables as Delta tables, committed by delta-rs (``deltalake``).

Each table is a directory (``OUT/cdc``, ``OUT/state/<db>.<table>``, ``OUT/changes/<db>.<table>``)
with its ``_delta_log``.  Every commit of the mirror carries its :class:`~.lake.Marker` in the
commit's ``commitInfo`` (key ``mariabinlog``), and a commit that adds changes also records the
position it applied through as a Delta transaction identifier (``txn`` action, application id
``mariabinlog``, version the position as one number), the mechanism Delta has for exactly-once
writes from streams.

A state table's rows are replaced by key with one ``MERGE`` (delta-rs), a change or CDC table is
appended to.  In place, delta-rs adds columns (at the end, null in the rows already there);
every other change of shape (a drop, a rename, a type, a column's place, or a value the older
rows must get) rewrites the table in one commit.  A dropped table's directory is first renamed
aside (one atomic step), then deleted.
"""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any

from .lake import APP, CDC, KINDS, Evolution, Lake, LakeTable, Marker, same_type


def _commit(marker: Marker, *, applied: bool) -> Any:
    """The commit properties that carry ``marker`` (and, for a commit of changes, its txn)."""
    from deltalake import CommitProperties
    from deltalake.transaction import Transaction

    transactions = [Transaction(APP, marker.version)] if applied and marker.version >= 0 else None
    return CommitProperties(custom_metadata={APP: marker.text()}, app_transactions=transactions)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DeltaLakeTable(LakeTable):
    """One Delta table of the mirror."""

    def __init__(self, kind: str, name: str, location: str) -> None:
        from deltalake import DeltaTable

        super().__init__(kind, name, location)
        self.table = DeltaTable(location)
        self._marker: Marker | None = None
        self._read = False

    def marker(self) -> Marker | None:
        if not self._read:
            self._read = True
            for entry in self.table.history(20):
                if APP in entry:
                    self._marker = Marker.parse(entry[APP])
                    break
        return self._marker

    def _done(self, marker: Marker) -> None:
        self.table.update_incremental()
        self._marker, self._read = marker, True

    def schema(self) -> Any:
        import pyarrow as pa

        return pa.schema(self.table.schema().to_arrow())

    def count(self) -> int:
        return int(self.table.count())

    def read(self, column: str | None = None, values: Any = None) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        dataset = self.table.to_pyarrow_dataset()
        if column is None:
            return dataset.to_table()
        kind = dataset.schema.field(column).type
        return dataset.to_table(filter=pc.field(column).isin(pa.array(values).cast(kind)))

    def append(self, data: Any, marker: Marker) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.table, data, mode="append", commit_properties=_commit(marker, applied=True))
        self._done(marker)

    def upsert(self, keys: list[str], rows: Any, gone: Any, marker: Marker) -> None:
        import pyarrow as pa

        alive = pa.array([True] * rows.num_rows + [False] * gone.num_rows)
        if gone.num_rows:
            gone = pa.table({f.name: gone.column(f.name) if f.name in gone.column_names else pa.nulls(
                gone.num_rows, f.type) for f in rows.schema}, schema=rows.schema)
            source = pa.concat_tables([rows, gone])
        else:
            source = rows
        source = source.append_column("__mariabinlog_alive", alive)
        match = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in keys)
        (self.table.merge(source, match, source_alias="s", target_alias="t",
                          commit_properties=_commit(marker, applied=True))
         .when_matched_delete(predicate="NOT s.__mariabinlog_alive")
         .when_matched_update_all(predicate="s.__mariabinlog_alive", except_cols=["__mariabinlog_alive"])
         .when_not_matched_insert_all(predicate="s.__mariabinlog_alive", except_cols=["__mariabinlog_alive"])
         .execute())
        self._done(marker)

    def replace_copies(self, images: Any, copies: Any, marker: Marker) -> None:
        import pyarrow as pa

        source = pa.concat_tables([images, copies]).append_column(
            "__mariabinlog_op", pa.array(["del"] * images.num_rows + ["ins"] * copies.num_rows))
        same = " AND ".join(f"(t.{_quoted(f.name)} IS NOT DISTINCT FROM s.{_quoted(f.name)})" for f in images.schema)
        (self.table.merge(source, f"s.__mariabinlog_op = 'del' AND {same}", source_alias="s", target_alias="t",
                          commit_properties=_commit(marker, applied=True))
         .when_matched_delete()
         .when_not_matched_insert_all(predicate="s.__mariabinlog_op = 'ins'", except_cols=["__mariabinlog_op"])
         .execute())
        self._done(marker)

    def evolve(self, change: Evolution, marker: Marker) -> bool:
        """Only new columns at the end (of the table or of the image structs), null in the
        rows already there: delta-rs merges them into the schema with an empty append."""
        from deltalake import write_deltalake

        if change.retyped or change.dropped or any(v is not None for v in change.added.values()):
            return False
        if any(old != new for old, new in change.renamed.items()):
            return False
        if not _appended(self.schema(), change.target):
            return False
        write_deltalake(self.table, change.target.empty_table(), mode="append", schema_mode="merge",
                        commit_properties=_commit(marker, applied=False))
        self._done(marker)
        return True

    def rewrite(self, change: Evolution, data: Any, marker: Marker) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.table, data, mode="overwrite", schema_mode="overwrite",
                        commit_properties=_commit(marker, applied=True))
        self._done(marker)

    def compact(self) -> None:
        marker = self.marker()
        properties = _commit(marker, applied=False) if marker is not None else None
        self.table.optimize.compact(commit_properties=properties)
        self.table.update_incremental()

    def vacuum(self, retention_seconds: float) -> None:
        marker = self.marker()
        properties = _commit(marker, applied=False) if marker is not None else None
        self.table.vacuum(retention_hours=int(retention_seconds // 3600), dry_run=False,
                          enforce_retention_duration=False, commit_properties=properties)
        self.table.cleanup_metadata()
        self.table.update_incremental()


def _appended(old: Any, new: Any) -> bool:
    """Whether schema ``new`` is ``old`` with fields added at the end (of it or of its structs)."""
    import pyarrow as pa

    if len(new) < len(old):
        return False
    for before, after in zip(old, new):
        if before.name != after.name:
            return False
        if pa.types.is_struct(before.type) and pa.types.is_struct(after.type):
            if not _appended(pa.schema(list(before.type)), pa.schema(list(after.type))):
                return False
        elif not same_type(before.type, after.type):
            return False
    return True


class DeltaLake(Lake):
    """The Delta tables under one output directory."""

    def __init__(self, out: str) -> None:
        super().__init__()
        self.out = out

    def describe(self) -> str:
        return f"Delta tables under {self.out}"

    def _path(self, kind: str, name: str) -> str:
        return os.path.join(self.out, CDC) if kind == CDC else os.path.join(self.out, kind, name)

    def _find(self) -> list[LakeTable]:
        found: list[LakeTable] = []
        cdc = self._path(CDC, CDC)
        if os.path.isdir(os.path.join(cdc, "_delta_log")):
            found.append(DeltaLakeTable(CDC, CDC, cdc))
        for kind in KINDS:
            directory = os.path.join(self.out, kind)
            if not os.path.isdir(directory):
                continue
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if not name.startswith(".") and os.path.isdir(os.path.join(path, "_delta_log")):
                    found.append(DeltaLakeTable(kind, name, path))
        return found

    def create(self, kind: str, name: str, schema: Any, marker: Marker, partition_by: tuple[str, ...] = ()
               ) -> LakeTable:
        from deltalake import write_deltalake

        path = self._path(kind, name)
        if os.path.exists(path):  # what a kill left of an earlier try (no table without its log)
            _remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_deltalake(path, schema.empty_table(), mode="error", partition_by=list(partition_by) or None,
                        commit_properties=_commit(marker, applied=False))
        return self._remember(DeltaLakeTable(kind, name, path))

    def drop(self, table: LakeTable) -> None:
        _remove(table.location)
        self._forget(table)

    def rename(self, table: LakeTable, name: str) -> LakeTable:
        path = self._path(table.kind, name)
        if os.path.exists(path):
            _remove(path)
        os.replace(table.location, path)
        self._forget(table)
        return self._remember(DeltaLakeTable(table.kind, name, path))

    def commit_files(self, kind: str, name: str, location: str, schema: Any, files: list[str], marker: Marker,
                     partition_by: tuple[str, ...] = ()) -> LakeTable:
        """A new table at ``location``, its first commit the files (none: an empty table)."""
        from deltalake import Field, Schema, convert_to_deltalake, write_deltalake

        if not files:  # nothing changed yet (a mirror begun on a quiet source): convert finds no file
            write_deltalake(location, schema.empty_table(), mode="error", partition_by=list(partition_by) or None,
                            commit_properties=_commit(marker, applied=True))
            return self._remember(DeltaLakeTable(kind, name, location))
        partitions = Schema([Field(p, "string", nullable=True) for p in partition_by]) if partition_by else None
        convert_to_deltalake(location, partition_by=partitions, partition_strategy="hive" if partitions else None,
                             commit_properties=_commit(marker, applied=True))
        return self._remember(DeltaLakeTable(kind, name, location))

    def clear(self) -> None:
        for kind in (CDC, *KINDS):
            path = os.path.join(self.out, kind)
            if os.path.exists(path):
                _remove(path)
        self._known = None

    def sweep(self) -> None:
        """Delete what drops a kill cut short left aside."""
        for kind in KINDS:
            directory = os.path.join(self.out, kind)
            for name in os.listdir(directory) if os.path.isdir(directory) else []:
                if name.startswith(".dropped-"):
                    shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _remove(path: str) -> None:
    """Delete a table's directory: renamed aside first, so a kill never leaves half a table
    under its name."""
    aside = os.path.join(os.path.dirname(path), f".dropped-{uuid.uuid4().hex}")
    os.replace(path, aside)
    shutil.rmtree(aside, ignore_errors=True)

