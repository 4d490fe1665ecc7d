"""``mariabinlog dump --format=debezium``: one Debezium-shaped change event per row change.

Each line is one record ``{"topic": ..., "key": ..., "value": ...}`` as
Debezium's MariaDB connector would put it on Kafka with the JSON converter and
``schemas.enable=false``:

* row changes: topic ``<name>.<db>.<table>``, key the primary key columns (from
  the binlog's FULL metadata or the schema history; null without one), value
  the envelope ``{"before", "after", "source", "op", "ts_ms", "transaction"}``
  with ``op`` ``c``/``u``/``d``;
* DDL: topic ``<name>``, key ``{"databaseName"}``, value a schema-change record
  ``{"source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"}``;
* statements logged in STATEMENT or MIXED format (they carry no rows): topic
  ``<name>.statements``, value ``{"source", "ts_ms", "databaseName", "statement",
  "warning"}``, and one logged warning advising ``binlog_format=ROW``.

``source`` holds ``version, connector ("mariadb"), name, ts_ms, snapshot, db,
sequence, table, server_id, gtid, file, pos, row, thread, query`` (``query`` when
the binlog has the Annotate_rows statement).  Value encodings are documented in
``docs/debezium.md``; :func:`encode_value` is the one place they are made.
"""

from __future__ import annotations

import base64
import datetime
import logging
import os
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .. import __version__
from ..codec import columns as C
from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FORMAT_DESCRIPTION_EVENT,
    CHECKSUM_CRC32,
    GTID_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    XID_EVENT,
    gtid_fields,
    gtid_short_flags_extra,
)
from ..codec.groups import GroupBoundary
from ..codec.rows import ABSENT, MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp, row_decoder
from ..codec.rows.packed import decimal_str, geometry_parts, uint_image
from ..schema import SchemaTracker, Table
from ..schema.ddl import changes_shape, is_ddl
from .jsonout import (
    TableView,
    TableViews,
    compiled_groups_ok,
    group_accept,
    json_column_plan,
    json_encoder,
    json_name,
    json_string,
    json_value,
)
from .dump.sink import EventSink
from .printer.base import _fast
from .printer.rows import rows_parts

log = logging.getLogger(__name__)

CONNECTOR = "mariadb"
VERSION = __version__
_OPS = {"insert": "c", "update": "u", "delete": "d"}
#: Statements that change rows: logged as text (STATEMENT/MIXED), they are reported as such.
_ROW_STATEMENTS = (b"INSERT", b"UPDATE", b"DELETE", b"REPLACE", b"LOAD")
#: One record as JSON text, as ``json.dumps(record, ensure_ascii=False)`` writes it.
_dumps = json_encoder(allow_nan=True)


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def encode_value(value: Any, rtype: int, meta: int, column: Any) -> Any:
    """One column value as Debezium encodes it (see ``docs/debezium.md``)."""
    if value is None:
        return None
    if rtype == C.MYSQL_TYPE_NEWDECIMAL and isinstance(value, Decimal):
        return decimal_str(value).decode()  # decimal.handling.mode=string: every stored digit
    if rtype == C.MYSQL_TYPE_BIT and isinstance(value, int):
        width = C.bit_width(meta)
        return bool(value) if width == 1 else _b64(uint_image(value, (width + 7) // 8))
    if rtype == C.MYSQL_TYPE_SET and isinstance(value, int) and column.set_members is not None:
        return ",".join(m.decode("utf-8", "replace") for i, m in enumerate(column.set_members) if value >> i & 1)
    if isinstance(value, MysqlDateTime):  # DATETIME: Timestamp (ms) up to fsp 3, MicroTimestamp (µs) above
        days = C.epoch_days(value.year, value.month, value.day)
        if days is None or value.hour > 23 or value.minute > 59 or value.second > 59 or value.microsecond > 999_999:
            return None
        micros = ((days * 24 + value.hour) * 60 + value.minute) * 60_000_000 + value.second * 1_000_000 + value.microsecond
        return micros if meta > 3 else micros // 1000
    if isinstance(value, MysqlDate):  # Date: days since the epoch
        return C.epoch_days(value.year, value.month, value.day)
    if isinstance(value, MysqlTime):  # MicroTime: microseconds
        return value.to_timedelta() // datetime.timedelta(microseconds=1)
    if isinstance(value, MysqlTimestamp):  # ZonedTimestamp: ISO-8601 in UTC
        if value.seconds == 0 and value.microsecond == 0:
            return None
        try:  # a fraction past 999999 (damaged bytes) is null, as an invalid date
            moment = value.to_datetime()
        except (ValueError, OverflowError):
            return None
        return moment.isoformat().replace("+00:00", "Z")
    if rtype == C.MYSQL_TYPE_GEOMETRY and isinstance(value, bytes | bytearray):
        srid, wkb = geometry_parts(bytes(value))
        return {"wkb": _b64(wkb), "srid": srid}
    out = json_value(value, column)
    if isinstance(out, dict) and "base64" in out:  # binary.handling.mode=base64
        return out["base64"]
    return out


class DebeziumWriter:
    """Turns accepted events into Debezium records (dicts); the sink and the Python API share it."""

    def __init__(
        self, schema: SchemaTracker, *, name: str = "mariabinlog", database: str | None = None, table: str | None = None
    ) -> None:
        self.schema = schema
        self.name = name
        self.database = database
        self.table_filter = table
        self.tables: dict[int, TableView] = {}
        self.views = TableViews()
        #: Table_map body -> (table_id, b"", view), for the compiled groups (:meth:`groups`); kept
        #: only while the schema cannot change a map's view (cleared at DDL, files, formats).
        self.fast_tables: dict[bytes, tuple[int, bytes, TableView]] = {}
        #: The fields every record's source starts with, as JSON text.
        self.source_prefix = (
            f'"version": {json_string(VERSION)}, "connector": "{CONNECTOR}", "name": {json_string(json_name(name))}'
        ).encode()
        self.gtid: str | None = None
        #: Where the current group ends: the codec's one rule.
        self.boundary = GroupBoundary()
        self.query: str | None = None
        self.file = ""
        self.statements = 0
        #: Thread id of the group (its GTID event's or a Query event's), given to its row changes.
        self.thread: int | None = None

    def _source(self, ev: Any, db: str, table: str | None, row: int = 0, thread: int | None = None) -> dict[str, Any]:
        return {
            "version": VERSION,
            "connector": CONNECTOR,
            "name": self.name,
            "ts_ms": ev.when * 1000,
            "snapshot": "false",
            "db": db,
            "sequence": None,
            "table": table,
            "server_id": ev.server_id,
            "gtid": self.gtid if self.boundary.open else None,
            "file": self.file,
            "pos": ev.position,
            "row": row,
            "thread": thread,
            "query": self.query,
        }

    def _accept(self, database: str, table: str | None = None) -> bool:
        if self.database is not None and database != self.database:
            return False
        return not (table is not None and self.table_filter is not None and table != self.table_filter)

    def records(self, ev: Any) -> list[dict[str, Any]]:
        """The records one event gives (most give none)."""
        code = ev.type_code
        if code == GTID_EVENT:
            seq_no, domain_id, flags2 = gtid_fields(ev.buf, ev.body_pos, ev.body_end)
            self.gtid = f"{domain_id}-{ev.server_id}-{seq_no}"
            self.boundary.start(flags2)
            self.query = None
            # The thread id is an extra field of MariaDB 11.x+ GTID events; None before.
            extra = flags2 & (FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA) or gtid_short_flags_extra(
                ev.buf, ev.body_pos, ev.body_end
            )
            self.thread = ev.decoded().thread_id if extra else None
            return []
        out: list[dict[str, Any]] = []
        if code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            q = ev.decoded()
            self.thread = q.thread_id
            out = self._query(ev, q)
            self.boundary.end_after(code, bytes(q.query))
        elif code == ANNOTATE_ROWS_EVENT:
            self.query = ev.body().decode("utf-8", "replace")
        elif code == TABLE_MAP_EVENT:
            view = self.views.of_event(ev, self.schema, self.gtid if self.boundary.open else None)
            self.tables[view.event.table_id] = view
            if compiled_groups_ok(self.database, self.table_filter, self.schema):
                if view.fast_debezium is None:
                    view.fast_debezium = debezium_plan(view, self.name)
                if len(self.fast_tables) >= TableViews.LIMIT:
                    self.fast_tables.clear()
                self.fast_tables[ev.body()] = (view.event.table_id, b"", view)
        elif code in ROWS_KIND:
            out = self._rows(ev)
        elif code == FORMAT_DESCRIPTION_EVENT:
            self.tables.clear()
            self.fast_tables.clear()
        if code != QUERY_EVENT and code != QUERY_COMPRESSED_EVENT:
            self._passed(code)
        return out

    def _passed(self, code: int) -> None:
        """After an event other than a Query: the group may have ended with it."""
        if self.boundary.end_after(code):
            self.query = None

    def _query(self, ev: Any, q: Any) -> list[dict[str, Any]]:
        gtid = self.gtid if self.boundary.open else None
        changed = self.schema.observe_query(q, file=self.file, pos=ev.position, gtid=gtid)
        if changed:
            self.fast_tables.clear()  # a table changed: its maps' views may too
        database = bytes(q.database).decode("utf-8", "replace")
        text = bytes(q.query).decode("utf-8", "replace")
        if is_ddl(text) and not q.error_code:
            if not self._accept(database):
                return []
            # Debezium lists tableChanges only for a shape change (none for TRUNCATE).
            shapes = changed if changes_shape(text) else []
            changes = [_table_change(key, self.schema.history.table(*key)) for key in dict.fromkeys(shapes)]
            value = {
                "source": self._source(ev, database, None, thread=q.thread_id),
                "ts_ms": ev.when * 1000,
                "databaseName": database,
                "schemaName": None,
                "ddl": text,
                "tableChanges": changes,
            }
            return [{"topic": self.name, "key": {"databaseName": database}, "value": value}]
        upper = bytes(q.query).lstrip().upper()
        if q.error_code or not upper.startswith(_ROW_STATEMENTS) or not self._accept(database):
            return []
        if self.statements == 0:
            log.warning(
                "statement logged in STATEMENT or MIXED format at %s:%d (GTID %s): it carries no row changes; "
                "use binlog_format=ROW to get them",
                self.file,
                ev.position,
                gtid or "none",
            )
        self.statements += 1
        value = {
            "source": self._source(ev, database, None, thread=q.thread_id),
            "ts_ms": ev.when * 1000,
            "databaseName": database,
            "statement": text,
            "warning": "logged in STATEMENT/MIXED format: no row changes; use binlog_format=ROW",
        }
        return [{"topic": f"{self.name}.statements", "key": None, "value": value}]

    def _rows(self, ev: Any) -> list[dict[str, Any]]:
        changes = self._changes(ev)
        if not changes:
            return []
        view = changes[0][0]
        topic = f"{self.name}.{view.database}.{view.table}"
        return [
            {
                "topic": topic,
                "key": key,
                "value": _envelope(before, after, self._source(ev, view.database, view.table, row, self.thread), op, ev.when),
            }
            for view, row, key, before, after, op in changes
        ]

    def _changes(self, ev: Any) -> list[tuple[TableView, int, Any, Any, Any, str]]:
        """The row changes of the rows event ``ev``: ``(view, row, key, before, after, op)``
        each, a primary key change as Debezium sends it (a delete under the old key, then a
        create); none for a table not mapped or not accepted."""
        rows_ev = rows_parts(ev) or ev.decoded()
        view = self.tables.get(rows_ev.table_id)
        if view is None:
            return []
        tm = view.event
        if not self._accept(view.database, view.table):
            return []
        key_columns = _key_indexes(tm.optional_metadata, len(view.columns))
        types = view.real_types
        out = []
        for index, change in enumerate(row_decoder(tm).decode(rows_ev)):
            before = self._image(view, tm, types, change.before)
            after = self._image(view, tm, types, change.after)
            key = _key(key_columns, view, after, before)
            old_key = _key(key_columns, view, None, before) if change.kind == "update" else key
            if old_key is not None and key is not None and old_key != key:
                out.append((view, index, old_key, before, None, "d"))
                out.append((view, index, key, None, after, "c"))
                continue
            out.append((view, index, key, before, after, _OPS[change.kind]))
        return out

    def lines(self, ev: Any) -> list[str]:
        """The records of one event as JSON text, one per line (``json.dumps`` of
        :meth:`records`' dicts, ``ensure_ascii=False``).  A row change's text is put
        together here: its 15-field ``source`` cost half the encoding of a small record."""
        if ev.type_code not in ROWS_KIND:
            return [_dumps(record) for record in self.records(ev)]
        changes = self._changes(ev)
        if not changes:
            self._passed(ev.type_code)
            return []
        view = changes[0][0]
        when = ev.when * 1000
        # The record up to its key, and its source around the row: the same for every row.
        gtid = self.gtid if self.boundary.open else None
        head = f'{{"topic": {json_string(f"{self.name}.{view.database}.{view.table}")}, "key": '
        source = (
            f'{{"version": {json_string(VERSION)}, "connector": "{CONNECTOR}", "name": {json_string(self.name)},'
            f' "ts_ms": {when}, "snapshot": "false", "db": {json_string(view.database)}, "sequence": null,'
            f' "table": {json_string(view.table)}, "server_id": {ev.server_id}, "gtid": {_dumps(gtid)},'
            f' "file": {json_string(self.file)}, "pos": {ev.position}, "row": '
        )
        tail = f', "thread": {_dumps(self.thread)}, "query": {_dumps(self.query)}}}'
        self._passed(ev.type_code)
        return [
            f'{head}{_dumps(key)}, "value": {{"before": {_dumps(before)}, "after": {_dumps(after)},'
            f' "source": {source}{row}{tail}, "op": "{op}", "ts_ms": {when}, "transaction": null}}}}'
            for _, row, key, before, after, op in changes
        ]

    def new_file(self, name: str) -> None:
        """A new file begins: its table ids are new."""
        self.file = os.path.basename(name)
        self.tables.clear()
        self.fast_tables.clear()

    def groups(
        self,
        data: Any,
        pos: int,
        limit: int,
        soft: int,
        verify: bool,
        accept: Callable[[int, int, int], bool],
        checksum: bool,
        ctx: Any,
    ) -> tuple[int, bytes, bool]:
        """Whole ordinary groups from ``pos`` in compiled code (``_dumpfast.debezium_groups``),
        line for line as :meth:`lines` writes their events: ``(where it stopped, the lines,
        whether accept stopped the reading)``; nothing when the writer cannot take them there
        (a group open, a map not met yet, a filter)."""
        if self.boundary.open or not self.fast_tables or not compiled_groups_ok(self.database, self.table_filter, self.schema):
            return pos, b"", False
        cfg = (checksum, verify, self.source_prefix, json_string(json_name(self.file)).encode(), ctx.rows_post_header_lengths())
        done, text, stopped, flags2, gtid = _fast.debezium_groups(
            data, pos, limit, soft, cfg, self.fast_tables, self.tables, group_accept(self.schema, accept)
        )
        if done != pos:
            self.gtid = gtid
            self.boundary.start(flags2)
            self.thread = None  # (groups whose GTID carries a thread id are not compiled)
            self._passed(XID_EVENT)
        return done, text, stopped

    def _image(self, view: TableView, tm: Any, types: list[int], values: tuple[Any, ...] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        out = {}
        for col, value, rtype, meta in zip(view.columns, values, types, tm.column_meta):
            kind = type(value)
            if value is None or (kind is int and col.plain and rtype != C.MYSQL_TYPE_BIT) or (kind is str and value.isascii()):
                out[col.key] = value  # NULL, plain integers, ASCII text (isascii: a flag, no scan): most values
            elif value is not ABSENT:
                out[col.key] = encode_value(value, rtype, meta, col)
        return out


def debezium_plan(view: TableView, name: str) -> tuple[bytes, bytes, tuple[tuple[Any, ...], ...], tuple[int, ...]] | bool:
    """The rows plan of ``_dumpfast.debezium_groups`` for a view: the record's text up to its
    key, the source's ``db`` to ``table`` fields, the column plan of the compiled JSON rows
    (:func:`~mariabinlog.tools.jsonout.json_column_plan`, its values in Debezium's encodings)
    and the key's column indexes; False when a column needs this writer (GEOMETRY's object,
    a FLOAT or DOUBLE key column: keys are compared as text, and -0.0 equals 0.0)."""
    plan = json_column_plan(view)
    if plan is False:
        return False
    keys = tuple(_key_indexes(view.event.optional_metadata, len(view.columns)))
    floats = (C.MYSQL_TYPE_FLOAT, C.MYSQL_TYPE_DOUBLE)
    for index, rtype in enumerate(view.real_types):
        if rtype == C.MYSQL_TYPE_GEOMETRY or (index in keys and rtype in floats):
            return False
    head = f'{{"topic": {json_string(json_name(f"{name}.{view.database}.{view.table}"))}, "key": '
    names = f'"db": {json_string(view.database)}, "sequence": null, "table": {json_string(view.table)}'
    return head.encode(), names.encode(), plan, keys


def _envelope(
    before: dict[str, Any] | None, after: dict[str, Any] | None, source: dict[str, Any], op: str, when: int
) -> dict[str, Any]:
    """The change event value: Debezium's envelope."""
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": when * 1000, "transaction": None}


def _key_indexes(meta: Any, width: int) -> list[int]:
    """The primary key's column indexes from a table map's optional metadata (with or without
    prefix lengths: Debezium keys on the whole columns); none without column names to key by.
    An index past the table's ``width`` columns (a damaged or forged table map) names no column."""
    if meta is None or not meta.column_names:
        return []
    return list(meta.key_indexes(width))


def _key(
    indexes: list[int], view: TableView, after: dict[str, Any] | None, before: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The primary key columns of a row change: from the after image, else the before image
    (a MINIMAL update's after image holds only the changed columns); None without a key."""
    key = {}
    for index in indexes:
        name = view.columns[index].key
        for image in (after, before):
            if image is not None and name in image:
                key[name] = image[name]
                break
    return key or None


def _table_change(key: tuple[str, str], table: Table | None) -> dict[str, Any]:
    """One ``tableChanges`` item: DROP when the table is gone, else its columns as the history has them."""
    ident = f'"{key[0]}"."{key[1]}"'
    if table is None or table.unknown is not None:
        return {"type": "DROP" if table is None else "ALTER", "id": ident, "table": None}
    columns = [
        {
            "name": c.name,
            "typeName": c.type.upper(),
            "typeExpression": c.sql(),
            "charsetName": c.charset,
            "length": c.length if c.length is not None else c.precision,
            "scale": c.scale,
            "position": position,
            "optional": c.nullable,
            "enumValues": list(c.members) or None,
        }
        for position, c in enumerate(table.columns, 1)
    ]
    return {
        "type": "CREATE",
        "id": ident,
        "table": {"defaultCharsetName": table.charset, "primaryKeyColumnNames": list(table.primary_key), "columns": columns},
    }


class DebeziumSink(EventSink):
    """Writes the records of every accepted event, one JSON object per line."""

    record_positions = True

    def __init__(
        self,
        write: Callable[[bytes], Any],
        opts: Any,
        schema: SchemaTracker,
        collect: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(write)
        self.writer = DebeziumWriter(
            schema, name=opts.topic_prefix, database=opts.database, table=opts.table
        )
        #: The Python API: records go to this list instead of the output (``dump_main(..., sink=...)``).
        self.collect = collect

    def begin_file(self, name: str = "") -> None:
        super().begin_file(name)
        self.writer.new_file(name)

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
        """Whole ordinary groups in compiled code (:meth:`DebeziumWriter.groups`); legacy files
        only (``at`` -1: the `.ibb` positions are those of its records), not for the Python
        API's records."""
        if at != -1 or self.collect is not None:
            return pos, False
        done, text, stopped = self.writer.groups(
            data, pos, limit, soft, verify, accept, self.checksum_alg == CHECKSUM_CRC32, self.ctx
        )
        if done != pos:
            self.out.append(text)
        return done, stopped

    def print_event(self, ev: Any) -> None:
        if self.collect is not None:
            self.collect.extend(self.writer.records(ev))
            return
        for line in self.writer.lines(ev):
            try:
                data = line.encode("utf-8")
            except UnicodeEncodeError:  # names the history kept with undecodable bytes
                data = json_name(line).encode("utf-8")
            self.out.append(data + b"\n")

