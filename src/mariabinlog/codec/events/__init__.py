"""Every MariaDB replication event (binlog v4): decode and encode, byte-exact.

An event is a 19-byte common header, a post-header and a body, optionally
followed by a 4-byte CRC-32 footer (legacy binlogs with ``binlog_checksum=CRC32``;
never in `.ibb` files).  :func:`decode_event` turns the bytes of one event
(footer already stripped) into a typed event object; ``event.encode()`` turns it
back into the same bytes.  Anything this module does not know is kept raw in an
:class:`UnknownEvent`, never dropped.

Rows events keep their row images undecoded (lazy decoding); the row codec in
:mod:`mariabinlog.codec.rows` turns them into values with the table map's plan.
"""

from __future__ import annotations

from ...errors import DecodeError, TruncatedError
from . import control, query, rows, transaction
from .header import (
    ANNOTATE_ROWS_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_CRC32,
    CHECKSUM_LEN,
    CHECKSUM_OFF,
    CHECKSUM_UNDEF,
    DecodeContext,
    Decoder,
    DEFAULT_CONTEXT,
    default_post_header_lengths,
    DELETE_ROWS_COMPRESSED_EVENT,
    DELETE_ROWS_COMPRESSED_EVENT_V1,
    DELETE_ROWS_EVENT,
    DELETE_ROWS_EVENT_V1,
    encrypted_error,
    Event,
    event_type_name,
    EVENT_TYPE_NAMES,
    event_length,
    event_type,
    EXECUTE_LOAD_QUERY_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER,
    HEADER_LEN,
    header_fields,
    HEARTBEAT_LOG_EVENT,
    IGNORABLE_LOG_EVENT,
    INCIDENT_EVENT,
    INTVAR_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_RELAY_LOG_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    LOG_EVENT_TYPES,
    PARTIAL_ROW_DATA_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    reframe,
    with_event_type,
    with_log_pos,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    START_EVENT_V3,
    STOP_EVENT,
    TABLE_MAP_EVENT,
    UNKNOWN_EVENT,
    UnknownEvent,
    UPDATE_ROWS_COMPRESSED_EVENT,
    UPDATE_ROWS_COMPRESSED_EVENT_V1,
    UPDATE_ROWS_EVENT,
    UPDATE_ROWS_EVENT_V1,
    USER_VAR_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT,
    WRITE_ROWS_COMPRESSED_EVENT_V1,
    WRITE_ROWS_EVENT,
    WRITE_ROWS_EVENT_V1,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    APPEND_BLOCK_EVENT,
    LOAD_EVENT,
    CREATE_FILE_EVENT,
    EXEC_LOAD_EVENT,
)
from .control import (
    AnnotateRowsEvent,
    description_checksum_alg,
    format_description_statement,
    FormatDescriptionEvent,
    HeartbeatEvent,
    IncidentEvent,
    RotateEvent,
    rotate_fields,
    StartEncryptionEvent,
    StopEvent,
    version_has_checksum,
    StartV3Event,
)
from .query import (
    compress_block,
    decompress_block,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    IntvarEvent,
    intvar_fields,
    Q_AUTO_INCREMENT,
    Q_CATALOG_CODE,
    Q_CATALOG_NZ_CODE,
    Q_CHARACTER_SET_COLLATIONS,
    Q_CHARSET_CODE,
    Q_CHARSET_DATABASE_CODE,
    Q_FLAGS2_CODE,
    Q_GTID_FLAGS3,
    Q_HRNOW,
    Q_INVOKER,
    Q_LC_TIME_NAMES_CODE,
    Q_MASTER_DATA_WRITTEN_CODE,
    Q_SQL_MODE_CODE,
    Q_TABLE_MAP_FOR_UPDATE_CODE,
    Q_TIME_ZONE_CODE,
    Q_XID,
    QueryCompressedEvent,
    QueryEvent,
    query_sections,
    query_status_bytes,
    RandEvent,
    rand_seeds,
    StatusValue,
    USER_VAR_DECIMAL,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_ROW,
    USER_VAR_STRING,
    USER_VAR_UNSIGNED_F,
    UserVarEvent,
    ExecuteLoadQueryEvent,
    LoadBlockEvent,
    LOAD_DUP_ERROR,
    LOAD_DUP_IGNORE,
    LOAD_DUP_REPLACE,
    CreateFileEvent,
    ExecLoadEvent,
    LOAD_OPT_ENCLOSED_F,
    LOAD_REPLACE_F,
    LOAD_IGNORE_F,
)
from .rows import (
    COMPLETE_ROWS_F,
    NO_FOREIGN_KEY_CHECKS_F,
    PARTIAL_ORIG_EVENT_SIZE_F,
    PartialRowDataEvent,
    RELAXED_UNIQUE_CHECKS_F,
    ROWS_KIND,
    RowsBody,
    RowsEvent,
    STMT_END_F,
    TableMapEvent,
    UNCOMPRESSED_ROWS_TYPE,
    RowsLayout,
    rows_bitmaps,
    rows_extra_end,
    rows_head,
    rows_layout,
    rows_parts,
    set_rows_flags,
    with_table_map_database,
)
from .transaction import (
    BinlogCheckpointEvent,
    checkpoint_name,
    FL_ALLOW_PARALLEL,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_DDL,
    FL_EXTRA_MULTI_ENGINE_E1,
    FL_EXTRA_THREAD_ID,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FL_TRANSACTIONAL,
    FL_WAITED,
    GTID_BODY_MIN,
    GTID_LIST_FLAG_IGN_GTIDS,
    GTID_LIST_FLAG_UNTIL_REACHED,
    GtidEvent,
    gtid_fields,
    gtid_head,
    gtid_commit_id,
    gtid_short_flags_extra,
    GtidListEvent,
    serialize_xid,
    py_stored_group,
    xa_prepare_fields,
    XaPrepareEvent,
    xid_value,
    XidEvent,
)
from ..primitives import Buffer, need

_DECODERS: dict[int, Decoder] = {}
for _room in (control, query, rows, transaction):
    _DECODERS.update(_room.DECODERS)


def read_header(buf: Buffer, pos: int = 0) -> tuple[int, int, int, int, int, int]:
    """The 19-byte common header at ``pos``: (timestamp, type, server_id, length, log_pos, flags)."""
    need(buf, pos, HEADER_LEN, "event header")
    return HEADER.unpack_from(buf, pos)


def decode_event(
    buf: Buffer,
    pos: int = 0,
    end: int | None = None,
    ctx: DecodeContext = DEFAULT_CONTEXT,
) -> Event:
    """Decode the event whose header is at ``pos`` and whose body ends at ``end``.

    ``end`` excludes any CRC footer (the framing layer strips and verifies it);
    by default it is ``pos + event_length``.  Errors carry offsets into ``buf``.
    """
    timestamp, type_code, server_id, length, log_pos, flags = read_header(buf, pos)
    if end is None:
        end = pos + length
    if length < HEADER_LEN or end > len(buf) or end < pos + HEADER_LEN:
        raise TruncatedError(
            f"event length {length} does not fit", offset=pos, expected=f"an event of at least {HEADER_LEN} bytes inside the data"
        )
    hdr = {"timestamp": timestamp, "server_id": server_id, "log_pos": log_pos, "flags": flags}
    decoder = _DECODERS.get(type_code)
    # A Format_description is read with the 19-byte header; it sets the length of the others.
    body = pos + (HEADER_LEN if type_code == FORMAT_DESCRIPTION_EVENT else ctx.header_len)
    if body > end:
        raise TruncatedError(
            f"event length {length} is below the {ctx.header_len}-byte common header", offset=pos, expected="a longer event"
        )
    if decoder is None:
        return UnknownEvent(type_code, bytes(buf[body:end]), **hdr)
    try:
        return decoder(buf, body, end, hdr, ctx)
    except DecodeError as exc:
        raise _in_event(exc, type_code, end) from None


def _in_event(exc: DecodeError, type_code: int, end: int) -> DecodeError:
    """``exc``, raised reading the body of an event of type ``type_code`` that ends at ``end``,
    as the event's reader reports it: named after the event type (a truncation past the end
    of the body as it is, for the framing to report)."""
    if isinstance(exc, TruncatedError):
        if exc.offset is not None and exc.offset >= end:
            return exc
        return TruncatedError(f"{event_type_name(type_code)} event: {exc.reason}", offset=exc.offset, expected=exc.expected)
    return type(exc)(f"{event_type_name(type_code)} event: {exc.reason}", offset=exc.offset, expected=exc.expected)


def rows_body(buf: Buffer, pos: int, end: int, ctx: DecodeContext, type_code: int, position: int) -> RowsBody:
    """The :class:`RowsBody` of the rows event of type ``type_code`` whose common header is at
    ``pos`` and whose data ends at ``end`` (before any CRC footer; an event the framing has
    cut), read as :func:`decode_event` reads it and failing with the error it raises;
    ``position``: where the reader counts the event to start."""
    try:
        layout, images = rows_parts(buf, pos + ctx.header_len, end, ctx, type_code)
    except DecodeError as exc:
        raise _in_event(exc, type_code, end) from None
    return RowsBody(type_code, ROWS_KIND[type_code], layout.table_id, layout.width, layout.columns,
                    layout.columns_after, images, position)
