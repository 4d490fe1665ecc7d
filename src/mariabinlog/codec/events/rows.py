"""Row-based replication events: Table_map, Write/Update/Delete_rows (v1, v2, compressed), Partial_row_data.

Rows events keep their row images undecoded (lazy decoding); the row codec in
:mod:`mariabinlog.codec.rows` turns them into values with the table map's plan.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from ...errors import DecodeError
from .. import columns
from .header import (
    reframe,
    DecodeContext,
    Decoder,
    DELETE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    Event,
    PARTIAL_ROW_DATA_EVENT,
    _ROWS_V2,
    TABLE_MAP_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_EVENT,
    UPDATE_ROWS_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
)
from .query import compress_block, decompress_block
from ..native import FRAMEFAST_VERSION, load_fast
from ..primitives import Buffer, need, need_within, read_lenenc_int, read_u48, U16, U32, U64, write_lenenc

class TableMapEvent(Event):
    """Table_map (19): table id -> db.table with column types and metadata.

    ``decoder`` caches the row decoding plan built by :mod:`..rows` for this map.
    """

    type_code = TABLE_MAP_EVENT
    __slots__ = (
        "table_id",
        "map_flags",
        "schema",
        "table",
        "column_types",
        "column_meta",
        "null_bitmap",
        "optional_metadata",
        "decoder",
    )

    def __init__(
        self,
        *,
        table_id: int,
        schema: str,
        table: str,
        column_types: bytes,
        column_meta: tuple[int, ...],
        null_bitmap: bytes,
        map_flags: int = 1,
        optional_metadata: "columns.OptionalMetadata | None" = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.set_body(table_id, map_flags, schema, table, column_types, column_meta, null_bitmap, optional_metadata)

    def set_body(self, table_id: int, map_flags: int, schema: str, table: str, column_types: bytes,
                 column_meta: tuple[int, ...], null_bitmap: bytes,
                 optional_metadata: "columns.OptionalMetadata | None") -> None:
        """The fields after the common header (``__init__``'s, positional: the decoder's path)."""
        self.table_id = table_id
        self.map_flags = map_flags
        self.schema = schema
        self.table = table
        self.column_types = column_types
        self.column_meta = column_meta
        self.null_bitmap = null_bitmap
        self.optional_metadata = optional_metadata
        self.decoder: object | None = None

    @property
    def column_count(self) -> int:
        """Number of columns in the table (as the primary knew it)."""
        return len(self.column_types)

    def nullable(self, index: int) -> bool:
        """True when column ``index`` may hold NULL."""
        return bool(self.null_bitmap[index >> 3] >> (index & 7) & 1)

    def encode_body(self) -> bytes:
        schema = self.schema.encode("utf-8", "surrogateescape")
        table = self.table.encode("utf-8", "surrogateescape")
        meta = columns.encode_column_meta(self.column_types, self.column_meta)
        out = (
            self.table_id.to_bytes(6, "little")
            + U16.pack(self.map_flags)
            + bytes((len(schema),))
            + schema
            + b"\0"
            + bytes((len(table),))
            + table
            + b"\0"
            + write_lenenc(len(self.column_types))
            + self.column_types
            + write_lenenc(len(meta))
            + meta
            + self.null_bitmap
        )
        if self.optional_metadata is not None:
            out += self.optional_metadata.encode()
        return out


ROWS_KIND = {
    WRITE_ROWS_EVENT_V1: "insert",
    UPDATE_ROWS_EVENT_V1: "update",
    DELETE_ROWS_EVENT_V1: "delete",
    WRITE_ROWS_EVENT: "insert",
    UPDATE_ROWS_EVENT: "update",
    DELETE_ROWS_EVENT: "delete",
    WRITE_ROWS_COMPRESSED_EVENT_V1: "insert",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: "update",
    DELETE_ROWS_COMPRESSED_EVENT_V1: "delete",
    WRITE_ROWS_COMPRESSED_EVENT: "insert",
    UPDATE_ROWS_COMPRESSED_EVENT: "update",
    DELETE_ROWS_COMPRESSED_EVENT: "delete",
}
#: Compressed rows event type -> the plain type carrying the same rows (inflated).
UNCOMPRESSED_ROWS_TYPE = {
    WRITE_ROWS_COMPRESSED_EVENT_V1: WRITE_ROWS_EVENT_V1,
    UPDATE_ROWS_COMPRESSED_EVENT_V1: UPDATE_ROWS_EVENT_V1,
    DELETE_ROWS_COMPRESSED_EVENT_V1: DELETE_ROWS_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT: WRITE_ROWS_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT: UPDATE_ROWS_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT: DELETE_ROWS_EVENT,
}
_ROWS_COMPRESSED = {
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT,
}

STMT_END_F = 0x0001
NO_FOREIGN_KEY_CHECKS_F = 0x0002
RELAXED_UNIQUE_CHECKS_F = 0x0004
COMPLETE_ROWS_F = 0x0008


class RowsEvent(Event):
    """Write/Update/Delete rows, v1, v2 and compressed (23-25, 30-32, 166-171).

    Row images stay undecoded in ``rows_data`` (decompressed for the compressed
    types); :func:`mariabinlog.codec.rows.row_decoder` decodes them with the
    table map's plan.  ``compressed_block`` keeps the stored block so that
    re-encoding is byte-exact.
    """

    __slots__ = (
        "type_code",
        "table_id",
        "rows_flags",
        "extra_data",
        "width",
        "present_before",
        "present_after",
        "rows_data",
        "compressed_block",
    )

    def __init__(
        self,
        type_code: int,
        *,
        table_id: int,
        width: int,
        present_before: bytes,
        rows_data: bytes,
        present_after: bytes | None = None,
        rows_flags: int = 0,
        extra_data: bytes | None = None,
        compressed_block: bytes | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        if type_code not in ROWS_KIND:
            raise ValueError(f"{type_code} is not a rows event type")
        self.set_body(type_code, table_id, rows_flags, extra_data, width, present_before, present_after, rows_data,
                      compressed_block)

    def set_body(self, type_code: int, table_id: int, rows_flags: int, extra_data: bytes | None, width: int,
                 present_before: bytes, present_after: bytes | None, rows_data: bytes,
                 compressed_block: bytes | None) -> None:
        """The fields after the common header (``__init__``'s, positional: the decoder's path)."""
        self.type_code = type_code  # type: ignore[misc]
        self.table_id = table_id
        self.rows_flags = rows_flags
        v2 = type_code in _ROWS_V2
        self.extra_data = (b"" if extra_data is None else extra_data) if v2 else None
        self.width = width
        self.present_before = present_before
        self.present_after = present_after
        self.rows_data = rows_data
        self.compressed_block = compressed_block

    @property
    def kind(self) -> str:
        """'insert', 'update' or 'delete'."""
        return ROWS_KIND[self.type_code]

    @property
    def compressed(self) -> bool:
        """True for the compressed event types (166-171)."""
        return self.type_code in _ROWS_COMPRESSED

    @property
    def stmt_end(self) -> bool:
        """True on the last rows event of a statement."""
        return bool(self.rows_flags & STMT_END_F)

    def encode_body(self) -> bytes:
        out = self.table_id.to_bytes(6, "little") + U16.pack(self.rows_flags)
        if self.extra_data is not None:
            out += U16.pack(len(self.extra_data) + 2) + self.extra_data
        out += write_lenenc(self.width) + self.present_before
        if self.present_after is not None:
            out += self.present_after
        if self.compressed:
            if self.compressed_block is None:
                self.compressed_block = compress_block(self.rows_data)
            return out + self.compressed_block
        return out + self.rows_data


PARTIAL_ORIG_EVENT_SIZE_F = 0x01


class PartialRowDataEvent(Event):
    """Partial_row_data (172, 12.x): one fragment of a rows event too large for one event."""

    type_code = PARTIAL_ROW_DATA_EVENT
    __slots__ = ("total_fragments", "sequence", "fragment_flags", "original_size", "fragment")

    def __init__(
        self,
        *,
        total_fragments: int,
        sequence: int,
        fragment: bytes,
        fragment_flags: int = 0,
        original_size: int | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.total_fragments = total_fragments
        self.sequence = sequence
        self.fragment_flags = fragment_flags
        self.original_size = original_size
        self.fragment = fragment

    def encode_body(self) -> bytes:
        out = struct.pack("<IIB", self.total_fragments, self.sequence, self.fragment_flags)
        if self.fragment_flags & PARTIAL_ORIG_EVENT_SIZE_F:
            out += U64.pack(self.original_size or 0)
        return out + self.fragment


#: Decoded Table_map bodies by (post-header length, body): a binlog maps the same tables in
#: every transaction, and the fields are immutable, so repeats share them (and the readers
#: that key on a map's shape find it equal by identity).
_TABLE_MAPS: dict[tuple[int, bytes], tuple[Any, ...]] = {}
_TABLE_MAPS_LIMIT = 1024


def _dec_table_map(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    post = ctx.post_header_len(TABLE_MAP_EVENT)
    key = (post, bytes(buf[p:end]))
    fields = _TABLE_MAPS.get(key)
    if fields is None:
        fields = _table_map_fields(buf, p, end, post)
        if len(_TABLE_MAPS) >= _TABLE_MAPS_LIMIT:
            _TABLE_MAPS.clear()
        _TABLE_MAPS[key] = fields
    event = TableMapEvent.with_header(hdr)
    event.set_body(*fields)
    return event


def _table_map_fields(buf: Buffer, p: int, end: int, post: int) -> tuple[Any, ...]:
    """The fields of a Table_map body (everything but the common header), in the order of
    :meth:`TableMapEvent.set_body`."""
    need(buf, p, post, "Table_map post-header")
    if post == 6:
        table_id, map_flags, q = U32.unpack_from(buf, p)[0], U16.unpack_from(buf, p + 4)[0], p + 6
    else:
        table_id, map_flags, q = read_u48(buf, p), U16.unpack_from(buf, p + 6)[0], p + post
    need(buf, q, 1, "Table_map database name")
    n = buf[q]
    need(buf, q + 1, n + 2, "Table_map database name")
    schema = bytes(buf[q + 1 : q + 1 + n]).decode("utf-8", "surrogateescape")
    q += n + 2
    n = buf[q]
    need(buf, q + 1, n + 2, "Table_map table name")
    table = bytes(buf[q + 1 : q + 1 + n]).decode("utf-8", "surrogateescape")
    q += n + 2
    ncols, q = read_lenenc_int(buf, q, "Table_map column count")
    need(buf, q, ncols, "Table_map column types")
    types = bytes(buf[q : q + ncols])
    q += ncols
    if q >= end:
        # MySQL 5.1 before 5.1.18 wrote neither metadata nor NULL bitmap (the reader
        # takes zeros, as the server's does).
        return table_id, map_flags, schema, table, types, (0,) * ncols, bytes((ncols + 7) >> 3), None
    meta_len, q = read_lenenc_int(buf, q, "Table_map metadata length")
    need(buf, q, meta_len, "Table_map metadata")
    meta = columns.decode_column_meta(types, buf, q, q + meta_len)
    q += meta_len
    nb = (ncols + 7) >> 3
    need(buf, q, nb, "Table_map NULL bitmap")
    nulls = bytes(buf[q : q + nb])
    q += nb
    optional = columns.decode_optional_metadata(buf, q, end) if q < end else None
    return table_id, map_flags, schema, table, types, meta, nulls, optional


def rows_head(buf: Buffer, pos: int, post: int, end: int) -> tuple[int, int, int]:
    """A rows event's post-header at ``pos`` (``post`` bytes long: 6 for a 4-byte table id):
    ``(table_id, flags, offset of the flags)``.  An event whose body ends (``end``) before its
    post-header does is invalid, as the server's reader finds it."""
    need_within(pos, 8 if post != 6 else 6, end, "rows event post-header")
    if post == 6:
        return U32.unpack_from(buf, pos)[0], U16.unpack_from(buf, pos + 4)[0], pos + 4
    return read_u48(buf, pos), U16.unpack_from(buf, pos + 6)[0], pos + 6


def rows_bitmaps(buf: Buffer, pos: int, update: bool, end: int) -> tuple[int, bytes, bytes | None, int]:
    """A rows event's column count and present-columns bitmaps at ``pos`` (the after-image
    bitmap only for an update, else None): ``(width, columns, columns_after, rows offset)``.
    A column count whose bitmap would end past ``end`` (the event's body) makes the event
    invalid, as the server's reader finds it (``Rows_log_event``: "avoid reading out of
    buffer"), whatever the count: up to 2^64 - 1."""
    width, q = read_lenenc_int(buf, pos, "rows event column count")
    nb = (width + 7) >> 3
    if q + (2 * nb if update else nb) > end:
        raise DecodeError(
            f"invalid rows event: a column bitmap of {width} columns runs past the event",
            offset=pos, expected="the column count of the event's own bitmap",
        )
    cols = bytes(buf[q : q + nb])
    q += nb
    if not update:
        return width, cols, None, q
    return width, cols, bytes(buf[q : q + nb]), q + nb


def with_table_map_database(event: Buffer, post_header_len: int, database: bytes) -> bytes:
    """A whole Table_map event (19-byte header) with its database name replaced and its length
    fixed; the CRC footer, if any, is kept as it was (``Table_map_log_event::rewrite_db``)."""
    raw = bytes(event)
    p = 19 + post_header_len
    old_len = raw[p]
    return reframe(raw[:p] + bytes((len(database),)) + database + b"\0" + raw[p + 2 + old_len :])


def set_rows_flags(event: bytearray, flags_at: int, flags: int) -> None:
    """Store a rows event's flags at ``flags_at`` (from :func:`rows_head`) of its bytes."""
    U16.pack_into(event, flags_at, flags)


def rows_extra_end(buf: Buffer, q: int, end: int) -> int:
    """End of a v2 rows event's extra data whose length field is at ``q``, checked as the
    server's reader checks it: a length of at least 2 inside the event, and every
    extra-row-info chunk (tag 0) with its 2-byte header and its length inside the data
    (a chunk of another tag ends the walk)."""
    need(buf, q, 2, "rows event extra data length")
    extra_len = U16.unpack_from(buf, q)[0]
    stop = q + extra_len
    if extra_len < 2 or stop > end:
        raise DecodeError("invalid rows event: extra data length out of range", offset=q, expected=">= 2, inside the event")
    pos = q + 2
    while pos < stop:
        tag = buf[pos]
        pos += 1
        if tag != 0:
            break
        if stop - pos < 2 or stop - pos < buf[pos]:
            raise DecodeError("invalid rows event: truncated extra row info", offset=pos, expected="its 2-byte header and data")
        pos += buf[pos]
    return stop


#: A v2 rows event's post-header: table id, flags and the extra data's length (ROWS_HEADER_LEN_V2).
ROWS_HEADER_LEN_V2 = 10


class RowsLayout(NamedTuple):
    """Where a rows event's parts are (:func:`rows_layout`)."""

    table_id: int
    flags: int
    #: Offset of the flags (``--flashback`` rewrites them in place).
    flags_at: int
    #: Offset of the extra data's 2-byte length (a v2 event), else -1.
    extra_at: int
    width: int
    columns: bytes
    #: An update's after-image bitmap, else None.
    columns_after: bytes | None
    #: Offset of the row images (the compressed block of a compressed event).
    rows_at: int


def rows_layout(buf: Buffer, pos: int, post: int, update: bool, end: int) -> RowsLayout:
    """A rows event's parts from its post-header at ``pos`` (``post`` bytes long, from the
    Format_description) to its row images, as the server's ``Rows_log_event`` reads them: a
    4-byte table id when ``post`` is 6, else 6 bytes; extra data when ``post`` is 10 (v2),
    whatever the type code says; the bitmaps after the declared post-header and the extra
    data.  The one framing of rows events: the event decoder, the printers and the JSON and
    Debezium writers all call it.  Bitmaps of an ``update`` include its after-image's.
    The ordinary case (under 251 columns, nothing out of place) in compiled code; anything
    else, and every error, by :func:`py_rows_layout`."""
    if _fast_layout is not None:
        found = _fast_layout(buf, pos, post, update, end)
        if found is not None:
            return _tuple_new(RowsLayout, found)  # type: ignore[no-any-return]
    return py_rows_layout(buf, pos, post, update, end)


def py_rows_layout(buf: Buffer, pos: int, post: int, update: bool, end: int) -> RowsLayout:
    """:func:`rows_layout` in Python: the pure twin of ``_framefast.rows_layout``."""
    table_id, flags, flags_at = rows_head(buf, pos, post, end)
    q = pos + post
    extra_at = -1
    if post == ROWS_HEADER_LEN_V2:
        extra_at = pos + 8
        q = rows_extra_end(buf, extra_at, end)
    width, columns, after, q = rows_bitmaps(buf, q, update, end)
    return RowsLayout(table_id, flags, flags_at, extra_at, width, columns, after, q)


_fast = load_fast("mariabinlog.codec._framefast", "FAST_VERSION", FRAMEFAST_VERSION, "events/rows.py")
_fast_layout = _fast.rows_layout if _fast is not None else None
_tuple_new = tuple.__new__


def _dec_rows(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext, type_code: int) -> Event:
    layout, images = rows_parts(buf, p, end, ctx, type_code)
    table_id, rows_flags, extra_at = layout.table_id, layout.flags, layout.extra_at
    extra = None if extra_at < 0 else bytes(buf[extra_at + 2 : extra_at + U16.unpack_from(buf, extra_at)[0]])
    q = layout.rows_at
    block = bytes(buf[q:end]) if type_code in _ROWS_COMPRESSED else None
    event = RowsEvent.with_header(hdr)
    event.set_body(type_code, table_id, rows_flags, extra, layout.width, layout.columns, layout.columns_after, images,
                   block)
    return event


def rows_parts(buf: Buffer, p: int, end: int, ctx: DecodeContext, type_code: int) -> tuple[RowsLayout, bytes]:
    """The layout of the rows event body from ``p`` (after the common header) to ``end`` and
    its row images, decompressed for the compressed types: what the event decoder and
    :func:`~mariabinlog.codec.events.rows_body` both read."""
    layout = rows_layout(buf, p, ctx.post_header_len(type_code), ROWS_KIND[type_code] == "update", end)
    q = layout.rows_at
    return layout, decompress_block(buf, q, end) if type_code in _ROWS_COMPRESSED else bytes(buf[q:end])


class RowsBody(NamedTuple):
    """What reading a rows event's row images needs (a
    :class:`~mariabinlog.codec.rows.RowsEventLike`), read by
    :func:`~mariabinlog.codec.events.rows_body` without making the event: for readers that
    want the rows and nothing else of the event."""

    type_code: int
    kind: str
    table_id: int
    width: int
    present_before: bytes
    present_after: bytes | None
    rows_data: bytes
    #: Where the event starts, as the reader counts (for errors).
    position: int


def _dec_partial(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 9, "Partial_row_data post-header")
    total, seq, fflags = struct.unpack_from("<IIB", buf, p)
    q = p + 9
    orig = None
    if fflags & PARTIAL_ORIG_EVENT_SIZE_F:
        need(buf, q, 8, "Partial_row_data original size")
        orig = U64.unpack_from(buf, q)[0]
        q += 8
    return PartialRowDataEvent(
        total_fragments=total, sequence=seq, fragment_flags=fflags, original_size=orig, fragment=bytes(buf[q:end]), **hdr
    )


#: Decoders of this room's event types, merged by :func:`mariabinlog.codec.events.decode_event`.
DECODERS: dict[int, Decoder] = {
    TABLE_MAP_EVENT: _dec_table_map,
    PARTIAL_ROW_DATA_EVENT: _dec_partial,
}
for _code in ROWS_KIND:
    DECODERS[_code] = lambda b, p, e, h, c, _t=_code: _dec_rows(b, p, e, h, c, _t)
