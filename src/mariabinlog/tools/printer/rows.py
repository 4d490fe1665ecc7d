"""Printing of row-based events as ``mariadb-binlog`` does: table maps, ``BINLOG`` base64
blocks, ``###`` lines (``-v``/``-vv``), row counts and ``--flashback`` reversal (the row
images measured as the tool measures them: :mod:`.rowsizes`).

:class:`RowsFamily` owns the table maps (printed and ignored ones, and the cache of decoded
maps with their row-size plans), the kept Annotate_rows, the statement's row count and
``--flashback``'s buffered rows events; it talks to the rest of the printer only through its
:class:`~.base.PrintContext` (output lists and the tool's head/body/tail caches, options,
the header comment, the file's decoding context, the Format_description state, the
flashback output, the schema tracker).
"""

from __future__ import annotations

import copy
import re

from typing import Any

from ...codec import columns as C
from ...codec.events import (
    with_event_type,
    RowsLayout,
    rows_layout,
    set_rows_flags,
    with_table_map_database,
    decompress_block,
    DELETE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    reframe,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    TableMapEvent,
    UNCOMPRESSED_ROWS_TYPE,
    UPDATE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_EVENT,
    UPDATE_ROWS_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
)
from ...codec import charsets
from ...errors import DecodeError
from . import rowsql
from .rowsizes import FLASHBACK_TYPE, count_rows, flashback_rows, full_size_codes, size_codes
from .base import (
    _backtick,
    BASE64_DECODE_ROWS,
    _base64_lines,
    BASE64_NEVER,
    DELIM,
    EventView,
    _fast,
    PrintContext,
    PrintFamily,
    view_at,
)

TM_BIT_HAS_TRIGGERS_F = 1 << 14
STMT_END_F = 1

_ROWS_NAMES = {
    WRITE_ROWS_EVENT_V1: b"Write_rows",
    UPDATE_ROWS_EVENT_V1: b"Update_rows",
    DELETE_ROWS_EVENT_V1: b"Delete_rows",
    WRITE_ROWS_EVENT: b"Write_rows",
    UPDATE_ROWS_EVENT: b"Update_rows",
    DELETE_ROWS_EVENT: b"Delete_rows",
    WRITE_ROWS_COMPRESSED_EVENT_V1: b"Write_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: b"Update_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT_V1: b"Delete_compressed_rows",
    WRITE_ROWS_COMPRESSED_EVENT: b"Write_compressed_rows",
    UPDATE_ROWS_COMPRESSED_EVENT: b"Update_compressed_rows",
    DELETE_ROWS_COMPRESSED_EVENT: b"Delete_compressed_rows",
    **{code: name for code, name in zip(range(20, 23), (b"Write_rows_old", b"Update_rows_old", b"Delete_rows_old"))},
}
#: MySQL 5.1.15-5.1.17's pre-GA rows events: printed (base64), their rows neither decoded nor counted.
_OLD_ROWS = frozenset(range(20, 23))
#: Flashback prints Write as Delete and vice versa.
_FLASHBACK_NAMES = {b"Write_rows": b"Delete_rows", b"Delete_rows": b"Write_rows"}
#: Compressed row event type -> the uncompressed type the tool re-encodes it as.
UNCOMPRESSED_TYPE = UNCOMPRESSED_ROWS_TYPE
_UPDATE_ROWS = frozenset(
    (
        UPDATE_ROWS_EVENT_V1,
        UPDATE_ROWS_EVENT,
        UPDATE_ROWS_COMPRESSED_EVENT_V1,
        UPDATE_ROWS_COMPRESSED_EVENT,
    )
)
_WRITE_ROWS = frozenset(
    (
        WRITE_ROWS_EVENT_V1,
        WRITE_ROWS_EVENT,
        WRITE_ROWS_COMPRESSED_EVENT_V1,
        WRITE_ROWS_COMPRESSED_EVENT,
    )
)
ROW_EVENT_TYPES = frozenset(_ROWS_NAMES)


# -------------------------------------------------------------------------- rows events


class RowsParts:
    """A rows event's parts as the row decoder reads them (``codec.rows.RowsEventLike``), and
    its ``kind`` ('insert', 'update' or 'delete') and ``stmt_end`` (last of its statement)."""

    __slots__ = ("kind", "stmt_end", "table_id", "width", "present_before", "present_after", "rows_data")

    def __init__(
        self, code: int, table_id: int, rows_flags: int, width: int, before: bytes, after: bytes | None, data: bytes
    ) -> None:
        self.kind = ROWS_KIND[code]
        self.stmt_end = bool(rows_flags & STMT_END_F)
        self.table_id = table_id
        self.width = width
        self.present_before = before
        self.present_after = after
        self.rows_data = data


def rows_parts(ev: EventView) -> RowsParts | None:
    """The parts of the uncompressed rows event ``ev``, framed with the codec's field readers
    as the text printer frames them (no event object: making one was a tenth of the JSON
    output's time on small transactions); None for a compressed event (decode it)."""
    code = ev.type_code
    if code in UNCOMPRESSED_TYPE:
        return None
    buf, end = ev.buf, ev.body_end
    lay = rows_layout(buf, ev.body_pos, ev.ctx.post_header_len(code), code in _UPDATE_ROWS, end)
    return RowsParts(code, lay.table_id, lay.flags, lay.width, lay.columns, lay.columns_after, bytes(buf[lay.rows_at : end]))


# --------------------------------------------------------------------------- table maps


class TableInfo:
    """What the printer needs of one Table_map: names, flags and the row-size plan.

    ``sizes`` and ``full_sizes`` have one size code per column (see :mod:`.rowsizes`):
    ``count_row_events``' and ``--flashback``'s.
    """

    __slots__ = (
        "event",
        "flags",
        "full_sizes",
        "line",
        "names",
        "raw_schema",
        "raw_table",
        "schema",
        "sizes",
        "table_id",
        "verbose_plan",
    )

    def __init__(
        self, event: TableMapEvent, raw_schema: bytes, raw_table: bytes, schema: bytes | None = None
    ) -> None:
        self.event = event
        self.table_id = event.table_id
        #: The database as printed (``--rewrite-db``'s new name); filters use ``raw_schema``.
        self.schema = raw_schema if schema is None else schema
        self.raw_schema = raw_schema
        self.raw_table = raw_table
        self.flags = event.map_flags
        self.sizes = size_codes(event.column_types, event.column_meta)
        self.full_sizes = full_size_codes(event.column_types, event.column_meta, self.sizes)
        self.verbose_plan: object | None = None
        self.line: bytes | None = None
        #: The table as the ``###`` lines name it, database and table each in backticks
        #: (``--rewrite-db``'s new database); the compiled group printer reads it too.
        self.names = b"%s.%s" % (
            _backtick(event.schema.encode("utf-8", "surrogateescape")),
            _backtick(event.table.encode("utf-8", "surrogateescape")),
        )


class _RowsForSql:
    """The RowsEventLike view :func:`rowsql.rows_sql` takes."""

    __slots__ = (
        "kind",
        "present_after",
        "present_before",
        "rows_data",
        "table_id",
        "width",
    )

    def __init__(
        self,
        table_id: int,
        width: int,
        before: bytes,
        after: bytes | None,
        data: bytes,
        kind: str,
    ) -> None:
        self.table_id = table_id
        self.width = width
        self.present_before = before
        self.present_after = after
        self.rows_data = data
        self.kind = kind


_KIND_CODE = {"insert": 0, "delete": 1, "update": 2}
_COMMAND = {"insert": b"INSERT INTO", "delete": b"DELETE FROM", "update": b"UPDATE"}


def render_rows(
    info: TableInfo,
    code: int,
    table_id: int,
    width: int,
    cols: bytes,
    cols_ai: bytes | None,
    data: Any,
    start: int,
    end: int,
    verbose: int,
    out: list[bytes],
) -> int:
    """Rows_log_event::print_verbose: append the ``###`` lines of ``data[start:end]``, return the rows printed."""
    kind = ROWS_KIND[code]
    header = b"### %s %s\n" % (_COMMAND[kind], info.names)
    if _fast is not None and start < end:
        plan = info.verbose_plan
        if plan is None:
            plan = info.verbose_plan = _verbose_plan(info.event)
        if plan:
            done = _fast.verbose_rows(
                data, start, end, _KIND_CODE[kind], width, cols, cols_ai, plan, header, verbose
            )
            if done is not None:
                out.append(done[0])
                return done[1]  # type: ignore[no-any-return]
    rows = bytes(data[start:end])
    text = rowsql.rows_sql(
        info.event,
        _RowsForSql(table_id, width, cols, cols_ai, rows, kind),
        verbose=verbose,
    )
    out.append(text)
    if kind == "insert" and not rows:
        return 1
    return text.count(header)


def _verbose_plan(event: TableMapEvent) -> tuple[tuple[Any, ...], ...] | bool:
    """The column plan of ``_dumpfast.verbose_rows`` for a table map, False when a column
    needs the Python printer (types and metadata the tool prints oddly or not at all)."""
    plan = []
    nulls = event.null_bitmap
    for index, (ctype, meta) in enumerate(zip(event.column_types, event.column_meta)):
        op = fast_op(ctype, meta)
        if op is None or rowsql._formatter(ctype, meta) is None:
            return False
        column = rowsql._Column(index, ctype, meta, bool(nulls[index >> 3] >> (index & 7) & 1))
        plan.append((*op, column.label, column.comment, column.null_comment))
    return tuple(plan)


def fast_op(ctype: int, meta: int) -> tuple[int, int, int] | None:
    """(opcode, a, b) of one column for ``_dumpfast`` (see its V_* opcodes), None if it has none."""
    rtype = C.real_type(ctype, meta)
    size = C.INT_SIZES.get(rtype)
    if size is not None:
        return (1, size, 0)
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        return (2, precision, scale) if 0 < precision <= 65 and scale <= precision else None
    if rtype in _FAST_FIXED:
        return (_FAST_FIXED[rtype], 0, 0)
    if rtype == C.MYSQL_TYPE_BIT:
        return (5, C.bit_width(meta), 0) if 0 < C.bit_width(meta) <= 64 else None
    if rtype == C.MYSQL_TYPE_SET:
        return (6, meta & 0xFF, 0) if 1 <= meta & 0xFF <= 8 else None
    if rtype == C.MYSQL_TYPE_ENUM:
        return (7, meta & 0xFF, 0) if meta & 0xFF in (1, 2) else None
    if rtype in _FAST_FSP:
        return (_FAST_FSP[rtype], meta, 0) if 0 <= meta <= 6 else None
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VARCHAR_COMPRESSED):
        return (16, 1 if meta < 256 else 2, 0)
    if rtype == C.MYSQL_TYPE_STRING:
        return (16, 1 if C.string_max_length(meta) < 256 else 2, 0)
    if rtype in (C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_BLOB_COMPRESSED, C.MYSQL_TYPE_GEOMETRY):
        return (16, meta, 0) if 1 <= meta <= 4 else None
    return None


_FAST_FIXED = {
    C.MYSQL_TYPE_FLOAT: 3,
    C.MYSQL_TYPE_DOUBLE: 4,
    C.MYSQL_TYPE_TIMESTAMP: 8,
    C.MYSQL_TYPE_DATETIME: 10,
    C.MYSQL_TYPE_TIME: 12,
    C.MYSQL_TYPE_DATE: 14,
    C.MYSQL_TYPE_NEWDATE: 14,
    C.MYSQL_TYPE_YEAR: 15,
}
_FAST_FSP = {C.MYSQL_TYPE_TIMESTAMP2: 9, C.MYSQL_TYPE_DATETIME2: 11, C.MYSQL_TYPE_TIME2: 13}


def _charset_iter(default: C.DefaultCharset | None, per_column: tuple[int, ...] | None):
    if default is not None:
        return default.iter_collations()
    return iter(per_column or ())


#: pretty_print_str's escapes: byte -> its escape.
_PRETTY_ESCAPES = {b"\n": b"\\n", b"\r": b"\\r", b"\\": b"\\\\", b"\b": b"\\b", b"\t": b"\\t", b"'": b"\\'", b"\0": b"\\0"}
_PRETTY_SPECIAL = re.compile(b"[" + re.escape(b"".join(_PRETTY_ESCAPES)) + b"]")


def _pretty_str(value: bytes, quote: bytes = b"'") -> bytes:
    """pretty_print_str: quoted, with \\n \\r \\\\ \\b \\t \\' \\0 escaped."""
    return quote + _PRETTY_SPECIAL.sub(lambda m: _PRETTY_ESCAPES[m.group()], value) + quote


def _pretty_identifier(name: bytes) -> bytes:
    return _pretty_str(name, b"`")


_GEOMETRY_NAMES = (
    b"GEOMETRY",
    b"POINT",
    b"LINESTRING",
    b"POLYGON",
    b"MULTIPOINT",
    b"MULTILINESTRING",
    b"MULTIPOLYGON",
    b"GEOMETRYCOLLECTION",
)

#: get_type_name's names that take nothing from the column's metadata.
_FIXED_TYPE_NAMES = {
    C.MYSQL_TYPE_TINY: b"TINYINT", C.MYSQL_TYPE_SHORT: b"SMALLINT", C.MYSQL_TYPE_INT24: b"MEDIUMINT",
    C.MYSQL_TYPE_LONG: b"INT", C.MYSQL_TYPE_LONGLONG: b"BIGINT", C.MYSQL_TYPE_FLOAT: b"FLOAT",
    C.MYSQL_TYPE_DOUBLE: b"DOUBLE", C.MYSQL_TYPE_DATE: b"DATE", C.MYSQL_TYPE_NEWDATE: b"DATE",
    C.MYSQL_TYPE_YEAR: b"YEAR", C.MYSQL_TYPE_ENUM: b"ENUM", C.MYSQL_TYPE_SET: b"SET",
}


def _meta_type_name(
    rtype: int, ctype: int, meta: int, cs: int | None, geometry_type: int
) -> bytes:
    """get_type_name of log_event_client.cc (--print-table-metadata)."""
    binary = cs is None or cs == C.BINARY_COLLATION
    fixed = _FIXED_TYPE_NAMES.get(rtype)
    if fixed is not None:
        return fixed
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        return b"DECIMAL(%d,%d)" % (meta >> 8, meta & 0xFF)
    if rtype == C.MYSQL_TYPE_BIT:
        return b"BIT(%d)" % ((meta & 0xFF) + (meta >> 8) * 8)
    if rtype == C.MYSQL_TYPE_TIMESTAMP2:
        return b"TIMESTAMP(%d)" % meta if meta else b"TIMESTAMP"
    if rtype == C.MYSQL_TYPE_DATETIME2:
        return b"DATETIME(%d)" % meta if meta else b"DATETIME"
    if rtype == C.MYSQL_TYPE_TIME2:
        return b"TIME(%d)" % meta if meta else b"TIME"
    if rtype == C.MYSQL_TYPE_BLOB:
        kind = b"BLOB" if binary else b"TEXT"
        if meta == 0 or meta > 4:
            return b"INVALID_%s(%d)" % (kind, meta)
        return (b"TINY", b"", b"MEDIUM", b"LONG")[meta - 1] + kind
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING):
        if not binary:
            return b"VARCHAR(%d)" % (meta // charsets.mbmaxlen(cs))  # type: ignore[arg-type]
        return b"VARBINARY(%d)" % meta
    if rtype == C.MYSQL_TYPE_STRING:
        byte0, byte1 = meta >> 8, meta & 0xFF
        length = (((byte0 & 0x30) ^ 0x30) << 4) | byte1
        if not binary:
            return b"CHAR(%d)" % (length // charsets.mbmaxlen(cs))  # type: ignore[arg-type]
        return b"BINARY(%d)" % length
    if rtype == C.MYSQL_TYPE_GEOMETRY:
        if geometry_type < 8:
            return _GEOMETRY_NAMES[geometry_type]
        return b"INVALID_GEOMETRY_TYPE(%d)" % geometry_type
    return b""


class RowsFamily(PrintFamily):
    """Table_map, rows and Annotate_rows events: ``BINLOG`` blocks through the head/body/tail
    caches, ``###`` lines, row counts and flashback; owns the table maps and the statement.

    Handlers (for the Printer's dispatch table): :meth:`table_map`, :meth:`rows_event`,
    :meth:`annotate_rows`.
    """

    def __init__(self, pc: PrintContext) -> None:
        super().__init__(pc)
        self.body = pc.body
        self.tail = pc.tail
        self.encoded = pc.encoded
        #: Decoded Table_maps with their row-size plans, by body bytes (one cache per dump).
        self.table_cache: dict[bytes, TableInfo] = {}
        #: The rows events of the current statement (raw bytes with their flags already
        #: rewritten), printed in reverse order at its last event.
        self.flashback_stmt: list[tuple[bytes, int, int]] = []
        self.reset()

    def reset(self) -> None:
        """A fresh PRINT_EVENT_INFO's table maps and statement (one per input file)."""
        self.row_events = 0
        self.table_maps: dict[int, TableInfo] = {}
        self.ignored_maps: dict[int, TableInfo] = {}
        self.annotate: EventView | None = None

    def annotate_rows(self, ev: EventView) -> None:
        if not self.opt.skip_annotate:
            self.annotate = ev  # kept until a Table_map is printed


    def table_info(self, ev: EventView) -> TableInfo:
        """The (cached) TableInfo of a Table_map event."""
        key = bytes(ev.buf[ev.body_pos : ev.body_end])
        info = self.table_cache.get(key)
        if info is None:
            tm = ev.decoded()
            # the names' bytes as logged (the decoder's surrogateescape round-trips them)
            raw_schema = tm.schema.encode("utf-8", "surrogateescape")
            raw_table = tm.table.encode("utf-8", "surrogateescape")
            new_db = self.opt.rewrite_db.get(raw_schema)
            if new_db is not None:
                # Table_map_log_event::rewrite_db renames the map itself: the "###" lines of
                # its rows name the new database too (filters still see the logged one).
                tm = copy.copy(tm)
                tm.schema = new_db.decode("utf-8", "surrogateescape")
            info = TableInfo(tm, raw_schema, raw_table, new_db)
            if len(self.table_cache) > 10000:
                self.table_cache.clear()
            self.table_cache[key] = info
        return info

    def table_map(self, ev: EventView) -> None:
        opt = self.opt
        info = self.table_info(ev)
        if (opt.database is not None and info.raw_schema != opt.database) or (
            opt.table is not None and info.raw_table != opt.table
        ):
            self.ignored_maps[info.table_id] = info
            return
        # The kept Annotate_rows is printed with the first Table_map that is printed.
        if self.annotate is not None:
            self.annotate.hexdump_from = ev.position
            self._print_annotate()
        schema = info.schema
        raw = self._rewrite_table_map(ev, schema) if schema != info.raw_schema else None
        if (
            not self.pc.printed_fd_event
            and not opt.short_form
            and opt.base64_mode not in (BASE64_DECODE_ROWS, BASE64_NEVER)
        ):
            self.pc.need_format_description(b"Table_map")
        h = self.head
        if not opt.short_form:
            self.header(ev, h)
            line = info.line if raw is None else None
            if line is None:
                line = b"\tTable_map: %s.%s mapped to number %d%s\n" % (
                    _backtick(schema),
                    _backtick(info.raw_table),
                    info.table_id,
                    b" (has triggers)" if info.flags & TM_BIT_HAS_TRIGGERS_F else b"",
                )
                if raw is None:
                    info.line = line
            h.append(line)
        if not opt.short_form or opt.print_row_count:
            if opt.print_table_metadata:
                self._print_table_metadata(info, h)
            encoded = (
                opt.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS)
                and not opt.short_form
            )
            if encoded:
                _base64_lines(raw if raw is not None else ev.raw(), self.body)
            if opt.verbose or opt.print_row_count or opt.flashback:
                self.table_maps[info.table_id] = info
            self.pc.flush_head()

    def _rewrite_table_map(self, ev: EventView, new_db: bytes) -> bytes:
        """Table_map_log_event::rewrite_db on the raw event (the old CRC bytes are kept)."""
        return with_table_map_database(ev.raw(), self.pc.ctx.post_header_len(TABLE_MAP_EVENT), new_db)

    def _print_annotate(self) -> None:
        view = self.annotate
        assert view is not None
        self.annotate = None
        h = self.head
        if not self.opt.short_form:
            self.header(view, h)
            h.append(b"\tAnnotate_rows:\n")
        else:
            h.append(b"# Annotate_rows:\n")
        text = view.body()
        if b"\n" not in text and b"\r" not in text:
            if text:
                h.append(b"#Q> " + text + b"\n")
            return
        for line in text.replace(b"\r", b"\n").split(b"\n"):
            if line:
                h.append(b"#Q> " + line + b"\n")

    def _print_table_metadata(self, info: TableInfo, h: list[bytes]) -> None:
        """Table_map_log_event::print_columns and print_primary_key."""
        schema = self.pc.schema
        tm = info.event if schema is None else schema.typed_map(info.event, self.pc.schema_gtid)
        om = tm.optional_metadata or C.OptionalMetadata()
        types = tm.column_types
        metas = tm.column_meta
        signed_bits = om.signedness or b""
        numeric_index = 0
        char_it = _charset_iter(om.default_charset, om.column_charsets)
        enum_it = _charset_iter(
            om.enum_and_set_default_charset, om.enum_and_set_column_charsets
        )
        names = om.column_names or ()
        set_values = iter(om.set_str_values or ())
        enum_values = iter(om.enum_str_values or ())
        geometry_types = iter(om.geometry_types or ())
        n_signed = len(signed_bits) * 8
        parts = [b"# Columns("]
        ncols = len(types)
        for i in range(ncols):
            ctype = types[i]
            meta = metas[i]
            raw_meta0 = (
                meta >> 8
                if ctype in (C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET)
                else None
            )
            rtype = ctype
            if ctype == C.MYSQL_TYPE_STRING and raw_meta0 in (
                C.MYSQL_TYPE_ENUM,
                C.MYSQL_TYPE_SET,
            ):
                rtype = raw_meta0
            cs = None
            if rtype in C.CHARACTER_TYPES:
                cs = next(char_it, None)
            elif rtype in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET):
                cs = next(enum_it, None)
            if i < len(names):
                parts.append(
                    _pretty_identifier(names[i].encode("utf-8", "surrogateescape"))
                    + b" "
                )
            geometry_type = 0
            if rtype == C.MYSQL_TYPE_GEOMETRY:
                geometry_type = next(geometry_types, 0)
            type_name = _meta_type_name(rtype, ctype, meta, cs, geometry_type)
            if not type_name:
                parts.append(b"INVALID_TYPE(%d)" % rtype)
                # The tool's `continue` skips the separator too.
                continue
            parts.append(type_name)
            if rtype in C.NUMERIC_TYPES and numeric_index < n_signed:
                if signed_bits[numeric_index >> 3] & (0x80 >> (numeric_index & 7)):
                    parts.append(b" UNSIGNED")
                numeric_index += 1
            if not tm.null_bitmap[i >> 3] & (1 << (i & 7)):
                parts.append(b" NOT NULL")
            values = None
            if rtype == C.MYSQL_TYPE_ENUM:
                values = next(enum_values, None)
            elif rtype == C.MYSQL_TYPE_SET:
                values = next(set_values, None)
            if values is not None:
                sep = b"("
                for v in values:
                    parts.append(sep + _pretty_str(v))
                    sep = b","
                parts.append(b")")
            if cs is not None and (
                rtype in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET)
                or cs != C.BINARY_COLLATION
            ):
                entry = charsets.COLLATIONS.get(cs)
                if entry is not None:
                    parts.append(
                        b" CHARSET %s COLLATE %s"
                        % (entry[0].encode(), entry[1].encode())
                    )
            if i != ncols - 1:
                parts.append(b",\n#         ")
        parts.append(b")\n")
        h.append(b"".join(parts))
        pk = om.primary_key()
        if pk:
            items = []
            for col, prefix in pk:
                item = (
                    names[col].encode("utf-8", "surrogateescape")
                    if col < len(names)
                    else b"%d" % col
                )
                if prefix:
                    item += b"(%d)" % prefix
                items.append(item)
            h.append(b"# Primary Key(" + b", ".join(items) + b")\n")


    def rows_event(self, ev: EventView) -> None:
        """print_row_event: ignored tables, --flashback statement reversal, then printing."""
        code = ev.type_code
        buf = ev.buf
        p = ev.body_pos
        post = self.pc.ctx.post_header_len(code)
        # Framed whole, as the server's reader does, before anything else: an invalid event
        # stops the dump here, whether or not its table is ignored.
        layout = rows_layout(buf, p, post, code in _UPDATE_ROWS, ev.body_end)
        table_id, rows_flags = layout.table_id, layout.flags
        stmt_end = bool(rows_flags & STMT_END_F)
        ignored = table_id in self.ignored_maps
        if self.opt.flashback:
            # The last event of the statement is printed first, the first one last
            # (and carries STMT_END_F), as Rows_log_event::update_flags rewrites them.
            new_flags = rows_flags & ~STMT_END_F if stmt_end else rows_flags
            if not self.flashback_stmt:
                new_flags |= STMT_END_F
            raw = bytearray(ev.raw())
            set_rows_flags(raw, layout.flags_at - ev.start, new_flags)
            self.flashback_stmt.append(
                (bytes(raw), ev.position, ev.crc if ev.crc is not None else -1)
            )
        if stmt_end:
            self.ignored_maps.clear()
            self.annotate = None
            if ignored:
                if self.body:
                    self.body.append(b"'%s\n" % DELIM)
                self.pc.flush_head()
                self.out.extend(self.body)
                self.body.clear()
                self.out.extend(self.tail)
                self.tail.clear()
                self.row_events = 0
        if ignored:
            return
        if not self.opt.flashback:
            self._print_rows(ev, code, layout)
            return
        if stmt_end:
            events = self.flashback_stmt
            self.flashback_stmt = []
            for raw_event, position, crc in reversed(events):
                view = view_at(raw_event, 0, position, 0 if crc < 0 else 4, self.pc.ctx)
                if crc >= 0:
                    view.crc = crc
                view.hexdump_from = ev.position
                code_i = view.type_code
                self._print_rows(view, code_i, rows_layout(raw_event, view.body_pos, post, code_i in _UPDATE_ROWS, view.body_end))
            if self.opt.print_row_count:
                self.out.append(b"# Number of rows: %d\n" % self.row_events)
            self.row_events = 0

    def _print_rows(self, ev: EventView, code: int, layout: RowsLayout) -> None:
        """Rows_log_event::print_helper (with print_base64's --flashback conversion)."""
        opt = self.opt
        buf = ev.buf
        table_id = layout.table_id
        stmt_end = bool(layout.flags & STMT_END_F)
        encoded = self.encoded
        if encoded and not self.pc.printed_fd_event:
            self.pc.need_format_description(_ROWS_NAMES[code])
        name = _ROWS_NAMES[code]
        if opt.flashback:
            name = _FLASHBACK_NAMES.get(name, name)
        raw: bytes | None = None
        width, cols, cols_ai, q = layout.width, layout.columns, layout.columns_after, layout.rows_at
        data: Any = buf
        start, end = q, ev.body_end
        if code in UNCOMPRESSED_TYPE:
            try:
                rows = decompress_block(buf, q, end)
            except DecodeError:
                self.head.append(b"ERROR: uncompress %s failed\n" % name.lower())
                return
            # The tool re-encodes the event uncompressed (type, length and CRC fixed).
            body = with_event_type(buf[ev.start : q], UNCOMPRESSED_TYPE[code]) + rows
            raw = reframe(body, checksum=ev.crc is not None)
            code = UNCOMPRESSED_TYPE[code]
            data, start, end = rows, 0, len(rows)
        info = self.table_maps.get(table_id)
        if opt.flashback and code not in _OLD_ROWS:
            # Log_event::print_base64: Write <-> Delete, rows in reverse order, the
            # images of each updated row swapped; the CRC bytes are left as they were.
            if raw is None:
                raw = bytes(ev.raw())
            code = FLASHBACK_TYPE.get(code, code)
            if info is not None and not (code in _WRITE_ROWS and start == end):
                rows = flashback_rows(
                    info.full_sizes, code in _UPDATE_ROWS, width, cols, cols_ai, data, start, end
                )
                offset = (
                    len(raw) - (ev.start + ev.length - start)
                    if data is buf
                    else len(raw) - len(data) - (4 if ev.crc is not None else 0)
                )
                raw = raw[:offset] + rows + raw[offset + len(rows) :]
                data, start, end = rows, 0, len(rows)
            raw = with_event_type(raw, code)
        if not opt.short_form:
            h = self.head
            self.header(ev, h, raw)
            # Old_rows_log_event prints no flags when rows are decoded rather than base64'd.
            show_flags = stmt_end and not (code in _OLD_ROWS and opt.base64_mode == BASE64_DECODE_ROWS)
            h.append(
                b"\t%s: table id %d%s\n"
                % (name, table_id, b" flags: STMT_END_F" if show_flags else b"")
            )
        if not opt.short_form or opt.print_row_count:
            if encoded:
                _base64_lines(raw if raw is not None else ev.raw(), self.body)
            if code in _OLD_ROWS:
                pass
            elif opt.verbose:
                if info is None:
                    self.tail.append(b"### Row event for unknown table #%d" % table_id)
                else:
                    self.row_events += render_rows(
                        info,
                        code,
                        table_id,
                        width,
                        cols,
                        cols_ai,
                        data,
                        start,
                        end,
                        opt.verbose,
                        self.tail,
                    )
            elif info is not None:
                self.row_events += count_rows(
                    info.sizes,
                    code in _UPDATE_ROWS,
                    code in _WRITE_ROWS,
                    width,
                    cols,
                    cols_ai,
                    data,
                    start,
                    end,
                )
        if stmt_end:
            if opt.flashback:
                h = self.head
                if encoded:
                    h.append(b"\nBINLOG '\n")
                    h.extend(self.body)
                    h.append(b"'%s\n" % DELIM)
                else:
                    h.extend(self.body)
                h.extend(self.tail)
                self.body.clear()
                self.tail.clear()
                self.pc.flashback_events.append(b"".join(h))
                h.clear()
                return
            self.pc.flush_head()
            if encoded:
                self.out.append(b"\nBINLOG '\n")
                self.out.extend(self.body)
                self.out.append(b"'%s\n" % DELIM)
            else:
                self.out.extend(self.body)
            self.body.clear()
            self.out.extend(self.tail)
            self.tail.clear()
            if opt.print_row_count:
                self.out.append(b"# Number of rows: %d\n" % self.row_events)
            self.row_events = 0
