"""Reading one input split into Arrow record batches (executor side).

:class:`~.split.SplitReader` walks the events a split owns with their event-group context
(legacy files through the codec's group scanner or event by event, `.ibb` files record by
record); group filters are applied at the group's GTID, so a rejected `.ibb` group costs one
event decode and no OOB reads.  Here the view builders turn those events into
:class:`pyarrow.RecordBatch` es whose schema is exactly ``to_arrow_schema(view schema)``, as
Spark requires; the rows view is named and typed by the schema history (:class:`TypedMaps`).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import pyarrow as pa

from ..codec.columns import ABSENT
from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    XID_EVENT,
    AnnotateRowsEvent,
    Event,
    GtidListEvent,
    QueryEvent,
    RowsBody,
    RowsEvent,
    TableMapEvent,
    XidEvent,
)
from ..codec.gtid import Gtid
from ..codec.native import load_fast
from ..codec.rows import FastRowDecoder, compiled_images, row_decoder
from ..codec.rows.packed import FAST_PLAN_VERSION
from ..codec.events.stream import EventStreamDecoder
from ..engine.files import BinlogFile
from ..errors import DecodeError, OptionError, SchemaHistoryError
from ..schema import SchemaHistory, SchemaTracker
from ..schema.history import SCHEMA_HISTORY_FILE
from .split import Group, Item, SplitReader
from .fs import Listing, Storage, child_path, is_file, read_file
from .options import ScanOptions
from .plan import Split
from .schema import (
    column_names,
    decode_text,
    key_columns,
    label_functions,
    render,
    render_function,
    typed_row_struct,
    valid_text,
)

log = logging.getLogger(__name__)

#: Bytes of decoded data a record batch holds at most (besides ``batchRows``), so a huge
#: transaction streams through a task in bounded memory.
MAX_BATCH_BYTES = 32 << 20

# ------------------------------------------------------------------------------------------------
# Schema history: real names and types for the rows of a NO_LOG / MINIMAL binlog


#: ``schemaHistory=none``: no history, rows named and typed by the binlog's own metadata only.
NO_HISTORY = "none"


def history_source(paths: Sequence[str], options: ScanOptions) -> str | None:
    """The saved schema history a read uses: option ``schemaHistory``, else the
    ``schema-history.json`` an archive keeps beside its `.ibb` files when the one path read is
    that directory (local or remote); None when there is neither (the driver then builds one
    from the files)."""
    storage = options.listing.storage
    if options.schema_history == NO_HISTORY:
        return None
    if options.schema_history is not None:
        if not is_file(options.schema_history, storage):
            raise OptionError(f"option schemaHistory: {options.schema_history} is not a file")
        return options.schema_history
    if len(paths) != 1:
        return None
    beside = child_path(paths[0], SCHEMA_HISTORY_FILE)
    return beside if is_file(beside, storage) else None


def history_text(path: str, storage: Storage) -> str:
    """The JSON text of the saved schema history at ``path`` (local or remote)."""
    try:
        return read_file(path, storage).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SchemaHistoryError(f"{path}: cannot read the schema history: {error}") from error


def _query_position(file: BinlogFile | Split, item: Item) -> tuple[str, int, str | None]:
    """(file base name, position, GTID) under which a Query event's DDL is recorded."""
    return os.path.basename(file.path), item.position, None if item.group is None else item.group.gtid


#: Events a schema scan never needs decoded (none starts or ends an event group).
_SCHEMA_SKIP = frozenset(ROWS_KIND)
#: Events a schema scan does not look at (but for where its groups end).
_SCHEMA_QUIET = frozenset((XID_EVENT,))
#: Events the rows view does not look at: its groups come from the scanner or the GTID event.
ROWS_QUIET = frozenset((GTID_EVENT, ANNOTATE_ROWS_EVENT, XID_EVENT))


def scan_schema(files: Sequence[BinlogFile], history: SchemaHistory | None, table: tuple[str, str] | None,
                listing: Listing | None = None) -> tuple[SchemaHistory, TableMapEvent | None]:
    """One driver pass over ``files`` in stream order (read through ``listing``'s storage):
    without ``history``, the history built from their DDL (Query events); with ``table``, that
    table's last Table_map typed by the history (the shape of the typed ``rows`` view).  Passes
    are skipped when nothing is asked."""
    if history is not None and table is None:
        return history, None
    tracker = SchemaTracker(copy.deepcopy(history) if history is not None else SchemaHistory(source="spark driver"))
    # Only Query events (and, for one table, Table_maps) matter here: rows events, most of the
    # bytes, are hopped over undecoded, and checksums are left to the executors, which verify
    # every event they read.
    everything = ScanOptions(gtid_seek=False, verify_checksum=False,
                             listing=listing if listing is not None else Listing())
    skip = _SCHEMA_SKIP if table is not None else _SCHEMA_SKIP | {TABLE_MAP_EVENT, ANNOTATE_ROWS_EVENT}
    last: TableMapEvent | None = None
    for f in files:
        split = Split(f.kind, f.path, f.directory, f.file_no, 0, f.size)
        for item in SplitReader(split, everything, skip=skip, quiet=_SCHEMA_QUIET):
            event = item.event
            code = event.type_code
            if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
                name, pos, gtid = _query_position(f, item)
                assert isinstance(event, QueryEvent)
                tracker.observe_query(event, file=name, pos=pos, gtid=gtid)
            elif code == GTID_EVENT:
                tracker.observe_group(None if item.group is None else item.group.gtid)
            elif code == GTID_LIST_EVENT:
                assert isinstance(event, GtidListEvent)
                tracker.observe_gtid_list(event.gtids)
            elif table is not None and code == TABLE_MAP_EVENT:
                assert isinstance(event, TableMapEvent)
                if (event.schema, event.table) == table:
                    last = tracker.typed_map(event, None if item.group is None else item.group.gtid)
    return (history if history is not None else tracker.history), last


_LOADED: dict[str, SchemaHistory] = {}


def loaded_history(text: str, where: str = "schemaHistory") -> SchemaHistory:
    """The history of a JSON text, parsed once per process (DDL replay costs)."""
    history = _LOADED.get(text)
    if history is None:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SchemaHistoryError(f"{where}: not a schema history (JSON): {error}") from error
        if len(_LOADED) > 4:
            _LOADED.clear()
        history = _LOADED[text] = SchemaHistory.from_json(data, where=where)
    return history


class TypedMaps:
    """Table maps of one split typed by a schema history: each map is checked against the
    history's table at the map's place in the binlog (its group's GTID position, whatever
    the split's first group, its domain filter or the files' names: an `.ibb` archive's
    history records the primary's; by file and offset in a stream without GTIDs).  A
    :class:`SchemaTracker` on a copy of the history is fed the split's Query events, so DDL
    the history lacks (a saved history older than the files) still applies after it."""

    def __init__(self, history: SchemaHistory, split: Split) -> None:
        self.tracker = SchemaTracker(copy.deepcopy(history))
        self.split = split
        self._typed: dict[int, tuple[TableMapEvent, TableMapEvent]] = {}
        #: Typed maps by shape (:func:`_shape`), from one Query event to the next: a table's
        #: version in the history changes only at a DDL statement, which comes as a Query.
        self._shapes: dict[tuple[Any, ...], TableMapEvent] = {}
        self._group: Group | None = None

    def observe(self, item: Item) -> None:
        """Apply a Query event's DDL."""
        name, pos, gtid = _query_position(self.split, item)
        self._shapes.clear()
        self._typed.clear()  # a map body seen before the DDL may name other columns after it
        self.tracker.observe_query(item.event, file=name, pos=pos, gtid=gtid)  # type: ignore[arg-type]

    def typed(self, table_map: TableMapEvent, item: Item) -> TableMapEvent:
        """``table_map`` with the history's names, signedness, charsets, labels and key (the
        same object for every map of one shape until the next Query event, so its row decoder
        is built once)."""
        group = item.group
        hit = self._typed.get(id(table_map))
        if hit is not None and hit[0] is table_map:
            typed = hit[1]
        else:
            if len(self._typed) > 256:
                self._typed.clear()
            shape = _shape(table_map)
            typed = self._shapes.get(shape)
            if typed is None:
                typed = self.tracker.typed_map(table_map, None if group is None else group.gtid,
                                               os.path.basename(self.split.path), item.position)
                self._group = group  # typed_map took the group's position
                if len(self._shapes) > 256:
                    self._shapes.clear()
                self._shapes[shape] = typed
            self._typed[id(table_map)] = (table_map, typed)
        if group is not None and group is not self._group:
            # what typed_map does for each group: the history's position follows the stream
            self.tracker.observe_group_gtid(Gtid(group.domain, group.server, group.seq))
        self._group = group
        return typed


# ------------------------------------------------------------------------------------------------
# Views


class MapColumn:
    """A ``map<string,string>`` column built from flat key/value lists (no per-entry tuples)."""

    __slots__ = ("offsets", "keys", "values", "nulls")

    def __init__(self) -> None:
        self.offsets = [0]
        self.keys: list[str] = []
        self.values: list[str | None] = []
        self.nulls: list[bool] = []

    def __len__(self) -> int:
        return len(self.nulls)

    def add(self, names: tuple[str, ...], image: tuple[Any, ...] | None, partial: bool) -> None:
        """One row image (None = no image); ``partial`` images skip their ABSENT columns."""
        if image is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            if partial:
                present = [(n, v) for n, v in zip(names, image) if v is not ABSENT]
                self.keys.extend(n for n, _ in present)
                self.values.extend(render(v) for _, v in present)
            else:
                self.keys.extend(names)
                self.values.extend(map(render, image))
        self.offsets.append(len(self.keys))

    def add_all(self, names: tuple[str, ...], images: list[tuple[Any, ...] | None], partial: bool) -> None:
        """The images of one rows event; full images are rendered column by column (one
        renderer per column, chosen by its first value: a column's values share one type)."""
        full = [image for image in images if image is not None]
        if partial or not full:
            for image in images:
                self.add(names, image, partial)
            return
        columns = []
        for column in zip(*full):
            first = next((v for v in column if v is not None), None)
            if first is None:
                columns.append(column)
                continue
            convert = render_function(first)
            columns.append(map(convert, column) if None not in column else [
                None if v is None else convert(v) for v in column])
        rows = zip(*columns)
        keys, values, nulls, offsets = self.keys, self.values, self.nulls, self.offsets
        width = len(names)
        for image in images:
            if image is None:
                nulls.append(True)
            else:
                nulls.append(False)
                keys.extend(names)
                values.extend(next(rows))
            offsets.append(offsets[-1] + (0 if image is None else width))

    def array(self, kind: pa.DataType) -> pa.Array:
        return pa.MapArray.from_arrays(
            pa.array(self.offsets, pa.int32()),
            pa.array(self.keys, pa.string()),
            pa.array(self.values, pa.string()),
            type=kind,
            mask=pa.array(self.nulls, pa.bool_()),
        )


class TypedColumn:
    """A struct column of typed row images kept column by column: each table column's values
    are converted in one pass and handed to Arrow as one list (no per-row dicts)."""

    __slots__ = ("children", "converters", "nulls")

    def __init__(self, converters: tuple[Any, ...]) -> None:
        self.converters = converters
        self.children: list[list[Any]] = [[] for _ in converters]
        self.nulls: list[bool] = []

    def __len__(self) -> int:
        return len(self.nulls)

    def add_all(self, images: list[tuple[Any, ...] | None]) -> None:
        """The images of one rows event (None = no image; ABSENT columns become null)."""
        self.nulls.extend(image is None for image in images)
        for index, (child, convert) in enumerate(zip(self.children, self.converters)):
            child.extend(None if image is None or (v := image[index]) is None or v is ABSENT else convert(v)
                         for image in images)

    def array(self, kind: pa.StructType) -> pa.Array:
        fields = [kind.field(i) for i in range(kind.num_fields)]
        children = [pa.array(values, type=f.type) for values, f in zip(self.children, fields)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(self.nulls, pa.bool_()))


class _Batches:
    """Columns filled row by row and cut into record batches of the exact Arrow schema.

    ``maps`` names the columns built as :class:`MapColumn` instead of Python lists.
    """

    def __init__(self, schema: pa.Schema, rows: int, maps: tuple[str, ...] = (),
                 typed: tuple[Any, ...] | None = None) -> None:
        self.schema = schema
        self.rows = rows
        self.maps = maps
        self.typed = typed  # converters of before/after built as TypedColumn
        self.columns: list[Any] = self._empty()
        self.held = 0  # bytes of rows data in the batch being built

    def _empty(self) -> list[Any]:
        def column(name: str) -> Any:
            if name in self.maps:
                return MapColumn()
            if self.typed is not None and name in ("before", "after"):
                return TypedColumn(self.typed)
            return []

        return [column(f.name) for f in self.schema]

    def full(self) -> bool:
        """The batch being built is due: ``batchRows`` rows, or :data:`MAX_BATCH_BYTES` of data."""
        return len(self.columns[0]) >= self.rows or self.held >= MAX_BATCH_BYTES

    def flush(self) -> pa.RecordBatch | None:
        self.held = 0
        if not self.columns[0]:
            return None
        arrays = [
            col.array(f.type) if isinstance(col, (MapColumn, TypedColumn)) else pa.array(col, type=f.type)
            for col, f in zip(self.columns, self.schema)
        ]
        self.columns = self._empty()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _micros(seconds: int) -> int:
    return seconds * 1_000_000


def _long(value: int | None) -> int | None:
    """An unsigned 64-bit binlog field (seq_no, commit_id, xid) in a LongType column: values
    from 2**63 on are stored as their two's complement (negative), not refused by Arrow."""
    return value - (1 << 64) if value is not None and value >= 1 << 63 else value


def _location_and_gtid(split: Split, item: Item) -> list[Any]:
    g = item.group
    if g is None:
        return [split.path, split.file_no, item.position, item.index, None, None, None, None, None, None]
    return [split.path, split.file_no, item.position, item.index, g.gtid, g.domain, g.server, _long(g.seq),
            _long(g.commit_id), _micros(g.timestamp)]


def _event_details(event: Event, decoder: EventStreamDecoder) -> tuple[str | None, str | None, str | None, int | None]:
    """(database, table, query, xid) of an event."""
    code = event.type_code
    if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
        assert isinstance(event, QueryEvent)
        return decode_text(event.database) or None, None, decode_text(event.query), None
    if code == TABLE_MAP_EVENT:
        assert isinstance(event, TableMapEvent)
        return valid_text(event.schema), valid_text(event.table), None, None
    if code in ROWS_KIND:
        table_map = decoder.table_maps.get(event.table_id)  # type: ignore[attr-defined]
        if table_map is None:
            return None, None, None, None
        return valid_text(table_map.schema), valid_text(table_map.table), None, None
    if code == ANNOTATE_ROWS_EVENT:
        assert isinstance(event, AnnotateRowsEvent)
        return None, None, decode_text(event.query), None
    if code == XID_EVENT:
        assert isinstance(event, XidEvent)
        return None, None, None, _long(event.xid)
    return None, None, None, None


def _events_batches(split: Split, options: ScanOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    out = _Batches(schema, options.batch_rows)
    reader = SplitReader(split, options)
    for item in reader:
        event = item.event
        row = _location_and_gtid(split, item)
        row += [event.server_id, event.name, event.type_code, item.length, event.flags]
        row += _event_details(event, reader.decoder)
        for col, value in zip(out.columns, row):
            col.append(value)
        out.held += item.length  # the event's query text is in the batch
        if out.full():
            batch = out.flush()
            if batch is not None:
                yield batch
    batch = out.flush()
    if batch is not None:
        yield batch


class _TableInfo(NamedTuple):
    names: tuple[str, ...]
    keys: list[str] | None
    converters: tuple[Any, ...] | None
    #: For the typed view: the index in this map's images of each column of the read's struct
    #: (None: the column is not in this shape); None when the shapes are the same.
    project: tuple[int | None, ...] | None = None
    #: For map images: per column the ENUM/SET label function (None: none has labels).
    labels: tuple[Any, ...] | None = None


def _map_info(table_map: TableMapEvent) -> _TableInfo:
    """Names, keys and ENUM/SET labels of one table shape, for map images."""
    names = column_names(table_map)
    labels = label_functions(table_map)
    return _TableInfo(names, key_columns(table_map, names), None, None,
                      labels if any(f is not None for f in labels) else None)


def _none(value: Any) -> None:
    return None


def _typed_info(table_map: TableMapEvent, image: pa.StructType) -> _TableInfo:
    """Names, keys and converters of one table shape, laid onto the read's struct ``image``
    (the table's last shape, :func:`scan_schema`): columns are matched by name; a column this
    shape lacks, or holds with another type (an ALTER mid-stream), is null in its rows."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from .schema import rows_schema

    names = column_names(table_map)
    struct, converters = typed_row_struct(table_map)
    own = to_arrow_schema(rows_schema(struct), timezone="UTC").field("after").type
    where = {own.field(i).name: i for i in range(own.num_fields)}
    project: list[int | None] = []
    for i in range(image.num_fields):
        field = image.field(i)
        index = where.get(field.name)
        project.append(index if index is not None and own.field(index).type == field.type else None)
    keys = key_columns(table_map, names)
    if tuple(project) == tuple(range(own.num_fields)):
        return _TableInfo(names, keys, converters)
    wanted = tuple(image.field(i).name for i in range(image.num_fields))
    aligned = tuple(_none if i is None else converters[i] for i in project)
    return _TableInfo(wanted, keys, aligned, tuple(project))


def _projected(info: _TableInfo, image: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    if image is None or info.project is None:
        return image
    return tuple(None if i is None else image[i] for i in info.project)


def _full(bitmap: bytes | None, width: int) -> bool:
    """True when a rows event's column bitmap names every column (no ABSENT values)."""
    if bitmap is None:
        return True
    whole, rest = divmod(width, 8)
    return bitmap[:whole] == b"\xff" * whole and (not rest or bitmap[whole] & ((1 << rest) - 1) == (1 << rest) - 1)


def _rows_events(reader: SplitReader, wanted: tuple[str, str] | None, maps: TypedMaps | None = None
                 ) -> Iterator[tuple[Item, RowsEvent | RowsBody, TableMapEvent]]:
    """The rows events of a split (of table ``wanted`` only, when set) with their table maps,
    typed by the schema history when ``maps`` follows one."""
    for item in reader:
        event = item.event
        code = event.type_code
        if code not in ROWS_KIND:
            if maps is not None and (code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT):
                maps.observe(item)
            continue
        assert isinstance(event, (RowsEvent, RowsBody))
        table_map = reader.decoder.table_map_for(event)
        if wanted is None or (table_map.schema, table_map.table) == wanted:
            yield item, event, table_map if maps is None else maps.typed(table_map, item)


def _rows_batches(split: Split, options: ScanOptions, schema: pa.Schema, columnar: bool = False,
                  history: SchemaHistory | None = None) -> Iterator[pa.RecordBatch]:
    """The rows view by the reference path (``columnar``: typed images built column by column;
    ``history``: names and types of a NO_LOG/MINIMAL binlog)."""
    wanted = options.table
    out = _Batches(schema, options.batch_rows, () if wanted is not None else ("before", "after"))
    reader = SplitReader(split, options, quiet=ROWS_QUIET, rows_bodies=True)
    maps = None if history is None else TypedMaps(history, split)
    image_type = schema.field("after").type
    cached: tuple[TableMapEvent, _TableInfo] | None = None
    for item, event, table_map in _rows_events(reader, wanted, maps):
        if cached is None or cached[0] is not table_map:
            if wanted is not None:
                cached = (table_map, _typed_info(table_map, image_type))
            else:
                cached = (table_map, _map_info(table_map))
            converters = cached[1].converters
            if columnar and converters is not None and out.typed != converters:
                if len(out.columns[0]):
                    batch = out.flush()
                    if batch is not None:
                        yield batch
                out.typed = converters
                out.columns = out._empty()
        yield from _add_event(out, cached[1], split, item, event, table_map, options.batch_rows, columnar)
    batch = out.flush()
    if batch is not None:
        yield batch


def _add_event(out: _Batches, info: _TableInfo, split: Split, item: Item, event: RowsEvent | RowsBody,
               table_map: TableMapEvent, batch_rows: int, columnar: bool) -> Iterator[pa.RecordBatch]:
    """Decode one rows event into ``out`` (reference path), yielding each batch it fills."""
    try:
        changes = row_decoder(table_map).decode(event)
    except DecodeError as err:
        raise err.located(split.path, item.position) from None
    # An event narrower than its table map (its images hold the first ``width`` columns) is
    # paired name by name, as a partial image is.
    narrow = event.width != len(info.names)
    partial_before = narrow or not _full(event.present_before, event.width)
    partial_after = narrow or not _full(event.present_after if event.kind == "update" else event.present_before, event.width)
    fixed = _location_and_gtid(split, item)
    fixed[4:4] = [None]  # row_index, set per row
    fixed += [valid_text(table_map.schema), valid_text(table_map.table), None, info.keys]
    for start in range(0, len(changes), batch_rows):
        chunk = changes[start : start + batch_rows]
        cols = out.columns
        for row_index, change in enumerate(chunk, start):
            fixed[4] = row_index
            fixed[-2] = change.kind
            for col, value in zip(cols, fixed):
                col.append(value)
        if info.converters is None:
            cols[-2].add_all(info.names, [_labelled(info, c.before) for c in chunk], partial_before)
            cols[-1].add_all(info.names, [_labelled(info, c.after) for c in chunk], partial_after)
        elif columnar:
            cols[-2].add_all([_projected(info, c.before) for c in chunk])
            cols[-1].add_all([_projected(info, c.after) for c in chunk])
        else:
            cols[-2].extend(_typed(info, c.before) for c in chunk)
            cols[-1].extend(_typed(info, c.after) for c in chunk)
        out.held += len(event.rows_data) * len(chunk) // max(len(changes), 1)
        if out.full():
            batch = out.flush()
            if batch is not None:
                yield batch


def _labelled(info: _TableInfo, image: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """A map image with ENUM/SET values as their labels (where the metadata lists them)."""
    if image is None or info.labels is None:
        return image
    return tuple(v if label is None or v is None or v is ABSENT else label(v) for v, label in zip(image, info.labels))


def _load_arrowfast() -> Any:
    """The compiled Arrow builder ``_arrowfast`` configured with the codec's compiled images, or
    None (not built, stale, ``MARIABINLOG_PURE_PYTHON=1``, or no compiled row decoder)."""
    images = compiled_images()
    module = None if images is None else load_fast("mariabinlog.spark._arrowfast", "PLAN_VERSION",
                                                   FAST_PLAN_VERSION, "codec/rows")
    if module is not None:
        module.configure(*images)
    return module


_arrowfast = _load_arrowfast()


def map_builder(render: Any) -> Any:
    """A compiled ``_arrowfast.MapBuilder`` (row images as Arrow map buffers, values rendered as
    ``render`` renders them), or None where the compiled builder or row decoder is not in use:
    the pure twin is :class:`MapColumn` (``columnar=False``)."""
    return None if _arrowfast is None or compiled_images() is None else _arrowfast.MapBuilder(render)


def repeat_per_row(events: list[Sequence[Any]], kinds: str, index: bytes) -> list[tuple[Any, ...]]:
    """The per-event values of a :func:`map_builder` batch repeated for each of its rows (row
    ``r`` takes ``events[index[r]]``; ``index``: the event numbers ``MapBuilder.take`` gives), as
    the buffers of Arrow arrays: one per ``kinds`` letter, ``q`` int64, ``i`` int32, ``s`` str,
    ``l`` list of str (see ``_arrowfast.repeat``).  Only with the compiled builder in use."""
    assert _arrowfast is not None
    return _arrowfast.repeat(events, kinds, index)  # type: ignore[no-any-return]


def _map_array(kind: pa.MapType, parts: tuple[Any, ...]) -> pa.Array:
    """A ``map<string,string>`` array from ``MapBuilder.take`` buffers (no copy)."""
    rows, entries, valid, offsets, key_offsets, keys, value_valid, value_offsets, values = parts
    buf = pa.py_buffer
    key_array = pa.Array.from_buffers(pa.string(), entries, [None, buf(key_offsets), buf(keys)], null_count=0)
    value_array = pa.Array.from_buffers(pa.string(), entries, [buf(value_valid), buf(value_offsets), buf(values)])
    pairs = pa.StructArray.from_arrays([key_array, value_array], fields=[kind.key_field, kind.item_field])
    return pa.Array.from_buffers(kind, rows, [buf(valid), buf(offsets)], children=[pairs])


def _shape(table_map: TableMapEvent) -> tuple[Any, ...]:
    """Everything of a table map that its row decoder and map images depend on: two maps of
    one shape decode and name rows alike."""
    return (table_map.table_id, table_map.map_flags, table_map.schema, table_map.table, table_map.column_types,
            tuple(table_map.column_meta), table_map.null_bitmap, table_map.optional_metadata)


def _repeat_kind(kind: pa.DataType) -> str:
    """The :func:`repeat_per_row` letter of a per-event column's Arrow type."""
    if pa.types.is_string(kind):
        return "s"
    if pa.types.is_int32(kind):
        return "i"
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        return "l"
    assert pa.types.is_int64(kind) or pa.types.is_timestamp(kind), kind
    return "q"


#: Columns of a rows-view batch that are not per-event values repeated per row.
_PER_ROW = ("row_index", "before", "after")


@functools.lru_cache(maxsize=8)
def _repeat_kinds(schema: pa.Schema) -> str:
    """The :func:`repeat_per_row` letters of a rows-view schema's per-event columns."""
    return "".join(_repeat_kind(f.type) for f in schema if f.name not in _PER_ROW)


def _repeated(kind: pa.DataType, rows: int, parts: tuple[Any, ...]) -> pa.Array:
    """An array of :func:`repeat_per_row` buffers (no copy)."""
    buf = pa.py_buffer
    valid, nulls, *data = parts
    buffers = [None if valid is None else buf(valid), *(buf(b) for b in data)]
    if not pa.types.is_list(kind):
        return pa.Array.from_buffers(kind, rows, buffers, null_count=nulls)
    items = len(data[1]) // 4 - 1
    child = pa.Array.from_buffers(kind.value_type, items, [None, *buffers[2:]], null_count=0)
    return pa.Array.from_buffers(kind, rows, buffers[:2], null_count=nulls, children=[child])


def _columnar_batch(schema: pa.Schema, taken: tuple[Any, ...], events: list[list[Any]]) -> pa.RecordBatch:
    """One rows-view batch: per-event columns repeated by the rows' event numbers, the row
    index and the before/after maps from the builder's buffers."""
    rows, event_no, row_index, before, after = taken
    repeated = iter(repeat_per_row(events, _repeat_kinds(schema), event_no))
    arrays = []
    for field in schema:
        if field.name == "row_index":
            arrays.append(pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(row_index)], null_count=0))
        elif field.name in ("before", "after"):
            arrays.append(_map_array(field.type, before if field.name == "before" else after))
        else:
            arrays.append(_repeated(field.type, rows, next(repeated)))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _rows_batches_columnar(split: Split, options: ScanOptions, schema: pa.Schema, builder: Any,
                           history: SchemaHistory | None = None) -> Iterator[pa.RecordBatch]:
    """The rows view with map images, built column by column by the compiled ``MapBuilder``:
    each batch holds at most ``batchRows`` rows and about :data:`MAX_BATCH_BYTES` bytes.
    Rows of tables with ENUM/SET labels (which the builder cannot render) are built by the
    reference path into batches of their own."""
    reader = SplitReader(split, options, quiet=ROWS_QUIET, rows_bodies=True)
    maps = None if history is None else TypedMaps(history, split)
    max_rows = options.batch_rows
    labelled = _Batches(schema, max_rows, ("before", "after"))
    cached: tuple[TableMapEvent, _TableInfo, Any, str, str] | None = None
    # Every event group maps its tables anew: a map of a shape seen before reuses its names,
    # keys and compiled row decoder (building them costs more than a small group's rows).
    # The reader hands repeated maps over as one event, so most are found by identity.
    by_map: dict[int, tuple[TableMapEvent, _TableInfo, Any, str, str]] = {}
    shapes: dict[tuple[Any, ...], tuple[_TableInfo, Any]] = {}
    events: list[list[Any]] = []  # per-event column values of the batch being built
    group: Group | None = None
    where: list[Any] = []  # the columns of the event's file and group
    for item, event, table_map in _rows_events(reader, None, maps):
        if cached is None or cached[0] is not table_map:
            cached = by_map.get(id(table_map))
            if cached is None or cached[0] is not table_map:
                shape = _shape(table_map)
                known = shapes.get(shape)
                if known is None:
                    if len(shapes) > 256:
                        shapes.clear()
                    known = shapes[shape] = (_map_info(table_map), row_decoder(table_map))
                if len(by_map) > 256:
                    by_map.clear()
                cached = by_map[id(table_map)] = (table_map, *known, valid_text(table_map.schema),
                                                  valid_text(table_map.table))
        info, decoder = cached[1], cached[2]
        if info.labels is not None:
            yield from _add_event(labelled, info, split, item, event, table_map, max_rows, False)
            continue
        assert isinstance(decoder, FastRowDecoder)
        if item.group is not group or not where:
            group = item.group
            where = _location_and_gtid(split, item)
        try:
            kind, data, first, second = decoder.programs(event)
            where[2], where[3] = item.position, item.index
            fixed = where + [cached[3], cached[4], kind, info.keys]
            pos, row_index, end = 0, 0, len(data)
            while pos < end:
                if not events or events[-1] is not fixed:
                    events.append(fixed)
                pos, row_index = builder.add(data, pos, first, second, kind, info.names, len(events) - 1, row_index,
                                             max_rows, MAX_BATCH_BYTES)
                if builder.rows >= max_rows or builder.nbytes >= MAX_BATCH_BYTES:
                    yield _columnar_batch(schema, builder.take(), events)
                    events = []
        except DecodeError as err:
            raise err.located(split.path, item.position) from None
    if builder.rows:
        yield _columnar_batch(schema, builder.take(), events)
    batch = labelled.flush()
    if batch is not None:
        yield batch


def _typed(info: _TableInfo, image: tuple[Any, ...] | None) -> dict[str, Any] | None:
    image = _projected(info, image)
    if image is None:
        return None
    assert info.converters is not None
    return {
        name: (None if value is None or value is ABSENT else convert(value))
        for name, value, convert in zip(info.names, image, info.converters)
    }


def _groups_batches(split: Split, options: ScanOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    out = _Batches(schema, options.batch_rows)
    current: Group | None = None
    events: list[bytes] = []

    def emit() -> None:
        assert current is not None
        row = [split.path, split.file_no, current.position, current.gtid, current.domain, current.server,
               _long(current.seq), _long(current.commit_id), _micros(current.timestamp), current.flags, len(events), list(events)]
        for col, value in zip(out.columns, row):
            col.append(value)
        out.held += sum(map(len, events))

    for item in SplitReader(split, options, raw=True):
        if item.group is not current:
            if current is not None:
                emit()
            current, events = item.group, []
        if current is not None:
            assert item.raw is not None
            events.append(item.raw)
        if out.full():
            batch = out.flush()
            if batch is not None:
                yield batch
    if current is not None:
        emit()
    batch = out.flush()
    if batch is not None:
        yield batch


_BUILDERS = {"events": _events_batches, "rows": _rows_batches, "groups": _groups_batches}


def read_splits(splits: Sequence[Split], options: ScanOptions, schema: pa.Schema, *,
                columnar: bool = True, history: str | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches of the chosen view for ``splits``, in order.

    ``columnar`` uses the compiled column builders where they exist (the same batches as the
    pure-Python reference path, which ``columnar=False`` or ``MARIABINLOG_PURE_PYTHON=1`` runs).
    ``history`` is the JSON text of the schema history that names and types the rows view (the
    driver's, :func:`scan_schema`); without it the ``schemaHistory`` file is read here, if given.
    """
    builder = map_builder(render) if columnar and options.view == "rows" and options.table is None else None
    build = _BUILDERS[options.view]
    known = None
    if options.view == "rows":
        if history is None and options.schema_history not in (None, NO_HISTORY):
            history = history_text(options.schema_history, options.listing.storage)
        known = None if history is None else loaded_history(history)
    for split in splits:
        if builder is not None:
            yield from _rows_batches_columnar(split, options, schema, builder, known)
        elif options.view == "rows":
            yield from _rows_batches(split, options, schema, columnar, known)
        else:
            yield from build(split, options, schema)

