"""The messages of the MySQL/MariaDB client/server protocol: each packet as a value.

Every packet a replication peer sends or receives is a frozen dataclass with
``encode()`` (its payload) and, for what we receive, ``decode(payload)``;
:data:`ClientEvent` and :data:`ServerEvent` are what each side's state machine
(:mod:`.protocol`) hands its driver.  Also here: ``mysql_native_password``
(scramble and verification).  Bad bytes from the peer raise
:class:`~mariabinlog.errors.MalformedPacketError` with the offset in the payload.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from ...errors import DecodeError, MalformedPacketError, ServerError
from ..columns import MYSQL_TYPE_VAR_STRING
from ..primitives import U16, U32, Buffer, need, read_lenenc_bytes, read_lenenc_int, write_lenenc
from . import (
    CHARSET_UTF8MB4_GENERAL_CI,
    CLIENT_CONNECT_ATTRS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_MYSQL,
    CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
    CLIENT_PROTOCOL_41,
    CLIENT_SECURE_CONNECTION,
    CLIENT_SSL,
    COM_BINLOG_DUMP,
    COM_REGISTER_SLAVE,
    NATIVE_PASSWORD,
    SEMI_SYNC_MAGIC,
    SERVER_MORE_RESULTS_EXISTS,
    SERVER_STATUS_AUTOCOMMIT,
)

P = ParamSpec("P")
T = TypeVar("T")

# --------------------------------------------------------------------------- helpers


def _cstring(buf: Buffer, pos: int, what: str) -> tuple[bytes, int]:
    end = bytes(buf).find(b"\0", pos)
    if end < 0:
        raise MalformedPacketError(f"unterminated {what}", offset=pos, expected="a NUL-terminated string")
    return bytes(buf[pos:end]), end + 1


def _malformed(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Report the codec's decoding errors in a ``what`` packet as :class:`MalformedPacketError`.

    The packet parsers read with :mod:`..primitives`' readers (``need``, lenenc);
    a peer's bad bytes are a protocol error of that peer, so the error is both a
    ``DecodeError`` (offset into the payload) and a ``ReplicationError``.
    """

    def decorate(decode: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(decode)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return decode(*args, **kwargs)
            except MalformedPacketError:
                raise
            except DecodeError as err:
                reason = err.reason if what in err.reason else f"{what}: {err.reason}"
                raise MalformedPacketError(reason, offset=err.offset, expected=err.expected) from None

        return wrapper

    return decorate


def lenenc_bytes(data: bytes) -> bytes:
    """``data`` with a length-encoded-integer prefix."""
    return write_lenenc(len(data)) + data


_PAD23 = bytes(23)


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
    @_malformed("handshake")
    def decode(cls, payload: Buffer) -> Handshake:
        """Parse a handshake v10 payload."""
        need(payload, 0, 1, "handshake")
        version = payload[0]
        if version != 10:
            raise MalformedPacketError(
                f"handshake protocol version {version}", offset=0, expected="protocol version 10"
            )
        server_version, pos = _cstring(payload, 1, "server version")
        need(payload, pos, 4 + 8 + 1 + 2, "handshake")
        connection_id = U32.unpack_from(payload, pos)[0]
        nonce = bytes(payload[pos + 4 : pos + 12])
        pos += 13
        caps = U16.unpack_from(payload, pos)[0]
        pos += 2
        charset, status, plugin_len = CHARSET_UTF8MB4_GENERAL_CI, 0, 0
        maria_caps = 0
        plugin = NATIVE_PASSWORD
        if pos < len(payload):
            need(payload, pos, 16, "handshake")
            charset = payload[pos]
            status = U16.unpack_from(payload, pos + 1)[0]
            caps |= U16.unpack_from(payload, pos + 3)[0] << 16
            plugin_len = payload[pos + 5]
            maria_caps = U32.unpack_from(payload, pos + 12)[0]
            pos += 16
            if caps & CLIENT_SECURE_CONNECTION:
                size = max(13, plugin_len - 8)
                need(payload, pos, size, "auth plugin data")
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
    @_malformed("handshake response")
    def decode(cls, payload: Buffer) -> HandshakeResponse | SslRequest:
        """Parse a handshake response, or the 32-byte :class:`SslRequest`."""
        need(payload, 0, 32, "handshake response")
        caps, max_packet = struct.unpack_from("<II", payload, 0)
        charset = payload[8]
        if len(payload) == 32 and caps & CLIENT_SSL:
            return SslRequest(caps, max_packet, charset)
        if not caps & CLIENT_PROTOCOL_41:
            raise MalformedPacketError("pre-4.1 handshake response", offset=0, expected="CLIENT_PROTOCOL_41")
        user, pos = _cstring(payload, 32, "user name")
        if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth, pos = read_lenenc_bytes(payload, pos, "auth response")
        elif caps & CLIENT_SECURE_CONNECTION:
            need(payload, pos, 1, "auth response")
            size = payload[pos]
            need(payload, pos + 1, size, "auth response")
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
            blob, pos = read_lenenc_bytes(payload, pos, "connection attributes")
            apos = 0
            while apos < len(blob):
                key, apos = read_lenenc_bytes(blob, apos, "attribute name")
                value, apos = read_lenenc_bytes(blob, apos, "attribute value")
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
        """``fe`` + plugin name + NUL + data; ``mysql_native_password``'s scramble ends with a
        NUL, ``client_ed25519``'s 32-byte nonce does not (the client checks its length)."""
        end = b"\0" if self.plugin == NATIVE_PASSWORD else b""
        return b"\xfe" + self.plugin.encode() + b"\0" + self.nonce + end

    @classmethod
    @_malformed("auth switch request")
    def decode(cls, payload: Buffer) -> AuthSwitchRequest:
        """Parse an auth switch request (``fe`` first byte, more than 5 bytes)."""
        name, pos = _cstring(payload, 1, "auth plugin name")
        plugin = name.decode("ascii", "replace")
        data = bytes(payload[pos:])
        if plugin == NATIVE_PASSWORD and data.endswith(b"\0"):
            data = data[:-1]
        return cls(plugin, data)


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
    @_malformed("OK packet")
    def decode(cls, payload: Buffer) -> OkPacket:
        """Parse an OK payload (first byte ``00``, or ``fe`` when it replaces an EOF)."""
        affected, pos = read_lenenc_int(payload, 1, "OK affected rows")
        insert_id, pos = read_lenenc_int(payload, pos, "OK last insert id")
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
    @_malformed("ERR packet")
    def decode(cls, payload: Buffer) -> ErrPacket:
        """Parse an ERR payload (the ``#state`` part is optional before 4.1 / during handshake)."""
        need(payload, 0, 3, "ERR packet")
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
    @_malformed("EOF packet")
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
class ColumnDefinition:
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
    @_malformed("column definition")
    def decode(cls, payload: Buffer) -> ColumnDefinition:
        """Parse a column definition 41."""
        pos = 0
        fields = []
        for what in ("catalog", "schema", "table", "org_table", "name", "org_name"):
            value, pos = read_lenenc_bytes(payload, pos, f"column {what}")
            fields.append(value)
        _, pos = read_lenenc_int(payload, pos, "column fixed-length fields")
        need(payload, pos, 10, "column definition")
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


@_malformed("text row")
def decode_text_row(payload: Buffer, count: int) -> Row:
    """Parse a text-protocol row of ``count`` values."""
    values: list[bytes | None] = []
    pos = 0
    for _ in range(count):
        need(payload, pos, 1, "row value")
        if payload[pos] == 0xFB:
            values.append(None)
            pos += 1
            continue
        value, pos = read_lenenc_bytes(payload, pos, "row value")
        values.append(value)
    return tuple(values)


@dataclass(frozen=True, slots=True)
class ResultSet:
    """A complete text result set."""

    columns: tuple[ColumnDefinition, ...]
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
    @_malformed("COM_REGISTER_SLAVE")
    def decode(cls, payload: Buffer) -> RegisterSlave:
        """Parse the command payload (first byte ``15``)."""
        need(payload, 1, 4, "COM_REGISTER_SLAVE")
        server_id = U32.unpack_from(payload, 1)[0]
        pos = 5
        texts = []
        for what in ("host", "user", "password"):
            need(payload, pos, 1, f"COM_REGISTER_SLAVE {what}")
            size = payload[pos]
            need(payload, pos + 1, size, f"COM_REGISTER_SLAVE {what}")
            texts.append(bytes(payload[pos + 1 : pos + 1 + size]).decode("utf-8", "replace"))
            pos += 1 + size
        need(payload, pos, 10, "COM_REGISTER_SLAVE")
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
    @_malformed("COM_BINLOG_DUMP")
    def decode(cls, payload: Buffer) -> BinlogDump:
        """Parse the command payload (first byte ``12``)."""
        need(payload, 0, 11, "COM_BINLOG_DUMP")
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
