"""The sans-I/O protocol codec: framing, handshake, auth, results, dump packets, traps.

A :class:`ClientProtocol` and a :class:`ServerProtocol` talk to each other through byte
strings only, in memory; the real-server interop lives in ``test_client.py``.
"""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mariabinlog.codec.wire import protocol as P
from mariabinlog.codec.columns import MYSQL_TYPE_LONGLONG
from mariabinlog.codec.events import LOG_EVENT_ARTIFICIAL_F, GtidEvent, RotateEvent
from mariabinlog.errors import DecodeError, ReplicationError

NONCE = bytes(range(1, 21))


def _drain(proto: P.ClientProtocol | P.ServerProtocol) -> list[object]:
    events = []
    while (event := proto.next_event()) is not P.NEED_DATA:
        events.append(event)
        if isinstance(event, P.ConnectionClosed):
            break
    return events


def _pair(
    password: bytes = b"secret", user: str = "repl", *, max_packet: int = P.DEFAULT_MAX_PACKET
) -> tuple[P.ClientProtocol, P.ServerProtocol]:
    """A client and a server that completed the handshake and authentication."""
    client, server = P.ClientProtocol(max_packet=max_packet), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19-mariabinlog", 42, NONCE))
    (handshake,) = _drain(client)
    assert isinstance(handshake, P.Handshake)
    server.receive_data(client.send_handshake_response(user, password))
    (response,) = _drain(server)
    assert isinstance(response, P.HandshakeResponse) and response.user == user
    assert server.check_password(P.native_password_hash(password))
    client.receive_data(server.send_auth_ok())
    (ok,) = _drain(client)
    assert isinstance(ok, P.OkPacket)
    assert client.state is P.ClientState.READY and server.state is P.ServerState.COMMAND
    return client, server


def _event(size: int, *, fill: bytes = b"\x01", type_code: int = 0x1E) -> bytes:
    """An event of ``size`` bytes: a common header that declares that size, then filler."""
    return struct.pack("<IBIIIH", 1_700_000_000, type_code, 1, size, 0, 0) + fill * (size - 19)


# --------------------------------------------------------------------------- framing


@pytest.mark.parametrize("size", [0, 1, 250, P.MAX_PAYLOAD - 1, P.MAX_PAYLOAD, P.MAX_PAYLOAD + 7, 2 * P.MAX_PAYLOAD])
def test_frame_splits_and_framer_joins(size: int) -> None:
    payload = bytes(i & 0xFF for i in range(size))
    wire, next_seq = P.frame(payload, 5)
    parts = size // P.MAX_PAYLOAD + 1
    assert next_seq == (5 + parts) & 0xFF
    assert len(wire) == size + 4 * parts
    framer = P.PacketFramer()
    # Byte-at-a-time for small packets, big slices for large ones: no packet before the last byte.
    step = 1 if size < 600 else 1 << 20
    for pos in range(0, len(wire), step):
        assert framer.next_packet() is None
        framer.receive(wire[pos : pos + step])
    seq, got = framer.next_packet()  # type: ignore[misc]
    assert (seq, got) == (5, payload)
    assert framer.next_packet() is None and framer.buffered == 0


def test_framer_bounds_packet_size_before_buffering() -> None:
    framer = P.PacketFramer(max_packet=1000)
    framer.receive(b"\xe9\x03\x00\x00")  # announces 1001 bytes
    with pytest.raises(P.MalformedPacketError, match="more than 1000 bytes"):
        framer.next_packet()


def test_framer_many_packets_in_one_read() -> None:
    wire = b"".join(P.frame(bytes([i]) * i, i)[0] for i in range(50))
    framer = P.PacketFramer()
    framer.receive(wire)
    assert [framer.next_packet() for _ in range(50)] == [(i, bytes([i]) * i) for i in range(50)]


# --------------------------------------------------------------------------- auth


def test_native_password_scramble_matches_reference_formula() -> None:
    password = b"p\xc3\xa4ss"
    stage1 = hashlib.sha1(password).digest()
    stage2 = hashlib.sha1(stage1).digest()
    mask = hashlib.sha1(NONCE + stage2).digest()
    expected = bytes(a ^ b for a, b in zip(stage1, mask, strict=True))
    assert P.scramble_native_password(password, NONCE) == expected
    assert P.check_native_password(stage2, NONCE, expected)
    assert not P.check_native_password(stage2, NONCE, bytes(20))
    assert P.scramble_native_password(b"", NONCE) == b""
    assert P.check_native_password(b"", NONCE, b"") and not P.check_native_password(b"", NONCE, expected)


def test_wrong_password_is_detected_and_refused() -> None:
    client, server = P.ClientProtocol(), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19", 1, NONCE))
    _drain(client)
    server.receive_data(client.send_handshake_response("repl", "wrong"))
    _drain(server)
    assert not server.check_password(P.native_password_hash(b"right"))
    client.receive_data(server.send_error(P.ErrPacket(P.ER_ACCESS_DENIED_ERROR, "Access denied", "28000")))
    (err,) = _drain(client)
    assert isinstance(err, P.ErrPacket) and err.code == 1045 and err.sql_state == "28000"
    assert isinstance(err.exception(), P.ServerError)
    assert client.state is P.ClientState.CLOSED and server.state is P.ServerState.CLOSED


def test_auth_switch_round_trip() -> None:
    client, server = P.ClientProtocol(), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19", 1, NONCE))
    _drain(client)
    server.receive_data(client.send_handshake_response("u", "pw"))
    _drain(server)
    new_nonce = bytes(range(30, 50))
    client.receive_data(server.send_auth_switch(new_nonce))
    (switch,) = _drain(client)
    assert switch == P.AuthSwitchRequest(P.NATIVE_PASSWORD, new_nonce)
    server.receive_data(client.send_auth_switch_response(switch))
    (again,) = _drain(server)
    assert isinstance(again, P.HandshakeResponse)
    assert server.check_password(P.native_password_hash(b"pw"))
    with pytest.raises(ReplicationError, match="supported are mysql_native_password and client_ed25519"):
        client.send_auth_switch_response(P.AuthSwitchRequest("dialog", b"x"))


def test_ed25519_auth_switch_round_trip() -> None:
    """The server asks for client_ed25519 with a 32-byte nonce; the client signs it with the password."""
    from mariabinlog.codec.wire.ed25519 import password_hash

    client, server = P.ClientProtocol(), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19", 1, NONCE))
    _drain(client)
    server.receive_data(client.send_handshake_response("u", "pw"))
    _drain(server)
    nonce = bytes(range(32))
    client.receive_data(server.send_auth_switch(nonce, "client_ed25519"))
    (switch,) = _drain(client)
    assert switch == P.AuthSwitchRequest("client_ed25519", nonce)
    server.receive_data(client.send_auth_switch_response(switch))
    _drain(server)
    assert server.check_ed25519(password_hash(b"pw"))
    assert not server.check_ed25519(password_hash(b"other"))


@given(
    version=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40),
    conn_id=st.integers(0, 2**32 - 1),
    nonce=st.binary(min_size=20, max_size=20).filter(lambda b: 0 not in b),
    caps=st.integers(0, 2**32 - 1),
)
@settings(max_examples=200, deadline=None)
def test_handshake_round_trip(version: str, conn_id: int, nonce: bytes, caps: int) -> None:
    caps |= P.CLIENT_SECURE_CONNECTION | P.CLIENT_PLUGIN_AUTH | P.CLIENT_PROTOCOL_41
    hs = P.Handshake(version, conn_id, nonce, caps, mariadb_capabilities=0 if caps & 1 else 7)
    assert P.Handshake.decode(hs.encode()) == hs


@given(
    user=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=30),
    auth=st.binary(max_size=300),
    db=st.none() | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
    attrs=st.lists(st.tuples(st.text(max_size=10), st.text(max_size=10)), max_size=3).map(tuple),
    lenenc=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_handshake_response_round_trip(
    user: str, auth: bytes, db: str | None, attrs: tuple[tuple[str, str], ...], lenenc: bool
) -> None:
    caps = P.CLIENT_DEFAULT_CAPS if lenenc else P.CLIENT_DEFAULT_CAPS & ~P.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    if not lenenc:
        auth = auth[:255]
    response = P.HandshakeResponse(caps, user, auth, db, attributes=attrs)
    decoded = P.HandshakeResponse.decode(response.encode())
    assert isinstance(decoded, P.HandshakeResponse)
    assert (decoded.user, decoded.auth_response, decoded.database, decoded.attributes) == (user, auth, db, attrs)


def test_ssl_request_is_recognised() -> None:
    client, server = P.ClientProtocol(), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19", 1, NONCE, tls=True))
    _drain(client)
    server.receive_data(client.send_ssl_request())
    (request,) = _drain(server)
    assert isinstance(request, P.SslRequest) and request.capabilities & P.CLIENT_SSL
    server.receive_data(client.send_handshake_response("u", "pw"))
    (response,) = _drain(server)
    assert isinstance(response, P.HandshakeResponse) and response.capabilities & P.CLIENT_SSL


def test_ssl_request_refused_when_server_has_no_tls() -> None:
    client, server = P.ClientProtocol(), P.ServerProtocol()
    client.receive_data(server.send_handshake("10.11.19", 1, NONCE))
    _drain(client)
    with pytest.raises(P.LocalProtocolError, match="TLS"):
        client.send_ssl_request()


# --------------------------------------------------------------------------- commands and results


def test_query_result_set_with_nulls_and_multi_results() -> None:
    client, server = _pair()
    server.receive_data(client.send_query("SELECT 1; SET @a=1"))
    (query,) = _drain(server)
    assert query == P.Query(b"SELECT 1; SET @a=1")
    columns = (P.ColumnDefinition("a"), P.ColumnDefinition("b", type=MYSQL_TYPE_LONGLONG))
    rows = ((b"x", None), (b"", b"12"), (b"y" * 300, b"0"))
    wire = server.send_result_set(columns, rows)
    client.receive_data(wire)
    (result,) = _drain(client)
    assert isinstance(result, P.ResultSet)
    assert [c.name for c in result.columns] == ["a", "b"] and result.columns[1].type == MYSQL_TYPE_LONGLONG
    assert result.rows == rows and result.scalar() == b"x"
    assert client.state is P.ClientState.READY


def test_multi_statement_oks_keep_waiting_until_the_last() -> None:
    client, server = _pair()
    server.receive_data(client.send_query("SET @a=1; SET @b=2"))
    _drain(server)
    first = server.send_ok(P.OkPacket(status=P.SERVER_MORE_RESULTS_EXISTS | P.SERVER_STATUS_AUTOCOMMIT))
    server.state = P.ServerState.RESPONDING  # the same command answers twice
    second = server.send_ok()
    client.receive_data(first)
    (ok1,) = _drain(client)
    assert isinstance(ok1, P.OkPacket) and ok1.more_results and client.state is P.ClientState.AWAIT_RESULT
    client.receive_data(second)
    (ok2,) = _drain(client)
    assert not ok2.more_results and client.state is P.ClientState.READY  # type: ignore[union-attr]


def test_result_set_of_many_rows_needs_no_recursion() -> None:
    client, server = _pair()
    server.receive_data(client.send_query("SELECT n"))
    _drain(server)
    rows = tuple((str(i).encode(),) for i in range(20000))
    client.receive_data(server.send_result_set((P.ColumnDefinition("n"),), rows))
    (result,) = _drain(client)
    assert isinstance(result, P.ResultSet) and len(result.rows) == 20000


def test_register_slave_and_binlog_dump_round_trip() -> None:
    client, server = _pair()
    register = P.RegisterSlave(1234, "host", "repl", "", 3307)
    server.receive_data(client.send_register_slave(register))
    assert _drain(server) == [register]
    client.receive_data(server.send_ok())
    assert isinstance(_drain(client)[0], P.OkPacket)
    dump = P.BinlogDump(1234, 4, P.BINLOG_SEND_ANNOTATE_ROWS_EVENT, b"")
    server.receive_data(client.send_binlog_dump(dump))
    assert _drain(server) == [dump]
    assert client.state is P.ClientState.DUMPING and server.state is P.ServerState.DUMPING
    rotate = RotateEvent(next_file=b"mysql-bin.000001", next_position=4, flags=LOG_EVENT_ARTIFICIAL_F).encode()
    gtid = GtidEvent(seq_no=7, domain_id=1, server_id=3, flags2=1).encode(checksum=True)
    big = _event(P.MAX_PAYLOAD + 100)  # an event longer than one packet
    client.receive_data(server.send_event(rotate) + server.send_event(gtid) + server.send_event(big) + server.send_eof())
    events = _drain(client)
    assert events == [P.BinlogEventPacket(rotate), P.BinlogEventPacket(gtid), P.BinlogEventPacket(big), P.EndOfStream()]
    assert client.state is P.ClientState.READY


def test_dump_ended_by_error() -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    message = "Could not find GTID state requested by slave in any binlog files."
    client.receive_data(server.send_error(P.ErrPacket(P.ER_MASTER_FATAL_ERROR_READING_BINLOG, message)))
    (err,) = _drain(client)
    assert isinstance(err, P.ErrPacket) and err.code == 1236 and err.message == message


def test_semi_sync_header_is_stripped_and_ack_encoded() -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    client.semi_sync = True
    first, second = _event(19, fill=b"E"), _event(40, fill=b"F")
    client.receive_data(server.send_event(first, semi_sync=True, need_ack=True) + server.send_event(second, semi_sync=True))
    assert _drain(client) == [P.BinlogEventPacket(first, True), P.BinlogEventPacket(second, False)]
    ack = client.send_semi_sync_ack(P.SemiSyncAck(1234, b"mysql-bin.000002"))
    assert ack[3] == 0 and ack[4] == P.SEMI_SYNC_MAGIC
    server.receive_data(ack)
    (got,) = _drain(server)
    assert isinstance(got, P.UnknownCommand) and got.payload[1:9] == (1234).to_bytes(8, "little")


# --------------------------------------------------------------------------- traps


def test_garbage_in_dump_stream_is_a_malformed_packet_and_state_error() -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    client.receive_data(P.frame(b"\x42garbage", 1)[0])
    with pytest.raises(P.MalformedPacketError, match="0x42") as info:
        client.next_event()
    assert isinstance(info.value, DecodeError) and isinstance(info.value, ReplicationError)
    assert client.state is P.ClientState.ERROR
    with pytest.raises(P.LocalProtocolError):
        client.next_event()


@pytest.mark.parametrize("then", [0, 2])  # the first event packet again; the next one skipped
def test_a_duplicated_or_lost_packet_is_a_framing_error(then: int) -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    packets = [server.send_event(_event(30 + n)) for n in range(3)]
    client.receive_data(packets[0])
    assert client.next_event() == P.BinlogEventPacket(_event(30))
    client.receive_data(packets[then])
    with pytest.raises(P.FramingError, match=f"packets out of order: sequence id {then + 1}, expected 2"):
        client.next_event()
    assert client.state is P.ClientState.ERROR


@pytest.mark.parametrize("delta", [-16, 16])
def test_an_event_packet_grown_or_shrunk_is_a_framing_error(delta: int) -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    wire = bytearray(server.send_event(_event(100)) + server.send_event(_event(100)))
    wire[0] += delta  # the first packet's length, as a flipped bit 4 makes it
    client.receive_data(bytes(wire))
    with pytest.raises(P.FramingError, match="carries an event of 100 bytes"):
        client.next_event()


def test_a_chain_of_long_packets_is_refused_from_its_first_bytes() -> None:
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    header = struct.pack("<I", P.MAX_PAYLOAD | 1 << 24)
    # A real event's header in a packet that claims 16 MiB - 1: refused with the first read.
    client.receive_data(header + b"\x00" + _event(60))
    with pytest.raises(P.FramingError, match="16777215 bytes carries an event of 60 bytes"):
        client.next_event()
    # An event header that claims more than max_packet: refused before anything is buffered.
    client, server = _pair(max_packet=1 << 25)
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    client.receive_data(header + b"\x00" + struct.pack("<IBIIIH", 1, 0x1E, 1, 1 << 30, 0, 0))
    with pytest.raises(P.PacketTooLargeError, match=f"event of {1 << 30} bytes announced"):
        client.next_event()
    # The parts of a long packet must have consecutive sequence ids.
    framer = P.PacketFramer()
    framer.receive(P.frame(bytes(P.MAX_PAYLOAD + 10), 7)[0].replace(b"\x0a\x00\x00\x08", b"\x0a\x00\x00\x09"))
    with pytest.raises(P.FramingError, match="part 2 of a long packet has sequence id 9, expected 8"):
        framer.next_packet()


def test_the_server_checks_the_clients_sequence_ids() -> None:
    client, server = _pair()
    query = bytearray(client.send_query("SELECT 1"))
    query[3] = 1  # a command must start a new sequence at 0
    server.receive_data(bytes(query))
    with pytest.raises(P.FramingError, match="a command with sequence id 1"):
        server.next_event()
    # During a dump the client's ACK or COM_QUIT starts its own sequence; the events' count goes on.
    client, server = _pair()
    server.receive_data(client.send_binlog_dump(P.BinlogDump(1)))
    _drain(server)
    first = server.send_event(_event(40))
    server.receive_data(P.frame(bytes((P.SEMI_SYNC_MAGIC,)) + bytes(12), 0)[0])
    assert isinstance(_drain(server)[0], P.UnknownCommand)
    second = server.send_event(_event(41))
    assert (first[3], second[3]) == (1, 2)


@pytest.mark.parametrize(
    "payload",
    [b"\x09old", b"\x0a5.5", b"\x0a10.11\x00\x01\x00", b"\x0a10\x00" + bytes(12) + b"\x00\x80" + bytes(5)],
)
def test_truncated_or_foreign_handshake(payload: bytes) -> None:
    client = P.ClientProtocol()
    client.receive_data(P.frame(payload, 0)[0])
    with pytest.raises(P.MalformedPacketError):
        client.next_event()


def test_truncated_column_and_row_packets() -> None:
    client, server = _pair()
    server.receive_data(client.send_query("SELECT 1"))
    _drain(server)
    client.receive_data(P.frame(b"\x01", 1)[0] + P.frame(b"\x03def\x00", 2)[0])
    with pytest.raises(P.MalformedPacketError, match="column"):
        client.next_event()


def test_sending_in_the_wrong_state_is_a_local_error() -> None:
    client = P.ClientProtocol()
    with pytest.raises(P.LocalProtocolError, match="await-handshake"):
        client.send_query("SELECT 1")
    server = P.ServerProtocol()
    with pytest.raises(P.LocalProtocolError):
        server.send_handshake("v", 1, b"\x00" * 20)


def test_connection_closed_is_an_event() -> None:
    client = P.ClientProtocol()
    client.receive_data(b"\x05\x00")  # half a header, then EOF
    client.receive_data(b"")
    assert isinstance(client.next_event(), P.ConnectionClosed)


@given(st.binary(max_size=200))
@settings(max_examples=500, deadline=None)
def test_fuzzed_packets_raise_only_protocol_errors(payload: bytes) -> None:
    for state in (P.ClientState.AWAIT_HANDSHAKE, P.ClientState.AUTHENTICATING, P.ClientState.AWAIT_RESULT, P.ClientState.DUMPING):
        client = P.ClientProtocol()
        client.state = state
        client.receive_data(P.frame(payload, 0)[0])
        try:
            _drain(client)
        except (P.MalformedPacketError, P.LocalProtocolError):
            pass
    server = P.ServerProtocol()
    server.state = P.ServerState.AWAIT_RESPONSE
    server.receive_data(P.frame(payload, 0)[0])  # the id after a handshake this machine never sent
    try:
        _drain(server)
    except (P.MalformedPacketError, P.LocalProtocolError):
        pass
