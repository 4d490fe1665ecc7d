"""Decoding a sequence of events with the state that sequence carries.

A binlog is not a bag of independent events: the Format_description sets the
checksum algorithm and post-header lengths of what follows, Table_map events
give meaning to the rows events after them, and a Start_encryption event makes
every later event unreadable without the key.  :class:`EventStreamDecoder`
keeps that state for any source (legacy file, `.ibb` event group, network
stream); :func:`iter_legacy_events` frames a whole legacy binlog file held in
memory (the tool layer mmaps it).
"""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import ChecksumError, DecodeError, TruncatedError
from ..checksum import crc32
from . import (
    CHECKSUM_CRC32,
    CHECKSUM_LEN,
    CHECKSUM_OFF,
    DEFAULT_CONTEXT,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    START_EVENT_V3,
    TABLE_MAP_EVENT,
    DecodeContext,
    Event,
    FormatDescriptionEvent,
    RowsBody,
    RowsEvent,
    StartV3Event,
    TableMapEvent,
    decode_event,
    description_checksum_alg,
    encrypted_error,
)
from ..ibb.page import LEGACY_MAGIC, file_kind
from ..primitives import U32, Buffer


#: ``crc_field(buf, pos)``: ``(crc,)``, the CRC-32 footer whose 4 bytes start at ``pos``
#: (a precompiled struct's reader: the dump's hot loop calls it once an event).
crc_field = U32.unpack_from


def stored_crc(buf: Buffer, end: int) -> int:
    """The CRC-32 footer of the event that ends at ``end``."""
    return crc_field(buf, end - 4)[0]  # type: ignore[no-any-return]

def footer_len(buf: Buffer, pos: int, length: int, stream_alg: int) -> int:
    """Bytes of CRC footer that the event at ``pos`` (``length`` bytes) ends with: 4 or 0.

    The one framing rule of every reader: a Format_description declares its own
    algorithm (and only servers that know checksums write one, see
    :func:`~mariabinlog.codec.events.version_has_checksum`); every other event
    follows the stream's algorithm, set by the last Format_description.
    """
    if buf[pos + 4] == FORMAT_DESCRIPTION_EVENT:
        return CHECKSUM_LEN if description_checksum_alg(buf, pos, length) == CHECKSUM_CRC32 else 0
    return CHECKSUM_LEN if stream_alg == CHECKSUM_CRC32 else 0


def crc_mismatch(buf: Buffer, pos: int, length: int) -> tuple[int, int] | None:
    """(stored, computed) CRC32 of the event at ``pos`` when its footer does not match, else None.

    A Format_description is checksummed as written at startup, before the server set
    its "binlog in use" flag: the CRC covers the event with that flag cleared.
    """
    stored = U32.unpack_from(buf, pos + length - 4)[0]
    if buf[pos + 4] == FORMAT_DESCRIPTION_EVENT and buf[pos + 17] & LOG_EVENT_BINLOG_IN_USE_F:
        data = bytearray(buf[pos : pos + length - 4])
        data[17] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
        actual = crc32(data)
    else:
        actual = crc32(memoryview(buf)[pos : pos + length - 4])  # a view: no copy of the event
    return None if stored == actual else (stored, actual)


#: Table_map bodies :meth:`EventStreamDecoder.shared_table_map` keeps (a binlog maps its
#: tables anew in every transaction, mostly the same few).
_SHARED_MAPS = 256


class EventStreamDecoder:
    """Stateful decoder of consecutive events: checksum algorithm, FD context, table maps.

    ``checksum_alg`` is the algorithm of the events before the first
    Format_description (OFF for `.ibb` data; a network stream passes what it
    negotiated).  Table maps are dropped whenever a Format_description or a
    Rotate arrives, as MariaDB's own appliers do, so a stale map is never used
    to decode rows of a different file.
    """

    __slots__ = ("checksum_alg", "verify_checksum", "ctx", "table_maps", "encrypted_at", "description", "_shared")

    def __init__(self, *, checksum_alg: int = CHECKSUM_OFF, verify_checksum: bool = True) -> None:
        self.checksum_alg = checksum_alg
        self.verify_checksum = verify_checksum
        self.ctx: DecodeContext = DEFAULT_CONTEXT
        self.table_maps: dict[int, TableMapEvent] = {}
        self.encrypted_at: int | None = None
        self.description: FormatDescriptionEvent | None = None
        #: Table_map events by body, for :meth:`shared_table_map` (dropped with the context).
        self._shared: dict[bytes, TableMapEvent] = {}

    def event_end(self, buf: Buffer, pos: int, length: int) -> int:
        """End of the event body at ``pos`` (before any checksum footer), verifying the CRC."""
        crc_len = footer_len(buf, pos, length, self.checksum_alg)
        if not crc_len:
            return pos + length
        if length < HEADER_LEN + CHECKSUM_LEN:
            raise TruncatedError(f"event length {length} leaves no room for its CRC32", offset=pos, expected=">= 23 bytes")
        if self.verify_checksum:
            bad = crc_mismatch(buf, pos, length)
            if bad is not None:
                raise ChecksumError(
                    f"event CRC32 mismatch: stored 0x{bad[0]:08x}, computed 0x{bad[1]:08x}",
                    offset=pos,
                    expected="a matching CRC32 footer",
                )
        # An FD's footer is part of the event the codec decodes (it keeps the CRC field).
        return pos + length if buf[pos + 4] == FORMAT_DESCRIPTION_EVENT else pos + length - crc_len

    def decode(self, buf: Buffer, pos: int = 0) -> Event:
        """Decode the framed event at ``pos`` (checksum footer included when the stream has one)."""
        if self.encrypted_at is not None:
            raise encrypted_error(pos)
        if pos + HEADER_LEN > len(buf):
            raise TruncatedError("truncated event header", offset=pos, expected=f"{HEADER_LEN} header bytes")
        length = U32.unpack_from(buf, pos + 9)[0]
        if length < HEADER_LEN or pos + length > len(buf):
            raise TruncatedError(
                f"event length {length} overruns the data", offset=pos, expected=f"at most {len(buf) - pos} bytes"
            )
        end = self.event_end(buf, pos, length)
        event = decode_event(buf, pos, end, self.ctx)
        event.position = pos
        event.end_position = pos + length
        self.observe(event)
        return event

    def observe(self, event: Event) -> None:
        """Update stream state after ``event`` (also for events decoded elsewhere)."""
        code = event.type_code
        if code == TABLE_MAP_EVENT:
            self.table_maps[event.table_id] = event  # type: ignore[attr-defined]
        elif code == FORMAT_DESCRIPTION_EVENT:
            assert isinstance(event, FormatDescriptionEvent)
            self.description = event
            self.checksum_alg = event.checksum_alg
            self.ctx = event.context()
            self.table_maps.clear()
            self._shared.clear()
        elif code == START_EVENT_V3:
            assert isinstance(event, StartV3Event)
            self.ctx = event.context()
            self.table_maps.clear()
            self._shared.clear()
        elif code == ROTATE_EVENT:
            self.table_maps.clear()
        elif code == START_ENCRYPTION_EVENT:
            self.encrypted_at = event.position if event.position is not None else 0

    def shared_table_map(self, buf: Buffer, pos: int, end: int) -> TableMapEvent:
        """Make the Table_map event at ``pos`` (its data ending at ``end``, before any CRC
        footer) the current map of its table id, and return it.  A map whose body (all but the
        common header) repeats one seen since the last Format_description is that earlier
        event, header and position included: a reader that wants only what maps describe
        (names, types, metadata) is spared decoding each transaction's maps anew, and finds
        repeats equal by identity."""
        key = bytes(buf[pos + self.ctx.header_len : end])
        event = self._shared.get(key)
        if event is None:
            decoded = decode_event(buf, pos, end, self.ctx)
            assert isinstance(decoded, TableMapEvent)
            if len(self._shared) >= _SHARED_MAPS:
                self._shared.clear()
            event = self._shared[key] = decoded
        self.table_maps[event.table_id] = event
        return event

    def table_map_for(self, event: RowsEvent | RowsBody) -> TableMapEvent:
        """The Table_map that describes ``event``'s rows; a missing map is a DecodeError."""
        table_map = self.table_maps.get(event.table_id)
        if table_map is None:
            raise DecodeError(
                f"rows event for table id {event.table_id} without a preceding Table_map",
                offset=event.position,
                expected="a Table_map event for this table id",
            )
        return table_map


def iter_legacy_events(
    data: Buffer,
    *,
    start: int = 4,
    verify_checksum: bool = True,
    decoder: EventStreamDecoder | None = None,
) -> Iterator[Event]:
    """Events of one legacy binlog file held in ``data``, with computed positions.

    The Format_description at offset 4 is always read (and yielded) first, as
    mariadb-binlog does, because it defines the checksum algorithm; reading
    then continues at ``start``.  Positions come from the framing, never from
    ``log_pos``.  Errors carry absolute file offsets.
    """
    if file_kind(data[:4]) != "legacy":
        raise DecodeError("not a legacy binary log file", offset=0, expected=f"magic {LEGACY_MAGIC.hex(' ')}")
    dec = decoder or EventStreamDecoder(verify_checksum=verify_checksum)
    size = len(data)
    pos = 4
    if size > pos:
        first = dec.decode(data, pos)
        yield first
        pos = first.end_position or size
        if start > pos:
            pos = start
    while pos < size:
        event = dec.decode(data, pos)
        yield event
        pos = event.end_position  # type: ignore[assignment]
