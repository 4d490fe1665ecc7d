"""``mariabinlog dump --format=json``: one JSON object per event, one per line.

Every event the dump accepts (the same filters apply: positions, datetimes,
GTID windows, domain and server ids, ``--database``/``--table`` for table
maps, rows events and statements) becomes one line (JSON Lines)::

    {"file": "mysql-bin.000001", "pos": 1904, "end_log_pos": 2010,
     "timestamp": 1700000000, "time": "2023-11-14T22:13:20Z",
     "type": "Write_rows_v1", "type_code": 23, "server_id": 1, "flags": 0,
     "gtid": "0-1-7", ...fields of the event type...}

Common fields: ``file`` (the base name of the file given on the command
line), ``pos`` and ``end_log_pos`` (as SHOW BINLOG EVENTS gives them: the
event's byte offset and the header's end position; for `.ibb` files, whose
events have no positions of their own, the start and end offsets of the
commit record holding the event), ``timestamp`` (epoch seconds) and ``time``
(UTC), ``type`` as SHOW BINLOG EVENTS names it, ``type_code``, ``server_id``,
``flags`` (header flags) and ``gtid``: the GTID of the event group the event
belongs to, null outside groups.

Per type: Format_desc ``binlog_version, server_version, created``; Gtid
``domain_id, seq_no, standalone, flags2`` and ``commit_id``/``xid`` when
present; Gtid_list ``gtids``; Query ``database, query, thread_id, exec_time,
error_code``; Annotate_rows ``query``; Table_map ``table_id, database,
table, columns`` (each ``{"name", "type", "nullable"}`` plus ``unsigned``
and ``charset`` when the map's optional metadata says so); rows events
``table_id, database, table, kind, stmt_end, rows``; Xid ``xid``;
XA_prepare ``xid, one_phase``; Rotate ``next_file, next_position``;
Binlog_checkpoint ``file``; Intvar ``name, value``; RAND ``seed1, seed2``;
User var ``name, value``.

Rows: ``rows`` is a list of ``{"after": {...}}`` (insert), ``{"before":
{...}}`` (delete) or ``{"before": {...}, "after": {...}}`` (update).  Keys are
the column names when the table map carries them (``binlog_row_metadata=FULL``)
or the schema history knows the table and agrees with the map (DDL in the
binlog, ``--schema-from``/``--schema-file``/``--schema-history``; the history
also gives signedness, charsets and ENUM/SET labels), else ``"@1"``, ``"@2"``...
as ``mariadb-binlog -v`` numbers them, with a warning; columns
missing from a MINIMAL/NOBLOB image are left out.  Values:

* NULL: ``null``; integers, BIT, YEAR: numbers (signed unless the metadata
  says UNSIGNED); FLOAT/DOUBLE: numbers; DECIMAL: strings with every stored
  digit (``"-12.50"``), never floats.
* DATE ``"2024-01-31"``, DATETIME ``"2024-01-31T12:00:00.250000"``, TIME
  ``"-838:59:59"``, TIMESTAMP ``"2024-01-31T12:00:00Z"`` (UTC): ISO 8601 shapes,
  but values outside ISO stay as stored: zero dates ``"0000-00-00"``,
  ``"2024-00-00T00:00:00"``, zero TIMESTAMP ``"0000-00-00T00:00:00Z"``.
  Fractions are shown (6 digits) when not zero.
* ENUM and SET: the member names (a string, a list of strings) when the
  metadata lists them, else the stored number (1-based index, bitmask).
* Text: a string.  Without charset metadata a value that is valid UTF-8 is
  taken as text.  Everything else (BINARY/BLOB/GEOMETRY bytes, text that is
  not valid UTF-8) is an object ``{"base64": "..."}`` holding the exact bytes;
  statement texts that are not valid UTF-8 are given the same way.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import math
import os
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..codec import columns as C
from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    INTVAR_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    CHECKSUM_CRC32,
    event_type_name,
    gtid_fields,
    xid_value,
)
from ..codec.groups import GroupBoundary
from ..codec.gtid import Gtid
from ..codec.rows import (
    ABSENT,
    MysqlDate,
    MysqlDateTime,
    MysqlTime,
    MysqlTimestamp,
    row_decoder,
)
from ..codec.rows.packed import decimal_str
from ..codec import charsets
from ..schema import SchemaTracker
from .dump.sink import EventSink
from .printer.base import _fast
from .printer.rows import fast_op, rows_parts

#: JSON text of a string (``ensure_ascii=False``: UTF-8 kept, quotes and controls escaped).
json_string = json.encoder.encode_basestring


def json_encoder(*, allow_nan: bool) -> Callable[[Any], str]:
    """``json.dumps(obj, ensure_ascii=False, allow_nan=allow_nan)`` with one C encoder made once:
    ``json.dumps`` builds a new encoder per call, which cost more than encoding a small event's
    fields.  No cycle check (the objects written are trees)."""
    base = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), allow_nan=allow_nan)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the json accelerator
        return base.encode
    chunks = make(None, base.default, json_string, None, ": ", ", ", False, False, allow_nan)

    def dumps(obj: Any) -> str:
        if type(obj) is str:
            return json_string(obj)  # type: ignore[no-any-return]
        return "".join(chunks(obj, 0))

    return dumps


#: The JSON output's encoder: no NaN or infinity (the writer gives those as strings).
_dumps = json_encoder(allow_nan=False)


def json_name(text: str) -> str:
    """A name the codec decoded with ``surrogateescape`` (database, table, column), or a JSON
    line holding such names, as JSON text: undecodable bytes become U+FFFD, as Query database
    names do (JSON is UTF-8)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _bytes(value: bytes) -> dict[str, str]:
    return {"base64": base64.b64encode(value).decode("ascii")}


def text_or_bytes(value: bytes) -> str | dict[str, str]:
    """``value`` as a string when it is valid UTF-8, else ``{"base64": ...}``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return _bytes(value)


@functools.lru_cache(maxsize=4096)
def _time_fields(epoch: int) -> str:
    """The ``timestamp`` and ``time`` (ISO 8601 UTC) fields of an event written at ``epoch``
    (cached: the events of a group, and groups, share their second)."""
    iso = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f'"timestamp": {epoch}, "time": "{iso}"'


@functools.lru_cache(maxsize=None)
def _type_fields(code: int) -> str:
    """The ``type`` and ``type_code`` fields of an event type."""
    return f'"type": {_dumps(event_type_name(code))}, "type_code": {code}'


def _frac(microsecond: int) -> str:
    return f".{microsecond:06d}" if microsecond else ""


class _Column:
    """How one column's values become JSON."""

    __slots__ = ("binary", "key", "members", "plain", "set_members")

    def __init__(self, key: str, binary: bool | None, members: tuple[bytes, ...] | None, is_set: bool) -> None:
        self.key = key
        self.binary = binary
        self.members = None if is_set else members
        self.set_members = members if is_set else None
        #: Whether an integer value is its own JSON (no ENUM or SET labels).
        self.plain = members is None


def _datetime_json(value: MysqlDateTime) -> str:
    # %-formatting of the tuple itself: twice as fast as an f-string of its seven fields.
    if value.microsecond:
        return "%04d-%02d-%02dT%02d:%02d:%02d.%06d" % value
    return "%04d-%02d-%02dT%02d:%02d:%02d" % value[:6]


def _timestamp_json(value: MysqlTimestamp) -> str:
    if value.seconds == 0 and value.microsecond == 0:
        return "0000-00-00T00:00:00Z"
    moment = datetime.datetime.fromtimestamp(value.seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + _frac(value.microsecond) + "Z"


def _decimal_json(value: Decimal) -> str:
    """A DECIMAL as a string with every stored digit, as the server prints it (never the
    exponent form ``str(Decimal)`` takes below 1e-6: ``0.00000000``, not ``0E-8``)."""
    return decimal_str(value).decode()


def _float_json(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


#: Values whose JSON form depends on their type alone, by exact type (one lookup per value;
#: the row decoder makes these types, never subclasses of them).
_BY_TYPE: dict[type, Callable[[Any], Any]] = {
    Decimal: _decimal_json,
    float: _float_json,
    MysqlDateTime: _datetime_json,
    MysqlDate: str,
    MysqlTime: str,
    MysqlTimestamp: _timestamp_json,
}


def json_value(value: Any, column: _Column) -> Any:
    """One column value as a JSON-ready object (see the module docstring)."""
    convert = _BY_TYPE.get(type(value))
    if convert is not None:
        return convert(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if column.members is not None:
            return column.members[value - 1].decode("utf-8", "replace") if 0 < value <= len(column.members) else value
        if column.set_members is not None:
            return [m.decode("utf-8", "replace") for i, m in enumerate(column.set_members) if value >> i & 1]
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:  # undecodable bytes kept as surrogates
            return _bytes(value.encode("utf-8", "surrogateescape"))
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value)
        return _bytes(value) if column.binary else text_or_bytes(value)
    return str(value)


class TableViews:
    """The :class:`TableView` of each Table_map event, made once per distinct map: a binlog repeats
    the same Table_map in every transaction, and a view (with its row decoder, compiled on
    first use) costs more than the rows of a small one."""

    __slots__ = ("_views", "_maps", "_ctx")

    #: Distinct maps kept (a new one beyond that starts the cache afresh).
    LIMIT = 4096

    def __init__(self) -> None:
        self._views: dict[tuple[bytes, int], tuple[Any, TableView]] = {}
        self._maps: dict[bytes, Any] = {}
        self._ctx: Any = None

    def of_event(self, ev: Any, schema: SchemaTracker | None, gtid: str | None) -> TableView:
        """The view of the Table_map event ``ev`` (an event view): decoded once per distinct
        map body (in one Format_description's context), typed by the schema history at
        ``gtid`` (which follows every map), its view made once per (map, metadata)."""
        body = ev.body()
        if ev.ctx is not self._ctx:
            self._maps.clear()
            self._ctx = ev.ctx
        decoded = self._maps.get(body)
        if decoded is None:
            if len(self._maps) >= self.LIMIT:
                self._maps.clear()
            decoded = self._maps[body] = ev.decoded()
        tm = schema.typed_map(decoded, gtid) if schema is not None else decoded
        return self.view(body, tm, decoded)

    def view(self, body: bytes, tm: Any, decoded: Any) -> TableView:
        """The view of ``tm``: the map ``decoded`` from the event body ``body``, or the typed copy
        a schema history made of it (whose metadata the history keeps, one object per table
        version)."""
        metadata = tm.optional_metadata if tm is not decoded else None
        key = (body, id(metadata))
        found = self._views.get(key)
        if found is not None and found[0] is metadata:
            return found[1]
        if len(self._views) >= self.LIMIT:
            self._views.clear()
        view = TableView(tm)
        self._views[key] = (metadata, view)
        return view


class TableView:
    """A table map with what the JSON writer needs to render its rows."""

    __slots__ = ("columns", "database", "event", "fast", "fast_debezium", "table", "real_types", "names_json", "_described")

    def __init__(self, tm: Any) -> None:
        self.event = tm
        self.database = json_name(tm.schema)
        self.table = json_name(tm.table)
        #: ``"table_id": ..., "database": ..., "table": ...`` of this map's events, as JSON text.
        self.names_json = f'"table_id": {tm.table_id}, "database": {json_string(self.database)}, "table": {json_string(self.table)}'
        meta = tm.optional_metadata
        types, metas = tm.column_types, tm.column_meta
        names = meta.column_names if meta is not None else None
        collations = meta.column_collations(types, metas) if meta is not None else [None] * len(types)
        enums = iter(meta.enum_str_values or ()) if meta is not None else iter(())
        sets = iter(meta.set_str_values or ()) if meta is not None else iter(())
        cols = []
        #: Each column's real type (``columns.real_type``: ENUM/SET behind STRING).
        self.real_types: list[int] = []
        for index, (ctype, cmeta) in enumerate(zip(types, metas)):
            rtype = C.real_type(ctype, cmeta)
            self.real_types.append(rtype)
            members = None
            is_set = rtype == C.MYSQL_TYPE_SET
            if rtype == C.MYSQL_TYPE_ENUM:
                members = next(enums, None)
            elif is_set:
                members = next(sets, None)
            collation = collations[index] if index < len(collations) else None
            binary = (
                True
                if rtype == C.MYSQL_TYPE_GEOMETRY or collation == C.BINARY_COLLATION
                else (False if collation is not None else None)
            )
            key = json_name(names[index]) if names is not None and index < len(names) else f"@{index + 1}"
            cols.append(_Column(key, binary, members, is_set))
        self.columns = cols
        self._described: str | None = None
        #: ``(names_json, plan)`` for ``_dumpfast.json_groups`` (:func:`json_column_plan`), False
        #: when a column needs the Python writer, None until the writer asks.
        self.fast: tuple[bytes, tuple[tuple[Any, ...], ...]] | bool | None = None
        #: The same for ``_dumpfast.debezium_groups`` (``debezium.debezium_plan``).
        self.fast_debezium: tuple[Any, ...] | bool | None = None

    def described(self) -> str:
        """:meth:`describe` as JSON text, made once (every Table_map event of this map repeats it)."""
        if self._described is None:
            self._described = _dumps(self.describe())
        return self._described

    def describe(self) -> list[dict[str, Any]]:
        """The ``columns`` of a Table_map object."""
        tm = self.event
        meta = tm.optional_metadata
        unsigned = meta.unsigned_flags(tm.column_types, tm.column_meta) if meta is not None and meta.signedness else None
        collations = meta.column_collations(tm.column_types, tm.column_meta) if meta is not None else None
        out = []
        for index, (ctype, cmeta) in enumerate(zip(tm.column_types, tm.column_meta)):
            item: dict[str, Any] = {
                "name": self.columns[index].key,
                "type": C.verbose_type_name(ctype, cmeta) or C.TYPE_NAMES.get(C.real_type(ctype, cmeta), str(ctype)),
                "nullable": tm.nullable(index),
            }
            if unsigned is not None and unsigned[index]:
                item["unsigned"] = True
            if collations is not None and collations[index] is not None:
                entry = charsets.COLLATIONS.get(collations[index])
                item["charset"] = entry[1] if entry else collations[index]
            out.append(item)
        return out

    def image(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """One row image as ``{column: value}`` (absent columns left out)."""
        out = {}
        for col, value in zip(self.columns, values):
            kind = type(value)
            if value is None or (kind is int and col.plain) or (kind is str and value.isascii()):
                out[col.key] = value  # NULL, plain integers, ASCII text (isascii: a flag, no scan): most values
            elif value is not ABSENT:
                out[col.key] = json_value(value, col)
        return out


#: ``_dumpfast`` opcodes (printer.rows.fast_op) the compiled JSON rows take: all but those of the
#: old TIMESTAMP, DATETIME and TIME (8, 10, 12).
_JSON_OPS = frozenset((1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 14, 15, 16))


def json_column_plan(view: TableView) -> tuple[tuple[Any, ...], ...] | bool:
    """The column plan of ``_dumpfast.json_groups`` (and ``debezium_groups``) for a view: per column ``(opcode, a, b,
    kind, '"key": ', members, is_set)`` (kind: 1 unsigned for integers; for text and bytes
    0 UTF-8 text or bytes, 1 bytes, 2 ASCII text of a single-byte charset; members: ENUM/SET
    names as JSON strings), rendering what :meth:`TableView.image` renders from the row
    decoder's values; False when a column needs this writer (a multi-byte text codec other
    than UTF-8, the old temporal types, a type without an opcode)."""
    tm = view.event
    types, metas = tm.column_types, tm.column_meta
    meta = tm.optional_metadata
    unsigned = meta.unsigned_flags(types, metas) if meta is not None else [False] * len(types)
    collations = meta.column_collations(types, metas) if meta is not None else [None] * len(types)
    plan = []
    for index, (ctype, cmeta) in enumerate(zip(types, metas)):
        op = fast_op(ctype, cmeta)
        if op is None or op[0] not in _JSON_OPS or index >= len(view.columns):
            return False
        column = view.columns[index]
        kind = 0
        if op[0] == 1:
            kind = 1 if unsigned[index] else 0
        elif op[0] == 16:
            rtype = C.real_type(ctype, cmeta)
            codec = C.collation_codec(collations[index]) if collations[index] is not None else None
            text = codec if rtype in _JSON_TEXT_TYPES else None
            if text is None:
                kind = 1 if column.binary else 0
            elif text == "utf_8":
                kind = 0
            elif text in _ASCII_CODECS:
                kind = 2  # ASCII values in C, others by this writer
            else:
                return False
        members = column.members if column.members is not None else column.set_members
        names = None
        if members is not None:
            names = tuple(json_string(m.decode("utf-8", "replace")).encode() for m in members)
        key = (json_string(column.key) + ": ").encode()
        plan.append((op[0], op[1], op[2], kind, key, names, column.set_members is not None))
    return tuple(plan)


#: Single-byte text codecs that read ASCII as ASCII: their ASCII values are JSON text as they are.
_ASCII_CODECS = frozenset(("cp1252", "latin_1", "ascii"))
#: The column types the row decoder decodes as text when they have a charset (packed._TEXT_TYPES).
_JSON_TEXT_TYPES = frozenset((C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_BLOB))

#: The event types of the compiled JSON groups, with their '"type": ..., "type_code": N' text.
_GROUP_TYPES = (GTID_EVENT, ANNOTATE_ROWS_EVENT, TABLE_MAP_EVENT, XID_EVENT, 23, 24, 25, 30, 31, 32)


def compiled_groups_ok(database: str | None, table: str | None, schema: SchemaTracker | None) -> bool:
    """Whether the compiled groups may write for a JSON or Debezium writer: built, no database
    or table filter, and a schema history (if any) that follows the stream, so that a map's
    view changes only at the DDL the writer sees."""
    return _fast is not None and database is None and table is None and (schema is None or schema.follows_stream)


def group_accept(
    schema: SchemaTracker | None, accept: Callable[[int, int, int], bool]
) -> Callable[[int, int, int], bool]:
    """The compiled groups' ``accept(domain, server, seq)``: the dump's, which also tells the
    schema history each group's GTID it lets stay (what the maps' ``typed_map`` does on the
    event path)."""
    if schema is None:
        return accept
    observe = schema.observe_group_gtid

    def go_on(domain: int, server: int, seq: int) -> bool:
        if not accept(domain, server, seq):
            return False
        observe(Gtid(domain, server, seq))
        return True

    return go_on


class JsonSink(EventSink):
    """Writes every accepted event as one JSON object per line."""

    record_positions = True

    def __init__(self, write: Callable[[bytes], Any], opts: Any, schema: SchemaTracker | None = None) -> None:
        super().__init__(write)
        #: The schema history that names and types the rows of tables whose maps lack FULL metadata.
        self.schema = schema
        self.database = opts.database
        self.table_filter = opts.table
        self.tables: dict[int, TableView] = {}
        self.views = TableViews()
        self.gtid: str | None = None
        #: Where the current group ends: the codec's one rule.
        self.boundary = GroupBoundary()
        self.current_db = ""
        self.display_name = ""
        self._file_json = '""'
        #: Table_map body -> (table_id, its line's fields, view), for the compiled groups; kept
        #: only while the schema cannot change a map's view (cleared at DDL, files, formats).
        self.fast_tables: dict[bytes, tuple[int, bytes, TableView]] = {}
        self._types = {code: _type_fields(code).encode() for code in _GROUP_TYPES}

    def begin_file(self, name: str = "") -> None:
        super().begin_file(name)
        self.display_name = os.path.basename(name)
        self._file_json = _dumps(self.display_name)
        self.tables.clear()
        self.fast_tables.clear()

    def _accept(self, database: str, table: str | None = None) -> bool:
        if self.database is not None and database != self.database:
            return False
        return not (table is not None and self.table_filter is not None and table != self.table_filter)

    def print_event(self, ev: Any) -> None:
        code = ev.type_code
        # The common fields, formatted; then the event's own: formatted for the events of every
        # transaction (GTID, Annotate_rows, Table_map, Xid), in ``obj`` for the others.
        obj: dict[str, Any] = {}
        head = (
            f'{{"file": {self._file_json}, "pos": {ev.position}, "end_log_pos": {ev.log_pos}, '
            f'{_time_fields(ev.when)}, {_type_fields(code)}, "server_id": {ev.server_id}, "flags": {ev.flags}, '
        )
        if code == GTID_EVENT:
            seq_no, domain_id, flags2 = gtid_fields(ev.buf, ev.body_pos, ev.body_end)
            self.gtid = gtid = f"{domain_id}-{ev.server_id}-{seq_no}"
            self.boundary.start(flags2)
            fields = (
                f'"gtid": "{gtid}", "domain_id": {domain_id}, "seq_no": {seq_no}, '
                f'"standalone": {"true" if self.boundary.standalone else "false"}, "flags2": {flags2}'
            )
            if flags2 & (FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA):
                g = ev.decoded()
                if flags2 & FL_GROUP_COMMIT_ID:
                    obj["commit_id"] = g.commit_id
                if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
                    obj["xid"] = _xid(g.xa_format_id or 0, g.xa_gtrid, g.xa_bqual)
            self._line(head, fields, obj)
            return
        # Within a group, its GTID ("0-1-5": no character JSON escapes), else null.
        gtid_json = f'"gtid": "{self.gtid}"' if self.boundary.open else '"gtid": null'
        if code == XID_EVENT:
            self._line(head, f'{gtid_json}, "xid": {xid_value(ev.buf, ev.body_pos, ev.body_end)}')
            self.boundary.end_after(code)
            return
        if code == ANNOTATE_ROWS_EVENT:
            self._line(head, f'{gtid_json}, "query": {_dumps(text_or_bytes(ev.body()))}')
            self.boundary.end_after(code)
            return
        if code == TABLE_MAP_EVENT:
            table = self.views.of_event(ev, self.schema, self.gtid if self.boundary.open else None)
            self.tables[table.event.table_id] = table
            if self._accept(table.database, table.table):
                fields = f'{table.names_json}, "columns": {table.described()}'
                self._line(head, f"{gtid_json}, {fields}")
                if compiled_groups_ok(self.database, self.table_filter, self.schema):
                    self._keep_for_groups(ev.body(), table, fields)
            self.boundary.end_after(code)
            return
        obj["gtid"] = self.gtid if self.boundary.open else None
        if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
            q = ev.decoded()
            database = q.database.decode("utf-8", "replace")
            self.boundary.end_after(code, q.query)
            if self.schema is not None and self.schema.observe_query(
                q, file=self.display_name, pos=ev.position, gtid=obj["gtid"]
            ):
                self.fast_tables.clear()  # a table changed: its maps' views may too
            if not self._accept(database):
                return
            obj.update(
                database=database,
                query=text_or_bytes(q.query),
                thread_id=q.thread_id,
                exec_time=q.exec_time,
                error_code=q.error_code,
            )
        elif code in ROWS_KIND:
            rows_ev = rows_parts(ev) or ev.decoded()
            table = self.tables.get(rows_ev.table_id)
            if table is None:
                obj.update(table_id=rows_ev.table_id, kind=rows_ev.kind, error="no table map for this table_id")
            else:
                if not self._accept(table.database, table.table):
                    return
                rows = []
                for change in row_decoder(table.event).decode(rows_ev):
                    row: dict[str, Any] = {}
                    if change.before is not None:
                        row["before"] = table.image(change.before)
                    if change.after is not None:
                        row["after"] = table.image(change.after)
                    rows.append(row)
                # (the table map's names_json holds this event's table id: it found the map by it)
                self._line(
                    head,
                    f'{gtid_json}, {table.names_json}, "kind": "{rows_ev.kind}", '
                    f'"stmt_end": {"true" if rows_ev.stmt_end else "false"}, "rows": {_dumps(rows)}',
                )
                self.boundary.end_after(code)
                return
        elif code == XA_PREPARE_LOG_EVENT:
            x = ev.decoded()
            obj.update(xid=_xid(x.format_id, x.gtrid, x.bqual), one_phase=x.one_phase)
        elif code == FORMAT_DESCRIPTION_EVENT:
            fd = ev.decoded()
            obj.update(
                binlog_version=fd.binlog_version,
                server_version=fd.server_version,
                created=fd.create_timestamp,
            )
            self.tables.clear()
            self.fast_tables.clear()
        elif code == GTID_LIST_EVENT:
            obj["gtids"] = [f"{d}-{s}-{n}" for d, s, n in ev.decoded().gtids]
        elif code == BINLOG_CHECKPOINT_EVENT:
            obj["checkpoint_file"] = text_or_bytes(ev.decoded().filename)
        elif code == ROTATE_EVENT:
            r = ev.decoded()
            obj.update(next_file=text_or_bytes(r.next_file), next_position=r.next_position)
        elif code == INTVAR_EVENT:
            i = ev.decoded()
            obj.update(name="LAST_INSERT_ID" if i.kind == 1 else "INSERT_ID", value=i.value)
        elif code == RAND_EVENT:
            r = ev.decoded()
            obj.update(seed1=r.seed1, seed2=r.seed2)
        elif code == USER_VAR_EVENT:
            uv = ev.decoded()
            obj.update(name=text_or_bytes(uv.var_name), value=_user_var_value(uv))
        self._emit(head, obj)
        if code != QUERY_EVENT and code != QUERY_COMPRESSED_EVENT:
            self.boundary.end_after(code)

    # -- whole groups in compiled code -----------------------------------------------------------

    def _keep_for_groups(self, body: bytes, table: TableView, fields: str) -> None:
        """Remember a Table_map's line and view (and its rows' plan) for the compiled groups."""
        if table.fast is None:
            plan = json_column_plan(table)
            table.fast = False if plan is False else (table.names_json.encode(), plan)
        if len(self.fast_tables) >= TableViews.LIMIT:
            self.fast_tables.clear()
        self.fast_tables[body] = (table.event.table_id, fields.encode(), table)

    def print_groups(
        self,
        data: Any,
        pos: int,
        limit: int,
        soft: int,
        verify: bool,
        accept: Callable[[int, int, int], bool],
        at: int = -1,
    ) -> tuple[int, bool]:
        """Whole ordinary groups (GTID, Annotate_rows, Table_map, rows events, Xid) from ``pos``
        in compiled code (``_dumpfast.json_groups``), line for line as :meth:`print_event`
        writes them; see :meth:`Printer.print_groups <mariabinlog.tools.printer.printer.Printer.print_groups>`.
        Legacy files only (``at`` -1: the `.ibb` lines name their records)."""
        if at != -1 or self.boundary.open or not self.fast_tables or not compiled_groups_ok(self.database, self.table_filter, self.schema):
            return pos, False
        cfg = (
            self.checksum_alg == CHECKSUM_CRC32,
            verify,
            self._file_json.encode(),
            self.ctx.rows_post_header_lengths(),
        )
        done, text, stopped, flags2, gtid = _fast.json_groups(
            data, pos, limit, soft, cfg, self.fast_tables, self.tables, self._types, group_accept(self.schema, accept)
        )
        if done != pos:
            self.out.append(text)
            self.gtid = gtid
            self.boundary.start(flags2)
            self.boundary.end_after(XID_EVENT)
        return done, stopped

    def _emit(self, head: str, obj: dict[str, Any]) -> None:
        """One line: ``head`` (the common fields, formatted), then ``obj``'s fields, as json.dumps
        would write the whole object."""
        self.out.append((head + _dumps(obj)[1:]).encode("utf-8") + b"\n")

    def _line(self, head: str, fields: str, obj: dict[str, Any] | None = None) -> None:
        """One line: ``head``, then ``fields`` (the event's own, formatted), then ``obj``'s."""
        rest = f"{fields}, {_dumps(obj)[1:]}" if obj else fields + "}"
        self.out.append((head + rest).encode("utf-8") + b"\n")


def _xid(format_id: int, gtrid: bytes, bqual: bytes) -> dict[str, Any]:
    return {"format_id": format_id, "gtrid": gtrid.hex(), "bqual": bqual.hex()}


def _user_var_value(uv: Any) -> Any:
    value = uv.decoded_value()
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return _decimal_json(value)
    if isinstance(value, bytes):
        return _bytes(value) if uv.charset == C.BINARY_COLLATION else text_or_bytes(value)
    return value
