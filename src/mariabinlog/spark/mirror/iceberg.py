"""A mirror's tables as Iceberg tables, written by pyiceberg through a catalog.

The catalog is a SQL catalog on SQLite in the output directory (``OUT/catalog.db``) unless the
user names another: a SQLAlchemy URI (``postgresql://...``, ``sqlite:///...``), a REST
catalog's ``http(s)://`` URL, or the name of a catalog configured for pyiceberg
(``~/.pyiceberg.yaml``, ``PYICEBERG_CATALOG__...``).  Tables: ``mariabinlog.cdc``, and per
source table its state under its own name (``shop.orders``) and its changes in the database's
change namespace (``shop__changes.orders``); the namespaces are marked with the property
``mariabinlog.kind`` (``state``, ``changes``).  Their files lie under the output directory as the
other formats lay them out.

Every transaction of the mirror commits its changes and the :class:`~.lake.Marker` together:
a commit without a snapshot (a new table, a schema change) sets it as a table property
(``mariabinlog.marker``), and the snapshots that add changes
carry the position they applied through as snapshot properties (``mariabinlog.applied``,
``mariabinlog.shape``, ``mariabinlog.source``).  A state table's rows are replaced by key in one
transaction: a delete of every key the changes touched and an append of the rows they leave
(what an upsert amounts to).  Format version 2:
columns are renamed, dropped, added (null in older rows), moved and widened (DECIMAL
precision) in place; a change v2 cannot express (a narrowing or another type change, a value
older rows must get, since default values need v3, which pyiceberg does not write) rewrites
the table in one transaction.
"""

from __future__ import annotations

import datetime
import os
import shutil
import time
import warnings
from typing import Any

from ...errors import OptionError
from .lake import APP, CDC, KINDS, Evolution, Lake, LakeTable, Marker
from .position import parse, version

#: The namespace of the CDC table.
CDC_NAMESPACE = (APP,)
#: Table properties of every table the mirror creates: old metadata files are deleted as
#: commits add new ones (a commit per micro-batch would otherwise pile them up).
PROPERTIES = {
    "format-version": "2",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}


def load_catalog(out: str, spec: str | None) -> Any:
    """The catalog of a mirror: ``spec`` as the module docstring says, else SQLite in ``out``."""
    from pyiceberg.catalog import load_catalog as named
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = "file://" + os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if spec is None:
        return SqlCatalog(APP, uri=f"sqlite:///{os.path.abspath(out)}/catalog.db", warehouse=warehouse)
    if spec.startswith(("http://", "https://")):
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(APP, uri=spec)
    if "://" in spec:
        return SqlCatalog(APP, uri=spec, warehouse=warehouse)
    try:
        return named(spec)
    except Exception as error:  # pyiceberg raises plain ValueErrors for an unknown name
        raise OptionError(f"--catalog {spec!r}: not a catalog URI and no pyiceberg catalog of that name: {error}"
                          ) from error


#: The suffix of the namespace of a database's change tables.
CHANGES_SUFFIX = "__changes"
#: The namespace property that marks a namespace as the mirror's, with its kind of tables.
KIND_PROPERTY = f"{APP}.kind"


def _identifier(kind: str, name: str) -> tuple[str, str]:
    """``mariabinlog.cdc``; a state table under its source table's name (``shop.orders``), a
    change table in the database's change namespace (``shop__changes.orders``)."""
    if kind == CDC:
        return (*CDC_NAMESPACE, CDC)
    database, _, table = name.partition(".")
    return (database + CHANGES_SUFFIX if kind == "changes" else database, table)


def _props(marker: Marker, *, applied: bool) -> dict[str, str]:
    """The snapshot properties of a commit of ``marker``."""
    from .position import text

    out = {f"{APP}.source": marker.source}
    if marker.shape:
        out[f"{APP}.shape"] = text(marker.shape)
    if applied and marker.applied:
        out[f"{APP}.applied"] = text(marker.applied)
    return out


def _iceberg_type(arrow_type: Any) -> Any:
    """The Iceberg type of an image column's Arrow type (the types a typed state table has)."""
    import pyarrow as pa
    from pyiceberg import types as T

    if pa.types.is_integer(arrow_type):
        return T.LongType()
    if pa.types.is_floating(arrow_type):
        return T.DoubleType()
    if pa.types.is_decimal(arrow_type):
        return T.DecimalType(arrow_type.precision, arrow_type.scale)
    if pa.types.is_boolean(arrow_type):
        return T.BooleanType()
    if pa.types.is_date(arrow_type):
        return T.DateType()
    if pa.types.is_timestamp(arrow_type):
        return T.TimestamptzType() if arrow_type.tz else T.TimestampType()
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return T.BinaryType()
    return T.StringType()


def _both_keys(first: Any, second: Any) -> Any:
    """Two tables of key columns as one (the second cast to the first's types)."""
    import pyarrow as pa

    return pa.concat_tables([first, second.cast(first.schema)]) if second.num_rows else first


def _delete(tx: Any, rows: Any, props: dict[str, str]) -> None:
    """Delete the rows a filter matches; none is a MERGE's insert, not a warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Delete operation did not match any records")
        tx.delete(rows, snapshot_properties=props)


def _equal(column: str, value: Any) -> Any:
    from pyiceberg.expressions import EqualTo, IsNull

    return IsNull(column) if value is None else EqualTo(column, value)


def _any_row(rows: Any) -> Any:
    """A filter of the rows equal to one of ``rows`` (nulls equal)."""
    from pyiceberg.expressions import AlwaysFalse, And, In, Or

    names = rows.column_names
    if len(names) == 1 and rows.column(0).null_count == 0:
        return In(names[0], set(rows.column(0).to_pylist()))
    result: Any = AlwaysFalse()
    for row in rows.to_pylist():
        term: Any = None
        for name in names:
            term = _equal(name, row[name]) if term is None else And(term, _equal(name, row[name]))
        result = Or(result, term)
    return result


class IcebergTable(LakeTable):
    """One Iceberg table of the mirror."""

    def __init__(self, kind: str, name: str, table: Any) -> None:
        super().__init__(kind, name, table.location())
        self.table = table

    def marker(self) -> Marker | None:
        """The newer of the table property (commits without a snapshot: creation, schema
        changes) and the newest snapshot's properties (commits of changes), field by field:
        every commit moves both positions forward."""
        value = self.table.properties.get(f"{APP}.marker")
        markers = [] if value is None else [Marker.parse(value)]
        snapshot, steps = self.table.current_snapshot(), 0
        while snapshot is not None and steps < 100:
            props = snapshot.summary.additional_properties
            if f"{APP}.applied" in props:
                markers.append(Marker(parse(props[f"{APP}.applied"]), parse(props.get(f"{APP}.shape")),
                                      props.get(f"{APP}.source", "")))
                break
            parent, steps = snapshot.parent_snapshot_id, steps + 1
            snapshot = None if parent is None else self.table.snapshot_by_id(parent)
        if not markers:
            return None
        applied = max((m.applied for m in markers), key=version)
        newest = max(markers, key=lambda m: version(m.shape))
        return Marker(applied, newest.shape, newest.source)

    def schema(self) -> Any:
        return self.table.schema().as_arrow()

    def count(self) -> int:
        snapshot = self.table.current_snapshot()
        return 0 if snapshot is None else int(snapshot.summary.additional_properties.get("total-records", 0))

    def read(self, column: str | None = None, values: Any = None) -> Any:
        from pyiceberg.expressions import In

        if column is None:
            return self.table.scan().to_arrow()
        return self.table.scan(row_filter=In(column, set(values))).to_arrow()

    def _transaction(self) -> Any:
        return self.table.transaction()

    def _finish(self, tx: Any, marker: Marker, *, snapshots: bool) -> None:
        """Commit; the marker goes in the table's properties when no snapshot carries it."""
        if not snapshots:
            tx.set_properties({f"{APP}.marker": marker.text()})
        self.table = tx.commit_transaction()

    def append(self, data: Any, marker: Marker) -> None:
        tx = self._transaction()
        if data.num_rows:
            tx.append(data, snapshot_properties=_props(marker, applied=True))
        self._finish(tx, marker, snapshots=data.num_rows > 0)

    def upsert(self, keys: list[str], rows: Any, gone: Any, marker: Marker) -> None:
        """The MERGE as one transaction of a delete of every key the changes touched and an
        append of the rows they leave.  (pyiceberg's ``upsert`` reads the matched rows back to
        skip unchanged ones and commits up to three snapshots; with the keys known, the delete
        and append are the same MERGE, and cheaper.)"""
        tx = self._transaction()
        props = _props(marker, applied=True)
        touched = _both_keys(rows.select(keys), gone.select(keys))
        if touched.num_rows:
            _delete(tx, _any_row(touched), props)
        if rows.num_rows:
            tx.append(rows, snapshot_properties=props)
        self._finish(tx, marker, snapshots=touched.num_rows > 0)

    def replace_copies(self, images: Any, copies: Any, marker: Marker) -> None:
        tx = self._transaction()
        props = _props(marker, applied=True)
        if images.num_rows:
            _delete(tx, _any_row(images), props)
        if copies.num_rows:
            tx.append(copies, snapshot_properties=props)
        self._finish(tx, marker, snapshots=images.num_rows + copies.num_rows > 0)

    def _align(self, tx: Any, change: Evolution, *, rewrite: bool) -> None:
        """The schema changes of ``change`` in ``tx``: renames and drops, then new and
        retyped columns (a retyped column is dropped and added again when rewriting), then
        the target's column order."""
        with tx.update_schema(allow_incompatible_changes=rewrite) as update:
            for path in change.paths:
                for old, new in change.renamed.items():
                    if old != new:
                        update.rename_column((*path, old), new)
                for name in change.dropped:
                    update.delete_column((*path, name))
                if rewrite:
                    for name in change.retyped:
                        update.delete_column((*path, _old_name(change, name)))
        with tx.update_schema(allow_incompatible_changes=rewrite) as update:
            for path in change.paths:
                target = _fields_at(change.target, path)
                for name, field in target.items():
                    if name in change.added or (rewrite and name in change.retyped):
                        update.add_column((*path, name), _iceberg_type(field.type))
                    elif name in change.retyped:
                        update.update_column((*path, name), _iceberg_type(field.type))
        with tx.update_schema() as update:
            for path in [(), *[p for p in change.paths if p]]:
                names = list(_fields_at(change.target, path))
                if names:
                    update.move_first((*path, names[0]))
                for previous, name in zip(names, names[1:]):
                    update.move_after((*path, name), (*path, previous))

    def evolve(self, change: Evolution, marker: Marker) -> bool:
        from pyiceberg.exceptions import ValidationError

        if any(v is not None for v in change.added.values()):
            return False  # format version 2 holds no value for the rows already there
        tx = self._transaction()
        try:
            self._align(tx, change, rewrite=False)
        except (ValidationError, ValueError):
            return False  # not a type promotion Iceberg allows: the caller rewrites
        self._finish(tx, marker, snapshots=False)
        return True

    def rewrite(self, change: Evolution, data: Any, marker: Marker) -> None:
        """Schema and rows replaced in one transaction (field ids follow ``change``)."""
        tx = self._transaction()
        self._align(tx, change, rewrite=True)
        tx.overwrite(data, snapshot_properties=_props(marker, applied=True))
        self._finish(tx, marker, snapshots=False)

    def compact(self) -> None:
        marker = self.marker()
        data = self.read()
        tx = self._transaction()
        tx.overwrite(data, snapshot_properties=_props(marker, applied=True) if marker else {})
        self.table = tx.commit_transaction()

    def vacuum(self, retention_seconds: float) -> None:
        """Expire the snapshots older than the retention, then delete the data files under
        the table's location that no snapshot left uses and that are older than it."""
        cutoff = time.time() - retention_seconds
        self.table.maintenance.expire_snapshots().older_than(
            datetime.datetime.fromtimestamp(cutoff, datetime.UTC)).commit()
        self.table.refresh()
        used: set[str] = set()
        for snapshot in self.table.snapshots():
            for manifest in snapshot.manifests(self.table.io):
                for entry in manifest.fetch_manifest_entry(self.table.io, discard_deleted=True):
                    used.add(_local(entry.data_file.file_path))
        root = _local(self.location) + "/data"
        for directory, _, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)
                if path not in used and os.path.getmtime(path) < cutoff:
                    os.unlink(path)


def _local(location: str) -> str:
    return location[len("file://"):] if location.startswith("file://") else location


def _old_name(change: Evolution, new: str) -> str:
    for old, renamed in change.renamed.items():
        if renamed == new:
            return old
    return new


def _fields_at(schema: Any, path: tuple[str, ...]) -> dict[str, Any]:
    """The fields of ``schema`` at ``path`` (a struct column's fields), by name."""
    fields = list(schema)
    for step in path:
        fields = list(next(f for f in fields if f.name == step).type)
    return {f.name: f for f in fields}


class IcebergLake(Lake):
    """The Iceberg tables of one mirror in its catalog."""

    def __init__(self, out: str, catalog: str | None = None) -> None:
        super().__init__()
        self.out = out
        self.spec = catalog
        self.catalog = load_catalog(out, catalog)

    def describe(self) -> str:
        where = self.spec or os.path.join(self.out, "catalog.db")
        return f"Iceberg tables in the catalog {where}"

    def _location(self, kind: str, name: str) -> str:
        """A directory of the output no table uses yet (a renamed table keeps its old one)."""
        base = os.path.join(self.out, CDC) if kind == CDC else os.path.join(self.out, kind, name)
        path, n = base, 1
        while os.path.exists(path):
            n += 1
            path = f"{base}~{n}"
        return path

    def _namespace(self, kind: str, namespace: tuple[str, ...]) -> None:
        """Create the namespace if needed and mark it as holding the mirror's ``kind`` tables."""
        self.catalog.create_namespace_if_not_exists(namespace)
        if self.catalog.load_namespace_properties(namespace).get(KIND_PROPERTY) != kind:
            self.catalog.update_namespace_properties(namespace, updates={KIND_PROPERTY: kind})

    def _find(self) -> list[LakeTable]:
        found: list[LakeTable] = []
        identifier = _identifier(CDC, CDC)
        if self.catalog.table_exists(identifier):
            found.append(IcebergTable(CDC, CDC, self.catalog.load_table(identifier)))
        for namespace in self.catalog.list_namespaces():
            kind = self.catalog.load_namespace_properties(namespace).get(KIND_PROPERTY)
            if kind not in KINDS:
                continue
            database = namespace[-1].removesuffix(CHANGES_SUFFIX) if kind == "changes" else namespace[-1]
            for identifier in self.catalog.list_tables(namespace):
                found.append(IcebergTable(kind, f"{database}.{identifier[-1]}", self.catalog.load_table(identifier)))
        return found

    def create(self, kind: str, name: str, schema: Any, marker: Marker, partition_by: tuple[str, ...] = ()
               ) -> LakeTable:
        return self.commit_files(kind, name, self._location(kind, name), schema, [], marker, partition_by)

    def drop(self, table: LakeTable) -> None:
        self.catalog.drop_table(_identifier(table.kind, table.name))
        shutil.rmtree(_local(table.location), ignore_errors=True)
        self._forget(table)

    def rename(self, table: LakeTable, name: str) -> LakeTable:
        identifier = _identifier(table.kind, name)
        self._namespace(table.kind, identifier[:-1])
        renamed = self.catalog.rename_table(_identifier(table.kind, table.name), identifier)
        self._forget(table)
        return self._remember(IcebergTable(table.kind, name, renamed))

    def commit_files(self, kind: str, name: str, location: str, schema: Any, files: list[str], marker: Marker,
                     partition_by: tuple[str, ...] = ()) -> LakeTable:
        """A new table at ``location``, its first snapshot the files (none: an empty table)."""
        identifier = _identifier(kind, name)
        self._namespace(kind, identifier[:-1])
        tx = self.catalog.create_table_transaction(identifier, schema=schema, location="file://" + location,
                                                   properties=PROPERTIES)
        if partition_by:
            with tx.update_spec() as spec:
                for column in partition_by:
                    spec.add_identity(column)
        if files:
            tx.add_files(files, snapshot_properties=_props(marker, applied=True))
        tx.set_properties({f"{APP}.marker": marker.text()})
        tx.commit_transaction()  # a staged table, which cannot be read: load it
        return self._remember(IcebergTable(kind, name, self.catalog.load_table(identifier)))

    def clear(self) -> None:
        for table in self._find():
            self.catalog.drop_table(_identifier(table.kind, table.name))
        self._known = None
