"""The pipeline's tables per source table: latest state and typed changes, in one Spark job.

The CDC table (Parquet partitioned by ``database`` and ``table``, maps of text) is the input.
Moving its rows through Spark's rows into Python and back costs more than decoding the binlog
(map columns cross as Arrow row by row, ~12 µs a row), so each task here reads the Parquet
files of its tables itself, with pyarrow, and does everything in Arrow:

1. **Carry** (:func:`carrier`): each row's shape is the history's at the row's place in the
   binlog (its group's GTID against each statement's GTID position, so rows of every GTID
   domain, in an archive's files too).  A row logged under an older shape of its table is
   renamed by column identity (renamed columns keep their values, dropped ones go, added
   ones get their constant default or NULL) and moved to its table's current name; a row of
   an incarnation that no longer exists (dropped, recreated, truncated) is dropped; a row of
   a table the history never knew passes unchanged.  Rows of the current shape pass as Arrow
   data.  A row that cannot be carried (its images do not fit its shape, :func:`_misfits`,
   or the history lost track of its table) is not written but counted by table, GTID and
   why (:data:`Uncarried`), for the job to report.
2. **Changes**: each table's rows in binlog order, ``before``/``after`` as structs typed as
   the state (:func:`~.schema.text_array`); a row with a value its column's type cannot read
   is counted as uncarried too, and left out of the change and state tables.
3. **Latest state** (:class:`Folder`): per primary key the changes folded in binlog order (an
   update's after image merged onto the row, so MINIMAL images work when the key does not
   change; an update that moves the key deletes the old one); without a key, identical rows
   are counted (+1 insert, -1 delete, never below zero; update = both).

A task owns a *unit*: CDC partitions whose rows can land in the same current table (a table
renamed mid-stream has rows under both names), so no table is written by two tasks.  It reads
them chunk by chunk in binlog order and holds each table's rows alive plus one chunk.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..schema import SchemaHistory, Table
from .cdc import by_table, partition_of
from .fs import local_path
from .read import loaded_history

#: Binlog order of CDC rows.
ORDER = ["file_no", "position", "event_index", "row_index"]
#: CDC columns a task reads (``database``/``table`` come from the partition's path).
CARRIED = ["database", "table", "op", "key_columns", "before", "after", "gtid", "timestamp", *ORDER]
#: The columns of a typed change table besides its images.
CHANGE_COLUMNS = ["gtid", "timestamp", *ORDER, "op"]

#: A state table's columns: (name, Spark type), from the schema history, or text (``StringType``)
#: for a table it does not know.
Layout = list[tuple[str, Any]]


def state_layouts(history: SchemaHistory, seen: Iterable[tuple[str, str]]) -> dict[str, Layout | None]:
    """The state tables to write, by ``db.table``, for the CDC partitions ``seen``: a table the
    history knows becomes the tables its incarnations are at the end (the same one, renamed,
    or none when dropped), with the columns and types of that shape; a table it never knew
    (None) keeps the text columns of its widest image, found by the task that writes it."""
    from .schema import history_column_type

    layouts: dict[str, Layout | None] = {}
    for database, name in seen:
        targets = landing_tables(history, database, name)
        if targets is None:
            layouts[f"{database}.{name}"] = None
            continue
        for table in targets:
            layouts[f"{table.database}.{table.name}"] = [(c.name, history_column_type(c)) for c in table.columns]
    return layouts


def text_layout(rows: Any) -> Layout:
    """Text columns named as the widest image of ``rows`` names them (a table the history
    does not know)."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import StringType

    widest, best = None, -1
    for name in ("after", "before"):
        images = rows.column(name)
        images = images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images
        if len(images):
            sizes = np.diff(images.offsets.to_numpy()) * np.asarray(images.is_valid())
            at = int(sizes.argmax())
            if sizes[at] > best:
                widest, best = images[at].as_py(), int(sizes[at])
    return [(column, StringType()) for column, _ in widest or []]


def landing_tables(history: SchemaHistory, database: str, name: str) -> list[Table] | None:
    """The current tables rows logged under ``database.name`` can be carried to (none when
    every incarnation is gone); None when the history never knew the name."""
    known = history.incarnations(database, name)
    if not known:
        return None
    current = history.current_incarnations()
    return [current[i] for i in known if i in current]


# ------------------------------------------------------------------------------------------------
# Carry to the current shapes


#: How rows logged under one table version reach the current shape: (current table, old
#: column name -> current name, columns added since with their defaults); None: gone.
Carry = tuple[Table, dict[str, str], list[tuple[str, str | None]]] | None


def carry_of(then: Table, current: dict[int, Table]) -> Carry:
    now = current.get(then.incarnation)
    if now is None:
        return None
    names = {c.ident: c.name for c in now.columns}
    had = {c.ident for c in then.columns}
    renamed = {c.name: names[c.ident] for c in then.columns if c.ident in names}
    return now, renamed, [(c.name, c.default) for c in now.columns if c.ident not in had]


def _carry(row: dict[str, Any], carry: Carry) -> dict[str, Any] | None:
    """One CDC row carried to its table's current shape (None: the row is gone)."""
    if carry is None:
        return None
    now, renamed, added = carry

    def image(values: list[tuple[str, str | None]] | None) -> list[tuple[str, str | None]] | None:
        """The image in the current column order (so rows counted without a key compare
        equal whatever shape logged them); columns missing from a MINIMAL image stay missing."""
        if values is None:
            return None
        named = dict(added)
        named.update((renamed[k], v) for k, v in values if k in renamed)
        return [(c.name, named[c.name]) for c in now.columns if c.name in named]

    return {**row, "database": now.database, "table": now.name, "before": image(row["before"]),
            "after": image(row["after"]), "key_columns": list(now.primary_key)}


#: Rows the carry step could not bring to a typed table, by (``db.table``, GTID, why): how many.
Uncarried = dict[tuple[str, str | None, str], int]

#: Why rows of a known shape do not fit it (:func:`_misfits`).
NAMES_UNKNOWN = ("their images name columns the table does not have at their place in the schema history "
                 "(the binlog's table map disagreed with the history; see the CDC read's warnings)")
KEY_MISSING = "their images lack the table's primary key column(s) {}"


def carrier(history_json: str, uncarried: Uncarried) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The carry step (module docstring) over Arrow batches of CDC rows (with ``source_file``):
    rows of tables the history never knew, and rows logged under their table's current
    version, pass as Arrow data (only their key columns set); rows of older versions are
    carried row by row, the carry worked out once per version.  Rows that cannot be carried
    (their shape unknown or not the one their images have) are counted in ``uncarried``."""

    def carry(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        history = loaded_history(history_json)
        fates = _Fates(history)
        current = fates.current
        carries: dict[int, Carry] = {}
        for batch in batches:
            schema = pa.schema([batch.schema.field(c) for c in CARRIED])
            for (database, table), rows in by_table(batch):
                if not history.incarnations(database, table):
                    yield rows.select(CARRIED)
                    continue
                for then, kept in _by_version(rows, history, database, table, fates):
                    if then is None:  # rows of an incarnation since dropped, truncated or recreated: gone
                        continue
                    if isinstance(then, str):
                        _count(uncarried, f"{database}.{table}", kept, then)
                        continue
                    kept = _fitting(kept, then, f"{database}.{table}", uncarried)
                    if then is current.get(then.incarnation):
                        keys = pa.array([list(then.primary_key)] * kept.num_rows, schema.field("key_columns").type)
                        yield kept.select(CARRIED).set_column(CARRIED.index("key_columns"), "key_columns", keys)
                        continue
                    if id(then) not in carries:
                        carries[id(then)] = carry_of(then, current)
                    carried = [_carry(row, carries[id(then)]) for row in kept.select(CARRIED).to_pylist()]
                    yield pa.RecordBatch.from_pylist([r for r in carried if r is not None], schema=schema)

    return carry


class _Fates:
    """What became of the table versions rows are logged under (:func:`_by_version`)."""

    def __init__(self, history: SchemaHistory) -> None:
        self.current = history.current_incarnations()
        self.lost = history.lost_incarnations()
        #: Tables left unknown at the end (DDL the history could not read), by incarnation.
        self.unknown = {t.incarnation: t for t in history.catalog.tables.values() if t.unknown is not None}

    def of(self, then: Table | None, database: str, table: str) -> Table | str | None:
        """The version to carry rows of ``then`` from; None: gone with their incarnation; or
        why they cannot be carried."""
        if then is None:  # before the table's first statement or after its DROP: gone
            return None
        if then.unknown is not None:
            left = self.unknown.get(then.incarnation)
            return None if left is None else f"the schema history lost track of {database}.{table}: {left.unknown}"
        if then.incarnation in self.current:
            return then
        if then.incarnation in self.lost:
            return f"the schema history lost track of {database}.{table} after these rows (DDL it cannot read)"
        return None


def _by_version(rows: Any, history: SchemaHistory, database: str, table: str, fates: _Fates
                ) -> Iterator[tuple[Table | str | None, Any]]:
    """``rows`` (of one table name) split by the table version each was logged under, the
    history asked at each row's place in the binlog (its group's GTID position): (version,
    rows) pairs, the version as :meth:`_Fates.of` gives it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # Rows of one event are adjacent and share a version: look it up once per run of them.
    files, positions, gtids = (rows.column(c) for c in ("source_file", "position", "gtid"))
    codes = [pc.dictionary_encode(files).indices.to_numpy(zero_copy_only=False),
             pc.fill_null(positions, -1).to_numpy(), pc.dictionary_encode(gtids).indices.to_numpy(zero_copy_only=False)]
    starts = np.flatnonzero(np.r_[True, np.any([c[1:] != c[:-1] for c in codes], axis=0)]) if len(rows) else []
    versions: dict[Any, Table | str | None] = {}
    run_version = np.empty(len(starts), np.int64)
    for run, start in enumerate(starts):
        file, pos, gtid = files[int(start)].as_py(), positions[int(start)].as_py(), gtids[int(start)].as_py()
        then = fates.of(history.table_for_event(database, table, os.path.basename(file or ""), pos, gtid),
                        database, table)
        key = id(then) if not isinstance(then, str) else then
        versions[key] = then
        run_version[run] = list(versions).index(key)
    per_row = np.repeat(run_version, np.diff(np.r_[starts, len(rows)])) if len(starts) else run_version
    for index, then in enumerate(versions.values()):
        if len(versions) == 1:
            yield then, rows
        else:
            yield then, rows.take(pa.array(np.flatnonzero(per_row == index)))


def _fitting(rows: Any, then: Table, name: str, uncarried: Uncarried) -> Any:
    """``rows`` whose images fit ``then`` (:func:`_misfits`); the others counted in ``uncarried``."""
    import pyarrow as pa

    bad, why = _misfits(rows, then)
    if not bad.any():
        return rows
    _count(uncarried, name, rows.filter(pa.array(bad)), why)
    return rows.filter(pa.array(~bad))


def _misfits(rows: Any, then: Table) -> tuple[Any, str]:
    """Which rows' images do not fit the table version they were logged under (a numpy mask)
    and why: an image names a column the version lacks, or an image that identifies a row
    (an insert's after image, an update's or delete's before image) lacks a key column."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array([c.name for c in then.columns], pa.string())
    key = pa.array(list(then.primary_key), pa.string())
    ops = rows.column("op")
    bad_names = np.zeros(rows.num_rows, bool)
    bad_key = np.zeros(rows.num_rows, bool)
    for image, needs_key in (("before", pc.not_equal(ops, "insert")), ("after", pc.equal(ops, "insert"))):
        images = rows.column(image)
        images = images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images
        valid = np.asarray(images.is_valid())
        if not valid.any():
            continue
        offsets = images.offsets.to_numpy()
        first, end = int(offsets[0]), int(offsets[-1])
        keys = images.keys.slice(first, end - first)
        lengths = np.diff(offsets)
        needed = np.asarray(pc.and_(needs_key, images.is_valid()).fill_null(False))
        same = _same_keys(keys, lengths, valid)
        if same is not None:  # full images, all alike: one look at their names
            bad_names |= valid & (not set(same) <= set(names.to_pylist()))
            bad_key |= needed & (not set(then.primary_key) <= set(same))
            continue
        owner = np.repeat(np.arange(len(images)), lengths)
        bad_names[owner[~np.asarray(pc.is_in(keys, value_set=names).fill_null(False))]] = True
        if len(key):
            held = np.bincount(owner[np.asarray(pc.is_in(keys, value_set=key).fill_null(False))],
                               minlength=len(images))
            bad_key |= needed & (held < len(key))
    why = NAMES_UNKNOWN if bad_names.any() else KEY_MISSING.format(", ".join(then.primary_key))
    return bad_names | bad_key, why


def _count(uncarried: Uncarried, name: str, rows: Any, why: str) -> None:
    """Count ``rows`` in ``uncarried`` by GTID."""
    import pyarrow.compute as pc

    for entry in pc.value_counts(rows.column("gtid")).to_pylist():
        key = (name, entry["values"], why)
        uncarried[key] = uncarried.get(key, 0) + entry["counts"]


# ------------------------------------------------------------------------------------------------
# The fold: the images a table's changes leave


def fold(rows: Any, columns: Sequence[str]) -> Any:
    """The images (a map array, in no particular order) that ``rows`` leave: CDC rows of one
    table (``op``, ``key_columns``, ``before``, ``after``) in binlog order, ``columns`` the
    table's columns (see :class:`Folder`)."""
    folder = Folder(columns)
    folder.add(rows)
    return folder.images()


class Folder:
    """The latest state of one table, folded from its CDC rows given in binlog order, chunk
    by chunk: it holds the rows alive and one chunk, not every change.

    Keyed rows are folded per key in Arrow (:func:`_fold_by_key`): an image holding all of
    ``columns`` replaces the row whole, partial (MINIMAL) images are merged in Python, only
    for keys whose last whole image or delete is followed by partial ones; the state rows
    whose keys a chunk touches are folded again with it, as inserts before its rows.  Rows
    without a key are counted in binlog order (+1 written, -1 removed, never below zero),
    the counts kept across chunks."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.keyed: dict[tuple[str, ...], _KeyedState] = {}  # by key column names
        self.counts: Counter[tuple[Any, ...]] = Counter()
        self.image_type: Any = None

    def add(self, rows: Any) -> None:
        """Fold the next chunk of rows (a pyarrow table or batch, or a :class:`Chunk`)."""
        import pyarrow as pa

        whole = rows if isinstance(rows, Chunk) else None
        if whole is not None:
            rows = whole.rows
        rows = rows.combine_chunks() if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
        rows = rows.select(["op", "key_columns", "before", "after"])
        self.image_type = rows.schema.field("after").type
        for names, mine in _by_key_columns(rows):
            if not names:
                count_rows(mine.column("op").to_pylist(),
                           (None if image is None else tuple(image) for image in mine.column("before").to_pylist()),
                           (None if image is None else tuple(image) for image in mine.column("after").to_pylist()),
                           self.counts)
                continue
            state = self.keyed.setdefault(tuple(names), _KeyedState(len(names)))
            chunk = whole if whole is not None and mine.num_rows == whole.rows.num_rows else Chunk(mine)
            again = state.take_touched(_chunk_keys(chunk, names))
            if again is not None:
                n, schema = again.num_rows, mine.schema
                mine = pa.concat_tables([pa.table({
                    "op": pa.repeat(pa.scalar("insert", schema.field("op").type), n),
                    "key_columns": pa.repeat(pa.scalar(names, schema.field("key_columns").type), n),
                    "before": pa.nulls(n, schema.field("before").type),
                    "after": again.column("image").cast(schema.field("after").type),
                }, schema=schema), mine]).combine_chunks()
                chunk = Chunk(mine)
            state.add(_fold_by_key(chunk, names, self.columns))

    def alive(self) -> Iterator[tuple[list[str], Any]]:
        """The keyed rows alive, per key column names: (names, a table of the key values as
        text, ``k0``..., and the ``image``)."""
        for names, state in self.keyed.items():
            yield list(names), state.rows()

    def images(self) -> Any:
        """The images of the rows alive (a map array)."""
        import pyarrow as pa

        image_type = self.image_type or pa.map_(pa.string(), pa.string())
        parts = [rows.column("image").combine_chunks() for _, rows in self.alive()]
        counted = [list(image) for image, n in self.counts.items() for _ in range(n)]
        if counted:
            parts.append(pa.array(counted, image_type))
        return pa.concat_arrays([p.cast(image_type) for p in parts]) if parts else pa.array([], image_type)


def joined(values: list[Any]) -> Any:
    """Key values joined as one text per row.  Two keys may join alike, which can only make
    :meth:`_KeyedState.take_touched` take a row more (folded again unchanged), never miss one."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*values, "\x1f", null_handling="replace", null_replacement="\x00")


def _chunk_keys(chunk: Chunk, names: list[str]) -> Any:
    """The keys a chunk's changes touch (before and after each change), joined."""
    import pyarrow as pa
    import pyarrow.compute as pc

    before = [chunk.entries("before").column(n) for n in names]
    after = [pc.coalesce(chunk.entries("after").column(n), b) for n, b in zip(names, before)]
    return pc.unique(pa.concat_arrays([joined(before), joined(after)]))


class _KeyedState:
    """The rows alive of one key: fragments (tables of ``k0``... and ``image``) that are never
    copied: rows a chunk touches are taken out by marking them dead, the folded ones come as
    a new fragment, and the fragments are joined again once half their rows are dead."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.parts: list[tuple[Any, Any, Any]] = []  # (rows, joined keys, alive mask)
        self.alive = 0

    def add(self, rows: Any) -> None:
        """A fragment of rows alive."""
        import numpy as np

        if rows.num_rows:
            keys = joined([rows.column(f"k{i}").combine_chunks() for i in range(self.width)])
            self.parts.append((rows, keys, np.ones(rows.num_rows, bool)))
            self.alive += rows.num_rows

    def take_touched(self, keys: Any) -> Any:
        """The rows alive whose key is among ``keys`` (joined), taken out (None: none)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        taken = []
        for rows, joined, alive in self.parts:
            hit = np.asarray(pc.is_in(joined, value_set=keys)) & alive
            if hit.any():
                alive &= ~hit
                self.alive -= int(hit.sum())
                taken.append(rows.filter(pa.array(hit)))
        total = sum(len(a) for _, _, a in self.parts)
        if total > 2 * self.alive + (1 << 16) or len(self.parts) > 16:  # mostly dead, or many: join what lives
            live = [rows.filter(pa.array(alive)) for rows, _, alive in self.parts if alive.any()]
            self.parts, self.alive = [], 0
            if live:
                self.add(pa.concat_tables(live).combine_chunks())
        return pa.concat_tables(taken) if taken else None

    def rows(self) -> Any:
        """The rows alive (a table of ``k0``... and ``image``)."""
        import pyarrow as pa

        live = [rows.filter(pa.array(alive)) for rows, _, alive in self.parts]
        return pa.concat_tables(live) if live else pa.table(
            {**{f"k{i}": pa.array([], pa.string()) for i in range(self.width)}, "image": pa.array([], pa.map_(
                pa.string(), pa.string()))})


def _by_key_columns(rows: Any) -> Iterator[tuple[list[str], Any]]:
    """``rows`` split by their key column names (usually all alike: one check, no split)."""
    import pyarrow.compute as pc

    listed = rows.column("key_columns").combine_chunks()
    if len(listed) and listed.null_count == 0:
        first = listed[0].as_py()
        lengths = pc.list_value_length(listed).to_numpy()
        if (lengths == len(first)).all():
            flat = pc.dictionary_encode(listed.flatten()) if first else None
            codes = None if flat is None else flat.indices.to_numpy().reshape(len(listed), len(first))
            if codes is None or (codes == codes[0]).all():
                yield first, rows
                return
    key_names = pc.fill_null(pc.binary_join(listed, "\0"), "")  # column names hold no NUL
    for names in pc.unique(key_names).to_pylist():
        yield [n for n in names.split("\0") if n], rows.filter(pc.equal(key_names, names))


class Entries:
    """A map array's entries, decomposed once: where each image's value of a column is.
    Arrow's ``map_lookup`` searches every map for every name; here a column is one ``take``.
    Images written by the rows view usually hold the same keys in the same order (full
    images): then a column's value is at a fixed step from each image's first entry, found
    by comparing the key bytes, not by encoding every key."""

    def __init__(self, images: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(images, pa.ChunkedArray):
            images = _whole(images)
        offsets = images.offsets.to_numpy()
        first, end = int(offsets[0]), int(offsets[-1])
        keys = images.keys.slice(first, end - first)
        self.size = len(images)
        self.values = images.items.slice(first, end - first)
        self.valid = np.asarray(images.is_valid())
        self._columns: dict[str, Any] = {}  # the columns taken so far
        names = _same_keys(keys, np.diff(offsets), self.valid)
        self.starts = None if names is None else offsets[:-1] - first  # per image, its first entry
        self.known: dict[str, int] = {}
        if names is not None:
            for i, name in enumerate(names):
                self.known.setdefault(name, i)  # the first entry of a key wins
            return
        encoded = pc.dictionary_encode(keys) if end > first else None
        self.rows = np.repeat(np.arange(len(images)), np.diff(offsets))
        if encoded is not None:
            self.known = {name: i for i, name in enumerate(encoded.dictionary.to_pylist())}
        self.codes = np.zeros(0, np.int64) if encoded is None else encoded.indices.to_numpy()

    def column(self, name: str) -> Any:
        """The values of column ``name``: null where the image or its column is missing."""
        import numpy as np
        import pyarrow as pa

        found = self._columns.get(name)
        if found is not None:
            return found
        if name not in self.known:
            found = pa.nulls(self.size, self.values.type)
        elif self.starts is not None:
            found = self.values.take(pa.array(self.starts + self.known[name], mask=~self.valid))
        else:
            at = np.full(self.size, -1, np.int64)
            entries = np.nonzero(self.codes == self.known[name])[0][::-1]  # the first entry of a key wins
            at[self.rows[entries]] = entries
            at[~self.valid] = -1
            found = self.values.take(pa.array(at, mask=at < 0))
        self._columns[name] = found
        return found

    def holds_all(self, names: Sequence[str]) -> Any:
        """Per image: it holds every one of ``names`` (a null image holds none)."""
        import numpy as np

        wanted = [self.known[n] for n in set(names) if n in self.known]
        if len(wanted) < len(set(names)):
            return np.zeros(self.size, bool)
        if self.starts is not None:
            return self.valid.copy()
        inside = np.isin(self.codes, wanted)
        return (np.bincount(self.rows[inside], minlength=self.size) == len(wanted)) & self.valid


def _same_keys(keys: Any, lengths: Any, valid: Any) -> list[str] | None:
    """The key names every valid image holds in the same order (null images holding none),
    or None when the images differ: their key texts compared as bytes, row by row."""
    import numpy as np
    import pyarrow as pa

    if not valid.any() or keys.type != pa.string():
        return None
    width = int(lengths[np.argmax(valid)])
    if not width or not np.array_equal(lengths, np.where(valid, width, 0)):
        return None
    count = int(valid.sum())
    key_offsets = np.frombuffer(keys.buffers()[1], np.int32)[keys.offset : keys.offset + len(keys) + 1]
    sizes = np.diff(key_offsets).reshape(count, width)
    if not (sizes == sizes[0]).all():
        return None
    data = np.frombuffer(keys.buffers()[2], np.uint8)[key_offsets[0] : key_offsets[-1]].reshape(count, -1)
    if not (data == data[0]).all():
        return None
    return keys.slice(0, width).to_pylist()


class Chunk:
    """CDC rows (a pyarrow table) with their image columns decomposed once, on first use, for
    every step that reads them (typed changes, touched keys, the fold)."""

    def __init__(self, rows: Any) -> None:
        self.rows = rows
        self._entries: dict[str, Entries] = {}

    def entries(self, column: str) -> Entries:
        """The decomposed ``before`` or ``after`` images."""
        found = self._entries.get(column)
        if found is None:
            found = self._entries[column] = Entries(_whole(self.rows.column(column)))
        return found


def _whole(column: Any) -> Any:
    """A table column as one array (no copy when it is one chunk already)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _differs(left: Any, right: Any) -> Any:
    """Per row: the two (nullable) values differ, a null differing from any value."""
    import pyarrow.compute as pc

    nulls = pc.not_equal(pc.is_null(left), pc.is_null(right))
    return pc.or_(nulls, pc.fill_null(pc.not_equal(left, right), False))


def _fold_by_key(chunk: Chunk, keys: list[str], columns: Sequence[str]) -> Any:
    """The rows ``rows`` leave (a table: key values ``k0``... and ``image``).  Each key's
    steps (an update moving the key deletes the old one first) sorted by key and binlog order; a key's row is its last step's image when that step is a delete or a
    whole image, else the images from its last such step merged in order.  Steps carry the
    row number of their image, so images are copied once, at the end."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = chunk.rows
    op, after = rows.column("op"), _whole(rows.column("after"))
    number = np.arange(rows.num_rows, dtype=np.int64)
    after_entries = chunk.entries("after")
    before_key = [chunk.entries("before").column(k) for k in keys]
    after_key = [after_entries.column(k) for k in keys]
    after_key = [pc.coalesce(a, b) for a, b in zip(after_key, before_key)]  # an update's key after it
    moved = pc.and_(pc.equal(op, "update"), _any([_differs(b, a) for b, a in zip(before_key, after_key)]))
    writes = pc.invert(pc.equal(op, "delete"))
    gone = pa.scalar(-1, pa.int64())
    steps = pa.concat_tables([
        _steps(before_key, number * 2, pa.repeat(gone, rows.num_rows), pc.fill_null(moved, False)),
        _steps([pc.if_else(writes, a, b) for a, b in zip(after_key, before_key)], number * 2 + 1,
               pc.if_else(writes, pa.array(number), gone), None),
    ])
    order = pc.sort_indices(steps, [(f"k{i}", "ascending") for i in range(len(keys))] + [("seq", "ascending")])
    source = steps.column("source").take(order).to_numpy()  # row whose after image a step writes, -1: none
    whole = after_entries.holds_all(columns)
    index = np.arange(len(source), dtype=np.int64)
    resets = np.where((source < 0) | whole[np.maximum(source, 0)], index, -1)
    grouped = steps.select([f"k{i}" for i in range(len(keys))]).take(order).append_column(
        "i", pa.array(index)).append_column("reset", pa.array(resets))
    last = grouped.group_by([f"k{i}" for i in range(len(keys))], use_threads=False).aggregate(
        [("i", "min"), ("i", "max"), ("reset", "max")])
    first, end, reset = (last.column(c).to_numpy() for c in ("i_min", "i_max", "reset_max"))
    keys_of = last.select([f"k{i}" for i in range(len(keys))])
    simple = np.flatnonzero(reset == end)
    written = source[end[simple]]
    kept = written >= 0
    parts = [keys_of.take(pa.array(simple[kept])).append_column("image", after.take(pa.array(written[kept])))]
    merged, merged_at = [], []
    for at in np.flatnonzero(reset != end):
        row: dict[str, Any] | None = None
        for step in source[max(reset[at], first[at]) : end[at] + 1]:
            image = after[int(step)].as_py() if step >= 0 else None
            row = None if image is None else dict(image) if row is None else {**row, **dict(image)}
        if row is not None:
            # Partial images of a row the binlog never showed whole: the key is known even
            # where the images leave it out (a MINIMAL after image holds the changed columns).
            for i, name in enumerate(keys):
                if name not in row:
                    row[name] = keys_of.column(i)[int(at)].as_py()
            merged.append(list(row.items()))
            merged_at.append(at)
    parts.append(keys_of.take(pa.array(merged_at, pa.int64())).append_column("image", pa.array(merged, after.type)))
    return pa.concat_tables(parts)


def _any(flags: list[Any]) -> Any:
    import pyarrow.compute as pc

    result = flags[0]
    for flag in flags[1:]:
        result = pc.or_(result, flag)
    return result


def _steps(values: list[Any], seq: Any, source: Any, where: Any) -> Any:
    import pyarrow as pa

    table = pa.table({**{f"k{i}": v for i, v in enumerate(values)}, "seq": seq, "source": source})
    return table if where is None else table.filter(where)


def count_rows(ops: Iterable[str], befores: Iterable[Any], afters: Iterable[Any], counts: Counter[Any]) -> None:
    """Count the images of rows without a key in binlog order: +1 written, -1 removed (a
    row removed that the binlog never showed, from before it, leaves no count to take).
    Images are anything hashable that compares as the rows do (None: no image)."""
    for op, before, after in zip(ops, befores, afters):
        if op != "insert" and before is not None:
            if counts[before] > 1:
                counts[before] -= 1
            else:
                counts.pop(before, None)
        if op != "delete" and after is not None:
            counts[after] += 1


# ------------------------------------------------------------------------------------------------
# Typed tables


def state_schema(layout: Layout) -> Any:
    """The Arrow schema of a state table."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema([pa.field(name, to_arrow_type(kind, timezone="UTC")) for name, kind in layout])


def change_schema(layout: Layout) -> Any:
    """The Arrow schema of a typed change table."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from .schema import ROWS_SCHEMA

    image = pa.struct(list(state_schema(layout)))
    fixed = to_arrow_schema(ROWS_SCHEMA, timezone="UTC")
    return pa.schema([fixed.field(c) for c in CHANGE_COLUMNS] + [pa.field("before", image), pa.field("after", image)])


def _image_columns(entries: Entries, layout: Layout, unread: dict[str, list[int]] | None = None) -> list[Any]:
    """The columns of images (maps of text) as the layout types them (text stays as it is);
    with ``unread``, a text that is no value of its column's type is null and its image's
    index listed there by column (else it raises)."""
    from .schema import text_array

    schema = state_schema(layout)
    columns = []
    for (name, kind), field in zip(layout, schema):
        bad: list[int] | None = None if unread is None else unread.setdefault(name, [])
        columns.append(text_array(entries.column(name), kind, field.type, bad))
    return columns


def state_table(images: Any, layout: Layout) -> Any:
    """The typed state table of ``images`` (maps of text)."""
    import pyarrow as pa

    return pa.table(_image_columns(Entries(images), layout), schema=state_schema(layout))


def change_table(rows: Any, layout: Layout, unread: dict[str, list[int]] | None = None) -> Any:
    """The typed change table of CDC rows (a pyarrow table or a :class:`Chunk`, in the order
    given); ``unread``: see :func:`_image_columns` (indexes of rows)."""
    import pyarrow as pa

    schema = change_schema(layout)
    chunk = rows if isinstance(rows, Chunk) else Chunk(rows)
    rows = chunk.rows

    def image(name: str) -> Any:
        entries = chunk.entries(name)
        return pa.StructArray.from_arrays(_image_columns(entries, layout, unread), fields=list(schema.field(name).type),
                                          mask=pa.array(~entries.valid))

    fixed = [rows.column(c).cast(schema.field(c).type) for c in CHANGE_COLUMNS]
    return pa.table([*fixed, image("before"), image("after")], schema=schema)


# ------------------------------------------------------------------------------------------------
# The job


def units(files: dict[tuple[str, str], list[str]], history: SchemaHistory) -> list[list[tuple[str, str]]]:
    """CDC partitions grouped so that every current table's rows are in one group: partitions
    whose rows can land in the same table (:func:`landing_tables`) go together."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for database, name in files:
        here = f"p:{database}\0{name}"
        targets = landing_tables(history, database, name)
        for target in [f"t:{database}\0{name}"] if targets is None else [f"t:{t.database}\0{t.name}" for t in targets]:
            parent[find(here)] = find(target)
    groups: dict[str, list[tuple[str, str]]] = {}
    for key in sorted(files):
        groups.setdefault(find(f"p:{key[0]}\0{key[1]}"), []).append(key)
    return list(groups.values())


def write_tables(spark: Any, cdc_files: Sequence[str], cdc_root: str, out: str, history: SchemaHistory
                 ) -> tuple[dict[str, str], dict[str, str], Uncarried]:
    """Write every table's latest state (``out/state/<db>.<table>``) and typed changes
    (``out/changes/<db>.<table>``) from the CDC table's files in one Spark job, a task per
    unit (:func:`units`), the largest first; returns (state paths, change paths) by table,
    and the rows left out because they could not be carried (:data:`Uncarried`)."""
    import json

    import pyarrow.parquet as pq

    by_partition: dict[tuple[str, str], list[str]] = {}
    for uri in cdc_files:
        path = local_path(uri)
        key = partition_of(path, cdc_root)
        if key is not None:
            by_partition.setdefault(key, []).append(path)
    layouts = state_layouts(history, by_partition)
    groups = sorted(units(by_partition, history),
                    key=lambda g: -sum(os.path.getsize(f) for k in g for f in by_partition[k]))
    plan = [[(k, sorted(by_partition[k])) for k in group] for group in groups]
    dirs = {"state": os.path.join(out, "state"), "changes": os.path.join(out, "changes")}
    for directory in dirs.values():
        if os.path.isdir(directory):
            shutil.rmtree(directory)
        os.makedirs(directory)
    written: set[str] = set()
    uncarried: Uncarried = {}
    if plan:
        task = _task(plan, layouts, json.dumps(history.to_json(), ensure_ascii=False), dirs)
        for row in spark.range(0, len(plan), 1, len(plan)).mapInArrow(task, _TASK_OUT).collect():
            if row["why"] is None:
                written.add(row["table"])
            else:
                uncarried[(row["table"], row["gtid"], row["why"])] = row["rows"]
    states, changes = {}, {}
    for name in sorted(written | {n for n, layout in layouts.items() if layout is not None}):
        layout = layouts.get(name)
        for kind, paths in (("state", states), ("changes", changes)):
            path = paths[name] = os.path.join(dirs[kind], name)
            if name not in written and layout is not None:  # no rows left: an empty table
                schema = state_schema(layout) if kind == "state" else change_schema(layout)
                os.makedirs(path, exist_ok=True)
                pq.write_table(schema.empty_table(), os.path.join(path, "part-empty.parquet"))
    return states, changes, uncarried


#: What a task of :func:`write_tables` answers: a table written (``why`` null), or rows of a
#: table and GTID it could not carry, and why.
_TASK_OUT = "table string, gtid string, why string, rows long"


def _task(plan: list[list[tuple[tuple[str, str], list[str]]]], layouts: dict[str, Layout | None],
          history_json: str, dirs: dict[str, str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: the batch's ids are the units it writes; it yields the
    names of the tables written and the rows it could not carry (:data:`_TASK_OUT`)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([("table", pa.string()), ("gtid", pa.string()), ("why", pa.string()), ("rows", pa.int64())])
        for batch in batches:
            for unit in batch.column("id").to_pylist():
                uncarried: Uncarried = {}
                names = write_unit(plan[unit], layouts, history_json, dirs, uncarried)
                rows = [(name, None, None, 0) for name in names] + [(*k, n) for k, n in uncarried.items()]
                yield pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)

    return run


#: CDC rows a task reads, carries and folds at a time.
CHUNK_ROWS = 1 << 20


def write_unit(unit: list[tuple[tuple[str, str], list[str]]], layouts: dict[str, Layout | None],
               history_json: str, dirs: dict[str, str], uncarried: Uncarried) -> list[str]:
    """Read one unit's CDC files, carry, and write the state and change table of each of its
    tables still there at the end; returns the names of the tables written (the rows it
    cannot carry are counted in ``uncarried``).

    The files are read chunk by chunk in binlog order (the CDC job writes each file sorted;
    files of different tasks hold different stretches of the binlogs), so a task holds the
    rows alive and one chunk; files whose stretches overlap are read whole and sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    columns = [c for c in CARRIED if c not in ("database", "table")] + ["source_file"]
    files = [(database, table, path) for (database, table), paths in unit for path in paths]
    ordered = _in_binlog_order([path for _, _, path in files])
    widest = {f"{d}.{t}": _widest(paths) for (d, t), paths in unit if layouts.get(f"{d}.{t}", ()) is None}

    def batches(order: list[int]) -> Iterator[Any]:
        for index in order:
            database, table, path = files[index]
            for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK_ROWS, columns=columns):
                n = batch.num_rows
                yield (batch.append_column("database", pa.repeat(pa.scalar(database), n))
                       .append_column("table", pa.repeat(pa.scalar(table), n)))

    sinks: dict[str, _TableSink] = {}
    carried = carrier(history_json, uncarried)(batches(ordered if ordered is not None else list(range(len(files)))))
    if ordered is None:  # read whole, then sorted
        whole: dict[str, list[Any]] = {}
        for batch in carried:
            if batch.num_rows:
                whole.setdefault(_table_of(batch), []).append(batch)
        chunks: Iterator[Any] = iter([
            rows.take(pc.sort_indices(rows, [(c, "ascending") for c in ORDER]))
            for rows in (pa.Table.from_batches(b).combine_chunks() for b in whole.values())
        ])
    else:
        chunks = (batch for batch in carried if batch.num_rows)
    for chunk in chunks:
        name = _table_of(chunk)
        if name not in layouts:
            continue  # a table the schema history has dropped by the end
        sink = sinks.get(name)
        if sink is None:
            layout = layouts[name] or widest.get(name) or []
            sink = sinks[name] = _TableSink(name, layout, dirs, uncarried)
        sink.add(chunk)
    for sink in sinks.values():
        sink.close()
    return list(sinks)


def _table_of(rows: Any) -> str:
    """``db.table`` of carried rows (each carried batch is of one table)."""
    return f"{rows.column('database')[0].as_py()}.{rows.column('table')[0].as_py()}"


def _in_binlog_order(paths: list[str]) -> list[int] | None:
    """The files' indexes in binlog order when each file is sorted and their stretches do not
    overlap; None otherwise.  Reads only the order columns, a file at a time."""
    import pyarrow.parquet as pq

    spans = []
    for index, path in enumerate(paths):
        data = pq.read_table(path, columns=ORDER)
        if not data.num_rows:
            continue
        if not _sorted(data):
            return None
        first, last = data.slice(0, 1).to_pylist()[0], data.slice(data.num_rows - 1, 1).to_pylist()[0]
        spans.append((tuple(first[c] for c in ORDER), tuple(last[c] for c in ORDER), index))
    spans.sort()
    if any(later[0] <= earlier[1] for earlier, later in zip(spans, spans[1:])):
        return None
    return [index for _, _, index in spans]


def _sorted(rows: Any) -> bool:
    """Whether ``rows`` are in binlog order already."""
    import numpy as np
    import pyarrow.compute as pc

    order = pc.sort_indices(rows, [(c, "ascending") for c in ORDER]).to_numpy()
    return bool(np.array_equal(order, np.arange(len(order))))


def _widest(paths: list[str]) -> Layout:
    """Text columns of a table the history does not know: as its widest image names them."""
    import pyarrow.parquet as pq

    best: tuple[int, Layout] = (-1, [])
    for path in paths:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK_ROWS, columns=["before", "after"]):
            layout = text_layout(batch)
            if len(layout) > best[0]:
                best = (len(layout), layout)
    return best[1]


class _TableSink:
    """One table's outputs, fed chunks of its carried CDC rows in binlog order: the change
    table written as they come, the state folded and written at the end."""

    def __init__(self, name: str, layout: Layout, dirs: dict[str, str], uncarried: Uncarried) -> None:
        import pyarrow.parquet as pq

        self.name = name
        self.uncarried = uncarried
        self.layout = layout
        self.paths = {kind: os.path.join(dirs[kind], name, "part-00000.parquet") for kind in ("changes", "state")}
        for path in self.paths.values():
            os.makedirs(os.path.dirname(path), exist_ok=True)
        self.changes = pq.ParquetWriter(self.paths["changes"], change_schema(layout))
        self.folder = Folder([n for n, _ in layout])
        self.pending: list[Any] = []  # batches gathered into a chunk of CHUNK_ROWS
        self.rows = 0

    def add(self, rows: Any) -> None:
        """The next rows (a pyarrow table or batch)."""
        import pyarrow as pa

        self.pending += rows.to_batches() if isinstance(rows, pa.Table) else [rows]
        self.rows += rows.num_rows
        if self.rows >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        import numpy as np
        import pyarrow as pa

        if self.pending:
            chunk = Chunk(pa.Table.from_batches(self.pending).combine_chunks())
            self.pending, self.rows = [], 0
            unread: dict[str, list[int]] = {}
            changes = change_table(chunk, self.layout, unread)
            bad = sorted({i for found in unread.values() for i in found})
            if bad:  # text that is no value of its column's type: rows that cannot be carried
                column = next(name for name, found in unread.items() if found)
                kind = dict(self.layout)[column].simpleString()
                keep = np.ones(chunk.rows.num_rows, bool)
                keep[bad] = False
                _count(self.uncarried, self.name, chunk.rows.filter(pa.array(~keep)),
                       f"a value of column {column} cannot be read as {kind}")
                changes = changes.filter(pa.array(keep))
                chunk = Chunk(chunk.rows.filter(pa.array(keep)))
            self.changes.write_table(changes)
            self.folder.add(chunk)

    def close(self) -> None:
        """Write the state table."""
        import pyarrow.parquet as pq

        self._flush()
        self.changes.close()
        pq.write_table(state_table(self.folder.images(), self.layout), self.paths["state"])
