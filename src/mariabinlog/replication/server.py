"""The binlog server: the primary side of the replication protocol over an `.ibb` archive.

``mariabinlog serve --dir DIR`` lets real MariaDB replicas (``CHANGE MASTER TO ...
MASTER_USE_GTID=slave_pos``) replicate from an archive as if it were their primary:

* handshake and ``mysql_native_password`` authentication against configured accounts
  (wrong credentials: ``ERROR 1045 Access denied``), optional TLS;
* the queries a replica sends while it sets up (``SELECT UNIX_TIMESTAMP()``,
  ``SELECT @@GLOBAL.SERVER_ID``, ``SET @master_binlog_checksum= @@global.binlog_checksum``,
  ``SELECT @master_binlog_checksum``, ``SET @mariadb_slave_capability``, ``SET
  @slave_connect_state``, ``SHOW VARIABLES LIKE ...``): ``SET`` of user variables and a
  small ``SELECT`` of variables, functions and literals; ``SHOW BINARY LOGS`` and ``SHOW
  MASTER STATUS`` (CDC clients ask them) from the archive as the engine would recover it;
* COM_REGISTER_SLAVE, and COM_BINLOG_DUMP in GTID mode: the start position is checked as
  MariaDB's ``check_slave_start_position``/``gtid_find_binlog_file`` do, with the same
  errors (1236 "... which is not in the master's binlog", "... purged"); then a fake
  Rotate, a Format_description, a fake Gtid_list, the events and heartbeats while idle;
* ``@slave_gtid_strict_mode``: a start GTID missing from the archive although a later one
  of the same domain and server exists is the primary's "hole" error (1236, text of
  ER_GTID_START_FROM_BINLOG_HOLE); ``@slave_until_gtid`` (``START SLAVE UNTIL
  master_gtid_pos``): domains not named are skipped, a domain stops at its GTID, and when
  all are reached the dump ends with a Gtid_list flagged UNTIL_REACHED and an EOF packet,
  as ``send_event_to_slave``/``is_until_reached`` do.

Hostile clients (the limits are MariaDB's server variables, with its defaults): a connection
must log in within ``connect_timeout`` s; an authenticated one may stay idle between commands
``wait_timeout`` s, and once a packet has begun its rest must come within ``net_read_timeout``
s; before login a packet may not announce more than :data:`LOGIN_MAX_PACKET` bytes, after it
:data:`COMMAND_MAX_PACKET` (a replica sends only short commands), so nothing large is
buffered for anyone; packet sequence ids are checked.  A replica is dropped only when it
takes no byte at all for ``net_write_timeout`` s: a slow link that makes progress is served
at its pace, holding at most one group in memory.  :class:`~.admission.Admission` bounds the
connections (``max_connections``) and slows down addresses that fail to log in.

Positions: `.ibb` events have none, but a 10.x replica keeps ``Read_Master_Log_Pos`` from
the events' ``log_pos``.  The server therefore synthesizes them: each archive file is served
as a virtual file of the same name (``binlog-NNNNNN.ibb``) whose events get consecutive
positions from 4 on, with a Rotate + Format_description where the archive moves to its next
file, and a CRC32 footer on every event when the replica declared ``CRC32``.  Everything else
of the stream is one unbroken GTID sequence.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import server_version
from ..codec.wire import protocol as P
from ..codec.wire.ed25519 import ED25519
from ..codec.wire.ed25519 import NONCE_LENGTH as ED25519_NONCE_LENGTH
from ..codec.wire.ed25519 import password_hash as ed25519_password_hash
from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    CHECKSUM_CRC32,
    CHECKSUM_OFF,
    GTID_LIST_FLAG_UNTIL_REACHED,
    LOG_EVENT_ARTIFICIAL_F,
    FormatDescriptionEvent,
    GtidListEvent,
    HeartbeatEvent,
    RotateEvent,
    reframe,
)
from ..codec.gtid import BinlogState, ConnectState, Gtid
from ..engine.files import binlog_name
from ..engine.view import view
from ..errors import GtidError, MariabinlogError, QueryRefusedError, ReplicationError
from ..codec.groups import EventGroup
from .admission import Admission, Refusal, Ticket
from .progress import JobProgress
from .sources import ArchiveReader, archive_pages

log = logging.getLogger(__name__)

#: A 10.11 release as the prefix: what the replicas this server is tested with announce themselves.
SERVER_VERSION = server_version("10.11.19")
ENGINE_BINLOG_REQUIRES_GTID = "Slave must enable GTID mode when master uses --binlog-storage-engine"
_ROTATE_AT = 0xF0000000  # synthesized positions stay below 2**32

LOGIN_MAX_PACKET = 1 << 17
"""Largest packet accepted before login: a handshake response (user, auth data, database,
plugin name and connection attributes, which MariaDB's clients keep under 64 KiB)."""

COMMAND_MAX_PACKET = 1 << 20
"""Largest packet accepted from an authenticated client: the queries and commands a replica
sends are short."""


_FLUSH_AT = 1 << 16
"""Bytes of events a dump collects before it sends them."""
_COUNT_AT = 256
"""Groups a dump sends before it updates the progress counters (one lock per batch, not per group)."""


class _Timeout(Exception):
    """A client kept a limit of the server waiting (the message says which)."""


@dataclass
class ServerConfig:
    """What a binlog server serves and how it presents itself."""

    directory: str
    accounts: dict[str, bytes] = field(default_factory=dict)  # user -> SHA1(SHA1(password)) (b"" = none)
    #: Accounts identified via ``ed25519``: user -> base64 public key (``ed25519_key``).
    ed25519_accounts: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0
    server_id: int = 1
    server_version: str = SERVER_VERSION
    ssl: ssl.SSLContext | None = None
    poll_interval: float = 0.02
    gtid_domain_id: int = 0
    #: Speak like a primary running ``--binlog-storage-engine`` (protocol.md §4): artificial
    #: Format_description first, no checksums, ``log_pos`` 0, an artificial Rotate (position 0)
    #: before the first group of each file and no positions anywhere.
    engine_style: bool = False
    #: MariaDB's ``connect_timeout``: seconds a new connection has to log in.
    connect_timeout: float = 10.0
    #: MariaDB's ``wait_timeout``: seconds an authenticated connection may wait between commands.
    wait_timeout: float = 28800.0
    #: MariaDB's ``net_read_timeout``: seconds the rest of a packet that has begun may take.
    net_read_timeout: float = 30.0
    #: MariaDB's ``net_write_timeout``: seconds a client may take no byte of what is sent to it.
    net_write_timeout: float = 60.0
    #: MariaDB's ``max_connections``: connections served at once.
    max_connections: int = 151
    #: Failed-login slowdown (see :mod:`.admission`): first delay, 0 = off, and its cap.
    login_delay: float = 1.0
    login_delay_max: float = 30.0


def hash_password(password: str) -> bytes:
    """What an account stores: SHA1(SHA1(password)), b"" for an empty password."""
    return P.native_password_hash(password.encode())


def ed25519_key(password: str) -> str:
    """What an ``ed25519`` account stores: the base64 public key derived from the password."""
    return ed25519_password_hash(password.encode())


class BinlogServer:
    """A listening binlog server; one thread per connection (see the module docstring)."""

    def __init__(self, config: ServerConfig, *, progress: JobProgress | None = None) -> None:
        self.config = config
        self.progress = progress or JobProgress("serve")
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._sessions: set[_Session] = set()
        self._lock = threading.Lock()
        self._next_id = 1
        self.admission = Admission(
            max_connections=config.max_connections,
            login_delay=config.login_delay,
            login_delay_max=config.login_delay_max,
        )

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on."""
        assert self._listener is not None
        host, port = self._listener.getsockname()[:2]
        return host, port

    def start(self) -> BinlogServer:
        """Bind and start accepting connections in a background thread."""
        if not os.path.isdir(self.config.directory):
            raise ReplicationError(f"{self.config.directory}: not a directory")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.config.host, self.config.port))
        listener.listen(128)
        listener.settimeout(0.2)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept_loop, name="binlog-server", daemon=True)
        self._thread.start()
        self.progress.state = "listening"
        return self

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                sock, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as err:
                log.debug("listener closed: %s", err)
                return
            address = peer[0] if isinstance(peer, tuple) else "localhost"
            try:
                ticket = self.admission.admit(address)
            except Refusal as refusal:
                self._refuse(sock, peer, refusal)
                continue
            with self._lock:
                connection_id = self._next_id
                self._next_id += 1
                session = _Session(self, sock, peer, connection_id, ticket)
                self._sessions.add(session)
            session.start()

    @staticmethod
    def _refuse(sock: socket.socket, peer: object, refusal: Refusal) -> None:
        """Answer a connection the door refuses with its ERR in place of a handshake, as MariaDB
        does for ``max_connections``; from this thread, without waiting (the packet is small
        and the socket new, so its send buffer takes it)."""
        log.info("connection from %s refused: %s", peer, refusal.message)
        try:
            sock.setblocking(False)
            sock.send(P.frame(P.ErrPacket(refusal.code, refusal.message, "08004").encode(), 0)[0])
        except OSError:
            pass
        finally:
            sock.close()

    def forget(self, session: _Session) -> None:
        """A session ended."""
        with self._lock:
            self._sessions.discard(session)

    @property
    def sessions(self) -> int:
        """Connections being served."""
        with self._lock:
            return len(self._sessions)

    def stop(self) -> None:
        """Stop accepting, end every session, wait for the threads."""
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()
        for session in sessions:
            session.join(timeout=5)
        self.progress.state = "stopped"

    def serve_forever(self) -> None:
        """Block until :meth:`stop` (from a signal handler or another thread)."""
        while not self._stop.wait(0.2):
            pass

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stop.is_set()


# --------------------------------------------------------------------------- queries

_SET = re.compile(r"^\s*SET\s+(.*)$", re.I | re.S)
_ASSIGN = re.compile(r"^\s*(@@(?:session\.|global\.|local\.)?|@)?`?([A-Za-z0-9_$.]+)`?\s*(?::?=)\s*(.*?)\s*$", re.S)
_SELECT = re.compile(r"^\s*SELECT\s+(.*?)\s*(?:LIMIT\s+\d+\s*)?;?\s*$", re.I | re.S)
_SHOW_LOGS = re.compile(r"^\s*SHOW\s+(?:BINARY|MASTER)\s+LOGS\s*;?\s*$", re.I)
_SHOW_STATUS = re.compile(r"^\s*SHOW\s+(?:MASTER|BINLOG)\s+STATUS\s*;?\s*$", re.I)
_SHOW_VARS = re.compile(r"^\s*SHOW\s+(?:GLOBAL\s+|SESSION\s+)?VARIABLES\s+(?:LIKE|WHERE\s+Variable_name\s*=)\s*'([^']*)'\s*;?\s*$", re.I)
_STRING = re.compile(r"^'((?:[^'\\]|\\.)*)'$|^\"((?:[^\"\\]|\\.)*)\"$", re.S)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_LEADING_INT = re.compile(r"\s*[+-]?\d+")


class _Variables(dict):  # type: ignore[type-arg]
    """Server variables; ``gtid_binlog_pos``, ``gtid_binlog_state`` and ``gtid_current_pos`` come
    from the archive's current state, read on first use (a replica's set-up queries rarely ask)."""

    _STATE = ("gtid_binlog_pos", "gtid_binlog_state", "gtid_current_pos")

    def __init__(self, state: Callable[[], BinlogState], values: dict[str, str]) -> None:
        super().__init__(values)
        self._state = state

    def _load(self) -> None:
        state = self._state()
        self.update(gtid_binlog_pos=str(state.connect_state()), gtid_binlog_state=str(state),
                    gtid_current_pos=str(state.connect_state()))

    def __missing__(self, name: str) -> str:
        if name not in self._STATE:
            raise KeyError(name)
        self._load()
        return self[name]

    def __contains__(self, name: object) -> bool:
        return name in self._STATE or super().__contains__(name)

    def items(self):  # type: ignore[no-untyped-def]
        """Every variable, the GTID ones included (SHOW VARIABLES)."""
        if "gtid_binlog_pos" not in self.keys():
            self._load()
        return super().items()


def _split_top(text: str, separator: str) -> list[str]:
    """Split at top-level ``separator`` characters (not inside quotes or parentheses)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _user_int(value: str | None) -> int:
    """A user variable's value as an integer, as the server's ``val_int`` reads a string:
    its leading integer, 0 when there is none (``'x'`` is 0, ``'5a'`` is 5)."""
    match = _LEADING_INT.match(value or "")
    return int(match.group(0)) if match else 0


def _split_commas(text: str) -> list[str]:
    """Split at top-level commas."""
    return _split_top(text, ",")


class _Session(threading.Thread):
    """One client connection."""

    def __init__(self, server: BinlogServer, sock: socket.socket, peer: object, connection_id: int, ticket: Ticket) -> None:
        super().__init__(name=f"binlog-session-{connection_id}", daemon=True)
        self.server = server
        self.sock = sock
        self.peer = peer
        self.connection_id = connection_id
        self.ticket = ticket
        self.proto = P.ServerProtocol(max_packet=LOGIN_MAX_PACKET)
        self.user_vars: dict[str, str | None] = {}
        self._closed = False
        config = server.config
        #: Until logged in: when the login must be complete, and the limit on each send.
        self._deadline: float | None = time.monotonic() + config.connect_timeout
        self._write_timeout = config.connect_timeout
        self._timeout: float | None = -1.0  # the socket's timeout as last set

    # -- plumbing -------------------------------------------------------------------------------

    def close(self) -> None:
        """End the session (from another thread)."""
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _settimeout(self, seconds: float) -> None:
        if seconds != self._timeout:
            self.sock.settimeout(seconds)
            self._timeout = seconds

    def _send(self, data: bytes) -> None:
        """Send all of ``data``.  Each ``send`` waits up to the write timeout for room and sends
        what fits, so only a client that takes no byte for that long is dropped (MariaDB's
        ``net_write_timeout``), never a slow one that keeps reading."""
        self._settimeout(self._write_timeout)
        view = memoryview(data)
        try:
            while view:
                view = view[self.sock.send(view) :]
        except TimeoutError:
            raise _Timeout(f"took no data for {self._write_timeout:g} s (net_write_timeout)") from None

    def _next(self, wait: float, *, exact: bool = False) -> object:
        """The next client event: its first byte within ``wait`` s, the rest of a packet that has
        begun within ``net_read_timeout`` s of no progress, all before the login deadline.
        ``exact`` reads no byte past the packet (what follows an SSL request is TLS's)."""
        config = self.server.config
        while True:
            event = self.proto.next_event()
            if event is not P.NEED_DATA:
                return event
            if self._deadline is not None:
                limit = self._deadline - time.monotonic()
                why = f"no login within connect_timeout ({config.connect_timeout:g} s)"
            elif self.proto.framer.buffered:
                limit = config.net_read_timeout
                why = f"a packet begun but not finished within net_read_timeout ({limit:g} s)"
            else:
                limit, why = wait, f"idle for wait_timeout ({wait:g} s)"
            self.proto.receive_data(self._recv(limit, why, self.proto.framer.missing if exact else 1 << 16))

    def _recv(self, limit: float, why: str, size: int) -> bytes:
        """Up to ``size`` bytes from the client within ``limit`` s (b"" once closed or stopping),
        else _Timeout(why)."""
        end = time.monotonic() + limit
        while not (self._closed or self.server.stopping):
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise _Timeout(why)
            self._settimeout(min(remaining, 1.0))  # wake up now and then to see the server stop
            try:
                return self.sock.recv(size)
            except TimeoutError:
                continue
            except OSError:
                break
        return b""

    def run(self) -> None:
        failed = False
        try:
            self._serve()
        except (OSError, P.MalformedPacketError, P.LocalProtocolError, _Timeout) as err:
            failed = not isinstance(err, OSError) or isinstance(err, ssl.SSLError)  # a broken handshake
            log.info("connection %d from %s ended: %s", self.connection_id, self.peer, err)
        finally:
            self.ticket.close(failed=failed)
            try:
                self.sock.close()
            except OSError:
                pass
            self.server.forget(self)

    # -- authentication -------------------------------------------------------------------------

    def _serve(self) -> None:
        config = self.server.config
        nonce = bytes((b % 94) + 33 for b in os.urandom(20))
        self._send(self.proto.send_handshake("5.5.5-" + config.server_version, self.connection_id, nonce, tls=config.ssl is not None))
        wait = config.connect_timeout
        # With TLS on, the first packet is read to its last byte and no further: a client may
        # send its TLS hello right behind its SSL request, and a loaded server then finds both
        # in the socket at once (every TLS login failed, then was slowed down by the door).
        event = self._next(wait, exact=config.ssl is not None)
        if isinstance(event, P.SslRequest):
            if config.ssl is None:
                return
            self._settimeout(max(self._deadline - time.monotonic(), 0.01))  # type: ignore[operator]
            self.sock = config.ssl.wrap_socket(self.sock, server_side=True)
            self._timeout = -1.0
            event = self._next(wait)
        if not isinstance(event, P.HandshakeResponse):
            return
        if event.auth_plugin != P.NATIVE_PASSWORD and self.proto.auth.user not in config.ed25519_accounts:
            self._send(self.proto.send_auth_switch(nonce))
            event = self._next(wait)
            if not isinstance(event, P.HandshakeResponse):
                return
        user = self.proto.auth.user
        if user in config.ed25519_accounts:
            # As auth_ed25519 does: whatever the client began with, it signs a fresh 32-byte nonce.
            self._send(self.proto.send_auth_switch(os.urandom(ED25519_NONCE_LENGTH), ED25519))
            event = self._next(wait)
            if not isinstance(event, P.HandshakeResponse):
                return
            accepted = self.proto.check_ed25519(config.ed25519_accounts[user])
        else:
            stored = config.accounts.get(user)
            accepted = stored is not None and self.proto.check_password(stored)
        delay = self.ticket.login_delay()
        if delay and self.server._stop.wait(delay):
            return
        self.ticket.login_done(accepted)
        if not accepted:
            using = "YES" if self.proto.auth.response else "NO"
            host = self.peer[0] if isinstance(self.peer, tuple) else "localhost"
            self._send(
                self.proto.send_error(
                    P.ErrPacket(P.ER_ACCESS_DENIED_ERROR, f"Access denied for user '{user}'@'{host}' (using password: {using})", "28000")
                )
            )
            return
        self._send(self.proto.send_auth_ok())
        self._deadline = None
        self._write_timeout = config.net_write_timeout
        self.proto.framer.max_packet = COMMAND_MAX_PACKET
        self._commands()

    def _commands(self) -> None:
        wait = self.server.config.wait_timeout
        while not self._closed:
            event = self._next(wait)
            if isinstance(event, (P.Quit, P.ConnectionClosed)):
                return
            if isinstance(event, P.Query):
                self._query(event.text)
            elif isinstance(event, (P.Ping, P.RegisterSlave)):
                self._send(self.proto.send_ok())
            elif isinstance(event, P.BinlogDump):
                self._dump(event)
                return
            elif isinstance(event, P.UnknownCommand):
                self._send(self.proto.send_error(P.ErrPacket(P.ER_UNKNOWN_COM_ERROR, "Unknown command", "08S01")))

    # -- queries --------------------------------------------------------------------------------

    def _variables(self) -> dict[str, str]:
        """The server variables a replica may ask for; the GTID ones are read from the archive
        only when asked for (:class:`_Variables`), once per query."""
        config = self.server.config
        return _Variables(self._archive_state, {
            "server_id": str(config.server_id),
            "gtid_domain_id": str(config.gtid_domain_id),
            "binlog_checksum": "CRC32",
            "version": config.server_version,
            "version_comment": "mariabinlog binlog server",
            "gtid_strict_mode": "OFF",
            "log_bin": "ON",
            "binlog_format": "ROW",
            "hostname": socket.gethostname(),
            "server_uuid": "",
            "rpl_semi_sync_master_enabled": "OFF",
            "max_allowed_packet": str(1 << 30),
            "time_zone": "SYSTEM",
            "system_time_zone": "UTC",
            "collation_server": "utf8mb4_general_ci",
            "character_set_server": "utf8mb4",
            "binlog_storage_engine": "",
        })

    def _value(self, expr: str, variables: dict[str, str]) -> str | None:
        text = expr.strip()
        lowered = text.lower()
        match = _STRING.match(text)
        if match:
            raw = match.group(1) if match.group(1) is not None else match.group(2)
            return re.sub(r"\\(.)", r"\1", raw)
        if _NUMBER.match(text):
            return text
        if lowered == "null":
            return None
        if lowered.startswith("@@"):
            name = re.sub(r"^@@(global\.|session\.|local\.)?", "", lowered)
            if name not in variables:
                raise QueryRefusedError(P.ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{name}'")
            return variables[name]
        if lowered.startswith("@"):
            return self.user_vars.get(lowered[1:].strip("`"))
        if lowered in ("unix_timestamp()", "unix_timestamp(6)"):
            now = time.time()
            return f"{now:.6f}" if "6" in lowered else str(int(now))
        if lowered in ("version()",):
            return variables["version"]
        if lowered in ("connection_id()",):
            return str(self.connection_id)
        if lowered in ("database()", "user()", "current_user()"):
            return None if lowered == "database()" else f"{self.proto.auth.user}@%"
        raise QueryRefusedError(P.ER_NOT_SUPPORTED_YET, f"mariabinlog serve does not support '{text}'")

    def _binlog_listing(self, logs: bool, more: bool) -> bytes:
        """SHOW BINARY LOGS (Log_name, File_size) or SHOW MASTER STATUS (File, Position of the
        end, no Do/Ignore DB rules), as a primary with the binlog in the engine answers them:
        CDC clients (Debezium, python-mysql-replication) ask before they dump.  The archive as
        the engine's next open would recover it, read in memory (never written)."""
        try:
            seen = view(self.server.config.directory)
        except (MariabinlogError, OSError) as err:
            raise QueryRefusedError(P.ER_MASTER_FATAL_ERROR_READING_BINLOG, f"cannot read the archive: {err}") from None
        if logs:
            columns = (P.ColumnDefinition("Log_name"), P.ColumnDefinition("File_size"))
            rows = tuple((binlog_name(n).encode(), b"%d" % size) for n, size in seen.files)
        else:
            columns = tuple(P.ColumnDefinition(n) for n in ("File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"))
            end_file, end_offset = seen.end
            rows = ((binlog_name(end_file).encode(), b"%d" % end_offset, b"", b""),)
        return self.proto.send_result_set(columns, rows, more=more)

    def _query(self, sql: str) -> None:
        """Answer a query; a multi-statement query gets one result per statement."""
        statements = [part for part in _split_top(sql, ";") if part.strip()] or [""]
        out = bytearray()
        for index, statement in enumerate(statements):
            try:
                out += self._answer(statement.strip(), more=index + 1 < len(statements))
            except QueryRefusedError as err:
                out += self.proto.send_error(P.ErrPacket(err.code, err.message, "42000"))
                break
        self._send(bytes(out))

    def _answer(self, sql: str, *, more: bool = False) -> bytes:
        set_match = _SET.match(sql)
        if set_match:
            variables = self._variables()
            for part in _split_commas(set_match.group(1)):
                if re.match(r"^(NAMES|CHARACTER\s+SET)\b", part, re.I):
                    continue
                assign = _ASSIGN.match(part)
                if not assign:
                    raise QueryRefusedError(P.ER_PARSE_ERROR, f"You have an error in your SQL syntax near '{part[:40]}'")
                prefix, name, expr = assign.groups()
                if prefix == "@":
                    self.user_vars[name.lower()] = self._value(expr, variables)
            return self.proto.send_ok(more=more)
        show = _SHOW_VARS.match(sql)
        if show:
            pattern = re.compile("^" + re.escape(show.group(1).lower()).replace("%", ".*").replace("_", ".") + "$")
            rows = tuple(
                (name.encode(), value.encode()) for name, value in sorted(self._variables().items()) if pattern.match(name)
            )
            return self.proto.send_result_set((P.ColumnDefinition("Variable_name"), P.ColumnDefinition("Value")), rows, more=more)
        logs = _SHOW_LOGS.match(sql)
        if logs or _SHOW_STATUS.match(sql):
            return self._binlog_listing(logs is not None, more)
        select = _SELECT.match(sql)
        if select:
            variables = self._variables()
            items = _split_commas(select.group(1))
            names, values = [], []
            for item in items:
                alias = re.match(r"^(.*?)\s+AS\s+`?(\w+)`?$", item, re.I | re.S)
                expr, name = (alias.group(1), alias.group(2)) if alias else (item, item)
                names.append(P.ColumnDefinition(name))
                value = self._value(expr, variables)
                values.append(None if value is None else value.encode())
            return self.proto.send_result_set(tuple(names), (tuple(values),), more=more)
        raise QueryRefusedError(P.ER_NOT_SUPPORTED_YET, f"mariabinlog serve does not support this statement: {sql[:60]}")

    # -- the dump -------------------------------------------------------------------------------

    def _archive_state(self) -> BinlogState:
        """The archive's GTID state now (for the GTID variables)."""
        with self._reader(ConnectState()) as reader:
            return reader.current_state()

    def _reader(self, start: ConnectState) -> ArchiveReader:
        return ArchiveReader(archive_pages(self.server.config.directory), start, poll_interval=self.server.config.poll_interval)

    def _dump_error(self, message: str, code: int = P.ER_MASTER_FATAL_ERROR_READING_BINLOG) -> None:
        self._send(self.proto.send_error(P.ErrPacket(code, message, "HY000")))

    def _check_start(self, start: ConnectState, state: BinlogState) -> str | None:
        """``check_slave_start_position``: the error text for a start GTID the archive lacks."""
        for gtid in start.values():
            mine = state.find(gtid.domain, gtid.server)
            if mine is not None and mine.seq >= gtid.seq:
                continue
            last = state.last(gtid.domain)
            if last is None:
                continue  # a domain this archive never had: start on it when it appears
            if last.seq >= gtid.seq:
                return (
                    f"Error: connecting slave requested to start from GTID {gtid}, which is not in the master's"
                    " binlog. Since the master's binlog contains GTIDs with higher sequence numbers, it probably"
                    " means that the slave has diverged due to executing extra erroneous transactions"
                )
            return f"Error: connecting slave requested to start from GTID {gtid}, which is not in the master's binlog"
        return None

    def _dump(self, command: P.BinlogDump) -> None:
        capability = _user_int(self.user_vars.get("mariadb_slave_capability"))
        connect = self.user_vars.get("slave_connect_state")
        if connect is None:
            self._dump_error(ENGINE_BINLOG_REQUIRES_GTID)
            return
        if capability < P.MARIA_SLAVE_CAPABILITY_GTID:
            self._dump_error("mariabinlog serve needs a GTID-aware replica (@mariadb_slave_capability >= 4)")
            return
        try:
            start = ConnectState.parse(connect.strip())
        except GtidError:
            self._dump_error(
                "Out of memory or malformed slave request when obtaining start position from GTID state",
                1105,
            )
            return
        with self._reader(start) as reader:
            self._stream_from(reader, start, command)

    def _stream_from(self, reader: ArchiveReader, start: ConnectState, command: P.BinlogDump) -> None:
        """The dump once its reader is open: the start checks, then the stream."""
        state = reader.current_state()
        error = self._check_start(start, state)
        first_file = ""
        if error is None:
            try:
                first_file = reader.pages.name(reader.seek())
            except ReplicationError as err:
                error = str(err)
        if error is not None:
            self._dump_error(error)
            return
        until: ConnectState | None = None
        until_text = self.user_vars.get("slave_until_gtid")
        if until_text is not None:
            try:
                until = ConnectState.parse(until_text.strip())
            except GtidError:
                self._dump_error(
                    "Out of memory or malformed slave request when obtaining UNTIL position sent from slave", 1105
                )
                return
        declared = (self.user_vars.get("master_binlog_checksum") or "").upper()
        strict = (self.user_vars.get("slave_gtid_strict_mode") or "0").strip().upper() in ("1", "ON", "TRUE")
        _Stream(self, reader, start, declared == "CRC32", command, strict=strict, until=until).run(first_file)


class _Stream:
    """The events of one dump: synthesized positions, rotates, heartbeats."""

    def __init__(
        self,
        session: _Session,
        reader: ArchiveReader,
        start: ConnectState,
        crc: bool,
        command: P.BinlogDump,
        *,
        strict: bool = False,
        until: ConnectState | None = None,
    ) -> None:
        self.session = session
        self.reader = reader
        self.start = start
        self.crc = crc
        self.command = command
        self.server_id = session.server.config.server_id
        period = session.user_vars.get("master_heartbeat_period")
        self.heartbeat = max(_user_int(period), 0) / 1e9  # nanoseconds, read as the server does
        self.annotate = bool(command.flags & P.BINLOG_SEND_ANNOTATE_ROWS_EVENT)
        self.file = ""
        self.pos = 4
        self.out = bytearray()
        #: ``@slave_gtid_strict_mode``: a start GTID inside a hole of the archive is an error.
        self.strict = strict
        #: Start GTIDs (per domain) whose domain has not reached them yet.
        self.awaiting = {g.domain: g for g in start.values() if g.seq}
        #: ``@slave_until_gtid``: the GTIDs to stop at (domains leave it when reached).
        self.until: dict[int, Gtid] | None = None if until is None else dict(until.items())
        #: The stream's binlog state, for the UNTIL_REACHED Gtid_list.
        self.state = BinlogState.from_list(start.values())

    def _hole(self, group: EventGroup) -> str | None:
        """The primary's strict-mode error when ``group`` shows the start GTID is a hole."""
        gtid = group.gtid
        wanted = self.awaiting.get(gtid.domain)
        if wanted is None or wanted.server != gtid.server:
            return None
        del self.awaiting[gtid.domain]
        if not self.strict or gtid.domain in self.reader.start_found:
            return None
        return (
            f"The binlog on the master is missing the GTID {wanted} requested by the slave (even though both a"
            " prior and a subsequent sequence number does exist), and GTID strict mode is enabled"
        )

    def _until(self, group: EventGroup) -> tuple[bool, bool]:
        """(send ``group``, the UNTIL position is reached after it) under ``@slave_until_gtid``."""
        if self.until is None:
            return True, False
        gtid = group.gtid
        stop = self.until.get(gtid.domain)
        if stop is None:
            return False, False  # a domain that reached its UNTIL GTID, or was not named
        if gtid.server != stop.server or gtid.seq < stop.seq:
            return True, False
        self.until.pop(gtid.domain)
        return gtid.seq == stop.seq, not len(self.until)

    def _until_reached(self) -> None:
        """The last group before UNTIL is sent: the flagged fake Gtid_list, then EOF."""
        gtids = [(g.domain, g.server, g.seq) for g in self.state]
        self._artificial(
            GtidListEvent(gtids=gtids, list_flags=GTID_LIST_FLAG_UNTIL_REACHED, flags=LOG_EVENT_ARTIFICIAL_F), self.pos
        )
        self.out += self.session.proto.send_eof()
        self._flush()

    def _emit(self, raw: bytes) -> None:
        """Queue one event with its synthesized ``log_pos`` (and CRC)."""
        end = self.pos + len(raw) + (4 if self.crc else 0)
        self.out += self.session.proto.send_event(reframe(raw, log_pos=end, checksum=self.crc))
        self.pos = end
        if len(self.out) > _FLUSH_AT:  # a big group goes out as it is encoded, not all at once
            self._flush()

    def _artificial(self, event: RotateEvent | GtidListEvent | HeartbeatEvent, log_pos: int) -> None:
        event.server_id = self.server_id
        self.out += self.session.proto.send_event(event.encode(checksum=self.crc, log_pos=log_pos))

    def _fd(self) -> None:
        fd = self.reader.fd
        event = FormatDescriptionEvent(
            server_version=SERVER_VERSION if fd is None else fd.server_version,
            post_header_lengths=None if fd is None else fd.post_header_lengths,
            checksum_alg=CHECKSUM_CRC32 if self.crc else CHECKSUM_OFF,
            timestamp=int(time.time()),
            server_id=self.server_id,
        )
        end = self.pos + len(event.encode(checksum=self.crc))
        self.out += self.session.proto.send_event(event.encode(checksum=self.crc, log_pos=end))
        self.pos = end

    def _begin(self, name: str) -> None:
        """Stream start: fake Rotate naming ``name``, its Format_description, the fake Gtid_list."""
        self.file = name
        self.pos = 4
        self._artificial(RotateEvent(next_file=name.encode(), next_position=4, flags=LOG_EVENT_ARTIFICIAL_F), 0)
        self._fd()
        self._artificial(GtidListEvent(gtids=list(self.start.values()), flags=LOG_EVENT_ARTIFICIAL_F), 0)

    def _rotate_to(self, name: str) -> None:
        """A file ends: Rotate at its end, then the next (virtual) file's Format_description."""
        rotate = RotateEvent(next_file=name.encode(), next_position=4, server_id=self.server_id)
        self._emit(rotate.encode())
        self.file = name
        self.pos = 4
        self._fd()

    def _flush(self) -> None:
        if self.out:
            self.session._send(bytes(self.out))
            self.out.clear()

    def _begin_engine_style(self) -> None:
        """protocol.md §4: an artificial Format_description (checksums off, log_pos 0), the fake Gtid_list."""
        self.crc = False
        self.pos = 0
        fd = FormatDescriptionEvent(
            server_version=SERVER_VERSION, flags=LOG_EVENT_ARTIFICIAL_F, server_id=self.server_id
        )
        self.out += self.session.proto.send_event(fd.encode(checksum=False, log_pos=0))
        self._artificial(GtidListEvent(gtids=list(self.start.values()), flags=LOG_EVENT_ARTIFICIAL_F), 0)

    def _send_group_engine_style(self, group: EventGroup) -> None:
        if group.source != self.file:
            self.file = group.source
            rotate = RotateEvent(next_file=group.source.encode(), next_position=0, flags=LOG_EVENT_ARTIFICIAL_F)
            self._artificial(rotate, 0)
        if group.size <= _FLUSH_AT:  # a small group's packets made at once
            packets, _ = self.session.proto.send_group(group, 0, False, not self.annotate)
            self.out += packets
            return
        for raw in group.raw:
            if raw[4] == ANNOTATE_ROWS_EVENT and not self.annotate:
                continue
            self.out += self.session.proto.send_event(raw)
            if len(self.out) > _FLUSH_AT:
                self._flush()

    def _send_group(self, group: EventGroup) -> None:
        """The group's events with synthesized positions (and CRC32 footers); a large group
        event by event, sent as it goes, so a dump's memory stays bounded."""
        if group.source != self.file or self.pos > _ROTATE_AT:
            self._rotate_to(group.source)
        if group.size <= _FLUSH_AT:
            packets, self.pos = self.session.proto.send_group(group, self.pos, self.crc, not self.annotate)
            self.out += packets
            return
        for raw in group.raw:
            if raw[4] == ANNOTATE_ROWS_EVENT and not self.annotate:
                continue
            self._emit(raw)

    def run(self, first_file: str) -> None:
        """Send the stream until the replica goes away, the server stops, or (non-blocking) the end."""
        session = self.session
        non_block = bool(self.command.flags & P.BINLOG_DUMP_NON_BLOCK)
        engine_style = session.server.config.engine_style
        if engine_style:
            self._begin_engine_style()
        else:
            self._begin(first_file)
        self._flush()
        progress = session.server.progress
        counted: list[EventGroup] = []  # sent, not yet told to the progress (one lock per batch)
        try:
            self._send_loop(first_file, non_block, progress, counted)
        finally:
            progress.done_many(counted)

    def _send_loop(self, first_file: str, non_block: bool, progress: JobProgress, counted: list[EventGroup]) -> None:
        """:meth:`run`'s loop; ``counted`` collects the sent groups the progress has not seen."""
        session = self.session
        engine_style = session.server.config.engine_style
        last_send = time.monotonic()
        while not session._closed and not session.server.stopping:
            sent = False
            for group in self.reader.available():
                hole = self._hole(group) if self.awaiting else None
                if hole is not None:
                    self._flush()
                    session._dump_error(hole)
                    return
                self.state.update(group.gtid)
                send, reached = self._until(group)
                if send and engine_style:
                    self._send_group_engine_style(group)
                elif send:
                    self._send_group(group)
                counted.append(group)
                if len(self.out) > _FLUSH_AT or len(counted) >= _COUNT_AT:
                    self._flush()
                    progress.done_many(counted)
                    counted.clear()
                sent = True
                if reached:
                    self._until_reached()
                    return
            if sent:
                self._flush()
                progress.done_many(counted)
                counted.clear()
                last_send = time.monotonic()
                continue
            if non_block:
                self.out += session.proto.send_eof()
                self._flush()
                return
            if self.heartbeat and time.monotonic() - last_send >= self.heartbeat:
                self._artificial(HeartbeatEvent(log_ident=(self.file or first_file).encode()), self.pos)
                self._flush()
                last_send = time.monotonic()
            time.sleep(session.server.config.poll_interval)
