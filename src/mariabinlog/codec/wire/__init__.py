"""The MySQL/MariaDB wire: protocol constants and packet framing.

Constants come from ``include/mysql_com.h`` and ``include/mysqld_error.h``;
:func:`frame` and :class:`PacketFramer` turn payloads into wire packets (3-byte
length + sequence id, payloads of 16 MiB - 1 and more split and joined) and
back.  The messages themselves are in :mod:`.packets`, the state machines that
speak them in :mod:`.protocol`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

from ...errors import FramingError, MalformedPacketError, PacketTooLargeError
from ..framing import SCAN_EVENT
from ..primitives import Buffer

# --------------------------------------------------------------------------- constants

MAX_PAYLOAD: Final = 0xFFFFFF
"""Largest payload of one wire packet; a logical packet this long continues in the next."""

DEFAULT_MAX_PACKET: Final = (1 << 30) + 4096
"""Default bound on one logical packet a client receives: MariaDB's ``slave_max_allowed_packet``
default (1 GiB, also the most a primary's dump thread sends) plus an event header's slack."""

INSPECT_BYTES: Final = 20
"""Payload bytes :attr:`PacketFramer.inspect` is shown: a dump packet's marker and event header."""

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
    is larger than what is left.  Lengths are validated from the headers, before the bytes
    they announce are waited for (h11's ``max_incomplete_event_size`` idea, MariaDB's
    ``net_realloc`` check): a logical packet of more than ``max_packet`` bytes raises
    :class:`PacketTooLargeError`, and the parts of a long packet must carry consecutive
    sequence ids (:class:`FramingError`).  The sequence id of a packet's first part is the
    state machine's to check (:mod:`.protocol`), which knows whose turn it is.

    ``inspect``, when set, is shown the first :data:`INSPECT_BYTES` bytes of a packet's
    payload as soon as they are there while the rest is still missing, with the length its
    first header announces; it returns the exact size the whole logical packet must have
    (or raises).  The dump stream uses it to hold an event packet to the length its event
    header declares, so that a forged chain of 16 MiB packets is refused after its first
    bytes instead of being buffered.
    """

    __slots__ = ("_buf", "_pos", "_parts", "_parts_size", "_first_seq", "_limit", "_inspected", "max_packet", "inspect")

    def __init__(self, max_packet: int = DEFAULT_MAX_PACKET) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._parts: list[bytes] = []
        self._parts_size = 0
        self._first_seq = 0
        self._limit = -1  # exact size of the logical packet being received, once inspected
        self._inspected = -1  # buffer position of the packet last shown to ``inspect``
        self.max_packet = max_packet
        self.inspect: Callable[[bytes, int], int] | None = None

    def receive(self, data: Buffer) -> None:
        """Append bytes read from the peer."""
        if self._pos and self._pos >= len(self._buf) - self._pos:
            del self._buf[: self._pos]
            self._inspected -= self._pos
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet cut into packets (parts of a long packet included)."""
        return len(self._buf) - self._pos + self._parts_size

    @property
    def missing(self) -> int:
        """Bytes still to come before the next packet (or part) is complete: a reader that asks
        for no more leaves what follows it in the socket, as a TLS upgrade needs (the peer's
        TLS hello may arrive in the same segment as its SSL request)."""
        have = len(self._buf) - self._pos
        if have < 4:
            return 4 - have
        return max(4 + (_HEADER.unpack_from(self._buf, self._pos)[0] & _U24_MAX) - have, 1)

    def scan_events(self, scanner: Any, limit: int, expected: int) -> tuple[list[Any], int, int]:
        """Event groups of the buffered dump-stream event packets, cut by a
        :class:`~mariabinlog.codec.framing.Scanner` (the fast path): ``(groups, the sequence id
        after the last packet taken or -1, why the scan stopped)``.  Only packets with the
        ``expected`` sequence ids are taken; the rest stay buffered for :meth:`next_packet`,
        whose caller names what is wrong with them."""
        if self._parts:
            return [], -1, SCAN_EVENT  # a multi-part packet in progress: the slow path's
        groups, pos, following, stop = scanner.scan_packets(self._buf, self._pos, len(self._buf), expected, limit)
        self._pos = pos
        return groups, following, stop

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
            size = self._parts_size + length
            if size > self.max_packet:
                raise PacketTooLargeError(
                    f"packet of more than {self.max_packet} bytes announced", offset=0,
                    expected="at most max_allowed_packet",
                )
            if self._parts:
                if seq != (self._first_seq + len(self._parts)) & 0xFF:
                    raise FramingError(
                        f"part {len(self._parts) + 1} of a long packet has sequence id {seq},"
                        f" expected {(self._first_seq + len(self._parts)) & 0xFF}",
                        offset=0, expected="consecutive sequence ids",
                    )
                if self._limit >= 0 and (size > self._limit or (length < MAX_PAYLOAD and size != self._limit)):
                    raise FramingError(
                        f"long packet of {size}+ bytes, but its first part announced {self._limit}",
                        offset=0, expected="the length its first part declares",
                    )
            if len(buf) < end:
                if (
                    self.inspect is not None
                    and not self._parts
                    and pos != self._inspected
                    and len(buf) - pos - 4 >= min(INSPECT_BYTES, length)
                ):
                    self._inspected = pos
                    self._limit = self.inspect(bytes(buf[pos + 4 : pos + 4 + INSPECT_BYTES]), length)
                return None
            self._pos = end
            if length == MAX_PAYLOAD:
                if not self._parts:
                    self._first_seq = seq
                self._parts.append(bytes(buf[pos + 4 : end]))
                self._parts_size += length
                continue
            self._limit = -1
            if self._parts:
                self._parts.append(bytes(buf[pos + 4 : end]))
                payload = b"".join(self._parts)
                first = self._first_seq
                self._parts = []
                self._parts_size = 0
                return first, payload
            return seq, bytes(buf[pos + 4 : end])
