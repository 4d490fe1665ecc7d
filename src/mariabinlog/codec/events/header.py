"""The common event header, event type codes, decoding context and the Event base class.

An event is a 19-byte common header, a post-header and a body, optionally
followed by a 4-byte CRC-32 footer (legacy binlogs with ``binlog_checksum=CRC32``;
never in `.ibb` files).  Anything this library does not know is kept raw in an
:class:`UnknownEvent`, never dropped.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar, Self

from ...errors import CorruptRecordError, EncryptedBinlogError, TruncatedError
from ..primitives import Buffer, U32

HEADER = struct.Struct("<IBIIIH")
HEADER_LEN = 19

#: ``header_fields(buf, pos)``: the common header at ``pos`` as
#: ``(timestamp, type_code, server_id, length, log_pos, flags)`` (the printer's and the dump's hot loops).
header_fields = HEADER.unpack_from


def event_type(buf: "Buffer", pos: int) -> int:
    """The type code of the event whose header is at ``pos``."""
    return buf[pos + 4]  # type: ignore[no-any-return]


def event_length(buf: "Buffer", pos: int) -> int:
    """The length field of the event whose header is at ``pos``."""
    return U32.unpack_from(buf, pos + 9)[0]
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
LOAD_EVENT = 6
CREATE_FILE_EVENT = 8
APPEND_BLOCK_EVENT = 9
EXEC_LOAD_EVENT = 10
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
    """What decoding depends on: the current Format_description's common header length
    and post-header lengths.

    Without a Format_description the MariaDB 10.x/12.x defaults apply (the case
    for `.ibb` files, whose restart-marker FD is optional).  The common header is
    19 bytes except in a few forks' binlogs (Google's MySQL 5.1 with group ids wrote
    23 to 31): the body starts after ``header_len`` bytes, of which readers use 19.
    """

    __slots__ = ("post_header_lengths", "header_len", "binlog_version", "_rows_post")

    def __init__(
        self, post_header_lengths: bytes | None = None, header_len: int = HEADER_LEN, binlog_version: int = 4
    ) -> None:
        self.post_header_lengths = post_header_lengths or default_post_header_lengths()
        self.header_len = max(header_len, HEADER_LEN)
        #: 3 after a Start_v3 (MySQL 4.x): ``log_pos`` is then where an event starts, not ends.
        self.binlog_version = binlog_version

    def end_log_pos(self, type_code: int, log_pos: int, length: int) -> int:
        """The end position an event's ``log_pos`` stands for (v3 stored the start of events)."""
        if self.binlog_version == 3 and log_pos and type_code < FORMAT_DESCRIPTION_EVENT:
            return log_pos + length
        return log_pos

    def rows_post_header_lengths(self) -> bytes:
        """The post-header lengths of the rows event types 23-25 then 30-32 (v1, v2), as the
        compiled group walkers take them (``codec/_event.h``'s ``ev_rows``); made once."""
        try:
            return self._rows_post
        except AttributeError:
            self._rows_post = bytes(self.post_header_len(code) for code in (23, 24, 25, 30, 31, 32))
            return self._rows_post

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

    @classmethod
    def with_header(cls, header: dict[str, int]) -> Self:
        """An event of this class with its common header from ``header`` (as
        :func:`~mariabinlog.codec.events.decode_event` reads it) and no body yet: the decoders'
        per-event path, which sets the body's fields itself, without keyword plumbing."""
        event = object.__new__(cls)
        Event.__init__(event, **header)
        return event

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
_ROWS_V2 = {WRITE_ROWS_EVENT, UPDATE_ROWS_EVENT, DELETE_ROWS_EVENT, WRITE_ROWS_COMPRESSED_EVENT, UPDATE_ROWS_COMPRESSED_EVENT, DELETE_ROWS_COMPRESSED_EVENT}

def split_events(buf: Buffer, pos: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each event in a checksum-less event stream (e.g. an `.ibb` event group);
    a stream the events do not frame raises :class:`TruncatedError` at the first bad event."""
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


def iter_events(pieces: Iterable[Buffer]) -> Iterator[bytes]:
    """Split an event stream given in pieces into events by the event_length at offset 9.

    Events in `.ibb` files carry no CRC footer.  Pieces need not align with
    events; data is copied only when an event spans pieces.  A stream ending
    inside an event raises TruncatedError (offset relative to the stream).
    """
    carry = bytearray()
    base = 0
    for piece in pieces:
        if carry:
            carry += piece
            if len(carry) < HEADER_LEN or len(carry) < U32.unpack_from(carry, 9)[0]:
                continue
            data: Buffer = bytes(carry)
        else:
            data = piece
        pos, size = 0, len(data)
        while size - pos >= HEADER_LEN:
            length = U32.unpack_from(data, pos + 9)[0]
            if length < HEADER_LEN:
                raise CorruptRecordError(
                    f"event length {length} is shorter than the event header",
                    offset=base + pos + 9,
                    expected=f"at least {HEADER_LEN}",
                )
            if pos + length > size:
                break
            yield bytes(data[pos : pos + length])
            pos += length
        base += pos
        carry = bytearray(data[pos:])
    if carry:
        length = U32.unpack_from(carry, 9)[0] if len(carry) >= HEADER_LEN else HEADER_LEN
        raise TruncatedError("truncated event", offset=base, expected=f"{length} bytes, {len(carry)} left")


def reframe(event: Buffer, *, log_pos: int | None = None, checksum: bool = False) -> bytes:
    """Event bytes (header + body, no CRC footer) with the length field fixed to what they
    become, ``log_pos`` replaced when given, and a CRC-32 footer appended when ``checksum``.

    For code that passes raw events through with new framing (the binlog server re-stamping
    positions, the converters, replication and Spark dropping CRC footers, the printer
    re-encoding).  Events built from values are framed by :meth:`Event.encode`.
    """
    size = len(event) + (CHECKSUM_LEN if checksum else 0)
    pos_field = U32.pack(log_pos) if log_pos is not None else bytes(event[13:17])
    data = bytes(event[:9]) + U32.pack(size) + pos_field + bytes(event[17:])
    return data + U32.pack(zlib.crc32(data)) if checksum else data


def with_log_pos(event: Buffer, log_pos: int) -> bytes:
    """Event bytes with only the ``log_pos`` field replaced (modulo 2**32); length and footer kept."""
    return bytes(event[:13]) + U32.pack(log_pos & 0xFFFFFFFF) + bytes(event[17:])


def with_event_type(event: Buffer, type_code: int) -> bytes:
    """Event bytes with only the type code replaced; length and footer kept (the CRC is
    not recomputed: :func:`reframe` does that where it must be)."""
    return bytes(event[:4]) + bytes((type_code,)) + bytes(event[5:])


def encrypted_error(offset: int) -> EncryptedBinlogError:
    """The error every reader raises for events after a Start_encryption event."""
    return EncryptedBinlogError(
        "binlog is encrypted (Start_encryption event); decrypting it needs the server's encryption key",
        offset=offset,
        expected="an unencrypted binlog",
    )


#: Signature of a body decoder: (buffer, body offset, body end, header fields, context) -> event.
Decoder = Callable[[Buffer, int, int, dict[str, int], DecodeContext], Event]
