"""File control events: Format_description, Rotate, Stop, Incident, Heartbeat, Annotate_rows, Start_encryption."""

from __future__ import annotations

import base64
import re

from ...errors import TruncatedError
from .header import (
    QUERY_EVENT,
    START_EVENT_V3,
    ANNOTATE_ROWS_EVENT,
    CHECKSUM_OFF,
    CHECKSUM_UNDEF,
    DecodeContext,
    Decoder,
    default_post_header_lengths,
    Event,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    HEARTBEAT_LOG_EVENT,
    INCIDENT_EVENT,
    LOG_EVENT_ARTIFICIAL_F,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
)
from ..primitives import Buffer, need, need_within, U16, U32, U64, U8

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
        return DecodeContext(self.post_header_lengths, self.header_length)

    def encode_body(self) -> bytes:
        version = self.server_version.encode()[:50].ljust(50, b"\0")
        return (
            U16.pack(self.binlog_version)
            + version
            + U32.pack(self.create_timestamp)
            + U8.pack(self.header_length)
            + self.post_header_lengths
            + (U8.pack(self.checksum_alg) if version_has_checksum(self.server_version) else b"")
        )

    def encode(self, *, checksum: bool = False, log_pos: int | None = None) -> bytes:
        """FD carries the CRC field from the servers that know checksums on; it is a real CRC
        only when ``checksum`` is set."""
        if not version_has_checksum(self.server_version):
            return super().encode(checksum=False, log_pos=log_pos)
        if checksum:
            return super().encode(checksum=True, log_pos=log_pos)
        data = super().encode(checksum=False, log_pos=log_pos)
        data = data[:9] + U32.pack(len(data) + 4) + data[13:]
        return data + U32.pack(self.checksum_field)


#: Post-header lengths of binlog format v3 (MySQL 4.0 / 4.1), which has no Format_description.
_V3_POST_HEADER = {START_EVENT_V3: 56, QUERY_EVENT: 11, ROTATE_EVENT: 8, 6: 18, 8: 4, 9: 4, 10: 4, 11: 4, 12: 18}


class StartV3Event(Event):
    """Start_v3 (1): the first event of a MySQL 4.x binlog (formats v1 and v3), the
    Format_description's predecessor: binlog and server version, creation time."""

    type_code = START_EVENT_V3
    __slots__ = ("binlog_version", "server_version", "create_timestamp")

    def __init__(self, *, binlog_version: int, server_version: str, create_timestamp: int = 0, **header: int) -> None:
        super().__init__(**header)
        self.binlog_version = binlog_version
        self.server_version = server_version
        self.create_timestamp = create_timestamp

    def context(self) -> DecodeContext:
        """Decoding context of the events after it: v3 post-header lengths, positions at event starts."""
        lengths = bytearray(FORMAT_DESCRIPTION_EVENT - 1)
        for code, length in _V3_POST_HEADER.items():
            lengths[code - 1] = length
        return DecodeContext(bytes(lengths), binlog_version=3)

    def encode_body(self) -> bytes:
        version = self.server_version.encode()[:50].ljust(50, b"\0")
        return U16.pack(self.binlog_version) + version + U32.pack(self.create_timestamp)


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


class AnnotateRowsEvent(Event):
    """Annotate_rows (160): the SQL text behind the following row events."""

    type_code = ANNOTATE_ROWS_EVENT
    __slots__ = ("query",)

    def __init__(self, *, query: bytes, **header: int) -> None:
        super().__init__(**header)
        self.query = query

    def encode_body(self) -> bytes:
        return self.query


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


# ------------------------------------------------------------------ decoding


def _version_split(version: str) -> tuple[int, int, int]:
    """The first three numbers of a server version string ("5.5.31-MariaDB" -> (5, 5, 31))."""
    parts: list[int] = []
    for piece in re.split(r"[.\-]", version, maxsplit=3)[:3]:
        digits = re.match(r"\d*", piece).group(0)  # type: ignore[union-attr]
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def version_has_checksum(server_version: str) -> bool:
    """Whether a Format_description written by ``server_version`` carries the checksum
    algorithm byte and CRC field: MariaDB from 5.3, MySQL from 5.6.1 (older servers
    wrote neither, and their post-header array runs to the end of the event)."""
    mariadb = "MariaDB" in server_version or "-maria-" in server_version
    return _version_split(server_version) >= ((5, 3, 0) if mariadb else (5, 6, 1))


def description_checksum_alg(buf: Buffer, pos: int, length: int) -> int:
    """Checksum algorithm that the Format_description event at ``pos`` (``length`` bytes)
    declares for itself and the events after it; OFF for servers before checksums."""
    if length < HEADER_LEN + 57 + 5:
        return CHECKSUM_OFF
    version = bytes(buf[pos + HEADER_LEN + 2 : pos + HEADER_LEN + 52]).split(b"\0", 1)[0]
    if not version_has_checksum(version.decode("ascii", "replace")):
        return CHECKSUM_OFF
    alg = buf[pos + length - 5]
    return CHECKSUM_OFF if alg == CHECKSUM_UNDEF else alg


def _dec_fd(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 57, "Format_description body")
    version = bytes(buf[p + 2 : p + 52]).split(b"\0", 1)[0].decode("ascii", "replace")
    header_length = buf[p + 56]
    if not version_has_checksum(version):
        # Before checksums the post-header array runs to the end of the event.
        return FormatDescriptionEvent(
            binlog_version=U16.unpack_from(buf, p)[0],
            server_version=version,
            create_timestamp=U32.unpack_from(buf, p + 52)[0],
            header_length=header_length,
            post_header_lengths=bytes(buf[p + 57 : end]),
            checksum_alg=CHECKSUM_OFF,
            **hdr,
        )
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


def _dec_start_v3(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 56, "Start_v3 body")
    return StartV3Event(
        binlog_version=U16.unpack_from(buf, p)[0],
        server_version=bytes(buf[p + 2 : p + 52]).split(b"\0", 1)[0].decode("ascii", "replace"),
        create_timestamp=U32.unpack_from(buf, p + 52)[0],
        **hdr,
    )


def _dec_stop(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return StopEvent(body=bytes(buf[p:end]), **hdr)


def rotate_fields(buf: Buffer, pos: int, end: int) -> tuple[int, bytes]:
    """A Rotate body from ``pos`` to ``end``: ``(position, next file name)``; TruncatedError
    when the body is shorter than its position."""
    need_within(pos, 8, end, "Rotate position")
    return U64.unpack_from(buf, pos)[0], bytes(buf[pos + 8 : end])


def _dec_rotate(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 8, "Rotate position")
    return RotateEvent(next_position=U64.unpack_from(buf, p)[0], next_file=bytes(buf[p + 8 : end]), **hdr)


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


def _dec_annotate(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return AnnotateRowsEvent(query=bytes(buf[p:end]), **hdr)


def _dec_start_encryption(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 17, "Start_encryption body")
    return StartEncryptionEvent(
        crypto_scheme=buf[p], key_version=U32.unpack_from(buf, p + 1)[0], nonce=bytes(buf[p + 5 : p + 17]), **hdr
    )


#: Decoders of this room's event types, merged by :func:`mariabinlog.codec.events.decode_event`.
DECODERS: dict[int, Decoder] = {
    FORMAT_DESCRIPTION_EVENT: _dec_fd,
    START_EVENT_V3: _dec_start_v3,
    STOP_EVENT: _dec_stop,
    ROTATE_EVENT: _dec_rotate,
    INCIDENT_EVENT: _dec_incident,
    HEARTBEAT_LOG_EVENT: _dec_heartbeat,
    ANNOTATE_ROWS_EVENT: _dec_annotate,
    START_ENCRYPTION_EVENT: _dec_start_encryption,
}


def format_description_statement(fd: FormatDescriptionEvent | None) -> bytes:
    """``BINLOG '...'`` of ``fd`` without checksums (a 10.11 one when None): what a server
    session needs before it takes row events in ``BINLOG`` statements (replicate, undo)."""
    if fd is None:
        fd = FormatDescriptionEvent(server_version="10.11.0-MariaDB")
    plain = FormatDescriptionEvent(
        server_version=fd.server_version,
        binlog_version=fd.binlog_version,
        header_length=fd.header_length,
        post_header_lengths=fd.post_header_lengths,
        checksum_alg=CHECKSUM_OFF,
        timestamp=fd.timestamp,
        server_id=fd.server_id,
    )
    return b"BINLOG '" + base64.b64encode(plain.encode()) + b"'"
