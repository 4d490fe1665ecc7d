"""The MySQL/MariaDB client/server protocol as pure state machines: bytes in, protocol events out.

Like h11 (``Connection.receive_data`` / ``next_event`` / ``send``) this module never touches a
socket: a driver feeds the bytes it read with :meth:`ClientProtocol.receive_data`, takes
protocol events from :meth:`ClientProtocol.next_event` (or the :data:`NEED_DATA` sentinel)
and writes the ``bytes`` the ``send_*`` methods return.  :class:`ServerProtocol` is the other
side (what a primary speaks), used by the binlog server.

Covered (protocol.md, MariaDB's ``sql/sql_repl.cc``/``sql/slave.cc``/``include/mysql_com.h``):

* packet framing: 3-byte length + sequence id, payloads of 16 MiB - 1 and more split and
  joined, a bound on the size of one logical packet;
* handshake v10 (with MariaDB's extended capabilities), SSL request, handshake response 41,
  ``mysql_native_password`` (scramble and verification), auth switch;
* OK / ERR / EOF packets, COM_QUERY with text result sets (also multi-results), COM_PING,
  COM_QUIT;
* COM_REGISTER_SLAVE, COM_BINLOG_DUMP, the event packets of a dump (``00`` + event, the
  semi-sync ``ef`` header when negotiated), the EOF/ERR that ends a dump, semi-sync ACKs.

Errors: bytes from the peer that break the protocol raise :class:`MalformedPacketError`
(a :class:`~mariabinlog.errors.DecodeError` with the offset in the payload); calling a
``send_*`` method in a state where the protocol does not allow it raises
:class:`LocalProtocolError`.  After a malformed packet the machine is in state ``ERROR``.
An ERR packet from the server is not an exception here: it is the :class:`ErrPacket` event;
:meth:`ErrPacket.exception` builds the :class:`ServerError` a driver raises.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from ..errors import DecodeError, ReplicationError
from .primitives import U16, U32, Buffer, read_lenenc, write_lenenc

# --------------------------------------------------------------------------- constants

MAX_PAYLOAD: Final = 0xFFFFFF
"""Largest payload of one wire packet; a logical packet this long continues in the next."""

DEFAULT_MAX_PACKET: Final = (1 << 30) + 4096
"""Default bound on one logical packet (``max_allowed_packet`` is at most 1 GiB)."""

# Capability flags (include/mysql_com.h).
CLIENT_MYSQL: Final = 1  # CLIENT_LONG_PASSWORD; a MariaDB client leaves it clear to get extended caps
CLIENT_FOUND_ROWS: Final = 2
CLIENT_LONG_FLAG: Final = 4
CLIENT_CONNECT_WITH_DB: Final = 8
CLIENT_LOCAL_FILES: Final = 128
CLIENT_PROTOCOL_41: Final = 512
CLIENT_INTERACTIVE: Final = 1024
CLIENT_SSL: Final = 2048
CLIENT_TRANSACTIONS: Final = 8192
CLIENT_SECURE_CONNECTION: Final = 32768
CLIENT_MULTI_STATEMENTS: Final = 1 << 16
CLIENT_MULTI_RESULTS: Final = 1 << 17
CLIENT_PS_MULTI_RESULTS: Final = 1 << 18
CLIENT_PLUGIN_AUTH: Final = 1 << 19
CLIENT_CONNECT_ATTRS: Final = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: Final = 1 << 21
CLIENT_SESSION_TRACK: Final = 1 << 23
CLIENT_DEPRECATE_EOF: Final = 1 << 24

#: What :class:`ClientProtocol` asks for (intersected with what the server offers).
CLIENT_DEFAULT_CAPS: Final = (
    CLIENT_MYSQL
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
)

#: What :class:`ServerProtocol` offers.
SERVER_DEFAULT_CAPS: Final = CLIENT_DEFAULT_CAPS | CLIENT_CONNECT_WITH_DB | CLIENT_CONNECT_ATTRS | CLIENT_FOUND_ROWS

# Server status flags.
SERVER_STATUS_IN_TRANS: Final = 0x0001
SERVER_STATUS_AUTOCOMMIT: Final = 0x0002
SERVER_MORE_RESULTS_EXISTS: Final = 0x0008

# Commands.
COM_QUIT: Final = 0x01
COM_INIT_DB: Final = 0x02
COM_QUERY: Final = 0x03
COM_PING: Final = 0x0E
COM_BINLOG_DUMP: Final = 0x12
COM_REGISTER_SLAVE: Final = 0x15

# COM_BINLOG_DUMP flags.
BINLOG_DUMP_NON_BLOCK: Final = 0x01
BINLOG_SEND_ANNOTATE_ROWS_EVENT: Final = 0x02

# @mariadb_slave_capability values (sql/log_event.h MARIA_SLAVE_CAPABILITY_*).
MARIA_SLAVE_CAPABILITY_UNKNOWN: Final = 0
MARIA_SLAVE_CAPABILITY_ANNOTATE: Final = 1
MARIA_SLAVE_CAPABILITY_TOLERATE_HOLES: Final = 2
MARIA_SLAVE_CAPABILITY_BINLOG_CHECKPOINT: Final = 3
MARIA_SLAVE_CAPABILITY_GTID: Final = 4
MARIA_SLAVE_CAPABILITY_ENGINE_BINLOG: Final = 5

# Semi-sync (sql/semisync.h).
SEMI_SYNC_MAGIC: Final = 0xEF
SEMI_SYNC_NEED_ACK: Final = 0x01

# Column types of result sets this module writes (enum_field_types).
MYSQL_TYPE_LONGLONG: Final = 8
MYSQL_TYPE_VAR_STRING: Final = 253

NATIVE_PASSWORD: Final = "mysql_native_password"
CHARSET_UTF8MB4_GENERAL_CI: Final = 45
CHARSET_BINARY: Final = 63

# Error codes a replication peer meets (include/mysqld_error.h).
ER_ACCESS_DENIED_ERROR: Final = 1045
ER_UNKNOWN_COM_ERROR: Final = 1047
ER_PARSE_ERROR: Final = 1064
ER_NET_PACKETS_OUT_OF_ORDER: Final = 1156
ER_MASTER_FATAL_ERROR_READING_BINLOG: Final = 1236
ER_UNKNOWN_SYSTEM_VARIABLE: Final = 1193
ER_NOT_SUPPORTED_YET: Final = 1235
ER_GTID_POSITION_NOT_FOUND_IN_BINLOG: Final = 1945
ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2: Final = 1955
ER_GTID_START_FROM_BINLOG_HOLE: Final = 1951

_U24_MAX = 0xFFFFFF
_HEADER = struct.Struct("<I")  # 3-byte length + seq read as one little-endian u32
_PAD23 = bytes(23)


class MalformedPacketError(DecodeError, ReplicationError):
    """The peer sent bytes that do not follow the protocol (offset is into the packet payload)."""


class LocalProtocolError(ReplicationError):
    """The caller used the protocol object in a way the protocol does not allow."""


class ServerError(ReplicationError):
    """The peer answered with an ERR packet: MariaDB error ``code``, ``sql_state`` and message."""

    def __init__(self, code: int, sql_state: str, message: str) -> None:
        self.code = code
        self.sql_state = sql_state
        self.message = message
        super().__init__(f"ERROR {code} ({sql_state}): {message}")


class _NeedData:
    """Sentinel type of :data:`NEED_DATA`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()
"""Returned by ``next_event`` when more bytes must be received first."""


# --------------------------------------------------------------------------- framing


def frame(payload: Buffer, seq: int) -> tuple[bytes, int]:
    """Wire bytes of one logical packet starting at sequence id ``seq``, and the next id.

    Payloads of ``0xFFFFFF`` bytes or more are split; a payload that is an exact multiple
    of ``0xFFFFFF`` ends with an empty packet, as the protocol requires.
    """
    size = len(payload)
    if size < MAX_PAYLOAD:
        return _HEADER.pack(size | (seq << 24)) + bytes(payload), (seq + 1) & 0xFF
    out = bytearray()
    view = memoryview(payload)
    pos = 0
    while True:
        chunk = view[pos : pos + MAX_PAYLOAD]
        out += _HEADER.pack(len(chunk) | (seq << 24))
        out += chunk
        seq = (seq + 1) & 0xFF
        pos += len(chunk)
        if len(chunk) < MAX_PAYLOAD:
            return bytes(out), seq


class PacketFramer:
    """Receive buffer that cuts logical packets out of a byte stream.

    Extraction is O(bytes received): the buffer is compacted only when the consumed prefix
    is larger than what is left.  ``max_packet`` bounds one logical packet (h11's
    ``max_incomplete_event_size`` idea): a peer announcing more is a protocol error, not an
    allocation.
    """

    __slots__ = ("_buf", "_pos", "_parts", "_parts_size", "_first_seq", "max_packet", "expected_seq")

    def __init__(self, max_packet: int = DEFAULT_MAX_PACKET) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._parts: list[bytes] = []
        self._parts_size = 0
        self._first_seq = 0
        self.max_packet = max_packet
        self.expected_seq: int | None = None

    def receive(self, data: Buffer) -> None:
        """Append bytes read from the peer."""
        if self._pos and self._pos >= len(self._buf) - self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet cut into packets."""
        return len(self._buf) - self._pos

    def take_buffered(self) -> bytes:
        """Remove and return the unread bytes (a TLS upgrade must not lose them)."""
        data = bytes(self._buf[self._pos :])
        self._buf = bytearray()
        self._pos = 0
        return data

    def next_packet(self) -> tuple[int, bytes] | None:
        """``(sequence id of the first part, payload)`` of the next complete packet, or None."""
        buf = self._buf
        while True:
            pos = self._pos
            if len(buf) - pos < 4:
                return None
            word = _HEADER.unpack_from(buf, pos)[0]
            length = word & _U24_MAX
            seq = word >> 24
            end = pos + 4 + length
            if self._parts_size + length > self.max_packet:
                raise MalformedPacketError(
                    f"packet of more than {self.max_packet} bytes", offset=0, expected="a smaller packet"
                )
            if len(buf) < end:
                return None
            if self.expected_seq is not None and seq != self.expected_seq:
                raise MalformedPacketError(
                    f"packet sequence id {seq}, expected {self.expected_seq}",
                    offset=0,
                    expected="packets in order",
                )
            self.expected_seq = (seq + 1) & 0xFF if self.expected_seq is not None else None
            self._pos = end
            if length == MAX_PAYLOAD:
                if not self._parts:
                    self._first_seq = seq
                self._parts.append(bytes(buf[pos + 4 : end]))
                self._parts_size += length
                continue
            if self._parts:
                self._parts.append(bytes(buf[pos + 4 : end]))
                payload = b"".join(self._parts)
                first = self._first_seq
                self._parts = []
                self._parts_size = 0
                return first, payload
            return seq, bytes(buf[pos + 4 : end])


# --------------------------------------------------------------------------- helpers


def _cstring(buf: Buffer, pos: int, what: str) -> tuple[bytes, int]:
    end = bytes(buf).find(b"\0", pos)
    if end < 0:
        raise MalformedPacketError(f"unterminated {what}", offset=pos, expected="a NUL-terminated string")
    return bytes(buf[pos:end]), end + 1


def _need(buf: Buffer, pos: int, size: int, what: str) -> None:
    if pos + size > len(buf):
        raise MalformedPacketError(f"truncated {what}", offset=pos, expected=f"{size} more bytes")


def _lenenc_int(buf: Buffer, pos: int, what: str) -> tuple[int, int]:
    try:
        value, pos2 = read_lenenc(buf, pos)
    except DecodeError as err:
        raise MalformedPacketError(f"{what}: {err.reason}", offset=err.offset, expected=err.expected) from None
    if value is None:
        raise MalformedPacketError(f"unexpected NULL in {what}", offset=pos, expected="a length")
    return value, pos2


def _lenenc_str(buf: Buffer, pos: int, what: str) -> tuple[bytes, int]:
    length, pos = _lenenc_int(buf, pos, what)
    _need(buf, pos, length, what)
    return bytes(buf[pos : pos + length]), pos + length


def lenenc_bytes(data: bytes) -> bytes:
    """``data`` with a length-encoded-integer prefix."""
    return write_lenenc(len(data)) + data


def _sha1(*parts: bytes) -> bytes:
    digest = hashlib.sha1()
    for part in parts:
        digest.update(part)
    return digest.digest()


def scramble_native_password(password: bytes, nonce: bytes) -> bytes:
    """``mysql_native_password`` response: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))); b"" for no password."""
    if not password:
        return b""
    stage1 = _sha1(password)
    stage2 = _sha1(stage1)
    mask = _sha1(nonce[:20], stage2)
    return bytes(a ^ b for a, b in zip(stage1, mask, strict=True))


def native_password_hash(password: bytes) -> bytes:
    """SHA1(SHA1(password)): what ``mysql.user`` stores (hex of it after a ``*``); b"" for no password."""
    return _sha1(_sha1(password)) if password else b""


def check_native_password(stored_hash: bytes, nonce: bytes, response: bytes) -> bool:
    """Verify a ``mysql_native_password`` response against the stored SHA1(SHA1(password))."""
    if not stored_hash:
        return not response
    if len(response) != 20:
        return False
    mask = _sha1(nonce[:20], stored_hash)
    stage1 = bytes(a ^ b for a, b in zip(response, mask, strict=True))
    return _sha1(stage1) == stored_hash


# --------------------------------------------------------------------------- packets


@dataclass(frozen=True, slots=True)
class Handshake:
    """Initial handshake v10 sent by the server."""

    server_version: str
    connection_id: int
    nonce: bytes
    capabilities: int
    charset: int = CHARSET_UTF8MB4_GENERAL_CI
    status: int = SERVER_STATUS_AUTOCOMMIT
    auth_plugin: str = NATIVE_PASSWORD
    mariadb_capabilities: int = 0
    protocol_version: int = 10

    def encode(self) -> bytes:
        """The handshake payload."""
        caps = self.capabilities
        nonce = self.nonce
        out = bytearray((self.protocol_version,))
        out += self.server_version.encode() + b"\0"
        out += U32.pack(self.connection_id)
        out += nonce[:8] + b"\0"
        out += U16.pack(caps & 0xFFFF)
        out.append(self.charset)
        out += U16.pack(self.status)
        out += U16.pack((caps >> 16) & 0xFFFF)
        out.append(len(nonce) + 1 if caps & CLIENT_PLUGIN_AUTH else 0)
        out += bytes(6)
        out += U32.pack(0 if caps & CLIENT_MYSQL else self.mariadb_capabilities)
        if caps & CLIENT_SECURE_CONNECTION:
            out += nonce[8:] + b"\0"
        if caps & CLIENT_PLUGIN_AUTH:
            out += self.auth_plugin.encode() + b"\0"
        return bytes(out)

    @classmethod
    def decode(cls, payload: Buffer) -> Handshake:
        """Parse a handshake v10 payload."""
        _need(payload, 0, 1, "handshake")
        version = payload[0]
        if version != 10:
            raise MalformedPacketError(
                f"handshake protocol version {version}", offset=0, expected="protocol version 10"
            )
        server_version, pos = _cstring(payload, 1, "server version")
        _need(payload, pos, 4 + 8 + 1 + 2, "handshake")
        connection_id = U32.unpack_from(payload, pos)[0]
        nonce = bytes(payload[pos + 4 : pos + 12])
        pos += 13
        caps = U16.unpack_from(payload, pos)[0]
        pos += 2
        charset, status, plugin_len = CHARSET_UTF8MB4_GENERAL_CI, 0, 0
        maria_caps = 0
        plugin = NATIVE_PASSWORD
        if pos < len(payload):
            _need(payload, pos, 16, "handshake")
            charset = payload[pos]
            status = U16.unpack_from(payload, pos + 1)[0]
            caps |= U16.unpack_from(payload, pos + 3)[0] << 16
            plugin_len = payload[pos + 5]
            maria_caps = U32.unpack_from(payload, pos + 12)[0]
            pos += 16
            if caps & CLIENT_SECURE_CONNECTION:
                size = max(13, plugin_len - 8)
                _need(payload, pos, size, "auth plugin data")
                nonce += bytes(payload[pos : pos + size]).rstrip(b"\0")[:12]
                pos += size
            if caps & CLIENT_PLUGIN_AUTH and pos < len(payload):
                # Some servers omit the final NUL of the plugin name.
                plugin = bytes(payload[pos:]).split(b"\0", 1)[0].decode("ascii", "replace")
        return cls(
            server_version=server_version.decode("utf-8", "replace"),
            connection_id=connection_id,
            nonce=nonce,
            capabilities=caps,
            charset=charset,
            status=status,
            auth_plugin=plugin,
            mariadb_capabilities=0 if caps & CLIENT_MYSQL else maria_caps,
            protocol_version=version,
        )


@dataclass(frozen=True, slots=True)
class SslRequest:
    """The short handshake response that asks to switch to TLS before authenticating."""

    capabilities: int
    max_packet: int = 1 << 24
    charset: int = CHARSET_UTF8MB4_GENERAL_CI

    def encode(self) -> bytes:
        """32-byte payload."""
        return U32.pack(self.capabilities | CLIENT_SSL) + U32.pack(self.max_packet) + bytes((self.charset,)) + _PAD23


@dataclass(frozen=True, slots=True)
class HandshakeResponse:
    """Handshake response 41 sent by the client."""

    capabilities: int
    user: str
    auth_response: bytes
    database: str | None = None
    auth_plugin: str = NATIVE_PASSWORD
    max_packet: int = 1 << 24
    charset: int = CHARSET_UTF8MB4_GENERAL_CI
    attributes: tuple[tuple[str, str], ...] = ()

    def encode(self) -> bytes:
        """The response payload."""
        caps = self.capabilities
        if self.database is not None:
            caps |= CLIENT_CONNECT_WITH_DB
        if self.attributes:
            caps |= CLIENT_CONNECT_ATTRS
        out = bytearray(U32.pack(caps) + U32.pack(self.max_packet) + bytes((self.charset,)) + _PAD23)
        out += self.user.encode() + b"\0"
        if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
            out += lenenc_bytes(self.auth_response)
        elif caps & CLIENT_SECURE_CONNECTION:
            out += bytes((len(self.auth_response),)) + self.auth_response
        else:
            out += self.auth_response + b"\0"
        if caps & CLIENT_CONNECT_WITH_DB:
            out += (self.database or "").encode() + b"\0"
        if caps & CLIENT_PLUGIN_AUTH:
            out += self.auth_plugin.encode() + b"\0"
        if caps & CLIENT_CONNECT_ATTRS:
            attrs = b"".join(lenenc_bytes(k.encode()) + lenenc_bytes(v.encode()) for k, v in self.attributes)
            out += lenenc_bytes(attrs)
        return bytes(out)

    @classmethod
    def decode(cls, payload: Buffer) -> HandshakeResponse | SslRequest:
        """Parse a handshake response, or the 32-byte :class:`SslRequest`."""
        _need(payload, 0, 32, "handshake response")
        caps, max_packet = struct.unpack_from("<II", payload, 0)
        charset = payload[8]
        if len(payload) == 32 and caps & CLIENT_SSL:
            return SslRequest(caps, max_packet, charset)
        if not caps & CLIENT_PROTOCOL_41:
            raise MalformedPacketError("pre-4.1 handshake response", offset=0, expected="CLIENT_PROTOCOL_41")
        user, pos = _cstring(payload, 32, "user name")
        if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth, pos = _lenenc_str(payload, pos, "auth response")
        elif caps & CLIENT_SECURE_CONNECTION:
            _need(payload, pos, 1, "auth response")
            size = payload[pos]
            _need(payload, pos + 1, size, "auth response")
            auth = bytes(payload[pos + 1 : pos + 1 + size])
            pos += 1 + size
        else:
            auth, pos = _cstring(payload, pos, "auth response")
        database = None
        if caps & CLIENT_CONNECT_WITH_DB and pos < len(payload):
            raw_db, pos = _cstring(payload, pos, "database")
            database = raw_db.decode("utf-8", "replace")
        plugin = NATIVE_PASSWORD
        if caps & CLIENT_PLUGIN_AUTH and pos < len(payload):
            raw, pos = _cstring(payload, pos, "auth plugin name")
            plugin = raw.decode("ascii", "replace")
        attrs: list[tuple[str, str]] = []
        if caps & CLIENT_CONNECT_ATTRS and pos < len(payload):
            blob, pos = _lenenc_str(payload, pos, "connection attributes")
            apos = 0
            while apos < len(blob):
                key, apos = _lenenc_str(blob, apos, "attribute name")
                value, apos = _lenenc_str(blob, apos, "attribute value")
                attrs.append((key.decode("utf-8", "replace"), value.decode("utf-8", "replace")))
        return cls(
            capabilities=caps,
            user=user.decode("utf-8", "replace"),
            auth_response=auth,
            database=database,
            auth_plugin=plugin,
            max_packet=max_packet,
            charset=charset,
            attributes=tuple(attrs),
        )


@dataclass(frozen=True, slots=True)
class AuthSwitchRequest:
    """The server asks the client to authenticate again with ``plugin`` and a new ``nonce``."""

    plugin: str
    nonce: bytes

    def encode(self) -> bytes:
        """``fe`` + plugin name + NUL + data + NUL."""
        return b"\xfe" + self.plugin.encode() + b"\0" + self.nonce + b"\0"

    @classmethod
    def decode(cls, payload: Buffer) -> AuthSwitchRequest:
        """Parse an auth switch request (``fe`` first byte, more than 5 bytes)."""
        name, pos = _cstring(payload, 1, "auth plugin name")
        data = bytes(payload[pos:])
        if data.endswith(b"\0"):
            data = data[:-1]
        return cls(name.decode("ascii", "replace"), data)


@dataclass(frozen=True, slots=True)
class AuthMoreData:
    """``01`` + plugin-specific data during authentication."""

    data: bytes


@dataclass(frozen=True, slots=True)
class OkPacket:
    """OK: the command succeeded."""

    affected_rows: int = 0
    last_insert_id: int = 0
    status: int = SERVER_STATUS_AUTOCOMMIT
    warnings: int = 0
    info: bytes = b""

    @property
    def more_results(self) -> bool:
        """True when another result of a multi-statement follows."""
        return bool(self.status & SERVER_MORE_RESULTS_EXISTS)

    def encode(self) -> bytes:
        """The OK payload."""
        return (
            b"\0"
            + write_lenenc(self.affected_rows)
            + write_lenenc(self.last_insert_id)
            + U16.pack(self.status)
            + U16.pack(self.warnings)
            + self.info
        )

    @classmethod
    def decode(cls, payload: Buffer) -> OkPacket:
        """Parse an OK payload (first byte ``00``, or ``fe`` when it replaces an EOF)."""
        affected, pos = _lenenc_int(payload, 1, "OK affected rows")
        insert_id, pos = _lenenc_int(payload, pos, "OK last insert id")
        status = warnings = 0
        if pos + 4 <= len(payload):
            status, warnings = struct.unpack_from("<HH", payload, pos)
            pos += 4
        return cls(affected, insert_id, status, warnings, bytes(payload[pos:]))


@dataclass(frozen=True, slots=True)
class ErrPacket:
    """ERR: MariaDB error ``code``, 5-character ``sql_state`` and message."""

    code: int
    message: str
    sql_state: str = "HY000"

    def encode(self) -> bytes:
        """``ff`` + code + ``#`` + state + message."""
        return b"\xff" + U16.pack(self.code) + b"#" + self.sql_state.encode()[:5].ljust(5, b"0") + self.message.encode()

    @classmethod
    def decode(cls, payload: Buffer) -> ErrPacket:
        """Parse an ERR payload (the ``#state`` part is optional before 4.1 / during handshake)."""
        _need(payload, 0, 3, "ERR packet")
        code = U16.unpack_from(payload, 1)[0]
        state = "HY000"
        pos = 3
        if len(payload) >= 9 and payload[3] == 0x23:  # '#'
            state = bytes(payload[4:9]).decode("ascii", "replace")
            pos = 9
        return cls(code, bytes(payload[pos:]).decode("utf-8", "replace"), state)

    def exception(self) -> ServerError:
        """The :class:`ServerError` a driver raises for this packet."""
        return ServerError(self.code, self.sql_state, self.message)


@dataclass(frozen=True, slots=True)
class EofPacket:
    """EOF (``fe``, at most 8 bytes): end of column definitions, rows, or a non-blocking dump."""

    warnings: int = 0
    status: int = SERVER_STATUS_AUTOCOMMIT

    def encode(self) -> bytes:
        """``fe`` + warnings + status."""
        return b"\xfe" + U16.pack(self.warnings) + U16.pack(self.status)

    @classmethod
    def decode(cls, payload: Buffer) -> EofPacket:
        """Parse an EOF payload (old servers send only the ``fe`` byte)."""
        if len(payload) >= 5:
            warnings, status = struct.unpack_from("<HH", payload, 1)
            return cls(warnings, status)
        return cls()


def is_eof(payload: Buffer) -> bool:
    """True for an EOF packet (``fe`` and shorter than 9 bytes)."""
    return len(payload) < 9 and len(payload) > 0 and payload[0] == 0xFE


@dataclass(frozen=True, slots=True)
class Column:
    """A column definition (protocol 41) of a text result set."""

    name: str
    type: int = MYSQL_TYPE_VAR_STRING
    charset: int = CHARSET_UTF8MB4_GENERAL_CI
    length: int = 255
    flags: int = 0
    decimals: int = 0
    schema: str = ""
    table: str = ""

    def encode(self) -> bytes:
        """The column definition payload."""
        name = self.name.encode()
        return (
            lenenc_bytes(b"def")
            + lenenc_bytes(self.schema.encode())
            + lenenc_bytes(self.table.encode())
            + lenenc_bytes(self.table.encode())
            + lenenc_bytes(name)
            + lenenc_bytes(name)
            + b"\x0c"
            + struct.pack("<HIBHB", self.charset, self.length, self.type, self.flags, self.decimals)
            + b"\0\0"
        )

    @classmethod
    def decode(cls, payload: Buffer) -> Column:
        """Parse a column definition 41."""
        pos = 0
        fields = []
        for what in ("catalog", "schema", "table", "org_table", "name", "org_name"):
            value, pos = _lenenc_str(payload, pos, f"column {what}")
            fields.append(value)
        _, pos = _lenenc_int(payload, pos, "column fixed-length fields")
        _need(payload, pos, 10, "column definition")
        charset, length, ctype, flags, decimals = struct.unpack_from("<HIBHB", payload, pos)
        return cls(
            name=fields[4].decode("utf-8", "replace"),
            type=ctype,
            charset=charset,
            length=length,
            flags=flags,
            decimals=decimals,
            schema=fields[1].decode("utf-8", "replace"),
            table=fields[2].decode("utf-8", "replace"),
        )


Row = tuple[bytes | None, ...]


def encode_text_row(values: Row) -> bytes:
    """A text-protocol row: each value length-encoded, NULL as ``fb``."""
    return b"".join(b"\xfb" if v is None else lenenc_bytes(v) for v in values)


def decode_text_row(payload: Buffer, count: int) -> Row:
    """Parse a text-protocol row of ``count`` values."""
    values: list[bytes | None] = []
    pos = 0
    for _ in range(count):
        _need(payload, pos, 1, "row value")
        if payload[pos] == 0xFB:
            values.append(None)
            pos += 1
            continue
        value, pos = _lenenc_str(payload, pos, "row value")
        values.append(value)
    return tuple(values)


@dataclass(frozen=True, slots=True)
class ResultSet:
    """A complete text result set."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    status: int = SERVER_STATUS_AUTOCOMMIT

    @property
    def more_results(self) -> bool:
        """True when another result of a multi-statement follows."""
        return bool(self.status & SERVER_MORE_RESULTS_EXISTS)

    def scalar(self) -> bytes | None:
        """The first value of the first row (None if there is none or it is NULL)."""
        return self.rows[0][0] if self.rows and self.rows[0] else None


@dataclass(frozen=True, slots=True)
class RegisterSlave:
    """COM_REGISTER_SLAVE: announce this replica (``SHOW SLAVE HOSTS``)."""

    server_id: int
    host: str = ""
    user: str = ""
    password: str = ""
    port: int = 0
    rank: int = 0
    master_id: int = 0

    def encode(self) -> bytes:
        """The command payload."""
        parts = [bytes((COM_REGISTER_SLAVE,)), U32.pack(self.server_id)]
        for text in (self.host, self.user, self.password):
            raw = text.encode()[:255]
            parts.append(bytes((len(raw),)) + raw)
        parts.append(struct.pack("<HII", self.port, self.rank, self.master_id))
        return b"".join(parts)

    @classmethod
    def decode(cls, payload: Buffer) -> RegisterSlave:
        """Parse the command payload (first byte ``15``)."""
        _need(payload, 1, 4, "COM_REGISTER_SLAVE")
        server_id = U32.unpack_from(payload, 1)[0]
        pos = 5
        texts = []
        for what in ("host", "user", "password"):
            _need(payload, pos, 1, f"COM_REGISTER_SLAVE {what}")
            size = payload[pos]
            _need(payload, pos + 1, size, f"COM_REGISTER_SLAVE {what}")
            texts.append(bytes(payload[pos + 1 : pos + 1 + size]).decode("utf-8", "replace"))
            pos += 1 + size
        _need(payload, pos, 10, "COM_REGISTER_SLAVE")
        port, rank, master_id = struct.unpack_from("<HII", payload, pos)
        return cls(server_id, texts[0], texts[1], texts[2], port, rank, master_id)


@dataclass(frozen=True, slots=True)
class BinlogDump:
    """COM_BINLOG_DUMP: start streaming (GTID mode when ``@slave_connect_state`` is set)."""

    server_id: int
    position: int = 4
    flags: int = 0
    filename: bytes = b""

    def encode(self) -> bytes:
        """The command payload."""
        return struct.pack("<BIHI", COM_BINLOG_DUMP, self.position, self.flags, self.server_id) + self.filename

    @classmethod
    def decode(cls, payload: Buffer) -> BinlogDump:
        """Parse the command payload (first byte ``12``)."""
        _need(payload, 0, 11, "COM_BINLOG_DUMP")
        _, position, flags, server_id = struct.unpack_from("<BIHI", payload, 0)
        return cls(server_id, position, flags, bytes(payload[11:]))


@dataclass(frozen=True, slots=True)
class Query:
    """COM_QUERY received by a server."""

    sql: bytes

    @property
    def text(self) -> str:
        """The statement as text (undecodable bytes replaced)."""
        return self.sql.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Quit:
    """COM_QUIT received by a server."""


@dataclass(frozen=True, slots=True)
class Ping:
    """COM_PING received by a server."""


@dataclass(frozen=True, slots=True)
class UnknownCommand:
    """A command byte :class:`ServerProtocol` does not implement; answer it with an ERR."""

    command: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class BinlogEventPacket:
    """One event of a dump stream: the complete event bytes (header, body, CRC if any)."""

    data: bytes
    need_ack: bool = False


@dataclass(frozen=True, slots=True)
class SemiSyncAck:
    """Semi-sync ACK (client to primary): the replica has the event ending at ``position``."""

    position: int
    filename: bytes

    def encode(self) -> bytes:
        """``ef`` + u64 position + file name."""
        return bytes((SEMI_SYNC_MAGIC,)) + struct.pack("<Q", self.position) + self.filename


@dataclass(frozen=True, slots=True)
class EndOfStream:
    """EOF at the end of a non-blocking dump (the primary has nothing more)."""


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The peer closed the connection (the driver passed ``b""`` to ``receive_data``)."""


ClientEvent = (
    Handshake
    | AuthSwitchRequest
    | AuthMoreData
    | OkPacket
    | ErrPacket
    | ResultSet
    | BinlogEventPacket
    | EndOfStream
    | ConnectionClosed
)
ServerEvent = SslRequest | HandshakeResponse | Query | RegisterSlave | BinlogDump | Quit | Ping | UnknownCommand | ConnectionClosed


class ClientState(Enum):
    """Where a :class:`ClientProtocol` is."""

    AWAIT_HANDSHAKE = "await-handshake"
    HANDSHAKE_RECEIVED = "handshake-received"
    AUTHENTICATING = "authenticating"
    READY = "ready"
    AWAIT_RESULT = "await-result"
    DUMPING = "dumping"
    CLOSED = "closed"
    ERROR = "error"


# --------------------------------------------------------------------------- client


class ClientProtocol:
    """The client side: handshake, authentication, queries, registration and a binlog dump.

    Typical driver loop::

        proto = ClientProtocol()
        while (event := proto.next_event()) is NEED_DATA:
            proto.receive_data(sock.recv(65536))
        sock.sendall(proto.send_handshake_response(event, user, password))
        ...

    ``semi_sync`` tells the machine that event packets carry the two-byte semi-sync header
    (set it after ``SET @rpl_semi_sync_slave=1`` succeeded).
    """

    __slots__ = (
        "state",
        "framer",
        "handshake",
        "capabilities",
        "semi_sync",
        "_seq",
        "_password",
        "_columns",
        "_rows",
        "_column_count",
        "_phase",
        "_closed",
    )

    def __init__(self, *, max_packet: int = DEFAULT_MAX_PACKET) -> None:
        self.state = ClientState.AWAIT_HANDSHAKE
        self.framer = PacketFramer(max_packet)
        self.handshake: Handshake | None = None
        self.capabilities = 0
        self.semi_sync = False
        self._seq = 0
        self._password = b""
        self._columns: list[Column] = []
        self._rows: list[Row] = []
        self._column_count = 0
        self._phase = 0  # result set: 0 = column count, 1 = columns, 2 = rows
        self._closed = False

    # -- receiving ------------------------------------------------------------------------------

    def receive_data(self, data: Buffer) -> None:
        """Feed bytes read from the server; ``b""`` means the server closed the connection."""
        if not data:
            self._closed = True
            return
        self.framer.receive(data)

    def next_event(self) -> ClientEvent | _NeedData:
        """The next protocol event, or :data:`NEED_DATA`."""
        if self.state is ClientState.ERROR:
            raise LocalProtocolError("the connection is in the ERROR state after a protocol error")
        try:
            packet = self.framer.next_packet()
        except MalformedPacketError:
            self.state = ClientState.ERROR
            raise
        while packet is not None:
            seq, payload = packet
            self._seq = (seq + 1 + len(payload) // MAX_PAYLOAD) & 0xFF
            try:
                event = self._interpret(payload)
                if event is not None:
                    return event
                packet = self.framer.next_packet()
            except MalformedPacketError:
                self.state = ClientState.ERROR
                raise
        if self._closed:
            self.state = ClientState.CLOSED
            return ConnectionClosed()
        return NEED_DATA

    def _interpret(self, payload: bytes) -> ClientEvent | None:
        """The event for ``payload``; None when the packet only continues a result set."""
        state = self.state
        if not payload:
            raise MalformedPacketError("empty packet", offset=0, expected="a packet type byte")
        first = payload[0]
        if state is ClientState.DUMPING:
            if first == 0x00:
                if self.semi_sync and len(payload) > 2 and payload[1] == SEMI_SYNC_MAGIC:
                    return BinlogEventPacket(payload[3:], bool(payload[2] & SEMI_SYNC_NEED_ACK))
                return BinlogEventPacket(payload[1:])
            if first == 0xFF:
                self.state = ClientState.READY
                return ErrPacket.decode(payload)
            if is_eof(payload):
                self.state = ClientState.READY
                return EndOfStream()
            raise MalformedPacketError(
                f"dump packet starts with 0x{first:02x}", offset=0, expected="00 (event), fe (EOF) or ff (error)"
            )
        if state is ClientState.AWAIT_RESULT:
            return self._result_packet(payload, first)
        if state is ClientState.AWAIT_HANDSHAKE:
            if first == 0xFF:
                self.state = ClientState.CLOSED
                return ErrPacket.decode(payload)
            self.handshake = Handshake.decode(payload)
            self.state = ClientState.HANDSHAKE_RECEIVED
            return self.handshake
        if state is ClientState.AUTHENTICATING:
            if first == 0x00:
                self.state = ClientState.READY
                return OkPacket.decode(payload)
            if first == 0xFF:
                self.state = ClientState.CLOSED
                return ErrPacket.decode(payload)
            if first == 0xFE:
                return AuthSwitchRequest.decode(payload)
            if first == 0x01:
                return AuthMoreData(payload[1:])
            raise MalformedPacketError(
                f"authentication reply starts with 0x{first:02x}", offset=0, expected="00, 01, fe or ff"
            )
        raise MalformedPacketError(
            f"unexpected packet (0x{first:02x}) in state {state.value}", offset=0, expected="no packet"
        )

    def _result_packet(self, payload: bytes, first: int) -> ClientEvent | None:
        phase = self._phase
        if phase == 0:
            if first == 0x00:
                ok = OkPacket.decode(payload)
                if not ok.more_results:
                    self.state = ClientState.READY
                return ok
            if first == 0xFF:
                self.state = ClientState.READY
                return ErrPacket.decode(payload)
            if first == 0xFB:
                raise MalformedPacketError("LOCAL INFILE request", offset=0, expected="no LOAD DATA LOCAL")
            self._column_count, _ = _lenenc_int(payload, 0, "column count")
            self._columns = []
            self._rows = []
            self._phase = 1
            return None
        if phase == 1:
            if len(self._columns) < self._column_count:
                self._columns.append(Column.decode(payload))
                return None
            if not is_eof(payload):
                raise MalformedPacketError("no EOF after column definitions", offset=0, expected="EOF (fe)")
            self._phase = 2
            return None
        # rows
        if first == 0xFF:
            self._phase = 0
            self.state = ClientState.READY
            return ErrPacket.decode(payload)
        if is_eof(payload):
            eof = EofPacket.decode(payload)
            self._phase = 0
            result = ResultSet(tuple(self._columns), tuple(self._rows), eof.status)
            self._columns = []
            self._rows = []
            if not result.more_results:
                self.state = ClientState.READY
            return result
        self._rows.append(decode_text_row(payload, self._column_count))
        return None

    # -- sending --------------------------------------------------------------------------------

    def _expect(self, *states: ClientState) -> None:
        if self.state not in states:
            allowed = ", ".join(s.value for s in states)
            raise LocalProtocolError(f"cannot send in state {self.state.value} (allowed: {allowed})")

    def _packet(self, payload: bytes) -> bytes:
        data, self._seq = frame(payload, self._seq)
        return data

    def _command(self, payload: bytes) -> bytes:
        self._seq = 0
        return self._packet(payload)

    def _caps(self, wanted: int) -> int:
        assert self.handshake is not None
        return (wanted & self.handshake.capabilities) | CLIENT_PROTOCOL_41 | (wanted & CLIENT_MYSQL)

    def send_ssl_request(self, *, capabilities: int = CLIENT_DEFAULT_CAPS) -> bytes:
        """The SSL request; the driver then wraps the socket in TLS and sends the response."""
        self._expect(ClientState.HANDSHAKE_RECEIVED)
        assert self.handshake is not None
        if not self.handshake.capabilities & CLIENT_SSL:
            raise LocalProtocolError("the server does not offer TLS (CLIENT_SSL)")
        self.capabilities = self._caps(capabilities) | CLIENT_SSL
        return self._packet(SslRequest(self.capabilities).encode())

    def send_handshake_response(
        self,
        user: str,
        password: str | bytes = b"",
        *,
        database: str | None = None,
        capabilities: int = CLIENT_DEFAULT_CAPS,
        attributes: tuple[tuple[str, str], ...] = (),
    ) -> bytes:
        """Answer the handshake with ``mysql_native_password`` credentials."""
        self._expect(ClientState.HANDSHAKE_RECEIVED)
        assert self.handshake is not None
        self._password = password.encode() if isinstance(password, str) else password
        caps = self._caps(capabilities) | (self.capabilities & CLIENT_SSL)
        self.capabilities = caps
        response = HandshakeResponse(
            capabilities=caps,
            user=user,
            auth_response=scramble_native_password(self._password, self.handshake.nonce),
            database=database,
            attributes=attributes,
        )
        self.state = ClientState.AUTHENTICATING
        return self._packet(response.encode())

    def send_auth_switch_response(self, request: AuthSwitchRequest) -> bytes:
        """Answer an auth switch to ``mysql_native_password`` with the password given before."""
        self._expect(ClientState.AUTHENTICATING)
        if request.plugin != NATIVE_PASSWORD:
            raise ReplicationError(
                f"the server asks for authentication plugin {request.plugin!r};"
                f" only {NATIVE_PASSWORD} is supported"
            )
        return self._packet(scramble_native_password(self._password, request.nonce))

    def send_query(self, sql: str | bytes) -> bytes:
        """COM_QUERY; events until READY: OK / ERR / ResultSet (several with multi-statements)."""
        self._expect(ClientState.READY)
        self.state = ClientState.AWAIT_RESULT
        self._phase = 0
        return self._command(bytes((COM_QUERY,)) + (sql.encode() if isinstance(sql, str) else sql))

    def await_more_results(self) -> None:
        """Expect more results of the last COM_QUERY although the server did not flag them.

        MariaDB 10.11 answers a ``BINLOG '...'`` statement inside a multi-statement query
        with an OK that lacks ``SERVER_MORE_RESULTS_EXISTS`` and then goes on with the next
        statements; a client that knows how many statements it sent calls this to read on.
        """
        self._expect(ClientState.READY)
        self.state = ClientState.AWAIT_RESULT
        self._phase = 0

    def send_ping(self) -> bytes:
        """COM_PING; answered by OK."""
        self._expect(ClientState.READY)
        self.state = ClientState.AWAIT_RESULT
        self._phase = 0
        return self._command(bytes((COM_PING,)))

    def send_quit(self) -> bytes:
        """COM_QUIT; the server closes the connection."""
        self.state = ClientState.CLOSED
        return self._command(bytes((COM_QUIT,)))

    def send_register_slave(self, command: RegisterSlave) -> bytes:
        """COM_REGISTER_SLAVE; answered by OK or ERR."""
        self._expect(ClientState.READY)
        self.state = ClientState.AWAIT_RESULT
        self._phase = 0
        return self._command(command.encode())

    def send_binlog_dump(self, command: BinlogDump) -> bytes:
        """COM_BINLOG_DUMP; then :class:`BinlogEventPacket` events until EOF/ERR."""
        self._expect(ClientState.READY)
        self.state = ClientState.DUMPING
        return self._command(command.encode())

    def send_semi_sync_ack(self, ack: SemiSyncAck) -> bytes:
        """A semi-sync ACK (a new packet sequence starting at 0)."""
        self._expect(ClientState.DUMPING)
        data, _ = frame(ack.encode(), 0)
        return data


# --------------------------------------------------------------------------- server


class ServerState(Enum):
    """Where a :class:`ServerProtocol` is."""

    START = "start"
    AWAIT_RESPONSE = "await-response"
    AUTHENTICATING = "authenticating"
    COMMAND = "command"
    RESPONDING = "responding"
    DUMPING = "dumping"
    CLOSED = "closed"
    ERROR = "error"


@dataclass(slots=True)
class _ServerAuth:
    user: str = ""
    nonce: bytes = b""
    response: bytes = b""
    switched: bool = False
    database: str | None = None
    attributes: tuple[tuple[str, str], ...] = field(default=())


class ServerProtocol:
    """The server (primary) side: handshake, authentication, commands, a dump stream.

    The driver sends :meth:`send_handshake`, then handles events: :class:`SslRequest` (wrap
    the socket in TLS), :class:`HandshakeResponse` (check it with :meth:`check_password`, then
    :meth:`send_auth_ok` or :meth:`send_error`; :meth:`send_auth_switch` if the client used
    another plugin), then commands (:class:`Query`, :class:`RegisterSlave`,
    :class:`BinlogDump`, :class:`Ping`, :class:`Quit`, :class:`UnknownCommand`), each
    answered with exactly one response (``send_ok``/``send_error``/``send_result_set``) or,
    for a dump, a stream of :meth:`send_event` and finally :meth:`send_eof` or
    :meth:`send_error`.
    """

    __slots__ = ("state", "framer", "capabilities", "auth", "_seq", "_closed", "server_version", "connection_id")

    def __init__(self, *, max_packet: int = 1 << 24) -> None:
        self.state = ServerState.START
        self.framer = PacketFramer(max_packet)
        self.capabilities = SERVER_DEFAULT_CAPS
        self.auth = _ServerAuth()
        self._seq = 0
        self._closed = False
        self.server_version = ""
        self.connection_id = 0

    def receive_data(self, data: Buffer) -> None:
        """Feed bytes read from the client; ``b""`` means the client closed the connection."""
        if not data:
            self._closed = True
            return
        self.framer.receive(data)

    def next_event(self) -> ServerEvent | _NeedData:
        """The next client event, or :data:`NEED_DATA`."""
        if self.state is ServerState.ERROR:
            raise LocalProtocolError("the connection is in the ERROR state after a protocol error")
        try:
            packet = self.framer.next_packet()
            if packet is None:
                if self._closed:
                    self.state = ServerState.CLOSED
                    return ConnectionClosed()
                return NEED_DATA
            seq, payload = packet
            self._seq = (seq + 1 + len(payload) // MAX_PAYLOAD) & 0xFF
            return self._interpret(payload)
        except MalformedPacketError:
            self.state = ServerState.ERROR
            raise

    def _interpret(self, payload: bytes) -> ServerEvent:
        state = self.state
        if state is ServerState.AWAIT_RESPONSE:
            response = HandshakeResponse.decode(payload)
            if isinstance(response, SslRequest):
                self.capabilities &= response.capabilities | CLIENT_SSL
                return response
            self.capabilities &= response.capabilities
            self.auth.user = response.user
            self.auth.response = response.auth_response
            self.auth.database = response.database
            self.auth.attributes = response.attributes
            self.state = ServerState.AUTHENTICATING
            return response
        if state is ServerState.AUTHENTICATING and self.auth.switched:
            self.auth.response = payload
            self.auth.switched = False
            return HandshakeResponse(self.capabilities, self.auth.user, payload, self.auth.database)
        if state is ServerState.DUMPING:
            if payload and payload[0] == SEMI_SYNC_MAGIC:
                return UnknownCommand(SEMI_SYNC_MAGIC, payload)
            if payload and payload[0] == COM_QUIT:
                self.state = ServerState.CLOSED
                return Quit()
            raise MalformedPacketError("client sent a command during a dump", offset=0, expected="nothing")
        if state is not ServerState.COMMAND:
            raise MalformedPacketError(
                f"unexpected packet in state {state.value}", offset=0, expected="no packet before our reply"
            )
        if not payload:
            raise MalformedPacketError("empty command packet", offset=0, expected="a command byte")
        command = payload[0]
        if command == COM_QUIT:
            self.state = ServerState.CLOSED
            return Quit()
        self.state = ServerState.RESPONDING
        if command == COM_QUERY:
            return Query(payload[1:])
        if command == COM_PING:
            return Ping()
        if command == COM_REGISTER_SLAVE:
            return RegisterSlave.decode(payload)
        if command == COM_BINLOG_DUMP:
            self.state = ServerState.DUMPING
            return BinlogDump.decode(payload)
        return UnknownCommand(command, payload)

    def _packet(self, payload: bytes) -> bytes:
        data, self._seq = frame(payload, self._seq)
        return data

    def _expect(self, *states: ServerState) -> None:
        if self.state not in states:
            allowed = ", ".join(s.value for s in states)
            raise LocalProtocolError(f"cannot send in state {self.state.value} (allowed: {allowed})")

    def send_handshake(self, server_version: str, connection_id: int, nonce: bytes, *, tls: bool = False) -> bytes:
        """The initial handshake (``nonce``: 20 random bytes, none of them NUL)."""
        self._expect(ServerState.START)
        if len(nonce) != 20 or 0 in nonce:
            raise LocalProtocolError("the nonce must be 20 non-NUL bytes")
        if tls:
            self.capabilities |= CLIENT_SSL
        self.server_version = server_version
        self.connection_id = connection_id
        self.auth.nonce = nonce
        self.state = ServerState.AWAIT_RESPONSE
        self._seq = 0
        return self._packet(Handshake(server_version, connection_id, nonce, self.capabilities).encode())

    def check_password(self, stored_hash: bytes) -> bool:
        """Whether the client's ``mysql_native_password`` response matches SHA1(SHA1(password))."""
        return check_native_password(stored_hash, self.auth.nonce, self.auth.response)

    def send_auth_switch(self, nonce: bytes) -> bytes:
        """Ask the client to answer again with ``mysql_native_password`` and a new nonce."""
        self._expect(ServerState.AUTHENTICATING)
        self.auth.nonce = nonce
        self.auth.switched = True
        return self._packet(AuthSwitchRequest(NATIVE_PASSWORD, nonce).encode())

    def send_auth_ok(self) -> bytes:
        """Authentication succeeded; the client may send commands."""
        self._expect(ServerState.AUTHENTICATING)
        self.state = ServerState.COMMAND
        return self._packet(OkPacket().encode())

    def send_ok(self, ok: OkPacket | None = None, *, more: bool = False) -> bytes:
        """Answer the current command with OK; ``more``: another result of the same
        multi-statement query follows (``SERVER_MORE_RESULTS_EXISTS``)."""
        self._expect(ServerState.RESPONDING)
        ok = ok or OkPacket()
        if more:
            ok = OkPacket(ok.affected_rows, ok.last_insert_id, ok.status | SERVER_MORE_RESULTS_EXISTS, ok.warnings, ok.info)
        else:
            self.state = ServerState.COMMAND
        return self._packet(ok.encode())

    def send_error(self, err: ErrPacket) -> bytes:
        """Answer with ERR (during authentication it also ends the connection)."""
        if self.state in (ServerState.AUTHENTICATING, ServerState.AWAIT_RESPONSE):
            self.state = ServerState.CLOSED
        elif self.state in (ServerState.RESPONDING, ServerState.DUMPING):
            self.state = ServerState.COMMAND
        else:
            raise LocalProtocolError(f"cannot send an error in state {self.state.value}")
        return self._packet(err.encode())

    def send_result_set(self, columns: tuple[Column, ...], rows: tuple[Row, ...], *, more: bool = False) -> bytes:
        """Answer the current query with a text result set (``more``: see :meth:`send_ok`)."""
        self._expect(ServerState.RESPONDING)
        out = [self._packet(write_lenenc(len(columns)))]
        out += [self._packet(column.encode()) for column in columns]
        out.append(self._packet(EofPacket().encode()))
        out += [self._packet(encode_text_row(row)) for row in rows]
        status = SERVER_STATUS_AUTOCOMMIT | (SERVER_MORE_RESULTS_EXISTS if more else 0)
        out.append(self._packet(EofPacket(status=status).encode()))
        if not more:
            self.state = ServerState.COMMAND
        return b"".join(out)

    def send_event(self, event: Buffer, *, semi_sync: bool = False, need_ack: bool = False) -> bytes:
        """One event packet of the dump stream (``00`` + event)."""
        self._expect(ServerState.DUMPING)
        if semi_sync:
            prefix = bytes((0, SEMI_SYNC_MAGIC, SEMI_SYNC_NEED_ACK if need_ack else 0))
        else:
            prefix = b"\0"
        payload = prefix + bytes(event)
        if len(payload) < MAX_PAYLOAD:
            data = _HEADER.pack(len(payload) | (self._seq << 24)) + payload
            self._seq = (self._seq + 1) & 0xFF
            return data
        return self._packet(payload)

    def send_eof(self) -> bytes:
        """End a non-blocking dump."""
        self._expect(ServerState.DUMPING)
        self.state = ServerState.COMMAND
        return self._packet(EofPacket().encode())
