"""The MySQL/MariaDB client/server protocol as pure state machines: bytes in, protocol events out.

Like h11 (``Connection.receive_data`` / ``next_event`` / ``send``) this module never touches a
socket: a driver feeds the bytes it read with :meth:`ClientProtocol.receive_data`, takes
protocol events from :meth:`ClientProtocol.next_event` (or the :data:`NEED_DATA` sentinel)
and writes the ``bytes`` the ``send_*`` methods return.  :class:`ServerProtocol` is the other
side (what a primary speaks), used by the binlog server.

As in h11, each side's every state transition is in ONE table
(:data:`CLIENT_TRANSITIONS`, :data:`SERVER_TRANSITIONS`): a row per state, mapping a
trigger (a packet received, by its class; a ``send_*`` method, by its name) to the next
state.  A trigger missing from the current state's row is not allowed there.  The rooms
below this one: :mod:`mariabinlog.codec.wire` (constants, framing) and :mod:`.packets` (the messages); this
module re-exports their public names so a driver needs only ``protocol``.

Covered (protocol.md, MariaDB's ``sql/sql_repl.cc``/``sql/slave.cc``/``include/mysql_com.h``):

* packet framing: 3-byte length + sequence id, payloads of 16 MiB - 1 and more split and
  joined, a bound on the size of one logical packet;
* handshake v10 (with MariaDB's extended capabilities), SSL request, handshake response 41,
  ``mysql_native_password`` (scramble and verification), auth switch;
* OK / ERR / EOF packets, COM_QUERY with text result sets (also multi-results), COM_PING,
  COM_QUIT;
* COM_REGISTER_SLAVE, COM_BINLOG_DUMP, the event packets of a dump (``00`` + event, the
  semi-sync ``ef`` header when negotiated), the EOF/ERR that ends a dump, semi-sync ACKs.

Sequence ids are checked in both directions as MariaDB's ``my_real_read`` does: every packet
must carry the id after the last one of the exchange (a command starts a new exchange at 0;
the server takes a packet during a dump, a semi-sync ACK or COM_QUIT, as a new exchange of
the client's that leaves its own count alone).  A duplicated, lost or injected packet raises
:class:`FramingError`, as does an event packet whose length is not the length its event
header declares; long packets are checked from their first bytes, before they are buffered
(:attr:`PacketFramer.inspect`), and a packet over ``max_packet`` raises
:class:`PacketTooLargeError`.

Errors: bytes from the peer that break the protocol raise :class:`MalformedPacketError`
(a :class:`~mariabinlog.errors.DecodeError` with the offset in the payload); calling a
``send_*`` method in a state where the protocol does not allow it raises
:class:`LocalProtocolError`.  After a malformed packet the machine is in state ``ERROR``.
An ERR packet from the server is not an exception here: it is the :class:`ErrPacket` event;
:meth:`ErrPacket.exception` builds the :class:`ServerError` a driver raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Generic, TypeVar

from ...errors import (
    DecodeError,
    FramingError,
    LocalProtocolError,
    MalformedPacketError,
    PacketTooLargeError,
    ReplicationError,
    ServerError,
)
from .ed25519 import ED25519
from .ed25519 import sign as ed25519_sign
from .ed25519 import verify as ed25519_verify
from ..framing import SCAN_EVENT, encode_dump
from ..groups import EventGroup
from .packets import (
    AuthMoreData,
    AuthSwitchRequest,
    BinlogDump,
    BinlogEventPacket,
    ClientEvent,
    ColumnDefinition,
    ConnectionClosed,
    EndOfStream,
    EofPacket,
    ErrPacket,
    Handshake,
    HandshakeResponse,
    OkPacket,
    Ping,
    Query,
    Quit,
    RegisterSlave,
    ResultSet,
    Row,
    SemiSyncAck,
    ServerEvent,
    SslRequest,
    UnknownCommand,
    check_native_password,
    decode_text_row,
    encode_text_row,
    is_eof,
    lenenc_bytes,
    native_password_hash,
    scramble_native_password,
)
from ..events.header import HEADER_LEN
from ..primitives import U32, Buffer, read_lenenc_int, write_lenenc
from . import (
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_SEND_ANNOTATE_ROWS_EVENT,
    CHARSET_BINARY,
    CHARSET_UTF8MB4_GENERAL_CI,
    CLIENT_CONNECT_ATTRS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_DEFAULT_CAPS,
    CLIENT_DEPRECATE_EOF,
    CLIENT_FOUND_ROWS,
    CLIENT_INTERACTIVE,
    CLIENT_LOCAL_FILES,
    CLIENT_LONG_FLAG,
    CLIENT_MULTI_RESULTS,
    CLIENT_MULTI_STATEMENTS,
    CLIENT_MYSQL,
    CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
    CLIENT_PROTOCOL_41,
    CLIENT_PS_MULTI_RESULTS,
    CLIENT_SECURE_CONNECTION,
    CLIENT_SESSION_TRACK,
    CLIENT_SSL,
    CLIENT_TRANSACTIONS,
    COM_BINLOG_DUMP,
    COM_INIT_DB,
    COM_PING,
    COM_QUERY,
    COM_QUIT,
    COM_REGISTER_SLAVE,
    DEFAULT_MAX_PACKET,
    ER_ACCESS_DENIED_ERROR,
    ER_GTID_POSITION_NOT_FOUND_IN_BINLOG,
    ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2,
    ER_GTID_START_FROM_BINLOG_HOLE,
    ER_MASTER_FATAL_ERROR_READING_BINLOG,
    ER_NET_PACKETS_OUT_OF_ORDER,
    ER_NOT_SUPPORTED_YET,
    ER_PARSE_ERROR,
    ER_UNKNOWN_COM_ERROR,
    ER_UNKNOWN_SYSTEM_VARIABLE,
    MARIA_SLAVE_CAPABILITY_ANNOTATE,
    MARIA_SLAVE_CAPABILITY_BINLOG_CHECKPOINT,
    MARIA_SLAVE_CAPABILITY_ENGINE_BINLOG,
    MARIA_SLAVE_CAPABILITY_GTID,
    MARIA_SLAVE_CAPABILITY_TOLERATE_HOLES,
    MARIA_SLAVE_CAPABILITY_UNKNOWN,
    MAX_PAYLOAD,
    NATIVE_PASSWORD,
    PacketFramer,
    SEMI_SYNC_MAGIC,
    SEMI_SYNC_NEED_ACK,
    SERVER_DEFAULT_CAPS,
    SERVER_MORE_RESULTS_EXISTS,
    SERVER_STATUS_AUTOCOMMIT,
    SERVER_STATUS_IN_TRANS,
    frame,
)

__all__ = [
    "AuthMoreData",
    "AuthSwitchRequest",
    "BINLOG_DUMP_NON_BLOCK",
    "BINLOG_SEND_ANNOTATE_ROWS_EVENT",
    "BinlogDump",
    "BinlogEventPacket",
    "CHARSET_BINARY",
    "CHARSET_UTF8MB4_GENERAL_CI",
    "CLIENT_CONNECT_ATTRS",
    "CLIENT_CONNECT_WITH_DB",
    "CLIENT_DEFAULT_CAPS",
    "CLIENT_DEPRECATE_EOF",
    "CLIENT_FOUND_ROWS",
    "CLIENT_INTERACTIVE",
    "CLIENT_LOCAL_FILES",
    "CLIENT_LONG_FLAG",
    "CLIENT_MULTI_RESULTS",
    "CLIENT_MULTI_STATEMENTS",
    "CLIENT_MYSQL",
    "CLIENT_PLUGIN_AUTH",
    "CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA",
    "CLIENT_PROTOCOL_41",
    "CLIENT_PS_MULTI_RESULTS",
    "CLIENT_SECURE_CONNECTION",
    "CLIENT_SESSION_TRACK",
    "CLIENT_SSL",
    "CLIENT_TRANSACTIONS",
    "CLIENT_TRANSITIONS",
    "COM_BINLOG_DUMP",
    "COM_INIT_DB",
    "COM_PING",
    "COM_QUERY",
    "COM_QUIT",
    "COM_REGISTER_SLAVE",
    "ClientEvent",
    "ClientProtocol",
    "ClientState",
    "ColumnDefinition",
    "ConnectionClosed",
    "DEFAULT_MAX_PACKET",
    "ER_ACCESS_DENIED_ERROR",
    "ER_GTID_POSITION_NOT_FOUND_IN_BINLOG",
    "ER_GTID_POSITION_NOT_FOUND_IN_BINLOG2",
    "ER_GTID_START_FROM_BINLOG_HOLE",
    "ER_MASTER_FATAL_ERROR_READING_BINLOG",
    "ER_NET_PACKETS_OUT_OF_ORDER",
    "ER_NOT_SUPPORTED_YET",
    "ER_PARSE_ERROR",
    "ER_UNKNOWN_COM_ERROR",
    "ER_UNKNOWN_SYSTEM_VARIABLE",
    "EndOfStream",
    "EofPacket",
    "ErrPacket",
    "FramingError",
    "Handshake",
    "HandshakeResponse",
    "LocalProtocolError",
    "MARIA_SLAVE_CAPABILITY_ANNOTATE",
    "MARIA_SLAVE_CAPABILITY_BINLOG_CHECKPOINT",
    "MARIA_SLAVE_CAPABILITY_ENGINE_BINLOG",
    "MARIA_SLAVE_CAPABILITY_GTID",
    "MARIA_SLAVE_CAPABILITY_TOLERATE_HOLES",
    "MARIA_SLAVE_CAPABILITY_UNKNOWN",
    "MAX_PAYLOAD",
    "MORE_RESULTS",
    "MalformedPacketError",
    "NATIVE_PASSWORD",
    "NEED_DATA",
    "OkPacket",
    "PacketFramer",
    "PacketTooLargeError",
    "Ping",
    "Query",
    "Quit",
    "RegisterSlave",
    "ResultSet",
    "Row",
    "SEMI_SYNC_MAGIC",
    "SEMI_SYNC_NEED_ACK",
    "SERVER_DEFAULT_CAPS",
    "SERVER_MORE_RESULTS_EXISTS",
    "SERVER_STATUS_AUTOCOMMIT",
    "SERVER_STATUS_IN_TRANS",
    "SERVER_TRANSITIONS",
    "SemiSyncAck",
    "ServerError",
    "ServerEvent",
    "ServerProtocol",
    "ServerState",
    "SslRequest",
    "UnknownCommand",
    "check_native_password",
    "decode_text_row",
    "encode_text_row",
    "frame",
    "is_eof",
    "lenenc_bytes",
    "native_password_hash",
    "scramble_native_password",
]

# --------------------------------------------------------------------------- states


class _NeedData:
    """Sentinel type of :data:`NEED_DATA`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()
"""Returned by ``next_event`` when more bytes must be received first."""


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


MORE_RESULTS: Final = "more-results"
"""Trigger of an OK or result set flagged ``SERVER_MORE_RESULTS_EXISTS`` (received or sent)."""

#: A trigger: a packet class (received) or a ``send_*`` method name or :data:`MORE_RESULTS`.
Trigger = type | str

_C = ClientState
_S = ServerState

#: Every transition of the client, in one table.  Packets received on a closed
#: connection, ``send_quit`` and a malformed packet move any state (see ``_ANY``).
CLIENT_TRANSITIONS: Final[dict[ClientState, dict[Trigger, ClientState]]] = {
    _C.AWAIT_HANDSHAKE: {Handshake: _C.HANDSHAKE_RECEIVED, ErrPacket: _C.CLOSED},
    _C.HANDSHAKE_RECEIVED: {"send_ssl_request": _C.HANDSHAKE_RECEIVED, "send_handshake_response": _C.AUTHENTICATING},
    _C.AUTHENTICATING: {
        OkPacket: _C.READY,
        ErrPacket: _C.CLOSED,
        AuthSwitchRequest: _C.AUTHENTICATING,
        AuthMoreData: _C.AUTHENTICATING,
        "send_auth_switch_response": _C.AUTHENTICATING,
    },
    _C.READY: {
        "send_query": _C.AWAIT_RESULT,
        "await_more_results": _C.AWAIT_RESULT,
        "send_ping": _C.AWAIT_RESULT,
        "send_register_slave": _C.AWAIT_RESULT,
        "send_binlog_dump": _C.DUMPING,
    },
    _C.AWAIT_RESULT: {OkPacket: _C.READY, ResultSet: _C.READY, ErrPacket: _C.READY, MORE_RESULTS: _C.AWAIT_RESULT},
    _C.DUMPING: {BinlogEventPacket: _C.DUMPING, EndOfStream: _C.READY, ErrPacket: _C.READY, "send_semi_sync_ack": _C.DUMPING},
    _C.CLOSED: {},
    _C.ERROR: {},
}

#: Every transition of the server, in one table (same conventions as the client's).
SERVER_TRANSITIONS: Final[dict[ServerState, dict[Trigger, ServerState]]] = {
    _S.START: {"send_handshake": _S.AWAIT_RESPONSE},
    _S.AWAIT_RESPONSE: {SslRequest: _S.AWAIT_RESPONSE, HandshakeResponse: _S.AUTHENTICATING, "send_error": _S.CLOSED},
    _S.AUTHENTICATING: {
        HandshakeResponse: _S.AUTHENTICATING,  # the answer to our auth switch
        "send_auth_switch": _S.AUTHENTICATING,
        "send_auth_ok": _S.COMMAND,
        "send_error": _S.CLOSED,
    },
    _S.COMMAND: {
        Quit: _S.CLOSED,
        Query: _S.RESPONDING,
        Ping: _S.RESPONDING,
        RegisterSlave: _S.RESPONDING,
        UnknownCommand: _S.RESPONDING,
        BinlogDump: _S.DUMPING,
    },
    _S.RESPONDING: {"send_ok": _S.COMMAND, "send_result_set": _S.COMMAND, MORE_RESULTS: _S.RESPONDING, "send_error": _S.COMMAND},
    _S.DUMPING: {
        UnknownCommand: _S.DUMPING,  # a semi-sync ACK
        Quit: _S.CLOSED,
        "send_event": _S.DUMPING,
        "send_eof": _S.COMMAND,
        "send_error": _S.COMMAND,
    },
    _S.CLOSED: {},
    _S.ERROR: {},
}

#: Transitions from any state: the peer closed, we quit, the peer broke the protocol.
_ANY: Final[dict[Trigger, str]] = {ConnectionClosed: "closed", "send_quit": "closed", MalformedPacketError: "error"}


# --------------------------------------------------------------------------- both sides


StateT = TypeVar("StateT", ClientState, ServerState)


class _Machine(ABC, Generic[StateT]):
    """What both sides share: the receive buffer, sequence ids and moves through the table."""

    __slots__ = ("state", "framer", "_seq", "_closed", "_table", "_own_sequence")

    def __init__(self, state: StateT, table: dict[StateT, dict[Trigger, StateT]], max_packet: int) -> None:
        self.state: StateT = state
        self._table: dict[StateT, dict[Trigger, StateT]] = table
        self.framer = PacketFramer(max_packet)
        #: The sequence id of the next packet of the exchange, whichever side sends it.
        self._seq = 0
        self._closed = False
        #: True where a received packet may start a sequence of the peer's own (see _resequence).
        self._own_sequence = False

    def receive_data(self, data: Buffer) -> None:
        """Feed bytes read from the peer; ``b""`` means the peer closed the connection."""
        if not data:
            self._closed = True
            return
        self.framer.receive(data)

    def _next_state(self, trigger: Trigger) -> StateT:
        """The state ``trigger`` leads to from the current one (the tables above)."""
        if trigger in _ANY:
            return type(self.state)(_ANY[trigger])
        target = self._table[self.state].get(trigger)
        if target is not None:
            return target
        name = trigger if isinstance(trigger, str) else trigger.__name__
        if isinstance(trigger, str):
            allowed = ", ".join(s.value for s, row in self._table.items() if trigger in row)
            raise LocalProtocolError(f"cannot {name} in state {self.state.value} (allowed: {allowed})")
        raise MalformedPacketError(
            f"unexpected {name} in state {self.state.value}", offset=0, expected="no such packet here"
        )

    def _move(self, trigger: Trigger) -> None:
        self.state = self._next_state(trigger)

    def _packet(self, payload: bytes) -> bytes:
        data, self._seq = frame(payload, self._seq)
        return data

    @abstractmethod
    def _interpret(self, payload: bytes) -> object | None:
        """The event one packet makes (moving the state), None when it only continues one."""

    def _resequence(self, seq: int, parts: int) -> None:
        """A received packet whose sequence id is not the next one (or that may start a sequence
        of the peer's own): accept it where the protocol allows, else :class:`FramingError`."""
        raise FramingError(
            f"packets out of order: sequence id {seq}, expected {self._seq}",
            offset=0,
            expected="the next sequence id; a packet was duplicated, lost or injected",
        )

    def _next(self) -> object:
        """The next event of either side (None-returning packets continue a result set)."""
        if self.state.value == "error":
            raise LocalProtocolError("the connection is in the ERROR state after a protocol error")
        try:
            packet = self.framer.next_packet()
            while packet is not None:
                seq, payload = packet
                if seq != self._seq or self._own_sequence:
                    self._resequence(seq, 1 + len(payload) // MAX_PAYLOAD)
                else:
                    self._seq = (seq + 1 + len(payload) // MAX_PAYLOAD) & 0xFF
                event = self._interpret(payload)
                if event is not None:
                    return event
                packet = self.framer.next_packet()
        except MalformedPacketError:
            self._move(MalformedPacketError)
            raise
        if self._closed:
            self._move(ConnectionClosed)
            return ConnectionClosed()
        return NEED_DATA


# --------------------------------------------------------------------------- client


class ClientProtocol(_Machine[ClientState]):
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

    __slots__ = ("handshake", "capabilities", "semi_sync", "_password", "_columns", "_rows", "_column_count", "_phase")

    def __init__(self, *, max_packet: int = DEFAULT_MAX_PACKET) -> None:
        super().__init__(ClientState.AWAIT_HANDSHAKE, CLIENT_TRANSITIONS, max_packet)
        self.framer.inspect = self._inspect
        self.handshake: Handshake | None = None
        self.capabilities = 0
        self.semi_sync = False
        self._password = b""
        self._columns: list[ColumnDefinition] = []
        self._rows: list[Row] = []
        self._column_count = 0
        self._phase = 0  # result set: 0 = column count, 1 = columns, 2 = rows

    # -- receiving ------------------------------------------------------------------------------

    def next_event(self) -> ClientEvent | _NeedData:
        """The next protocol event, or :data:`NEED_DATA`."""
        return self._next()  # type: ignore[return-value]

    def dump_groups(self, scanner: Any, limit: int = 256) -> tuple[list[Any], int]:
        """The fast path of a dump: event groups straight from the buffered event packets (see
        :class:`~mariabinlog.codec.framing.Scanner`), ``(group tuples, why the scan stopped)``.
        What it leaves (a control event, an error, EOF) :meth:`next_event` reads as always."""
        if self.state is not ClientState.DUMPING or self.semi_sync or self._own_sequence:
            return [], SCAN_EVENT
        groups, following, stop = self.framer.scan_events(scanner, limit, self._seq)
        if following >= 0:
            self._seq = following
        return groups, stop

    def _interpret(self, payload: bytes) -> ClientEvent | None:
        """The event for ``payload``; None when the packet only continues a result set."""
        if not payload:
            raise MalformedPacketError("empty packet", offset=0, expected="a packet type byte")
        event = self._decode(payload, payload[0])
        if event is not None:
            more = isinstance(event, OkPacket | ResultSet) and event.more_results
            self._move(MORE_RESULTS if more and self.state is ClientState.AWAIT_RESULT else type(event))
        return event

    def _decode(self, payload: bytes, first: int) -> ClientEvent | None:
        """What ``payload`` means in the current state (the state moves in :meth:`_interpret`)."""
        state = self.state
        if state is ClientState.DUMPING:
            if first == 0x00:
                if self.semi_sync and len(payload) > 2 and payload[1] == SEMI_SYNC_MAGIC:
                    _check_event_length(payload, 3)
                    return BinlogEventPacket(payload[3:], bool(payload[2] & SEMI_SYNC_NEED_ACK))
                _check_event_length(payload, 1)
                return BinlogEventPacket(payload[1:])
            if first == 0xFF:
                return ErrPacket.decode(payload)
            if is_eof(payload):
                return EndOfStream()
            raise MalformedPacketError(
                f"dump packet starts with 0x{first:02x}", offset=0, expected="00 (event), fe (EOF) or ff (error)"
            )
        if state is ClientState.AWAIT_RESULT:
            return self._result_packet(payload, first)
        if state is ClientState.AWAIT_HANDSHAKE:
            if first == 0xFF:
                return ErrPacket.decode(payload)
            self.handshake = Handshake.decode(payload)
            return self.handshake
        if state is ClientState.AUTHENTICATING:
            if first == 0x00:
                return OkPacket.decode(payload)
            if first == 0xFF:
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
                return OkPacket.decode(payload)
            if first == 0xFF:
                return ErrPacket.decode(payload)
            if first == 0xFB:
                raise MalformedPacketError("LOCAL INFILE request", offset=0, expected="no LOAD DATA LOCAL")
            self._column_count = _column_count(payload)
            self._columns = []
            self._rows = []
            self._phase = 1
            return None
        if phase == 1:
            if len(self._columns) < self._column_count:
                self._columns.append(ColumnDefinition.decode(payload))
                return None
            if not is_eof(payload):
                raise MalformedPacketError("no EOF after column definitions", offset=0, expected="EOF (fe)")
            self._phase = 2
            return None
        # rows
        if first == 0xFF:
            self._phase = 0
            return ErrPacket.decode(payload)
        if is_eof(payload):
            eof = EofPacket.decode(payload)
            self._phase = 0
            result = ResultSet(tuple(self._columns), tuple(self._rows), eof.status)
            self._columns = []
            self._rows = []
            return result
        self._rows.append(decode_text_row(payload, self._column_count))
        return None

    def _resequence(self, seq: int, parts: int) -> None:
        if self._own_sequence:  # the first packet after a semi-sync ACK: the primary may restart its count
            self._own_sequence = False
            self._seq = (seq + parts) & 0xFF
            return
        super()._resequence(seq, parts)

    def _inspect(self, head: bytes, length: int) -> int:
        """:attr:`PacketFramer.inspect` in a dump: an event packet must be as long as its event
        header says (and within ``max_packet``), a long packet must be an event; -1: no bound."""
        if self.state is not ClientState.DUMPING:
            return -1
        if head[0] != 0x00:
            if length <= _MAX_REPLY:
                return -1  # an ERR or EOF packet split across reads
            raise FramingError(
                f"dump packet of {length} bytes starting with 0x{head[0]:02x}", offset=0, expected="an event (00)"
            )
        start = 3 if self.semi_sync and head[1] == SEMI_SYNC_MAGIC else 1
        size = start + U32.unpack_from(head, start + _EVENT_LEN_OFFSET)[0]
        if size > self.framer.max_packet:
            raise PacketTooLargeError(
                f"event of {size - start} bytes announced, more than the {self.framer.max_packet} bytes allowed",
                offset=0,
                expected="at most max_allowed_packet",
            )
        if size != length and not (length == MAX_PAYLOAD and size > MAX_PAYLOAD):
            raise FramingError(
                f"event packet of {length} bytes carries an event of {size - start} bytes",
                offset=0,
                expected="a packet as long as its event",
            )
        return size

    # -- sending --------------------------------------------------------------------------------

    def _command(self, payload: bytes) -> bytes:
        self._seq = 0
        return self._packet(payload)

    def _caps(self, wanted: int) -> int:
        assert self.handshake is not None
        return (wanted & self.handshake.capabilities) | CLIENT_PROTOCOL_41 | (wanted & CLIENT_MYSQL)

    def send_ssl_request(self, *, capabilities: int = CLIENT_DEFAULT_CAPS) -> bytes:
        """The SSL request; the driver then wraps the socket in TLS and sends the response."""
        self._move("send_ssl_request")
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
        after = self._next_state("send_handshake_response")
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
        self.state = after
        return self._packet(response.encode())

    def send_auth_switch_response(self, request: AuthSwitchRequest) -> bytes:
        """Answer an auth switch with the password given before, signed as the plugin asks.

        ``mysql_native_password`` scrambles it with the nonce; ``client_ed25519`` signs the
        nonce with it (the accounts ``IDENTIFIED VIA ed25519`` use).
        """
        self._move("send_auth_switch_response")
        if request.plugin == NATIVE_PASSWORD:
            return self._packet(scramble_native_password(self._password, request.nonce))
        if request.plugin == ED25519:
            return self._packet(ed25519_sign(self._password, request.nonce))
        raise ReplicationError(
            f"the server asks for authentication plugin {request.plugin!r};"
            f" supported are {NATIVE_PASSWORD} and {ED25519}"
        )

    def send_query(self, sql: str | bytes) -> bytes:
        """COM_QUERY; events until READY: OK / ERR / ResultSet (several with multi-statements)."""
        self._move("send_query")
        self._phase = 0
        return self._command(bytes((COM_QUERY,)) + (sql.encode() if isinstance(sql, str) else sql))

    def await_more_results(self) -> None:
        """Expect more results of the last COM_QUERY although the server did not flag them.

        MariaDB 10.11 answers a ``BINLOG '...'`` statement inside a multi-statement query
        with an OK that lacks ``SERVER_MORE_RESULTS_EXISTS`` and then goes on with the next
        statements; a client that knows how many statements it sent calls this to read on.
        """
        self._move("await_more_results")
        self._phase = 0

    def send_ping(self) -> bytes:
        """COM_PING; answered by OK."""
        self._move("send_ping")
        self._phase = 0
        return self._command(bytes((COM_PING,)))

    def send_quit(self) -> bytes:
        """COM_QUIT; the server closes the connection."""
        self._move("send_quit")
        return self._command(bytes((COM_QUIT,)))

    def send_register_slave(self, command: RegisterSlave) -> bytes:
        """COM_REGISTER_SLAVE; answered by OK or ERR."""
        self._move("send_register_slave")
        self._phase = 0
        return self._command(command.encode())

    def send_binlog_dump(self, command: BinlogDump) -> bytes:
        """COM_BINLOG_DUMP; then :class:`BinlogEventPacket` events until EOF/ERR."""
        self._move("send_binlog_dump")
        return self._command(command.encode())

    def send_semi_sync_ack(self, ack: SemiSyncAck) -> bytes:
        """A semi-sync ACK (a new packet sequence starting at 0; the primary may restart its own)."""
        self._move("send_semi_sync_ack")
        self._own_sequence = True
        data, _ = frame(ack.encode(), 0)
        return data


#: The longest ERR or EOF packet a dump can end with (an ERR's message is at most 512 bytes).
_MAX_REPLY: Final = 1 << 16
_EVENT_LEN_OFFSET: Final = 9  # of the event length in the common event header (event_header.HEADER)


def _check_event_length(payload: bytes, start: int) -> None:
    """An event packet (``00`` [+ semi-sync header] + event) is exactly as long as the event's
    header says: a packet cut short, grown by a flipped length bit or joined with the next one
    is a :class:`FramingError`, not an event."""
    size = len(payload) - start
    if size < HEADER_LEN:
        raise FramingError(
            f"event packet of {size} bytes", offset=0, expected=f"at least a {HEADER_LEN}-byte event header"
        )
    declared = U32.unpack_from(payload, start + _EVENT_LEN_OFFSET)[0]
    if declared != size:
        raise FramingError(
            f"event packet of {size} bytes carries an event of {declared} bytes",
            offset=0,
            expected="a packet as long as its event",
        )


def _column_count(payload: bytes) -> int:
    """The column count that starts a result set (a length-encoded integer)."""
    try:
        return read_lenenc_int(payload, 0, "column count")[0]
    except MalformedPacketError:
        raise
    except DecodeError as err:
        raise MalformedPacketError(f"column count: {err.reason}", offset=err.offset, expected=err.expected) from None


# --------------------------------------------------------------------------- server


@dataclass(slots=True)
class _ServerAuth:
    user: str = ""
    nonce: bytes = b""
    response: bytes = b""
    switched: bool = False
    database: str | None = None
    attributes: tuple[tuple[str, str], ...] = field(default=())


class ServerProtocol(_Machine[ServerState]):
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

    __slots__ = ("capabilities", "auth", "server_version", "connection_id")

    def __init__(self, *, max_packet: int = 1 << 24) -> None:
        super().__init__(ServerState.START, SERVER_TRANSITIONS, max_packet)
        self._own_sequence = True  # every received packet goes through _resequence (they are few)
        self.capabilities = SERVER_DEFAULT_CAPS
        self.auth = _ServerAuth()
        self.server_version = ""
        self.connection_id = 0

    def next_event(self) -> ServerEvent | _NeedData:
        """The next client event, or :data:`NEED_DATA`."""
        return self._next()  # type: ignore[return-value]

    def _resequence(self, seq: int, parts: int) -> None:
        """A command (and, during a dump, an ACK or COM_QUIT) starts the client's own sequence at
        0; during a dump it leaves the count of the events alone.  Else: the next id."""
        state = self.state
        if state is ServerState.COMMAND or state is ServerState.DUMPING:
            if seq != 0:
                raise FramingError(
                    f"packets out of order: a command with sequence id {seq}", offset=0, expected="sequence id 0"
                )
            if state is ServerState.COMMAND:
                self._seq = parts & 0xFF
            return
        if seq != self._seq:
            super()._resequence(seq, parts)
        self._seq = (seq + parts) & 0xFF

    def _interpret(self, payload: bytes) -> ServerEvent:
        event = self._decode(payload)
        self._move(type(event))
        return event

    def _decode(self, payload: bytes) -> ServerEvent:
        """What ``payload`` means in the current state (the state moves in :meth:`_interpret`)."""
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
            return response
        if state is ServerState.AUTHENTICATING and self.auth.switched:
            self.auth.response = payload
            self.auth.switched = False
            return HandshakeResponse(self.capabilities, self.auth.user, payload, self.auth.database)
        if state is ServerState.DUMPING:
            if payload and payload[0] == SEMI_SYNC_MAGIC:
                return UnknownCommand(SEMI_SYNC_MAGIC, payload)
            if payload and payload[0] == COM_QUIT:
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
            return Quit()
        if command == COM_QUERY:
            return Query(payload[1:])
        if command == COM_PING:
            return Ping()
        if command == COM_REGISTER_SLAVE:
            return RegisterSlave.decode(payload)
        if command == COM_BINLOG_DUMP:
            return BinlogDump.decode(payload)
        return UnknownCommand(command, payload)

    def send_handshake(self, server_version: str, connection_id: int, nonce: bytes, *, tls: bool = False) -> bytes:
        """The initial handshake (``nonce``: 20 random bytes, none of them NUL)."""
        after = self._next_state("send_handshake")
        if len(nonce) != 20 or 0 in nonce:
            raise LocalProtocolError("the nonce must be 20 non-NUL bytes")
        if tls:
            self.capabilities |= CLIENT_SSL
        self.server_version = server_version
        self.connection_id = connection_id
        self.auth.nonce = nonce
        self.state = after
        self._seq = 0
        return self._packet(Handshake(server_version, connection_id, nonce, self.capabilities).encode())

    def check_password(self, stored_hash: bytes) -> bool:
        """Whether the client's ``mysql_native_password`` response matches SHA1(SHA1(password))."""
        return check_native_password(stored_hash, self.auth.nonce, self.auth.response)

    def check_ed25519(self, stored_key: str) -> bool:
        """Whether the client's ``client_ed25519`` signature of the nonce matches the stored
        base64 public key (what ``auth_ed25519`` keeps for the account)."""
        return ed25519_verify(stored_key, self.auth.nonce, self.auth.response)

    def send_auth_switch(self, nonce: bytes, plugin: str = NATIVE_PASSWORD) -> bytes:
        """Ask the client to answer again with ``plugin`` (``mysql_native_password``: a 20-byte
        nonce; ``client_ed25519``: a 32-byte one) and a new nonce."""
        self._move("send_auth_switch")
        self.auth.nonce = nonce
        self.auth.switched = True
        return self._packet(AuthSwitchRequest(plugin, nonce).encode())

    def send_auth_ok(self) -> bytes:
        """Authentication succeeded; the client may send commands."""
        self._move("send_auth_ok")
        return self._packet(OkPacket().encode())

    def send_ok(self, ok: OkPacket | None = None, *, more: bool = False) -> bytes:
        """Answer the current command with OK; ``more``: another result of the same
        multi-statement query follows (``SERVER_MORE_RESULTS_EXISTS``)."""
        self._move(MORE_RESULTS if more else "send_ok")
        ok = ok or OkPacket()
        if more:
            ok = OkPacket(ok.affected_rows, ok.last_insert_id, ok.status | SERVER_MORE_RESULTS_EXISTS, ok.warnings, ok.info)
        return self._packet(ok.encode())

    def send_error(self, err: ErrPacket) -> bytes:
        """Answer with ERR (during authentication it also ends the connection)."""
        self._move("send_error")
        return self._packet(err.encode())

    def send_result_set(self, columns: tuple[ColumnDefinition, ...], rows: tuple[Row, ...], *, more: bool = False) -> bytes:
        """Answer the current query with a text result set (``more``: see :meth:`send_ok`)."""
        after = self._next_state(MORE_RESULTS if more else "send_result_set")
        out = [self._packet(write_lenenc(len(columns)))]
        out += [self._packet(column.encode()) for column in columns]
        out.append(self._packet(EofPacket().encode()))
        out += [self._packet(encode_text_row(row)) for row in rows]
        status = SERVER_STATUS_AUTOCOMMIT | (SERVER_MORE_RESULTS_EXISTS if more else 0)
        out.append(self._packet(EofPacket(status=status).encode()))
        self.state = after
        return b"".join(out)

    def send_event(self, event: Buffer, *, semi_sync: bool = False, need_ack: bool = False) -> bytes:
        """One event packet of the dump stream (``00`` + event)."""
        self._move("send_event")
        if semi_sync:
            prefix = bytes((0, SEMI_SYNC_MAGIC, SEMI_SYNC_NEED_ACK if need_ack else 0))
        else:
            prefix = b"\0"
        return self._packet(prefix + bytes(event))

    def send_group(self, group: EventGroup, log_pos: int, checksum: bool, skip_annotate: bool) -> tuple[bytes, int]:
        """A whole event group's event packets at once (:func:`~mariabinlog.codec.framing.encode_dump`:
        each event's ``log_pos`` its end counted from ``log_pos``, 0 keeps 0; CRC32 footers when
        ``checksum``; Annotate_rows left out when ``skip_annotate``), and the position after it."""
        self._move("send_event")
        packets, end, self._seq = encode_dump(group.data(), group.offsets, log_pos, checksum, self._seq, skip_annotate)
        return packets, end

    def send_eof(self) -> bytes:
        """End a non-blocking dump."""
        self._move("send_eof")
        return self._packet(EofPacket().encode())
