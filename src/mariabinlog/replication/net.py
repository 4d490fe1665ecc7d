"""The socket driver around :class:`~mariabinlog.codec.wire.protocol.ClientProtocol`.

The codec knows the protocol; this module only moves bytes: it connects over TCP or a Unix
socket, optionally upgrades to TLS after the SSL request, authenticates, runs queries and
reads the packets of a binlog dump.  Every blocking call has a timeout, and a connection
that breaks or stays silent past its read timeout raises :class:`ConnectionLostError`, which
the replication client answers by reconnecting.
"""

from __future__ import annotations

import getpass
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..codec.wire.protocol import (
    NEED_DATA,
    AuthMoreData,
    AuthSwitchRequest,
    BinlogDump,
    BinlogEventPacket,
    ClientProtocol,
    ClientState,
    ConnectionClosed,
    EndOfStream,
    ErrPacket,
    Handshake,
    OkPacket,
    RegisterSlave,
    ResultSet,
    Row,
)
from ..codec.wire import DEFAULT_MAX_PACKET
from ..errors import (
    ConnectFailedError,
    ConnectionLostError,
    MalformedPacketError,
    OptionError,
    ReplicationError,
    ServerError,
)

RECV_SIZE = 1 << 18


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect: TCP ``host:port`` or a Unix ``socket``, credentials, TLS, timeouts."""

    host: str = "127.0.0.1"
    port: int = 3306
    socket: str | None = None
    user: str = "root"
    password: str = ""
    database: str | None = None
    ssl: ssl.SSLContext | None = None
    connect_timeout: float = 10.0
    read_timeout: float | None = 60.0
    #: The longest packet accepted from the server (MariaDB's ``slave_max_allowed_packet``):
    #: longer ones are refused from their header, before they are buffered.
    max_allowed_packet: int = DEFAULT_MAX_PACKET

    @classmethod
    def from_url(cls, url: str, **overrides: object) -> ConnectionOptions:
        """Parse ``mariadb://user:password@host:port/db?socket=/path&ssl=1&ssl_ca=FILE``.

        ``mysql://`` is accepted too.  ``ssl=1`` uses TLS without certificate checks,
        ``ssl_ca=FILE`` verifies the server certificate against that CA.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("mariadb", "mysql"):
            raise OptionError(f"{url!r} is not a mariadb://user:password@host:port URL")
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        context = None
        if query.get("ssl_ca"):
            context = ssl.create_default_context(cafile=query["ssl_ca"])
            context.check_hostname = False
        elif query.get("ssl", "0") not in ("0", "", "false", "no"):
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            port = parts.port or 3306
        except ValueError as err:
            raise OptionError(f"bad port in {url!r}: {err}") from None
        options = cls(
            host=parts.hostname or "127.0.0.1",
            port=port,
            socket=query.get("socket"),
            user=unquote(parts.username) if parts.username else "root",
            password=unquote(parts.password) if parts.password else "",
            database=parts.path.lstrip("/") or None,
            ssl=context,
        )
        return replace(options, **overrides) if overrides else options  # type: ignore[arg-type]

    @classmethod
    def from_client_settings(cls, settings: ClientSettings) -> ConnectionOptions:
        """Options from a MariaDB client's settings (``--host``, ``--ssl-ca``...), as the real
        client reads them: a ``--socket`` (or ``localhost`` without ``--protocol=TCP``) means the
        Unix socket, any ``--ssl*`` option turns TLS on.  A ``--port`` without ``--socket``
        means TCP, as in MariaDB's clients since 10.6 (MDEV-14974)."""
        protocol = (settings.protocol or "").upper()
        if protocol and protocol not in ("TCP", "SOCKET"):
            raise OptionError(f"--protocol={settings.protocol}: only TCP and SOCKET are supported")
        host = settings.host or "localhost"
        use_socket = protocol == "SOCKET" or (
            protocol != "TCP" and host == "localhost" and bool(settings.socket or not settings.port)
        )
        socket_path = (settings.socket or DEFAULT_SOCKET) if use_socket else None
        return cls(
            host="127.0.0.1" if host == "localhost" else host,
            port=settings.port or 3306,
            socket=socket_path,
            user=settings.user if settings.user is not None else (getpass.getuser() or "root"),
            password=settings.password or "",
            ssl=settings.tls_context(),
        )

    def connect_failure(self, err: ConnectionLostError | ServerError) -> ConnectFailedError:
        """``err`` (raised while connecting or logging in) in MariaDB's client words."""
        if isinstance(err, ServerError):
            return ConnectFailedError(err.message, self.describe())
        if self.socket:
            reason = f"Can't connect to local server through socket '{self.socket}' ({err.errno or 0})"
        else:
            # The C client connects without blocking and reports EINPROGRESS for a refused connect.
            errno = 115 if err.errno == 111 else err.errno or 0
            reason = f"Can't connect to server on '{self.host}' ({errno})"
        return ConnectFailedError(reason, self.describe())

    def describe(self) -> str:
        """``user@host:port`` or ``user@socket`` for messages (never the password)."""
        where = self.socket if self.socket else f"{self.host}:{self.port}"
        return f"{self.user}@{where}"


#: ``--tls-version``'s names.
_TLS_VERSIONS = {
    "TLSv1.0": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}

#: Where MariaDB's clients look for the server's Unix socket by default (Debian's build).
DEFAULT_SOCKET = "/run/mysqld/mysqld.sock"


@dataclass
class ClientSettings:
    """A MariaDB client's connection options as given (command line, option files, MYSQL_PWD)."""

    host: str | None = None
    port: int = 0
    socket: str | None = None
    protocol: str | None = None
    user: str | None = None
    password: str | None = None
    ssl: bool = False
    ssl_ca: str | None = None
    ssl_capath: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_cipher: str | None = None
    ssl_verify_server_cert: bool = False
    #: ``--tls-version``: the TLS versions allowed, e.g. ``TLSv1.2,TLSv1.3``.
    tls_version: str | None = None

    def wants_tls(self) -> bool:
        """Any of ``--ssl``, ``--ssl-ca``, ``--ssl-capath``, ``--ssl-cert``, ``--ssl-key``,
        ``--ssl-verify-server-cert``, ``--tls-version`` asks for TLS."""
        return bool(
            self.ssl or self.ssl_ca or self.ssl_capath or self.ssl_cert or self.ssl_key
            or self.ssl_verify_server_cert or self.tls_version
        )

    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context these settings ask for (None: plain connection).

        The server certificate is checked against ``--ssl-ca``/``--ssl-capath`` when one is
        given, and its host name too with ``--ssl-verify-server-cert``; a client certificate
        is presented with ``--ssl-cert``/``--ssl-key``."""
        if not self.wants_tls():
            return None
        try:
            if self.ssl_ca or self.ssl_capath:
                context = ssl.create_default_context(cafile=self.ssl_ca, capath=self.ssl_capath)
                context.check_hostname = self.ssl_verify_server_cert
            else:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_REQUIRED if self.ssl_verify_server_cert else ssl.CERT_NONE
            if self.ssl_cert:
                context.load_cert_chain(self.ssl_cert, self.ssl_key or None)
            if self.ssl_cipher:
                context.set_ciphers(self.ssl_cipher)
            if self.tls_version:
                versions = [_TLS_VERSIONS[v.strip()] for v in self.tls_version.split(",") if v.strip()]
                context.minimum_version, context.maximum_version = min(versions), max(versions)
        except KeyError as err:
            raise OptionError(f"--tls-version: unknown version {err}; known: {', '.join(_TLS_VERSIONS)}") from None
        except (OSError, ssl.SSLError) as err:
            raise OptionError(f"TLS settings: {err}") from None
        return context


class Connection:
    """One authenticated client connection."""

    def __init__(self, sock: socket.socket, proto: ClientProtocol, options: ConnectionOptions) -> None:
        self.sock = sock
        self.proto = proto
        self.options = options
        #: Says where a stream read over this connection is (binlog file, offset, GTID), for
        #: the messages of a lost connection.
        self.place: Callable[[], str] | None = None

    def _peer(self) -> str:
        """The server (and, while streaming, where in its binlog) for messages."""
        return self.options.describe() + (f" {self.place()}" if self.place is not None else "")

    @property
    def handshake(self) -> Handshake:
        """The server's handshake (version, connection id, capabilities)."""
        assert self.proto.handshake is not None
        return self.proto.handshake

    @property
    def server_version(self) -> str:
        """Server version without the ``5.5.5-`` compatibility prefix MariaDB sends."""
        version = self.handshake.server_version
        return version[6:] if version.startswith("5.5.5-") else version

    @classmethod
    def open(cls, options: ConnectionOptions) -> Connection:
        """Connect, upgrade to TLS if asked, authenticate; errors name the server."""
        try:
            if options.socket:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(options.connect_timeout)
                sock.connect(options.socket)
            else:
                sock = socket.create_connection((options.host, options.port), timeout=options.connect_timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as err:
            raise ConnectionLostError(f"cannot connect to {options.describe()}: {err}", err.errno) from None
        conn = cls(sock, ClientProtocol(max_packet=options.max_allowed_packet), options)
        try:
            conn._authenticate()
        except BaseException:
            conn.close()
            raise
        conn.sock.settimeout(options.read_timeout)
        return conn

    def _authenticate(self) -> None:
        options = self.options
        event = self._next()
        if isinstance(event, ErrPacket):
            raise event.exception()
        assert isinstance(event, Handshake)
        if options.ssl is not None:
            self._send(self.proto.send_ssl_request())
            try:
                self.sock = options.ssl.wrap_socket(
                    self.sock, server_hostname=options.host if options.ssl.check_hostname else None
                )
            except (OSError, ssl.SSLError) as err:
                raise ConnectionLostError(f"TLS handshake with {options.describe()} failed: {err}") from None
        self._send(self.proto.send_handshake_response(options.user, options.password, database=options.database))
        while True:
            event = self._next()
            if isinstance(event, OkPacket):
                return
            if isinstance(event, ErrPacket):
                raise event.exception()
            if isinstance(event, AuthSwitchRequest):
                self._send(self.proto.send_auth_switch_response(event))
            elif isinstance(event, AuthMoreData):
                raise ReplicationError(
                    f"{options.describe()} wants more authentication data than"
                    " mysql_native_password or client_ed25519 send"
                )

    # -- I/O ------------------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as err:
            raise ConnectionLostError(f"{self._peer()}: connection lost: {err}") from None

    def _next(self) -> object:
        """The next protocol event; bytes that break the protocol raise errors naming the server."""
        try:
            return self._receive()
        except MalformedPacketError as err:
            raise err.located(self.options.describe(), None) from None

    def _receive(self) -> object:
        """The next protocol event, as the codec raises it (the dump's reader anchors it itself)."""
        proto = self.proto
        while True:
            event = proto.next_event()
            if event is not NEED_DATA:
                if isinstance(event, ConnectionClosed):
                    pending = proto.framer.buffered
                    if pending:
                        raise ConnectionLostError(
                            f"{self._peer()}: the server closed the connection inside a packet"
                            f" ({pending} bytes of it received)"
                        )
                    raise ConnectionLostError(f"{self._peer()}: the server closed the connection", clean=True)
                return event
            try:
                data = self.sock.recv(RECV_SIZE)
            except TimeoutError:
                raise ConnectionLostError(f"{self._peer()}: no data for {self.sock.gettimeout()} s") from None
            except OSError as err:
                raise ConnectionLostError(f"{self._peer()}: connection lost: {err}") from None
            proto.receive_data(data)

    def fill(self) -> None:
        """Read more of the server's bytes into the protocol's buffer (for :meth:`dump_groups`,
        which leaves no whole packet unread when it asks for more); a lost connection raises
        as :meth:`read_dump` would, naming the server and the stream's place."""
        try:
            data = self.sock.recv(RECV_SIZE)
        except TimeoutError:
            raise ConnectionLostError(f"{self._peer()}: no data for {self.sock.gettimeout()} s") from None
        except OSError as err:
            raise ConnectionLostError(f"{self._peer()}: connection lost: {err}") from None
        self.proto.receive_data(data)
        if not data:
            self._receive()  # the close, told as read_dump tells it (inside a packet or not)
            raise ConnectionLostError(f"{self._peer()}: the server closed the connection")

    def settimeout(self, seconds: float | None) -> None:
        """Read timeout for what follows (None: wait forever)."""
        self.sock.settimeout(seconds)

    # -- commands -------------------------------------------------------------------------------

    def query(
        self, sql: str | bytes, *, statements: int | None = None, results: list[OkPacket | ResultSet] | None = None
    ) -> list[OkPacket | ResultSet]:
        """Run ``sql`` (several statements allowed); the results in order, :class:`ServerError` on ERR.

        ``statements``: how many results to read at least (see
        :meth:`ClientProtocol.await_more_results`); reading stops early at an ERR.  ``results``:
        the list the results go to (it keeps those before an ERR: which statements ran).
        """
        self._send(self.proto.send_query(sql))
        if results is None:
            results = []
        error: ErrPacket | None = None
        while True:
            while self.proto.state is ClientState.AWAIT_RESULT:
                event = self._next()
                if isinstance(event, ErrPacket):
                    error = event
                elif isinstance(event, (OkPacket, ResultSet)):
                    results.append(event)
            if error is not None or statements is None or len(results) >= statements:
                break
            self.proto.await_more_results()
        if error is not None:
            raise error.exception()
        return results

    def rows(self, sql: str | bytes) -> list[Row]:
        """Rows of the (last) result set of ``sql``."""
        sets = [r for r in self.query(sql) if isinstance(r, ResultSet)]
        return list(sets[-1].rows) if sets else []

    def scalar(self, sql: str | bytes) -> bytes | None:
        """First value of the first row of ``sql``'s result set (None if no row or NULL)."""
        rows = self.rows(sql)
        return rows[0][0] if rows and rows[0] else None

    def text(self, sql: str | bytes) -> str | None:
        """:meth:`scalar` decoded as UTF-8."""
        value = self.scalar(sql)
        return None if value is None else value.decode("utf-8", "replace")

    def ping(self) -> None:
        """COM_PING."""
        self._send(self.proto.send_ping())
        event = self._next()
        if isinstance(event, ErrPacket):
            raise event.exception()

    def register_slave(self, command: RegisterSlave) -> None:
        """COM_REGISTER_SLAVE."""
        self._send(self.proto.send_register_slave(command))
        event = self._next()
        if isinstance(event, ErrPacket):
            raise event.exception()

    def start_dump(self, command: BinlogDump) -> None:
        """COM_BINLOG_DUMP; then read with :meth:`read_dump`."""
        self._send(self.proto.send_binlog_dump(command))

    def dump_groups(self, scanner: Any) -> tuple[list[Any], int]:
        """The fast path of :meth:`read_dump`: whole event groups from the buffered packets
        (:meth:`ClientProtocol.dump_groups`); :meth:`fill` reads more."""
        return self.proto.dump_groups(scanner)

    def read_dump(self) -> BinlogEventPacket | EndOfStream:
        """Next event packet of the dump, or EndOfStream; an ERR raises :class:`ServerError`.

        A malformed packet raises the codec's error unanchored: the caller knows the binlog
        file, position and GTID to name with the server."""
        event = self._receive()
        if isinstance(event, ErrPacket):
            raise event.exception()
        assert isinstance(event, (BinlogEventPacket, EndOfStream))
        return event

    def close(self) -> None:
        """Send COM_QUIT when possible and close the socket; never raises."""
        try:
            if self.proto.state is ClientState.READY:
                self.sock.settimeout(1.0)
                self.sock.sendall(self.proto.send_quit())
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self) -> None:
        """Close the socket at once (e.g. from another thread to stop a blocking read)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def sql_string(value: str | bytes) -> str:
    """A single-quoted SQL string literal (backslash and quote escaped), for ASCII-safe values."""
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

