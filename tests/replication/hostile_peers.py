"""Hostile network peers for the robustness tests and ``bench/hostile.py``: a proxy that damages
a primary's stream on its way to a client, a relay that cuts a replica's connections to its
target, and clients that misbehave against ``serve``.

Imported by name (``tests/replication`` is on ``sys.path`` in the tests; the benchmark puts it
there); no pytest here, so the benchmark can use it too.  Attackers connect from
:data:`ATTACKER` (another loopback address), so that what the server does to their address
never touches real replicas on 127.0.0.1.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time

from mariabinlog.codec.wire import protocol as P

ATTACKER = "127.0.0.2"
"""Source address of the hostile clients (any 127.x.y.z reaches a server on 127.0.0.1)."""


#: What :class:`Proxy` can do to the ``at``-th event packet of a dump.
DAMAGES = ("flip-body", "flip-length", "garbage", "truncate", "cut", "stall", "duplicate", "replay", "chain")


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of ``port`` that damages the server-to-client stream.

    It follows the packet framing from the server and counts *event packets* (payload starting
    with ``00`` and longer than 40 bytes: binlog events of a dump).  On the first ``times``
    connections, the ``at``-th event packet gets ``damage``:

    * ``flip-body``: a byte inside the event's body flipped (a CRC32 mismatch);
    * ``flip-length``: bit 4 of the packet's length flipped (16 bytes longer or shorter);
    * ``garbage``: the packet's ``00`` marker replaced by ``42``;
    * ``truncate``: only the first half of the packet sent, the stream going on after it;
    * ``cut``: half of the packet sent, then both sides closed;
    * ``stall``: nothing more sent from there (both sides left open);
    * ``duplicate``: the packet sent twice;
    * ``replay``: the packet sent twice, the copy and every later packet renumbered so that the
      sequence ids stay consecutive (an active attacker, or a broken middlebox);
    * ``chain``: a chain of ``chain_parts`` packets of 0xFFFFFF bytes sent instead, the first
      starting with the real packet's payload (as if its length had been rewritten; with
      ``forge`` its event header also claims the chain's length), the following ones with the
      next sequence ids.

    Later connections pass through untouched.  With ``times`` > 1, a later connection gets the
    damage at the same event of the binlog as the first (found by its position): damage that a
    new connection meets again where it was, as a primary's own damaged binlog would be; with
    ``moving`` at its own ``at``-th event packet instead, as a flaky network damages a stream.
    ``sent_bytes`` counts what reached the client, ``accepted_at`` holds the
    ``time.monotonic()`` of each connection and ``closed_at`` when the client closed the first.
    """

    def __init__(
        self, port: int, *, damage: str, at: int, times: int = 1, chain_parts: int = 70, forge: bool = False,
        moving: bool = False,
    ) -> None:
        if damage not in DAMAGES:
            raise ValueError(f"damage must be one of {DAMAGES}")
        self.port = port
        self.damage = damage
        self.at = at
        self.times = times
        self.chain_parts = chain_parts
        self.forge = forge
        self.moving = moving
        self._target: bytes | None = None  # the damaged event's log_pos (bytes 13-17 of the event)
        self.connections = 0
        self.accepted_at: list[float] = []
        self.closed_at = 0.0
        self.sent_bytes = 0
        self.damaged = threading.Event()
        #: ``time.monotonic()`` when the damage was sent (the first time).
        self.damaged_at = 0.0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.2)
        self.address = self.listener.getsockname()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            self.accepted_at.append(time.monotonic())
            upstream = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            client.settimeout(None)
            upstream.settimeout(None)
            damaging = self.connections <= self.times
            for target in (self._to_server, self._to_client):
                thread = threading.Thread(target=target, args=(client, upstream, damaging), daemon=True)
                thread.start()
                self._threads.append(thread)

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _to_server(self, client: socket.socket, upstream: socket.socket, damaging: bool) -> None:
        try:
            while data := client.recv(1 << 16):
                upstream.sendall(data)
        except OSError:
            pass
        if not self.closed_at:
            self.closed_at = time.monotonic()
        self._close(upstream)

    def _send(self, client: socket.socket, data: bytes | bytearray) -> None:
        client.sendall(data)
        self.sent_bytes += len(data)

    def _to_client(self, client: socket.socket, upstream: socket.socket, damaging: bool) -> None:
        buffer = bytearray()
        events = 0
        shift = 0  # added to the sequence id of every packet after a replay
        try:
            while data := upstream.recv(1 << 16):
                if not damaging:
                    self._send(client, data)
                    continue
                buffer += data
                out = bytearray()
                while len(buffer) >= 4:
                    size = int.from_bytes(buffer[:3], "little")
                    if len(buffer) < 4 + size:
                        break
                    packet = bytearray(buffer[: 4 + size])
                    del buffer[: 4 + size]
                    packet[3] = (packet[3] + shift) & 0xFF
                    if size > 40 and packet[4] == 0:
                        events += 1
                        log_pos = bytes(packet[4 + 14 : 4 + 18])
                        if self._target is None and events == self.at:
                            self._target = log_pos
                        if (events == self.at) if self.moving else (log_pos == self._target):
                            self._send(client, out)
                            out = bytearray()
                            if not self._apply(client, upstream, packet):
                                return
                            shift += self.damage == "replay"
                            continue
                    out += packet
                self._send(client, out)
        except OSError:
            pass
        self._close(client)

    def _apply(self, client: socket.socket, upstream: socket.socket, packet: bytearray) -> bool:
        """Send ``packet`` damaged; False when this direction is done (cut or stalled)."""
        if not self.damaged.is_set():
            self.damaged_at = time.monotonic()
        self.damaged.set()
        size = len(packet) - 4
        damage = self.damage
        if damage == "flip-body":
            packet[4 + 30] ^= 0xFF
        elif damage == "flip-length":
            packet[0] ^= 0x10
        elif damage == "garbage":
            packet[4] = 0x42
        elif damage == "truncate":
            packet = packet[: 4 + size // 2]
        elif damage == "cut":
            self._send(client, packet[: 4 + size // 2])
            self._close(client, upstream)
            return False
        elif damage == "stall":
            while not self._stop.wait(0.1):
                pass
            return False
        elif damage == "duplicate":
            packet = packet + packet
        elif damage == "replay":
            copy = bytearray(packet)
            copy[3] = (copy[3] + 1) & 0xFF
            packet = packet + copy
        elif damage == "chain":
            part = bytearray(0xFFFFFF)
            part[: size] = packet[4:]
            if self.forge:  # the event header claims the whole chain (less the 00 marker)
                part[1 + 9 : 1 + 13] = (self.chain_parts * 0xFFFFFF - 1).to_bytes(4, "little")
            seq = packet[3]
            for index in range(self.chain_parts):
                self._send(client, b"\xff\xff\xff" + bytes(((seq + index) & 0xFF,)) + part)
                if index == 0:
                    part = bytearray(0xFFFFFF)
            return True
        self._send(client, packet)
        return True

    def close(self) -> None:
        """Stop accepting and release stalled streams (open connections end when their peers close)."""
        self._stop.set()
        self.listener.close()


# --------------------------------------------------------------------------- hostile clients


class CuttingRelay:
    """A TCP relay on 127.0.0.1 in front of a target server that cuts connections: after the
    first ``spare`` connections, the first ``cuts`` that carry more than their cut point of the
    server's answers (drawn anew for each from ``seed``, between ``low`` and ``high`` bytes)
    are closed on both sides there, in the middle of whatever they were answering (a
    handshake, a packet of groups)."""

    def __init__(self, port: int, *, cuts: int, low: int, high: int, seed: int, spare: int = 0) -> None:
        self.port = port
        self.spare = spare
        self.cuts_left = cuts
        self.cut = 0
        self.connections = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()
        self.low, self.high = low, high
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port))
            with self._lock:
                self.connections += 1
                cutting = self.cuts_left and self.connections > self.spare
                limit = self._random.randint(self.low, self.high) if cutting else None
            threading.Thread(target=self._pipe, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, limit), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if limit is not None and sent + len(data) > limit:
                    with self._lock:
                        cutting = self.cuts_left > 0
                        if cutting:
                            self.cuts_left -= 1
                            self.cut += 1
                    if cutting:
                        sink.sendall(data[: limit - sent])
                        break
                    limit = None
                sink.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self) -> None:
        self.listener.close()


def connect(address: tuple[str, int], *, source: str = ATTACKER, timeout: float = 30.0) -> socket.socket:
    """A TCP connection to ``address`` from ``source``."""
    return socket.create_connection(address, timeout=timeout, source_address=(source, 0))


def _next(proto: P.ClientProtocol, sock: socket.socket) -> object:
    """The next event of ``proto`` read from ``sock`` (ConnectionClosed when the server closes)."""
    while (event := proto.next_event()) is P.NEED_DATA:
        try:
            data = sock.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        proto.receive_data(data)
    return event


def login(address: tuple[str, int], user: str, password: str, *, source: str = ATTACKER) -> tuple[object, float]:
    """Log in from ``source``: the server's answer (OkPacket, ErrPacket or ConnectionClosed; an
    ErrPacket in place of the handshake when the server refuses the connection) and its seconds."""
    start = time.monotonic()
    with connect(address, source=source) as sock:
        proto = P.ClientProtocol()
        event = _next(proto, sock)
        if isinstance(event, P.Handshake):
            sock.sendall(proto.send_handshake_response(user, password))
            event = _next(proto, sock)
        return event, time.monotonic() - start


def closed_after(sock: socket.socket, limit: float) -> float | None:
    """Seconds until the server closes ``sock`` (reading and dropping what it sends), None if it
    is still open after ``limit`` s."""
    start = time.monotonic()
    sock.settimeout(0.05)
    while time.monotonic() - start < limit:
        try:
            if not sock.recv(1 << 16):
                return time.monotonic() - start
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - start
    return None


def idle_connections(address: tuple[str, int], count: int, *, source: str = ATTACKER) -> list[socket.socket]:
    """``count`` connections that never send a byte."""
    return [connect(address, source=source) for _ in range(count)]


def huge_header(address: tuple[str, int], *, source: str = ATTACKER) -> socket.socket:
    """A connection that answers the handshake with a packet header announcing 16 MiB - 1
    bytes, then sends nothing more."""
    sock = connect(address, source=source)
    sock.recv(1 << 16)
    sock.sendall(b"\xff\xff\xff\x01")
    return sock


def garbage_handshake(address: tuple[str, int], size: int = 200, *, source: str = ATTACKER) -> socket.socket:
    """A connection that answers the handshake with ``size`` random bytes."""
    sock = connect(address, source=source)
    sock.recv(1 << 16)
    sock.sendall(os.urandom(size))
    return sock


def authenticated(address: tuple[str, int], user: str, password: str, *, rcvbuf: int = 0) -> tuple[socket.socket, P.ClientProtocol]:
    """A logged-in connection over a raw socket (with ``rcvbuf``: that receive buffer, set
    before connecting so that the window TCP advertises matches it, as on a slow link)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect(address)
    proto = P.ClientProtocol()
    event = _next(proto, sock)
    assert isinstance(event, P.Handshake), event
    sock.sendall(proto.send_handshake_response(user, password))
    event = _next(proto, sock)
    assert isinstance(event, P.OkPacket), event
    return sock, proto


class DumpReader:
    """An authenticated binlog dump from ``serve`` that reads ``rate`` bytes/s at most (0: reads
    nothing at all, a stuck replica) with a small receive buffer, in a thread; ``events`` counts
    what arrived, ``ended`` says how the stream ended (EOF, an error, the connection closed)."""

    def __init__(self, address: tuple[str, int], user: str, password: str, *, rate: int) -> None:
        self.rate = rate
        self.events = 0
        self.ended = ""
        self.started = time.monotonic()
        self.finished = 0.0
        self.sock, self.proto = authenticated(address, user, password, rcvbuf=16384)
        sql = "SET @master_binlog_checksum= 'CRC32', @mariadb_slave_capability= 4, @slave_connect_state= ''"
        self.sock.sendall(self.proto.send_query(sql))
        assert isinstance(_next(self.proto, self.sock), P.OkPacket)
        dump = P.BinlogDump(0x7E000000 | os.getpid() & 0xFFFF, 4, P.BINLOG_DUMP_NON_BLOCK, b"")
        self.sock.sendall(self.proto.send_binlog_dump(dump))
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        proto, sock = self.proto, self.sock
        try:
            while True:
                event = proto.next_event()
                if isinstance(event, P.BinlogEventPacket):
                    self.events += 1
                    continue
                if event is not P.NEED_DATA:
                    self.ended = type(event).__name__
                    break
                if not self.rate:
                    time.sleep(0.05)
                    continue
                data = sock.recv(4096)
                proto.receive_data(data)
                time.sleep(len(data) / self.rate)
        except (OSError, P.MalformedPacketError) as err:
            self.ended = f"{type(err).__name__}: {err}"
        self.finished = time.monotonic()

    def close(self) -> None:
        """Close the connection (a stuck reader's thread then ends)."""
        self.rate = 1 << 30
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=10)
