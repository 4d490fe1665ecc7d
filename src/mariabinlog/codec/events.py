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

import struct
import zlib
from typing import ClassVar

from ..errors import DecodeError, EncryptedBinlogError, TruncatedError
from . import columns
from .primitives import (
    U8,
    U16,
    U32,
    U64,
    Buffer,
    need,
    read_lenenc_int,
    read_u48,
    write_lenenc,
)

HEADER = struct.Struct("<IBIIIH")
HEADER_LEN = 19
CHECKSUM_LEN = 4

# Checksum algorithms (Format_description body, last byte before the CRC field).
CHECKSUM_OFF = 0
CHECKSUM_CRC32 = 1
CHECKSUM_UNDEF = 255

# Header flags (sql/log_event.h).
LOG_EVENT_BINLOG_IN_USE_F = 0x0001
LOG_EVENT_THREAD_SPECIFIC_F = 0x0004
LOG_EVENT_SUPPRESS_USE_F = 0x0008
LOG_EVENT_ARTIFICIAL_F = 0x0020
LOG_EVENT_RELAY_LOG_F = 0x0040
LOG_EVENT_IGNORABLE_F = 0x0080
LOG_EVENT_SKIP_REPLICATION_F = 0x8000

# Type codes (enum Log_event_type).
UNKNOWN_EVENT = 0
START_EVENT_V3 = 1
QUERY_EVENT = 2
STOP_EVENT = 3
ROTATE_EVENT = 4
INTVAR_EVENT = 5
RAND_EVENT = 13
USER_VAR_EVENT = 14
FORMAT_DESCRIPTION_EVENT = 15
XID_EVENT = 16
BEGIN_LOAD_QUERY_EVENT = 17
EXECUTE_LOAD_QUERY_EVENT = 18
TABLE_MAP_EVENT = 19
WRITE_ROWS_EVENT_V1 = 23
UPDATE_ROWS_EVENT_V1 = 24
DELETE_ROWS_EVENT_V1 = 25
INCIDENT_EVENT = 26
HEARTBEAT_LOG_EVENT = 27
IGNORABLE_LOG_EVENT = 28
WRITE_ROWS_EVENT = 30
UPDATE_ROWS_EVENT = 31
DELETE_ROWS_EVENT = 32
XA_PREPARE_LOG_EVENT = 38
ANNOTATE_ROWS_EVENT = 160
BINLOG_CHECKPOINT_EVENT = 161
GTID_EVENT = 162
GTID_LIST_EVENT = 163
START_ENCRYPTION_EVENT = 164
QUERY_COMPRESSED_EVENT = 165
WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
WRITE_ROWS_COMPRESSED_EVENT = 169
UPDATE_ROWS_COMPRESSED_EVENT = 170
DELETE_ROWS_COMPRESSED_EVENT = 171
PARTIAL_ROW_DATA_EVENT = 172

EVENT_TYPE_NAMES: dict[int, str] = {
    START_EVENT_V3: "Start_v3",
    QUERY_EVENT: "Query",
    STOP_EVENT: "Stop",
    ROTATE_EVENT: "Rotate",
    INTVAR_EVENT: "Intvar",
    6: "Load",
    7: "Slave",
    8: "Create_file",
    9: "Append_block",
    10: "Exec_load",
    11: "Delete_file",
    12: "New_load",
    RAND_EVENT: "RAND",
    USER_VAR_EVENT: "User var",
    FORMAT_DESCRIPTION_EVENT: "Format_desc",
    XID_EVENT: "Xid",
    BEGIN_LOAD_QUERY_EVENT: "Begin_load_query",
    EXECUTE_LOAD_QUERY_EVENT: "Execute_load_query",
    TABLE_MAP_EVENT: "Table_map",
    20: "Write_rows_event_old",
    21: "Update_rows_event_old",
    22: "Delete_rows_event_old",
    WRITE_ROWS_EVENT_V1: "Write_rows_v1",
    UPDATE_ROWS_EVENT_V1: "Update_rows_v1",
    DELETE_ROWS_EVENT_V1: "Delete_rows_v1",
    INCIDENT_EVENT: "Incident",
    HEARTBEAT_LOG_EVENT: "Heartbeat",
    IGNORABLE_LOG_EVENT: "Ignorable",
    29: "Rows_query",
    WRITE_ROWS_EVENT: "Write_rows",
    UPDATE_ROWS_EVENT: "Update_rows",
    DELETE_ROWS_EVENT: "Delete_rows",
    33: "Gtid",
    34: "Anonymous_Gtid",
    35: "Previous_gtids",
    XA_PREPARE_LOG_EVENT: "XA_prepare",
    ANNOTATE_ROWS_EVENT: "Annotate_rows",
    BINLOG_CHECKPOINT_EVENT: "Binlog_checkpoint",
    GTID_EVENT: "Gtid",
    GTID_LIST_EVENT: "Gtid_list",
    START_ENCRYPTION_EVENT: "Start_encryption",
    QUERY_COMPRESSED_EVENT: "Query_compressed",
    WRITE_ROWS_COMPRESSED_EVENT_V1: "Write_rows_compressed_v1",
    UPDATE_ROWS_COMPRESSED_EVENT_V1: "Update_rows_compressed_v1",
    DELETE_ROWS_COMPRESSED_EVENT_V1: "Delete_rows_compressed_v1",
    WRITE_ROWS_COMPRESSED_EVENT: "Write_rows_compressed",
    UPDATE_ROWS_COMPRESSED_EVENT: "Update_rows_compressed",
    DELETE_ROWS_COMPRESSED_EVENT: "Delete_rows_compressed",
    PARTIAL_ROW_DATA_EVENT: "Partial_row_data",
}

#: Number of event types a 12.x server describes in its Format_description.
LOG_EVENT_TYPES = 172

_DEFAULT_POST_HEADER = {
    START_EVENT_V3: 56,
    QUERY_EVENT: 13,
    ROTATE_EVENT: 8,
    6: 18,
    8: 4,
    9: 4,
    10: 4,
    11: 4,
    12: 18,
    BEGIN_LOAD_QUERY_EVENT: 4,
    EXECUTE_LOAD_QUERY_EVENT: 26,
    TABLE_MAP_EVENT: 8,
    WRITE_ROWS_EVENT_V1: 8,
    UPDATE_ROWS_EVENT_V1: 8,
    DELETE_ROWS_EVENT_V1: 8,
    INCIDENT_EVENT: 2,
    WRITE_ROWS_EVENT: 10,
    UPDATE_ROWS_EVENT: 10,
    DELETE_ROWS_EVENT: 10,
    BINLOG_CHECKPOINT_EVENT: 4,
    GTID_EVENT: 19,
    GTID_LIST_EVENT: 4,
    QUERY_COMPRESSED_EVENT: 13,
    WRITE_ROWS_COMPRESSED_EVENT_V1: 8,
    UPDATE_ROWS_COMPRESSED_EVENT_V1: 8,
    DELETE_ROWS_COMPRESSED_EVENT_V1: 8,
    WRITE_ROWS_COMPRESSED_EVENT: 10,
    UPDATE_ROWS_COMPRESSED_EVENT: 10,
    DELETE_ROWS_COMPRESSED_EVENT: 10,
    PARTIAL_ROW_DATA_EVENT: 9,
}


def default_post_header_lengths(types: int = LOG_EVENT_TYPES) -> bytes:
    """Post-header length array a MariaDB server with ``types`` event types writes."""
    lengths = bytearray(types)
    for code, length in _DEFAULT_POST_HEADER.items():
        if code <= types:
            lengths[code - 1] = length
    lengths[FORMAT_DESCRIPTION_EVENT - 1] = 57 + types
    return bytes(lengths)


def event_type_name(type_code: int) -> str:
    """Name of an event type as SHOW BINLOG EVENTS prints it."""
    return EVENT_TYPE_NAMES.get(type_code, f"Unknown({type_code})")


class DecodeContext:
    """What decoding depends on: the current Format_description's post-header lengths.

    Without a Format_description the MariaDB 10.x/12.x defaults apply (the case
    for `.ibb` files, whose restart-marker FD is optional).
    """

    __slots__ = ("post_header_lengths",)

    def __init__(self, post_header_lengths: bytes | None = None) -> None:
        self.post_header_lengths = post_header_lengths or default_post_header_lengths()

    def post_header_len(self, type_code: int) -> int:
        """Post-header length of ``type_code`` (the default when the FD does not list it)."""
        phl = self.post_header_lengths
        if 0 < type_code <= len(phl):
            return phl[type_code - 1]
        return _DEFAULT_POST_HEADER.get(type_code, 0)


DEFAULT_CONTEXT = DecodeContext()


# --------------------------------------------------------------------------- base


class Event:
    """Common header fields of every event.

    ``log_pos`` is what the writer stored (0 inside `.ibb` files and inside
    transactions on MariaDB 11.4+); readers report the real position in
    ``position``/``end_position``, computed from the framing, never trusted
    from ``log_pos``.
    """

    type_code: ClassVar[int] = UNKNOWN_EVENT
    __slots__ = ("timestamp", "server_id", "log_pos", "flags", "position", "end_position")

    def __init__(self, *, timestamp: int = 0, server_id: int = 0, log_pos: int = 0, flags: int = 0) -> None:
        self.timestamp = timestamp
        self.server_id = server_id
        self.log_pos = log_pos
        self.flags = flags
        self.position: int | None = None
        self.end_position: int | None = None

    @property
    def name(self) -> str:
        """Event type name as SHOW BINLOG EVENTS prints it."""
        return event_type_name(self.type_code)

    def encode_body(self) -> bytes:
        """Post-header and body bytes (everything after the 19-byte header)."""
        raise NotImplementedError

    def encode(self, *, checksum: bool = False, log_pos: int | None = None) -> bytes:
        """Whole event bytes; with ``checksum`` a CRC-32 footer is appended."""
        body = self.encode_body()
        length = HEADER_LEN + len(body) + (CHECKSUM_LEN if checksum else 0)
        head = HEADER.pack(
            self.timestamp,
            self.type_code,
            self.server_id,
            length,
            self.log_pos if log_pos is None else log_pos,
            self.flags,
        )
        if not checksum:
            return head + body
        data = head + body
        return data + U32.pack(zlib.crc32(data))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in _all_slots(type(self)) if k not in ("type_code",))
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in _all_slots(type(self)))

    __hash__ = None  # type: ignore[assignment]


def _all_slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for slot in getattr(klass, "__slots__", ()):
            if slot not in names and slot not in ("decoder",):
                names.append(slot)
    return names


# ------------------------------------------------------------------- events


class UnknownEvent(Event):
    """An event type this library does not decode; the raw body is kept, never skipped."""

    __slots__ = ("type_code", "body")

    def __init__(self, type_code: int, body: bytes, **header: int) -> None:
        super().__init__(**header)
        self.type_code = type_code  # type: ignore[misc]
        self.body = body

    def encode_body(self) -> bytes:
        return self.body


class FormatDescriptionEvent(Event):
    """Format_description (15): binlog version, server version, post-header lengths, checksum."""

    type_code = FORMAT_DESCRIPTION_EVENT
    __slots__ = (
        "binlog_version",
        "server_version",
        "create_timestamp",
        "header_length",
        "post_header_lengths",
        "checksum_alg",
        "checksum_field",
    )

    def __init__(
        self,
        *,
        server_version: str,
        binlog_version: int = 4,
        create_timestamp: int = 0,
        header_length: int = HEADER_LEN,
        post_header_lengths: bytes | None = None,
        checksum_alg: int = CHECKSUM_OFF,
        checksum_field: int = 0,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.binlog_version = binlog_version
        self.server_version = server_version
        self.create_timestamp = create_timestamp
        self.header_length = header_length
        self.post_header_lengths = post_header_lengths if post_header_lengths is not None else default_post_header_lengths()
        self.checksum_alg = checksum_alg
        # The 4-byte CRC field every checksum-aware FD carries; with alg OFF it is
        # whatever the server left there, kept for byte-exact round trips.
        self.checksum_field = checksum_field

    def context(self) -> DecodeContext:
        """Decoding context this description establishes for the following events."""
        return DecodeContext(self.post_header_lengths)

    def encode_body(self) -> bytes:
        version = self.server_version.encode()[:50].ljust(50, b"\0")
        return (
            U16.pack(self.binlog_version)
            + version
            + U32.pack(self.create_timestamp)
            + U8.pack(self.header_length)
            + self.post_header_lengths
            + U8.pack(self.checksum_alg)
        )

    def encode(self, *, checksum: bool = False, log_pos: int | None = None) -> bytes:
        """FD always carries the CRC field; it is a real CRC only when ``checksum`` is set."""
        if checksum:
            return super().encode(checksum=True, log_pos=log_pos)
        data = super().encode(checksum=False, log_pos=log_pos)
        data = data[:9] + U32.pack(len(data) + 4) + data[13:]
        return data + U32.pack(self.checksum_field)


# Query status variable codes (sql/log_event.h Q_*).
Q_FLAGS2_CODE = 0
Q_SQL_MODE_CODE = 1
Q_CATALOG_CODE = 2
Q_AUTO_INCREMENT = 3
Q_CHARSET_CODE = 4
Q_TIME_ZONE_CODE = 5
Q_CATALOG_NZ_CODE = 6
Q_LC_TIME_NAMES_CODE = 7
Q_CHARSET_DATABASE_CODE = 8
Q_TABLE_MAP_FOR_UPDATE_CODE = 9
Q_MASTER_DATA_WRITTEN_CODE = 10
Q_INVOKER = 11
Q_HRNOW = 128
Q_XID = 129
Q_GTID_FLAGS3 = 130
Q_CHARACTER_SET_COLLATIONS = 131

StatusValue = int | bytes | tuple[int, ...] | tuple[bytes, bytes]


def _decode_status_vars(buf: Buffer, pos: int, end: int) -> list[tuple[int, StatusValue]]:
    """Parse Query status variables in order; an unknown code keeps the rest raw (code -1)."""
    out: list[tuple[int, StatusValue]] = []
    while pos < end:
        code = buf[pos]
        start = pos
        pos += 1
        try:
            if code == Q_FLAGS2_CODE or code == Q_MASTER_DATA_WRITTEN_CODE:
                need(buf, pos, 4, "Query status variable")
                out.append((code, U32.unpack_from(buf, pos)[0]))
                pos += 4
            elif code == Q_SQL_MODE_CODE or code == Q_TABLE_MAP_FOR_UPDATE_CODE or code == Q_XID:
                need(buf, pos, 8, "Query status variable")
                out.append((code, U64.unpack_from(buf, pos)[0]))
                pos += 8
            elif code == Q_AUTO_INCREMENT:
                need(buf, pos, 4, "Query status variable")
                out.append((code, struct.unpack_from("<HH", buf, pos)))
                pos += 4
            elif code == Q_CHARSET_CODE:
                need(buf, pos, 6, "Query status variable")
                out.append((code, struct.unpack_from("<HHH", buf, pos)))
                pos += 6
            elif code in (Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE):
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n, "Query status variable")
                out.append((code, bytes(buf[pos + 1 : pos + 1 + n])))
                pos += 1 + n
            elif code == Q_CATALOG_CODE:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n + 1, "Query status variable")
                out.append((code, bytes(buf[pos + 1 : pos + 1 + n])))
                pos += 2 + n
            elif code == Q_LC_TIME_NAMES_CODE or code == Q_CHARSET_DATABASE_CODE:
                need(buf, pos, 2, "Query status variable")
                out.append((code, U16.unpack_from(buf, pos)[0]))
                pos += 2
            elif code == Q_INVOKER:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n + 1, "Query status variable")
                user = bytes(buf[pos + 1 : pos + 1 + n])
                pos += 1 + n
                m = buf[pos]
                need(buf, pos + 1, m, "Query status variable")
                host = bytes(buf[pos + 1 : pos + 1 + m])
                pos += 1 + m
                out.append((code, (user, host)))
            elif code == Q_HRNOW:
                need(buf, pos, 3, "Query status variable")
                out.append((code, buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16))
                pos += 3
            elif code == Q_GTID_FLAGS3:
                need(buf, pos, 1, "Query status variable")
                out.append((code, buf[pos]))
                pos += 1
            elif code == Q_CHARACTER_SET_COLLATIONS:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, 4 * n, "Query status variable")
                out.append((code, struct.unpack_from("<" + "H" * (2 * n), buf, pos + 1)))
                pos += 1 + 4 * n
            else:
                # The server stops parsing at an unknown code too; keep the rest verbatim.
                out.append((-1, bytes(buf[start:end])))
                return out
        except TruncatedError:
            raise DecodeError("Query status variables overrun their length", offset=start, expected=f"status block ending at {end}") from None
    if pos != end:
        raise DecodeError("Query status variables overrun their length", offset=pos, expected=f"status block ending at {end}")
    return out


def _encode_status_vars(status: list[tuple[int, StatusValue]]) -> bytes:
    out = bytearray()
    for code, value in status:
        if code == -1:
            out += value  # type: ignore[operator]
            continue
        out.append(code)
        if code in (Q_FLAGS2_CODE, Q_MASTER_DATA_WRITTEN_CODE):
            out += U32.pack(value)  # type: ignore[arg-type]
        elif code in (Q_SQL_MODE_CODE, Q_TABLE_MAP_FOR_UPDATE_CODE, Q_XID):
            out += U64.pack(value)  # type: ignore[arg-type]
        elif code == Q_AUTO_INCREMENT:
            out += struct.pack("<HH", *value)  # type: ignore[misc]
        elif code == Q_CHARSET_CODE:
            out += struct.pack("<HHH", *value)  # type: ignore[misc]
        elif code in (Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE):
            out.append(len(value))  # type: ignore[arg-type]
            out += value  # type: ignore[operator]
        elif code == Q_CATALOG_CODE:
            out.append(len(value))  # type: ignore[arg-type]
            out += value + b"\0"  # type: ignore[operator]
        elif code in (Q_LC_TIME_NAMES_CODE, Q_CHARSET_DATABASE_CODE):
            out += U16.pack(value)  # type: ignore[arg-type]
        elif code == Q_INVOKER:
            user, host = value  # type: ignore[misc]
            out += bytes((len(user),)) + user + bytes((len(host),)) + host
        elif code == Q_HRNOW:
            out += int(value).to_bytes(3, "little")  # type: ignore[arg-type]
        elif code == Q_GTID_FLAGS3:
            out.append(value)  # type: ignore[arg-type]
        elif code == Q_CHARACTER_SET_COLLATIONS:
            out.append(len(value) // 2)  # type: ignore[arg-type]
            out += struct.pack("<" + "H" * len(value), *value)  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown Query status variable code {code}")
    return bytes(out)


def compress_block(data: bytes) -> bytes:
    """MariaDB's compressed-event block: 0x80|L, L big-endian length bytes, zlib stream."""
    n = len(data)
    width = 1 if n < 1 << 8 else 2 if n < 1 << 16 else 3 if n < 1 << 24 else 4
    return bytes((0x80 | width,)) + n.to_bytes(width, "big") + zlib.compress(data)


def decompress_block(buf: Buffer, pos: int, end: int) -> bytes:
    """Inverse of :func:`compress_block`; a bad block raises DecodeError at its offset."""
    need(buf, pos, 1, "compressed block")
    head = buf[pos]
    width = head & 0x07
    if not head & 0x80 or not 1 <= width <= 4:
        raise DecodeError(f"bad compressed block header 0x{head:02x}", offset=pos, expected="0x80 | length width 1..4")
    need(buf, pos + 1, width, "compressed block")
    size = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
    try:
        dec = zlib.decompressobj()
        data = dec.decompress(bytes(buf[pos + 1 + width : end]), size)
    except zlib.error as exc:
        raise DecodeError(f"compressed block does not inflate: {exc}", offset=pos, expected="a zlib stream") from None
    if len(data) != size:
        raise DecodeError(f"compressed block inflates to {len(data)} bytes", offset=pos, expected=f"{size} bytes")
    return data


class QueryEvent(Event):
    """Query (2): a statement with its session context (status variables)."""

    type_code = QUERY_EVENT
    __slots__ = ("thread_id", "exec_time", "error_code", "status_vars", "database", "query", "compressed_block")

    def __init__(
        self,
        *,
        query: bytes,
        database: bytes = b"",
        thread_id: int = 0,
        exec_time: int = 0,
        error_code: int = 0,
        status_vars: list[tuple[int, StatusValue]] | None = None,
        compressed_block: bytes | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.thread_id = thread_id
        self.exec_time = exec_time
        self.error_code = error_code
        self.status_vars = status_vars if status_vars is not None else []
        self.database = database
        self.query = query
        # Compressed variant only: the stored block, so re-encoding is byte-exact.
        self.compressed_block = compressed_block

    def status(self, code: int) -> StatusValue | None:
        """Value of status variable ``code`` or None when absent."""
        for c, value in self.status_vars:
            if c == code:
                return value
        return None

    def _query_bytes(self) -> bytes:
        return self.query

    def encode_body(self) -> bytes:
        status = _encode_status_vars(self.status_vars)
        return (
            struct.pack("<IIBHH", self.thread_id, self.exec_time, len(self.database), self.error_code, len(status))
            + status
            + self.database
            + b"\0"
            + self._query_bytes()
        )


class QueryCompressedEvent(QueryEvent):
    """Query_compressed (165): a Query whose text is a zlib block."""

    type_code = QUERY_COMPRESSED_EVENT
    __slots__ = ()

    def _query_bytes(self) -> bytes:
        if self.compressed_block is None:
            self.compressed_block = compress_block(self.query)
        return self.compressed_block


class StopEvent(Event):
    """Stop (3): the server shut down cleanly."""

    type_code = STOP_EVENT
    __slots__ = ("body",)

    def __init__(self, *, body: bytes = b"", **header: int) -> None:
        super().__init__(**header)
        self.body = body

    def encode_body(self) -> bytes:
        return self.body


class RotateEvent(Event):
    """Rotate (4): next file name and position; artificial (fake) when LOG_EVENT_ARTIFICIAL_F."""

    type_code = ROTATE_EVENT
    __slots__ = ("next_position", "next_file")

    def __init__(self, *, next_file: bytes, next_position: int = 4, **header: int) -> None:
        super().__init__(**header)
        self.next_position = next_position
        self.next_file = next_file

    @property
    def artificial(self) -> bool:
        """True for a fake rotate generated by a primary (not stored in a binlog)."""
        return bool(self.flags & LOG_EVENT_ARTIFICIAL_F)

    def encode_body(self) -> bytes:
        return U64.pack(self.next_position) + self.next_file


INTVAR_LAST_INSERT_ID = 1
INTVAR_INSERT_ID = 2


class IntvarEvent(Event):
    """Intvar (5): LAST_INSERT_ID (1) or INSERT_ID (2) for the next statement."""

    type_code = INTVAR_EVENT
    __slots__ = ("kind", "value")

    def __init__(self, *, kind: int, value: int, **header: int) -> None:
        super().__init__(**header)
        self.kind = kind
        self.value = value

    def encode_body(self) -> bytes:
        return U8.pack(self.kind) + U64.pack(self.value)


class RandEvent(Event):
    """Rand (13): the RAND() seeds of the next statement."""

    type_code = RAND_EVENT
    __slots__ = ("seed1", "seed2")

    def __init__(self, *, seed1: int, seed2: int, **header: int) -> None:
        super().__init__(**header)
        self.seed1 = seed1
        self.seed2 = seed2

    def encode_body(self) -> bytes:
        return U64.pack(self.seed1) + U64.pack(self.seed2)


USER_VAR_STRING = 0
USER_VAR_REAL = 1
USER_VAR_INT = 2
USER_VAR_ROW = 3
USER_VAR_DECIMAL = 4
USER_VAR_UNSIGNED_F = 1


class UserVarEvent(Event):
    """User_var (14): a user variable the next statement uses; ``value`` stays raw bytes."""

    type_code = USER_VAR_EVENT
    __slots__ = ("var_name", "is_null", "value_type", "charset", "value", "var_flags")

    def __init__(
        self,
        *,
        var_name: bytes,
        is_null: bool = False,
        value_type: int = USER_VAR_STRING,
        charset: int = 0,
        value: bytes = b"",
        var_flags: int | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.var_name = var_name
        self.is_null = is_null
        self.value_type = value_type
        self.charset = charset
        self.value = value
        self.var_flags = var_flags

    def encode_body(self) -> bytes:
        out = U32.pack(len(self.var_name)) + self.var_name + U8.pack(1 if self.is_null else 0)
        if self.is_null:
            return out
        out += U8.pack(self.value_type) + U32.pack(self.charset) + U32.pack(len(self.value)) + self.value
        if self.var_flags is not None:
            out += U8.pack(self.var_flags)
        return out


class XidEvent(Event):
    """Xid (16): commit of a transactional event group."""

    type_code = XID_EVENT
    __slots__ = ("xid",)

    def __init__(self, *, xid: int, **header: int) -> None:
        super().__init__(**header)
        self.xid = xid

    def encode_body(self) -> bytes:
        return U64.pack(self.xid)


class TableMapEvent(Event):
    """Table_map (19): table id -> db.table with column types and metadata.

    ``decoder`` caches the row decoding plan built by :mod:`.rows` for this map.
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
_ROWS_V2 = {WRITE_ROWS_EVENT, UPDATE_ROWS_EVENT, DELETE_ROWS_EVENT, WRITE_ROWS_COMPRESSED_EVENT, UPDATE_ROWS_COMPRESSED_EVENT, DELETE_ROWS_COMPRESSED_EVENT}
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
        self.type_code = type_code  # type: ignore[misc]
        self.table_id = table_id
        self.rows_flags = rows_flags
        self.extra_data = extra_data if type_code in _ROWS_V2 else None
        if type_code in _ROWS_V2 and self.extra_data is None:
            self.extra_data = b""
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


class IncidentEvent(Event):
    """Incident (26): something happened on the primary that replicas must know."""

    type_code = INCIDENT_EVENT
    __slots__ = ("incident", "message")

    def __init__(self, *, incident: int, message: bytes = b"", **header: int) -> None:
        super().__init__(**header)
        self.incident = incident
        self.message = message

    def encode_body(self) -> bytes:
        return U16.pack(self.incident) + bytes((len(self.message),)) + self.message


class HeartbeatEvent(Event):
    """Heartbeat (27): keep-alive carrying the primary's current file name (position in log_pos)."""

    type_code = HEARTBEAT_LOG_EVENT
    __slots__ = ("log_ident",)

    def __init__(self, *, log_ident: bytes, **header: int) -> None:
        super().__init__(**header)
        self.log_ident = log_ident

    def encode_body(self) -> bytes:
        return self.log_ident


class XaPrepareEvent(Event):
    """XA_prepare (38): ends an XA PREPARE event group (legacy binlogs)."""

    type_code = XA_PREPARE_LOG_EVENT
    __slots__ = ("one_phase", "format_id", "gtrid", "bqual")

    def __init__(self, *, one_phase: bool, format_id: int, gtrid: bytes, bqual: bytes, **header: int) -> None:
        super().__init__(**header)
        self.one_phase = one_phase
        self.format_id = format_id
        self.gtrid = gtrid
        self.bqual = bqual

    def encode_body(self) -> bytes:
        return (
            struct.pack("<BiII", 1 if self.one_phase else 0, self.format_id, len(self.gtrid), len(self.bqual))
            + self.gtrid
            + self.bqual
        )


def serialize_xid(format_id: int, gtrid: bytes, bqual: bytes) -> bytes:
    """An XA xid as the server writes it in SQL (``XID::serialize``): ``X'gtrid',X'bqual',formatID``
    in lower-case hex; the form of the binlog's ``XA ...`` statements and of ``mariadb-binlog``."""
    return b"X'%s',X'%s',%d" % (gtrid.hex().encode(), bqual.hex().encode(), format_id & 0xFFFFFFFF)


class AnnotateRowsEvent(Event):
    """Annotate_rows (160): the SQL text behind the following row events."""

    type_code = ANNOTATE_ROWS_EVENT
    __slots__ = ("query",)

    def __init__(self, *, query: bytes, **header: int) -> None:
        super().__init__(**header)
        self.query = query

    def encode_body(self) -> bytes:
        return self.query


class BinlogCheckpointEvent(Event):
    """Binlog_checkpoint (161): oldest binlog file still needed for crash recovery."""

    type_code = BINLOG_CHECKPOINT_EVENT
    __slots__ = ("filename",)

    def __init__(self, *, filename: bytes, **header: int) -> None:
        super().__init__(**header)
        self.filename = filename

    def encode_body(self) -> bytes:
        return U32.pack(len(self.filename)) + self.filename


# GTID flags2 (sql/log_event.h Gtid_log_event).
FL_STANDALONE = 0x01
FL_GROUP_COMMIT_ID = 0x02
FL_TRANSACTIONAL = 0x04
FL_ALLOW_PARALLEL = 0x08
FL_WAITED = 0x10
FL_DDL = 0x20
FL_PREPARED_XA = 0x40
FL_COMPLETED_XA = 0x80
# flags_extra
FL_EXTRA_MULTI_ENGINE_E1 = 0x01
FL_START_ALTER_E1 = 0x02
FL_COMMIT_ALTER_E1 = 0x04
FL_ROLLBACK_ALTER_E1 = 0x08
FL_EXTRA_THREAD_ID = 0x10

GTID_BODY_MIN = 19
_GTID_OPTIONAL_FIELDS = ("commit_id", "xa_format_id", "xa_gtrid", "xa_bqual", "flags_extra", "extra_engines", "sa_seq_no", "thread_id")


class GtidEvent(Event):
    """GTID (162): starts an event group; the GTID's server id is the header's server_id."""

    type_code = GTID_EVENT
    __slots__ = (
        "seq_no",
        "domain_id",
        "flags2",
        "commit_id",
        "xa_format_id",
        "xa_gtrid",
        "xa_bqual",
        "flags_extra",
        "extra_engines",
        "sa_seq_no",
        "thread_id",
    )

    def __init__(
        self,
        *,
        seq_no: int,
        domain_id: int,
        flags2: int = 0,
        commit_id: int | None = None,
        xa_format_id: int | None = None,
        xa_gtrid: bytes = b"",
        xa_bqual: bytes = b"",
        flags_extra: int = 0,
        extra_engines: int | None = None,
        sa_seq_no: int | None = None,
        thread_id: int | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.seq_no = seq_no
        self.domain_id = domain_id
        self.flags2 = flags2
        self.commit_id = commit_id
        self.xa_format_id = xa_format_id
        self.xa_gtrid = xa_gtrid
        self.xa_bqual = xa_bqual
        self.flags_extra = flags_extra
        self.extra_engines = extra_engines
        self.sa_seq_no = sa_seq_no
        self.thread_id = thread_id

    @property
    def standalone(self) -> bool:
        """True when one self-contained event follows (no implicit BEGIN / end event)."""
        return bool(self.flags2 & FL_STANDALONE)

    def optional_fields(self) -> dict[str, object]:
        """Everything besides GTID, flags2 and header (commit id, XA xid, extra flags, thread id).

        Keyword arguments that rebuild this event's optional part, so a writer that
        makes its own GTID event (the engine) can copy an original one unchanged.
        """
        return {name: getattr(self, name) for name in _GTID_OPTIONAL_FIELDS}

    def encode_body(self) -> bytes:
        out = bytearray(U64.pack(self.seq_no) + U32.pack(self.domain_id) + U8.pack(self.flags2))
        if self.flags2 & FL_GROUP_COMMIT_ID:
            out += U64.pack(self.commit_id or 0)
        if self.flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
            out += struct.pack("<iBB", self.xa_format_id or 0, len(self.xa_gtrid), len(self.xa_bqual))
            out += self.xa_gtrid + self.xa_bqual
        if self.flags_extra:
            out.append(self.flags_extra)
            if self.flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
                out.append(self.extra_engines or 0)
            if self.flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
                out += U64.pack(self.sa_seq_no or 0)
            if self.flags_extra & FL_EXTRA_THREAD_ID:
                out += U32.pack(self.thread_id or 0)
        if len(out) < GTID_BODY_MIN:
            out += bytes(GTID_BODY_MIN - len(out))
        return bytes(out)


GTID_LIST_FLAG_UNTIL_REACHED = 1
GTID_LIST_FLAG_IGN_GTIDS = 2
_GTID_ENTRY = struct.Struct("<IIQ")


class GtidListEvent(Event):
    """Gtid_list (163): binlog GTID state at the start of a file; entries (domain, server, seq)."""

    type_code = GTID_LIST_EVENT
    __slots__ = ("list_flags", "gtids", "padding")

    def __init__(
        self, *, gtids: list[tuple[int, int, int]], list_flags: int = 0, padding: bytes = b"", **header: int
    ) -> None:
        super().__init__(**header)
        self.list_flags = list_flags
        self.gtids = gtids
        # MariaDB pads an empty list with two zero bytes; kept for byte-exact round trips.
        self.padding = padding

    def encode_body(self) -> bytes:
        out = U32.pack(len(self.gtids) | (self.list_flags << 28))
        return out + b"".join(_GTID_ENTRY.pack(d, s, n) for d, s, n in self.gtids) + self.padding


class StartEncryptionEvent(Event):
    """Start_encryption (164): every later event of this file is encrypted."""

    type_code = START_ENCRYPTION_EVENT
    __slots__ = ("crypto_scheme", "key_version", "nonce")

    def __init__(self, *, crypto_scheme: int, key_version: int, nonce: bytes, **header: int) -> None:
        super().__init__(**header)
        self.crypto_scheme = crypto_scheme
        self.key_version = key_version
        self.nonce = nonce

    def encode_body(self) -> bytes:
        return U8.pack(self.crypto_scheme) + U32.pack(self.key_version) + self.nonce


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


# ------------------------------------------------------------------ decoding


def _dec_fd(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 57, "Format_description body")
    version = bytes(buf[p + 2 : p + 52]).split(b"\0", 1)[0].decode("ascii", "replace")
    header_length = buf[p + 56]
    # The post-header array runs up to the checksum algorithm byte and the 4-byte CRC field.
    phl_end = end - 5
    if phl_end < p + 57:
        raise TruncatedError("truncated Format_description", offset=p, expected="post-header lengths, checksum alg and CRC field")
    return FormatDescriptionEvent(
        binlog_version=U16.unpack_from(buf, p)[0],
        server_version=version,
        create_timestamp=U32.unpack_from(buf, p + 52)[0],
        header_length=header_length,
        post_header_lengths=bytes(buf[p + 57 : phl_end]),
        checksum_alg=buf[phl_end],
        checksum_field=U32.unpack_from(buf, phl_end + 1)[0],
        **hdr,
    )


_QUERY_POST = struct.Struct("<IIBHH")


def _dec_query(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext, compressed: bool = False) -> Event:
    post = ctx.post_header_len(QUERY_COMPRESSED_EVENT if compressed else QUERY_EVENT)
    need(buf, p, max(post, 13), "Query post-header")
    thread_id, exec_time, db_len, error_code, status_len = _QUERY_POST.unpack_from(buf, p)
    s = p + post
    need(buf, s, status_len + db_len + 1, "Query status variables and database")
    status = _decode_status_vars(buf, s, s + status_len)
    d = s + status_len
    if buf[d + db_len] != 0:
        raise DecodeError("Query database name is not NUL-terminated", offset=d + db_len, expected="0x00")
    q = d + db_len + 1
    kwargs = dict(
        thread_id=thread_id,
        exec_time=exec_time,
        error_code=error_code,
        status_vars=status,
        database=bytes(buf[d : d + db_len]),
        **hdr,
    )
    if compressed:
        block = bytes(buf[q:end])
        return QueryCompressedEvent(query=decompress_block(buf, q, end), compressed_block=block, **kwargs)
    return QueryEvent(query=bytes(buf[q:end]), **kwargs)


def _dec_query_compressed(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return _dec_query(buf, p, end, hdr, ctx, compressed=True)


def _dec_stop(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return StopEvent(body=bytes(buf[p:end]), **hdr)


def _dec_rotate(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 8, "Rotate position")
    return RotateEvent(next_position=U64.unpack_from(buf, p)[0], next_file=bytes(buf[p + 8 : end]), **hdr)


def _dec_intvar(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 9, "Intvar body")
    return IntvarEvent(kind=buf[p], value=U64.unpack_from(buf, p + 1)[0], **hdr)


def _dec_rand(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 16, "Rand body")
    return RandEvent(seed1=U64.unpack_from(buf, p)[0], seed2=U64.unpack_from(buf, p + 8)[0], **hdr)


def _dec_user_var(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "User_var name length")
    n = U32.unpack_from(buf, p)[0]
    need(buf, p + 4, n + 1, "User_var name")
    name = bytes(buf[p + 4 : p + 4 + n])
    q = p + 4 + n
    if buf[q]:
        return UserVarEvent(var_name=name, is_null=True, **hdr)
    need(buf, q + 1, 9, "User_var value header")
    value_type = buf[q + 1]
    charset, vlen = struct.unpack_from("<II", buf, q + 2)
    v = q + 10
    if v + vlen > end:
        raise TruncatedError("truncated User_var value", offset=v, expected=f"{vlen} bytes")
    flags = buf[v + vlen] if v + vlen < end else None
    return UserVarEvent(
        var_name=name, value_type=value_type, charset=charset, value=bytes(buf[v : v + vlen]), var_flags=flags, **hdr
    )


def _dec_xid(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 8, "Xid body")
    return XidEvent(xid=U64.unpack_from(buf, p)[0], **hdr)


def _dec_table_map(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    post = ctx.post_header_len(TABLE_MAP_EVENT)
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
    meta_len, q = read_lenenc_int(buf, q, "Table_map metadata length")
    need(buf, q, meta_len, "Table_map metadata")
    meta = columns.decode_column_meta(types, buf, q, q + meta_len)
    q += meta_len
    nb = (ncols + 7) >> 3
    need(buf, q, nb, "Table_map NULL bitmap")
    nulls = bytes(buf[q : q + nb])
    q += nb
    optional = columns.decode_optional_metadata(buf, q, end) if q < end else None
    return TableMapEvent(
        table_id=table_id,
        map_flags=map_flags,
        schema=schema,
        table=table,
        column_types=types,
        column_meta=meta,
        null_bitmap=nulls,
        optional_metadata=optional,
        **hdr,
    )


def _dec_rows(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext, type_code: int) -> Event:
    post = ctx.post_header_len(type_code)
    need(buf, p, post, "rows event post-header")
    if post == 6:
        table_id, rows_flags, q = U32.unpack_from(buf, p)[0], U16.unpack_from(buf, p + 4)[0], p + 6
    else:
        table_id, rows_flags, q = read_u48(buf, p), U16.unpack_from(buf, p + 6)[0], p + 8
    extra = None
    if type_code in _ROWS_V2:
        need(buf, q, 2, "rows event extra data length")
        extra_len = U16.unpack_from(buf, q)[0]
        if extra_len < 2:
            raise DecodeError("rows event extra data length below 2", offset=q, expected=">= 2")
        need(buf, q, extra_len, "rows event extra data")
        extra = bytes(buf[q + 2 : q + extra_len])
        q += extra_len
    width, q = read_lenenc_int(buf, q, "rows event column count")
    nb = (width + 7) >> 3
    need(buf, q, nb, "rows event column bitmap")
    before = bytes(buf[q : q + nb])
    q += nb
    after = None
    if ROWS_KIND[type_code] == "update":
        need(buf, q, nb, "rows event after-image column bitmap")
        after = bytes(buf[q : q + nb])
        q += nb
    if q > end:
        raise TruncatedError("truncated rows event", offset=q, expected="row data")
    block = None
    if type_code in _ROWS_COMPRESSED:
        block = bytes(buf[q:end])
        data = decompress_block(buf, q, end)
    else:
        data = bytes(buf[q:end])
    return RowsEvent(
        type_code,
        table_id=table_id,
        rows_flags=rows_flags,
        extra_data=extra,
        width=width,
        present_before=before,
        present_after=after,
        rows_data=data,
        compressed_block=block,
        **hdr,
    )


def _dec_incident(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 2, "Incident number")
    incident = U16.unpack_from(buf, p)[0]
    message = b""
    if p + 2 < end:
        n = buf[p + 2]
        need(buf, p + 3, n, "Incident message")
        message = bytes(buf[p + 3 : p + 3 + n])
    return IncidentEvent(incident=incident, message=message, **hdr)


def _dec_heartbeat(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return HeartbeatEvent(log_ident=bytes(buf[p:end]), **hdr)


def _dec_xa_prepare(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 13, "XA_prepare body")
    one_phase, format_id, glen, blen = struct.unpack_from("<BiII", buf, p)
    if glen > 64 or blen > 64:
        raise DecodeError("XA_prepare xid part longer than 64 bytes", offset=p + 5, expected="gtrid/bqual length <= 64")
    need(buf, p + 13, glen + blen, "XA_prepare xid")
    q = p + 13
    return XaPrepareEvent(
        one_phase=bool(one_phase),
        format_id=format_id,
        gtrid=bytes(buf[q : q + glen]),
        bqual=bytes(buf[q + glen : q + glen + blen]),
        **hdr,
    )


def _dec_annotate(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return AnnotateRowsEvent(query=bytes(buf[p:end]), **hdr)


def _dec_checkpoint(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "Binlog_checkpoint name length")
    n = U32.unpack_from(buf, p)[0]
    need(buf, p + 4, n, "Binlog_checkpoint name")
    return BinlogCheckpointEvent(filename=bytes(buf[p + 4 : p + 4 + n]), **hdr)


def _dec_gtid(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 13, "GTID body")
    seq_no = U64.unpack_from(buf, p)[0]
    domain_id = U32.unpack_from(buf, p + 8)[0]
    flags2 = buf[p + 12]
    q = p + 13
    commit_id = None
    if flags2 & FL_GROUP_COMMIT_ID:
        need(buf, q, 8, "GTID commit id")
        commit_id = U64.unpack_from(buf, q)[0]
        q += 8
    xa_format_id = None
    gtrid = bqual = b""
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        need(buf, q, 6, "GTID XA xid")
        xa_format_id, glen, blen = struct.unpack_from("<iBB", buf, q)
        if glen > 64 or blen > 64:
            raise DecodeError("GTID XA xid part longer than 64 bytes", offset=q + 4, expected="gtrid/bqual length <= 64")
        q += 6
        need(buf, q, glen + blen, "GTID XA xid data")
        gtrid = bytes(buf[q : q + glen])
        bqual = bytes(buf[q + glen : q + glen + blen])
        q += glen + blen
    flags_extra = 0
    extra_engines = sa_seq_no = thread_id = None
    if q < end:
        flags_extra = buf[q]
        q += 1
        if flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
            need(buf, q, 1, "GTID extra engines")
            extra_engines = buf[q]
            q += 1
        if flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            need(buf, q, 8, "GTID start-alter seq_no")
            sa_seq_no = U64.unpack_from(buf, q)[0]
            q += 8
        if flags_extra & FL_EXTRA_THREAD_ID:
            need(buf, q, 4, "GTID thread id")
            thread_id = U32.unpack_from(buf, q)[0]
            q += 4
    return GtidEvent(
        seq_no=seq_no,
        domain_id=domain_id,
        flags2=flags2,
        commit_id=commit_id,
        xa_format_id=xa_format_id,
        xa_gtrid=gtrid,
        xa_bqual=bqual,
        flags_extra=flags_extra,
        extra_engines=extra_engines,
        sa_seq_no=sa_seq_no,
        thread_id=thread_id,
        **hdr,
    )


def _dec_gtid_list(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "Gtid_list count")
    word = U32.unpack_from(buf, p)[0]
    count = word & 0x0FFFFFFF
    need(buf, p + 4, 16 * count, "Gtid_list entries")
    gtids = [_GTID_ENTRY.unpack_from(buf, p + 4 + 16 * i) for i in range(count)]
    padding = bytes(buf[p + 4 + 16 * count : end])
    return GtidListEvent(gtids=gtids, list_flags=word >> 28, padding=padding, **hdr)


def _dec_start_encryption(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 17, "Start_encryption body")
    return StartEncryptionEvent(
        crypto_scheme=buf[p], key_version=U32.unpack_from(buf, p + 1)[0], nonce=bytes(buf[p + 5 : p + 17]), **hdr
    )


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


_DECODERS = {
    FORMAT_DESCRIPTION_EVENT: _dec_fd,
    QUERY_EVENT: _dec_query,
    QUERY_COMPRESSED_EVENT: _dec_query_compressed,
    STOP_EVENT: _dec_stop,
    ROTATE_EVENT: _dec_rotate,
    INTVAR_EVENT: _dec_intvar,
    RAND_EVENT: _dec_rand,
    USER_VAR_EVENT: _dec_user_var,
    XID_EVENT: _dec_xid,
    TABLE_MAP_EVENT: _dec_table_map,
    INCIDENT_EVENT: _dec_incident,
    HEARTBEAT_LOG_EVENT: _dec_heartbeat,
    XA_PREPARE_LOG_EVENT: _dec_xa_prepare,
    ANNOTATE_ROWS_EVENT: _dec_annotate,
    BINLOG_CHECKPOINT_EVENT: _dec_checkpoint,
    GTID_EVENT: _dec_gtid,
    GTID_LIST_EVENT: _dec_gtid_list,
    START_ENCRYPTION_EVENT: _dec_start_encryption,
    PARTIAL_ROW_DATA_EVENT: _dec_partial,
}
for _code in ROWS_KIND:
    _DECODERS[_code] = lambda b, p, e, h, c, _t=_code: _dec_rows(b, p, e, h, c, _t)


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
    if decoder is None:
        return UnknownEvent(type_code, bytes(buf[pos + HEADER_LEN : end]), **hdr)
    try:
        return decoder(buf, pos + HEADER_LEN, end, hdr, ctx)
    except TruncatedError as exc:
        if exc.offset is not None and exc.offset >= end:
            raise
        raise TruncatedError(f"{event_type_name(type_code)} event: {exc.reason}", offset=exc.offset, expected=exc.expected) from None
    except DecodeError as exc:
        raise type(exc)(f"{event_type_name(type_code)} event: {exc.reason}", offset=exc.offset, expected=exc.expected) from None


def split_events(buf: Buffer, pos: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each event in a checksum-less event stream (e.g. an `.ibb` event group)."""
    end = len(buf) if end is None else end
    spans = []
    while pos < end:
        if pos + HEADER_LEN > end:
            raise TruncatedError("truncated event header", offset=pos, expected=f"{HEADER_LEN} header bytes")
        length = U32.unpack_from(buf, pos + 9)[0]
        if length < HEADER_LEN or pos + length > end:
            raise TruncatedError(f"event length {length} overruns the data", offset=pos, expected=f"at most {end - pos} bytes")
        spans.append((pos, pos + length))
        pos += length
    return spans


def reframe(event: Buffer, *, log_pos: int | None = None, checksum: bool = False) -> bytes:
    """Event bytes (header + body, no CRC footer) with the length field fixed to what they
    become, ``log_pos`` replaced when given, and a CRC-32 footer appended when ``checksum``.

    The one place that edits framing fields of raw events, for everything that passes
    events through (servers re-stamping positions, converters, printers re-encoding).
    """
    size = len(event) + (CHECKSUM_LEN if checksum else 0)
    pos_field = U32.pack(log_pos) if log_pos is not None else bytes(event[13:17])
    data = bytes(event[:9]) + U32.pack(size) + pos_field + bytes(event[17:])
    return data + U32.pack(zlib.crc32(data)) if checksum else data


def encrypted_error(offset: int) -> EncryptedBinlogError:
    """The error every reader raises for events after a Start_encryption event."""
    return EncryptedBinlogError(
        "binlog is encrypted (Start_encryption event); decrypting it needs the server's encryption key",
        offset=offset,
        expected="an unencrypted binlog",
    )
