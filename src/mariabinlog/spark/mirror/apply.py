"""One stretch of the stream applied to a mirror's tables, as the batch pipeline would leave them.

The input is the ``rows`` view of the groups between two stream positions (a micro-batch, or
what an incremental run finds new) and the schema history cut at the end position
(:func:`.position.history_until`).  The batch pipeline's own steps (:mod:`..tables`) do the
work: rows are carried to their table's shape at the end (renamed columns keep their values,
dropped ones go, added ones get their default; rows of dropped, truncated or recreated
incarnations are gone), the typed change rows are built as the change tables hold them, and a
table's changes are folded in binlog order (an update's image merged onto the row, keyless
rows counted per copy).  What differs is only where the earlier state is: in the lake table,
typed, so

* a keyed table gets a MERGE by primary key: the rows the stretch leaves alive replace or join
  those of their key, the keys it touched and left without a row are deleted; an update whose
  images are partial (``binlog_row_image=MINIMAL``) of a row the stretch never saw whole is
  merged onto the table's row of that key;
* a keyless table has every row equal to an image the stretch touched replaced by the copies
  its counts leave, starting from the copies the table holds.

Before the rows, the schema history says what happened to each lake table since the position
its shape follows (:class:`~.lake.Marker`): gone (dropped, truncated, recreated: the table is
dropped, a new one starts), renamed (the table is renamed), or altered (the table evolves in
place, or is rewritten once, with a warning, where its format cannot express the change).

Each table's changes are committed with the end position; a table whose marker is already
there (a micro-batch run again after a kill) is left alone, one whose marker lies inside the
stretch gets only the rows after it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import MirrorError
from ...schema import SchemaHistory, Table
from ..read import loaded_history
from ..schema import history_column_type, text_array, value_text
from ..tables import (
    CARRIED,
    ORDER,
    Chunk,
    Entries,
    Folder,
    Layout,
    carrier,
    carry_of,
    change_schema,
    change_table,
    count_rows,
    joined,
    state_schema,
    state_table,
    Uncarried,
    text_layout,
)
from .lake import CDC, KINDS, Evolution, Lake, LakeTable, Marker, same_type
from .position import Offset, history_until, records_before, version

log = logging.getLogger(__name__)


@dataclass
class Applied:
    """What one stretch did, for progress reports."""

    rows: int = 0
    #: Row changes applied per source table (``db.table``).
    tables: dict[str, int] = field(default_factory=dict)
    commits: int = 0
    #: What happened to lake tables besides rows: "dropped state/db.t", "renamed ...", ...
    events: list[str] = field(default_factory=list)
    #: Commit time of the newest group applied (epoch seconds; None: no rows).
    newest: float | None = None
    seconds: float = 0.0


def _split(name: str) -> tuple[str, str]:
    database, _, table = name.partition(".")
    return database, table


def rows_versions(rows: Any) -> Any:
    """Each CDC row's place in the stream as :func:`.position.version` numbers offsets."""
    import numpy as np

    files = rows.column("file_no").to_numpy(zero_copy_only=False).astype(np.int64)
    positions = rows.column("position").to_numpy(zero_copy_only=False).astype(np.int64)
    return files << 32 | positions


def _after(rows: Any, marker: Marker | None) -> Any:
    """The rows a table with ``marker`` does not hold yet."""
    import pyarrow as pa

    if marker is None or marker.version < 0 or not rows.num_rows:
        return rows
    return rows.filter(pa.array(rows_versions(rows) >= marker.version))


def layout_of(table: Table) -> Layout:
    """A known table's state columns: names and Spark types from the schema history."""
    return [(c.name, history_column_type(c)) for c in table.columns]


class Mirror:
    """Applies stretches of the stream to the tables of ``lake`` (module docstring).

    ``on_commit`` is called after every table commit (the progress reporter's hook, and the
    test-only fault hook of :mod:`.job`)."""

    def __init__(self, lake: Lake, *, on_commit: Callable[[LakeTable], None] | None = None) -> None:
        self.lake = lake
        self.on_commit = on_commit or (lambda table: None)

    # -- the stretch -------------------------------------------------------------------------

    def apply(self, rows: Any, end: Offset, history: dict[str, Any] | None) -> Applied:
        """Apply ``rows`` (the rows view of the groups before ``end`` not yet applied) with
        ``history`` (a saved schema history's JSON; None: no history, text columns)."""
        import pyarrow.compute as pc

        started = time.monotonic()
        done = Applied(rows=rows.num_rows)
        data = history if history is not None else SchemaHistory(source="none").to_json()
        text, count = history_until(data, end)
        at_end = loaded_history(text)
        self.lake.sweep()
        if rows.num_rows:
            rows = rows.take(pc.sort_indices(rows, [(c, "ascending") for c in ORDER]))
            newest = pc.max(rows.column("timestamp")).as_py()
            done.newest = None if newest is None else newest.timestamp()
        self._cdc(rows, end, done)
        tables = self._follow_ddl(at_end, data, count, end, done)
        carried = self._carried(rows, text)
        for name in sorted(set(carried) | {name for _, name in tables}):
            table_rows = carried.get(name)
            known = at_end.table(*_split(name))
            if known is not None and known.unknown is not None:
                known = None
            for kind in KINDS:
                self._table(kind, name, known, table_rows, tables.get((kind, name)), end, done)
        done.seconds = time.monotonic() - started
        return done

    def _cdc(self, rows: Any, end: Offset, done: Applied) -> None:
        """Append the rows the CDC table lacks."""
        from ..partition import arrow_schema
        from ..schema import ROWS_SCHEMA

        table = self.lake.cdc()
        marker = Marker(end, end, CDC)
        if table is None:
            schema = arrow_schema(ROWS_SCHEMA)
            table = self.lake.create(CDC, CDC, schema, Marker(None, end, CDC), ("database", "table"))
        current = table.marker()
        if current is not None and current.version >= version(end):
            return
        new = _after(rows, current)
        schema = table.schema()
        new = new.select(schema.names).cast(schema) if new.num_rows else schema.empty_table()
        self._commit(table, done, lambda: table.append(new, marker))

    def _commit(self, table: LakeTable, done: Applied, action: Callable[[], None]) -> None:
        action()
        done.commits += 1
        self.on_commit(table)

    # -- what the DDL did to the lake's tables -------------------------------------------------

    def _follow_ddl(self, at_end: SchemaHistory, data: dict[str, Any], count: int, end: Offset,
                    done: Applied) -> dict[tuple[str, str], tuple[LakeTable, Table | None]]:
        """Drop the lake tables whose incarnation is gone and rename those whose source table
        was renamed; returns the others by (kind, current name) with the table version their
        columns follow (None: a table the history does not know)."""
        current = at_end.current_incarnations()
        kept: dict[tuple[str, str], tuple[LakeTable, Table | None]] = {}
        moves: list[tuple[LakeTable, Table | None, str]] = []
        catalogs: dict[str, dict[tuple[str, str], Table]] = {}  # by shape: most tables share a few

        def tables_at(shape: Offset | None) -> dict[tuple[str, str], Table]:
            key = json.dumps(shape, sort_keys=True)
            if key not in catalogs:
                catalogs[key] = at_end.tables_after(min(records_before(data, shape), count))
            return catalogs[key]

        for table in self.lake.tables():
            marker = table.marker()
            if marker is None:
                log.warning("%s: no mirror marker in its commits; left alone", table)
                continue
            if version(marker.shape) >= version(end):
                kept[(table.kind, table.name)] = (table, at_end.table(*_split(table.name)))
                continue
            then = tables_at(marker.shape).get(_split(marker.source))
            if then is None or then.unknown is not None:
                named = at_end.table(*_split(table.name))
                if named is not None and named.unknown is None:
                    # the name now holds a table the history knows, created since
                    self._drop(table, "created again under its name", done)
                else:
                    kept[(table.kind, table.name)] = (table, None)
                continue
            now = current.get(then.incarnation)
            if now is None:
                self._drop(table, "dropped or truncated", done)
            elif f"{now.database}.{now.name}" != table.name:
                moves.append((table, then, f"{now.database}.{now.name}"))
            else:
                kept[(table.kind, table.name)] = (table, then)
        # Renames in two steps, so that names swapped or passed along never collide.
        parked = []
        for table, then, target in moves:
            parked.append((self.lake.rename(table, f"{table.name}~{uuid.uuid4().hex[:8]}"), then, target))
        for table, then, target in parked:
            if (table.kind, target) in kept:  # a table the rename replaces (its own drop came first)
                self._drop(kept.pop((table.kind, target))[0], f"replaced by a table renamed to {target}", done)
            moved = self.lake.rename(table, target)
            done.events.append(f"renamed {table.kind}/{table.name.rpartition('~')[0]} to {target}")
            kept[(table.kind, target)] = (moved, then)
        return kept

    def _drop(self, table: LakeTable, why: str, done: Applied) -> None:
        self.lake.drop(table)
        done.events.append(f"dropped {table.kind}/{table.name} ({why})")

    # -- rows ---------------------------------------------------------------------------------

    def _carried(self, rows: Any, history_text: str) -> dict[str, Any]:
        """The rows carried to their tables at the end, by current ``db.table``, each in binlog
        order."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not rows.num_rows:
            return {}
        by_name: dict[str, list[Any]] = {}
        uncarried: Uncarried = {}
        for batch in carrier(history_text, uncarried)(iter(rows.to_batches())):
            if batch.num_rows:
                name = f"{batch.column('database')[0].as_py()}.{batch.column('table')[0].as_py()}"
                by_name.setdefault(name, []).append(batch)
        if uncarried:  # never dropped: the stretch is not applied and the job stops naming them
            named = "; ".join(f"{table} GTID {gtid or 'none'}: {n} row(s): {why}"
                              for (table, gtid, why), n in sorted(uncarried.items(), key=str)[:10])
            raise MirrorError(f"{sum(uncarried.values())} row change(s) cannot be carried to their typed tables"
                              f" ({named}); give the schema history they were logged under"
                              " (--option schemaHistory=FILE)")
        out = {}
        for name, batches in by_name.items():
            table = pa.Table.from_batches(batches).combine_chunks()
            out[name] = table.take(pc.sort_indices(table, [(c, "ascending") for c in ORDER]))
        return out

    def _table(self, kind: str, name: str, known: Table | None, rows: Any, found: tuple[LakeTable, Table | None] | None,
               end: Offset, done: Applied) -> None:
        """One state or change table: created, evolved to the shape at ``end``, its rows applied."""
        lake_table, then = found if found is not None else (None, None)
        if lake_table is None and rows is None:
            return
        marker = Marker(end, end, name)
        todo = None
        try:
            existing = None if lake_table is None else [
                (f.name, f.type) for f in _image_fields(lake_table.schema(), kind)]
            layout = layout_of(known) if known is not None else _widened(existing, rows)
            if lake_table is None:
                schema = state_schema(layout) if kind == "state" else change_schema(layout)
                lake_table = self.lake.create(kind, name, schema, Marker(None, end, name))
                done.events.append(f"created {kind}/{name}")
            else:
                lake_table = self._evolve(lake_table, kind, then, known, layout, end, done)
            todo = _after(rows, lake_table.marker()) if rows is not None else None
            if todo is None or not todo.num_rows:
                return
            if kind == "changes":
                data = change_table(todo, layout)
                self._commit(lake_table, done, lambda: lake_table.append(data, marker))
            else:
                self._state(lake_table, todo, layout, marker, done)
                done.tables[name] = done.tables.get(name, 0) + todo.num_rows
        except MirrorError:
            raise
        except Exception as error:
            changed = todo if todo is not None and todo.num_rows else rows
            if changed is not None and changed.num_rows:
                first, last = changed.column("gtid")[0].as_py(), changed.column("gtid")[changed.num_rows - 1].as_py()
                what = f"the changes of GTID {first}" if first == last else f"the changes of GTIDs {first} to {last}"
            else:
                what = f"its shape at {end.get('gtid_state') or 'the start'} ({end.get('file')}:{end.get('offset')})"
            raise MirrorError(f"table {name} ({kind}): could not apply {what}: {type(error).__name__}: {error}"
                              ) from error

    # -- schema evolution ---------------------------------------------------------------------

    def _evolve(self, table: LakeTable, kind: str, then: Table | None, known: Table | None, layout: Layout,
                end: Offset, done: Applied) -> LakeTable:
        """The lake table at the shape of ``end``: unchanged, evolved in place, or rewritten."""
        marker = table.marker()
        assert marker is not None
        target = state_schema(layout) if kind == "state" else change_schema(layout)
        old = [(f.name, f.type) for f in _image_fields(table.schema(), kind)]
        renamed, added, retyped = {n: n for n, _ in old}, {}, set()
        if then is not None and known is not None:
            carry = carry_of(then, {known.incarnation: known})
            assert carry is not None
            _, renamed, defaults = carry
            then_types = dict(layout_of(then))
            now_types = dict(layout)
            retyped = {new for old_name, new in renamed.items() if then_types.get(old_name) != now_types.get(new)}
            added = {name: _typed_default(default, now_types[name], target, kind, name) for name, default in defaults}
        else:
            added = {n: None for n, _ in layout if n not in renamed}
        new_names = [n for n, _ in layout]
        same = [n for n, _ in old] == new_names and not retyped and all(renamed.get(n) == n for n, _ in old)
        if same and _same_types(old, target, kind):
            return table
        change = Evolution(target, {o: n for o, n in renamed.items() if n in new_names}, added, frozenset(retyped),
                           ((),) if kind == "state" else (("before",), ("after",)),
                           tuple(o for o, _ in old if renamed.get(o) not in new_names))
        shaped = Marker(marker.applied, end, f"{table.name}")
        if table.evolve(change, shaped):
            done.events.append(f"evolved {kind}/{table.name} in place")
            done.commits += 1
            return table
        log.warning("%s %s: the table's new shape (%s) cannot be expressed in place in %s; rewriting it once",
                    kind, table.name, _describe(change), type(table).__name__)
        data = _carried_rows(table.read(), change, kind, then, layout)
        table.rewrite(change, data, shaped)
        done.events.append(f"rewrote {kind}/{table.name}")
        done.commits += 1
        return table

    # -- the state ----------------------------------------------------------------------------

    def _state(self, table: LakeTable, rows: Any, layout: Layout, marker: Marker, done: Applied) -> None:
        columns = [n for n, _ in layout]
        keys = rows.column("key_columns").combine_chunks()
        names = {tuple(k) if k else () for k in keys.to_pylist()} if len(keys) else {()}
        if len(names) > 1:
            raise MirrorError(f"table {marker.source}: its rows come with different primary keys "
                              f"({', '.join(sorted(','.join(n) or 'none' for n in names))}) in one stretch")
        key = list(names.pop())
        chunk = Chunk(rows.select(CARRIED))
        if key and all(k in columns for k in key):
            rows_alive, gone = _keyed_change(chunk, key, layout, table)
            self._commit(table, done, lambda: table.upsert(key, rows_alive, gone, marker))
        else:
            images, copies = _keyless_change(chunk, layout, table)
            self._commit(table, done, lambda: table.replace_copies(images, copies, marker))


def _image_fields(schema: Any, kind: str) -> list[Any]:
    """A lake table's image columns: the table's own (state), the ``after`` struct's (changes)."""
    if kind == "state":
        return list(schema)
    return list(schema.field("after").type)


def _same_types(old: list[tuple[str, Any]], target: Any, kind: str) -> bool:
    """Whether the lake's image columns have the target's types (strings in any Arrow width)."""
    for (_, have), want in zip(old, _image_fields(target, kind)):
        if not same_type(have, want.type):
            return False
    return True


def _widened(existing: list[tuple[str, Any]] | None, rows: Any) -> Layout:
    """Text columns of a table the history does not know: those it has, then any new ones its
    widest image in ``rows`` names."""
    from pyspark.sql.types import StringType

    have = [name for name, _ in existing or []]
    wider = text_layout(rows) if rows is not None and rows.num_rows else []
    return [(n, StringType()) for n in have] + [(n, kind) for n, kind in wider if n not in have]


def _typed_default(default: str | None, kind: Any, target: Any, table_kind: str, name: str) -> Any:
    """A column default (the text the carry gives older rows) as a value of the column's type."""
    import pyarrow as pa

    if default is None:
        return None
    arrow_type = next(f.type for f in _image_fields(target, table_kind) if f.name == name)
    return text_array(pa.array([default], pa.string()), kind, arrow_type)[0].as_py()


def _describe(change: Evolution) -> str:
    parts = [f"{old} renamed to {new}" for old, new in change.renamed.items() if old != new]
    parts += [f"{name} dropped" for name in change.dropped]
    parts += [f"{name} added with a value for the rows already there" for name, v in change.added.items()
              if v is not None]
    parts += [f"{name} added" for name, v in change.added.items() if v is None]
    parts += [f"{name} of another type" for name in sorted(change.retyped)]
    return "; ".join(parts) or "columns in another order"


def _carried_rows(data: Any, change: Evolution, kind: str, then: Table | None, layout: Layout) -> Any:
    """The rows of a lake table in the shape ``change`` gives (for a rewrite): columns renamed,
    dropped, added with their value, and those of another type read back from their text as
    the new type reads the server's text (the batch pipeline's carry)."""
    import pyarrow as pa

    old_types = dict(layout_of(then)) if then is not None else {}
    new_types = dict(layout)
    source = {new: old for old, new in change.renamed.items()}

    def image_columns(fields: dict[str, Any], size: int, target_fields: list[Any]) -> list[Any]:
        out = []
        for wanted in target_fields:
            name = wanted.name
            if name in source and source[name] in fields:
                values = fields[source[name]]
                if name in change.retyped:
                    text = pa.array([value_text(v) for v in values.to_pylist()], pa.string())
                    values = text_array(text, new_types[name], wanted.type)
                elif old_types.get(source[name]) is not None and values.type != wanted.type:
                    values = values.cast(wanted.type)
                out.append(values.cast(wanted.type))
            else:
                out.append(pa.array([change.added.get(name)] * size, wanted.type))
        return out

    if kind == "state":
        columns = {f.name: data.column(f.name).combine_chunks() for f in data.schema}
        return pa.table(image_columns(columns, data.num_rows, list(change.target)), schema=change.target)
    out = []
    for target in change.target:
        column = data.column(target.name).combine_chunks()
        if target.name in ("before", "after"):
            inner = {f.name: column.field(f.name) for f in column.type}
            parts = image_columns(inner, len(column), list(target.type))
            column = pa.StructArray.from_arrays(parts, fields=list(target.type), mask=column.is_null())
        out.append(column.cast(target.type))
    return pa.table(out, schema=change.target)


def _text_keys(chunk: Chunk, key: list[str]) -> Any:
    """The keys the changes touch (before each change and after it), distinct, as text columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    before = [chunk.entries("before").column(k) for k in key]
    after = [pc.coalesce(chunk.entries("after").column(k), b) for k, b in zip(key, before)]
    both = pa.table({f"k{i}": pa.concat_arrays([b, a]) for i, (b, a) in enumerate(zip(before, after))})
    valid = pc.invert(pc.is_null(both.column(0)))
    for i in range(1, len(key)):
        valid = pc.or_(valid, pc.invert(pc.is_null(both.column(i))))
    both = both.filter(valid)
    return both.group_by(both.column_names, use_threads=False).aggregate([])


def _typed_keys(keys: Any, key: list[str], layout: Layout, schema: Any) -> Any:
    """Text key columns ``k0``... as a table of the key's typed columns."""
    import pyarrow as pa

    kinds = dict(layout)
    return pa.table({name: text_array(keys.column(f"k{i}").combine_chunks(), kinds[name], schema.field(name).type)
                     for i, name in enumerate(key)})


def _keyed_change(chunk: Chunk, key: list[str], layout: Layout, table: LakeTable) -> tuple[Any, Any]:
    """(rows alive after the changes, typed; keys they leave without a row) of a keyed table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [n for n, _ in layout]
    schema = state_schema(layout)
    folder = Folder(columns)
    folder.add(chunk)
    alive = pa.concat_tables([rows for _, rows in folder.alive()]).combine_chunks() if folder.keyed else None
    if alive is None:
        alive = pa.table({**{f"k{i}": pa.array([], pa.string()) for i in range(len(key))},
                          "image": pa.array([], pa.map_(pa.string(), pa.string()))})
    touched = _text_keys(chunk, key)
    kept = pc.is_in(joined([touched.column(f"k{i}").combine_chunks() for i in range(len(key))]),
                    value_set=joined([alive.column(f"k{i}").combine_chunks() for i in range(len(key))]))
    gone = _typed_keys(touched.filter(pc.invert(kept)), key, layout, schema)
    images = alive.column("image").combine_chunks()
    typed = state_table(images, layout)
    whole = Entries(images).holds_all(columns)
    if whole.all():
        return typed, gone
    # Partial images of rows the changes never showed whole: merged onto the table's row.
    partial = typed.filter(pa.array(~whole))
    present = [{k for k, _ in image} for image in images.filter(pa.array(~whole)).to_pylist()]
    existing = _existing_rows(table, partial.select(key))
    merged = []
    for row, names in zip(partial.to_pylist(), present):
        base = existing.get(tuple(row[k] for k in key))
        merged.append(row if base is None else {**base, **{n: row[n] for n in names if n in row}})
    return pa.concat_tables([typed.filter(pa.array(whole)), pa.Table.from_pylist(merged, schema=schema)]), gone


def _existing_rows(table: LakeTable, keys: Any) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The lake table's rows of ``keys`` (a table of key columns), by key."""
    first = keys.column_names[0]
    values = [v for v in keys.column(0).to_pylist() if v is not None]
    rows = table.read(first, values) if values else table.read().slice(0, 0)
    wanted = {tuple(r.values()) for r in keys.to_pylist()}
    found = {}
    for row in rows.to_pylist():
        at = tuple(row[k] for k in keys.column_names)
        if at in wanted:
            found[at] = row
    return found


def _keyless_change(chunk: Chunk, layout: Layout, table: LakeTable) -> tuple[Any, Any]:
    """(every distinct image the changes touch, the copies of each left) of a keyless table:
    the table's copies of those images counted on by the changes in order."""
    import pyarrow as pa

    schema = state_schema(layout)
    names = [n for n, _ in layout]
    rows = chunk.rows
    images = {}
    for side in ("before", "after"):
        typed = state_table(rows.column(side).combine_chunks(), layout)
        valid = rows.column(side).is_valid().to_pylist()
        images[side] = [tuple(r.values()) if ok else None for r, ok in zip(typed.to_pylist(), valid)]
    touched = list(dict.fromkeys(i for side in images.values() for i in side if i is not None))
    if not touched:
        return schema.empty_table(), schema.empty_table()
    wanted = set(touched)
    first = [t[0] for t in touched]
    held = table.read(names[0], first) if None not in first else table.read()
    counts: Counter[tuple[Any, ...]] = Counter(
        t for t in (tuple(r[n] for n in names) for r in held.to_pylist()) if t in wanted)
    count_rows(rows.column("op").to_pylist(), images["before"], images["after"], counts)
    distinct = pa.Table.from_pylist([dict(zip(names, t)) for t in touched], schema=schema)
    copies = pa.Table.from_pylist([dict(zip(names, t)) for t in touched for _ in range(counts.get(t, 0))],
                                  schema=schema)
    return distinct, copies
