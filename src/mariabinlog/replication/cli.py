"""Command-line front ends: ``mariabinlog replicate``, ``archive`` and ``serve``.

Each ``add_*_parser`` registers one subcommand (see :mod:`mariabinlog.cli`).  Sources and
targets are URLs (``mariadb://user:password@host:port``, ``?socket=/path`` for a Unix
socket, ``&ssl=1`` / ``&ssl_ca=FILE`` for TLS), archive directories or binlog files.
SIGTERM and SIGINT stop a job cleanly: what was received is applied / made durable first.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import IO, Any

from ..codec.gtid import ConnectState
from ..codec.wire import DEFAULT_MAX_PACKET
from ..errors import ConnectionLostError, EngineError, MariabinlogError, OptionError, ReplicationError, ServerError
from .filters import GroupFilter, option_ids
from .net import ClientSettings, ConnectionOptions
from .progress import JobProgress, Reporter

log = logging.getLogger(__name__)

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _state(option: str, text: str | None) -> ConnectState | None:
    if text is None:
        return None
    try:
        return ConnectState.parse(text.strip())
    except ValueError as err:
        raise ReplicationError(f"--{option}: {err}") from None


def _client_options(parser: argparse.ArgumentParser, purpose: str) -> None:
    """MariaDB's client connection options (also read from option files' [client] groups).

    ``-h`` is the host, as in every MariaDB client (the parser is made without argparse's
    own ``-h``); help is ``-?`` / ``--help``.
    """
    parser.add_argument("-?", "--help", action="help", help="show this help message and exit")
    group = parser.add_argument_group(
        "connection (as MariaDB's clients name them; also from option files' [client] groups)",
        f"used for {purpose} when no URL is given",
    )
    group.add_argument("-h", "--host", help="server host (localhost: the Unix socket)")
    group.add_argument("-P", "--port", type=int, default=0, help="TCP port (3306)")
    group.add_argument("-S", "--socket", help="Unix socket file")
    group.add_argument("--protocol", choices=("TCP", "SOCKET", "tcp", "socket"), help="TCP or SOCKET")
    group.add_argument("-u", "--user", help="user name (default: the login name)")
    group.add_argument("-p", "--password", nargs="?", const=PROMPT,
                       help="password; without a value it is asked on the terminal (MYSQL_PWD is used when absent)")
    group.add_argument("--ssl", action=argparse.BooleanOptionalAction, default=False, help="use TLS")
    group.add_argument("--skip-ssl", dest="ssl", action="store_false", help=argparse.SUPPRESS)
    group.add_argument("--ssl-ca", metavar="FILE", help="CA file to verify the server certificate (implies --ssl)")
    group.add_argument("--ssl-capath", metavar="DIR", help="CA directory (implies --ssl)")
    group.add_argument("--ssl-cert", metavar="FILE", help="client certificate (implies --ssl)")
    group.add_argument("--ssl-key", metavar="FILE", help="client key (implies --ssl)")
    group.add_argument("--ssl-cipher", help="TLS ciphers to allow")
    group.add_argument("--ssl-verify-server-cert", action="store_true",
                       help="also check the server certificate's host name (implies --ssl)")
    group.add_argument("--tls-version", metavar="VERSIONS", help="TLS versions allowed, e.g. TLSv1.2,TLSv1.3")


#: ``-p`` without a value.
PROMPT = "\0prompt"


def _client_connection(args: argparse.Namespace) -> ConnectionOptions:
    """The connection the client options (and option files, MYSQL_PWD, a prompt) describe."""
    password = args.password
    if password == PROMPT:
        password = getpass.getpass("Enter password: ")
    elif password is None:
        password = os.environ.get("MYSQL_PWD")
    return ConnectionOptions.from_client_settings(
        ClientSettings(
            host=args.host, port=args.port, socket=args.socket, protocol=args.protocol, user=args.user,
            password=password, ssl=args.ssl, ssl_ca=args.ssl_ca, ssl_capath=args.ssl_capath,
            ssl_cert=args.ssl_cert, ssl_key=args.ssl_key, ssl_cipher=args.ssl_cipher,
            ssl_verify_server_cert=args.ssl_verify_server_cert, tls_version=args.tls_version,
        )
    )


def _seconds(text: str) -> float:
    """A duration in seconds, more than 0 (a socket timeout of 0 would never wait)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 seconds")
    return value


def _common_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--heartbeat", type=float, default=2.0, metavar="SECONDS",
                        help="heartbeat period asked from a primary (default 2)")
    parser.add_argument("--net-timeout", type=_seconds, default=60.0, metavar="SECONDS",
                        help="seconds without a byte from a primary before the connection counts as lost and is"
                        " made again (slave_net_timeout; default 60); with --stop-never, at most"
                        " 2 heartbeat periods + 5 s")
    parser.add_argument("--reconnect", type=int, default=10, metavar="N",
                        help="consecutive failed (re)connection attempts to a primary before giving up (default 10)")
    parser.add_argument("--server-id", type=int, default=None, metavar="N",
                        help="server id this replica announces to a primary (default: derived from the pid)")
    parser.add_argument("--progress-interval", type=float, default=10.0, metavar="SECONDS",
                        help="seconds between progress lines on stderr (default 10)")
    parser.add_argument("--progress-json", metavar="FILE",
                        help="also write progress as JSON lines to FILE ('-' = stderr)")
    parser.add_argument("--quiet", action="store_true", help="no periodic progress lines on stderr (the final one stays)")
    parser.add_argument("--max-allowed-packet", type=_size, default=DEFAULT_MAX_PACKET, metavar="SIZE",
                        help="the largest event accepted from a primary (slave_max_allowed_packet; default 1G):"
                        " a longer one stops the job, refused from its header before it is buffered")


@contextlib.contextmanager
def _reporting(progress: JobProgress, args: argparse.Namespace) -> Iterator[Reporter]:
    json_out: IO[str] | None = None
    if args.progress_json == "-":
        json_out = sys.stderr
    elif args.progress_json:
        json_out = open(args.progress_json, "a", encoding="utf-8")  # noqa: SIM115 - closed below
    reporter = Reporter(progress, interval=args.progress_interval, json_out=json_out, quiet=args.quiet).start()
    try:
        yield reporter
    finally:
        reporter.stop()
        if json_out is not None and json_out is not sys.stderr:
            json_out.close()


@contextlib.contextmanager
def _stop_signals(stop: Callable[[], None]) -> Iterator[threading.Event]:
    """Call ``stop`` on SIGTERM/SIGINT (main thread only); yields the "stop requested" flag."""
    requested = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        requested.set()
        stop()

    if threading.current_thread() is not threading.main_thread():
        yield requested
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield requested
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# --------------------------------------------------------------------------- replicate


def add_replicate_parser(subparsers: Subparsers) -> None:  # type: ignore[valid-type]
    """Register ``replicate``."""
    parser = subparsers.add_parser(  # type: ignore[attr-defined]
        "replicate",
        add_help=False,
        help="apply binlog event groups to a MariaDB server (a command-line replica)",
        description="Read event groups from a primary, an .ibb archive or binlog files and apply them to a"
        " target MariaDB server, recording the GTID position in the target in the same transaction.",
    )
    parser.add_argument("--from", dest="sources", nargs="+", required=True, metavar="SOURCE",
                        help="mariadb://user:pw@host:port, an .ibb archive directory, or binlog files")
    parser.add_argument("--to", dest="target", metavar="URL",
                        help="target server URL (default: the connection options below)")
    parser.add_argument("--channel", default="default", help="name of this replication stream (default 'default')")
    parser.add_argument("--position-table", default="mariabinlog.gtid_slave_pos", metavar="DB.TABLE",
                        help="where the applied position is kept in the target")
    parser.add_argument("--start-position", metavar="GTIDS",
                        help="start after these GTIDs when the target has no position for the channel")
    parser.add_argument("--reset-position", action="store_true",
                        help="forget the target's recorded position for the channel first")
    parser.add_argument("--stop-position", metavar="GTIDS", help="stop after these GTIDs (inclusive, per domain)")
    parser.add_argument("--stop-never", action="store_true",
                        help="keep following a primary or archive instead of ending when it is caught up")
    strict = parser.add_mutually_exclusive_group()
    strict.add_argument("--gtid-strict-mode", dest="strict", action="store_true", default=True,
                        help="stop on out-of-order GTIDs within a domain (default)")
    strict.add_argument("--skip-gtid-strict-mode", dest="strict", action="store_false")
    parser.add_argument("--do-domain-ids", metavar="IDS")
    parser.add_argument("--ignore-domain-ids", metavar="IDS")
    parser.add_argument("--do-server-ids", metavar="IDS")
    parser.add_argument("--ignore-server-ids", metavar="IDS")
    parser.add_argument("--parallel", type=int, default=4, metavar="N",
                        help="connections applying GTID domains in parallel (1 = serial; default 4; at most 64)")
    parser.add_argument("--no-preserve-gtids", dest="preserve_gtids", action="store_false",
                        help="let the target give applied groups its own GTIDs")
    _common_source_options(parser)
    _client_options(parser, "the target")
    parser.set_defaults(handler=replicate_main)


def replicate_main(args: argparse.Namespace) -> int:
    """Run ``replicate``."""
    from .apply import PositionTable, Replicator
    from .sources import FileSource, PrimarySource, open_source

    database, _, table = args.position_table.partition(".")
    if not table:
        raise ReplicationError("--position-table must be DB.TABLE")
    replicator = Replicator(
        ConnectionOptions.from_url(args.target) if args.target else _client_connection(args),
        table=PositionTable(database, table, args.channel),
        workers=args.parallel,
        preserve_gtids=args.preserve_gtids,
    )
    start = replicator.prepare(_state("start-position", args.start_position), reset=args.reset_position)
    replicator.progress.position = start.copy()
    client_options: dict[str, object] = {"heartbeat": args.heartbeat, "strict": False, "reconnect": args.reconnect}
    if args.server_id is not None:
        client_options["server_id"] = args.server_id
    source = open_source(args.sources, start, follow=args.stop_never, client_options=client_options,
                         connection={"max_allowed_packet": args.max_allowed_packet, "read_timeout": args.net_timeout})
    group_filter = GroupFilter(
        start=start,
        stop=_state("stop-position", args.stop_position),
        do_domains=option_ids("do-domain-ids", args.do_domain_ids),
        ignore_domains=option_ids("ignore-domain-ids", args.ignore_domain_ids),
        do_servers=option_ids("do-server-ids", args.do_server_ids),
        ignore_servers=option_ids("ignore-server-ids", args.ignore_server_ids),
        strict=args.strict,
        positioned=not isinstance(source, FileSource),
    )
    if isinstance(source, PrimarySource):
        client = source.client
        replicator.progress.clock_skew = lambda: client.clock_skew
    with _reporting(replicator.progress, args), _stop_signals(source.close) as stopping:
        try:
            replicator.run(source, group_filter)
        except ConnectionLostError:
            if not stopping.is_set():
                raise
    for gtid in group_filter.unreached():
        log.warning("did not reach stop position %s", gtid)
    return 0


# --------------------------------------------------------------------------- archive


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    try:
        if text and text[-1] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or with K/M/G)") from None


def add_archive_parser(subparsers: Subparsers) -> None:  # type: ignore[valid-type]
    """Register ``archive``."""
    parser = subparsers.add_parser(  # type: ignore[attr-defined]
        "archive",
        add_help=False,
        help="store a primary's binlog stream durably in an .ibb directory",
        description="Stream a primary's binlog by GTID into an .ibb directory written by the binlog engine."
        " The directory's GTID state is the position: a restart continues exactly where it stopped.",
    )
    parser.add_argument("--from", dest="source", metavar="URL",
                        help="the primary (default: the connection options below)")
    parser.add_argument("--dir", dest="directory", required=True, help="the .ibb directory")
    parser.add_argument("--start-position", metavar="GTIDS",
                        help="where to start when the directory is empty (default: the primary's first binlog)")
    parser.add_argument("--stop-never", action="store_true",
                        help="keep following the primary instead of ending when it is caught up")
    parser.add_argument("--max-binlog-size", type=_size, default=1 << 30, metavar="SIZE",
                        help="size of each .ibb file (default 1G)")
    parser.add_argument("--durability", type=int, choices=(0, 1, 2), default=1,
                        help="innodb_flush_log_at_trx_commit meaning for the archive's redo log (default 1)")
    parser.add_argument("--sync-interval", type=float, default=0.05, metavar="S",
                        help="a batch of groups is made durable (one fsync) at most S seconds after it was"
                        " written (default 0.05)")
    parser.add_argument("--sync-bytes", type=_size, default=8 << 20, metavar="SIZE",
                        help="... or as soon as SIZE bytes of groups wait for it (default 8M)")
    parser.add_argument("--expire-seconds", type=float, default=0.0, metavar="S",
                        help="purge files older than S seconds (binlog_expire_logs_seconds)")
    parser.add_argument("--max-total-size", type=_size, default=0, metavar="SIZE",
                        help="purge the oldest files beyond this total size (max_binlog_total_size)")
    parser.add_argument("--purge-interval", type=float, default=60.0, metavar="S",
                        help="seconds between automatic purges (default 60)")
    parser.add_argument("--schema-from", metavar="URL",
                        help="start the archive's schema history from this server's tables (mariadb://user@host:port)")
    _common_source_options(parser)
    _client_options(parser, "the primary")
    parser.set_defaults(handler=archive_main)


def archive_main(args: argparse.Namespace) -> int:
    """Run ``archive``."""
    from ..engine import EngineConfig
    from .archive import Archiver
    from .client import BinlogClient

    config = EngineConfig(
        max_binlog_size=args.max_binlog_size,
        durability=args.durability,
        expire_seconds=args.expire_seconds,
        max_total_size=args.max_total_size,
    )
    from ..schema.start import starting_history

    if args.sync_interval <= 0:
        raise OptionError("--sync-interval must be more than 0")
    archiver = Archiver(
        args.directory,
        config=config,
        sync_interval=args.sync_interval,
        sync_bytes=args.sync_bytes,
        purge_interval=args.purge_interval,
        schema_start=lambda: starting_history(schema_from=args.schema_from),
    )
    engine = archiver.open()
    ended = False  # the run ended (by itself, a signal or the source's error): cut the last file to its content
    try:
        if not len(engine.gtid_state()) and args.start_position:
            archiver.progress.position = _state("start-position", args.start_position) or ConnectState()
        options = ConnectionOptions.from_url(args.source) if args.source else _client_connection(args)
        client = BinlogClient(
            replace(options, max_allowed_packet=args.max_allowed_packet, read_timeout=args.net_timeout),
            heartbeat=args.heartbeat,
            blocking=args.stop_never,
            reconnect=args.reconnect,
            **({"server_id": args.server_id} if args.server_id is not None else {}),
        )

        def stop() -> None:
            archiver.stop()
            client.reconnect = 0
            client.close()

        with _reporting(archiver.progress, args), _stop_signals(stop) as stopping:
            try:
                archiver.run(client)
            except ConnectionLostError:
                if not stopping.is_set():
                    raise
            except ServerError as err:
                if err.code != 1236 or not len(engine.gtid_state()):
                    raise
                # After a failover: the new primary must hold the archive's last groups.
                raise ReplicationError(
                    f"{client.options.describe()} does not hold the archive's position"
                    f" {engine.gtid_state().connect_state()} ({err.message}); a new primary must have the"
                    " archive's last groups in its binlog (a replica promoted with log_slave_updates);"
                    " otherwise archive it into another directory"
                ) from err
            ended = True
    except MariabinlogError as err:
        # The source failed (no primary, refused, damaged stream, a wrong option), not the
        # engine: it closes as at any end, its last file cut (no pre-allocated 1 GiB left).
        ended = not isinstance(err, EngineError)
        raise
    finally:
        archiver.close(trim=ended)
    return 0


# --------------------------------------------------------------------------- serve


def _account(text: str) -> tuple[str, str]:
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise argparse.ArgumentTypeError("--account takes USER:PASSWORD")
    return user, password


def add_serve_parser(subparsers: Subparsers) -> None:  # type: ignore[valid-type]
    """Register ``serve``."""
    parser = subparsers.add_parser(  # type: ignore[attr-defined]
        "serve",
        help="serve an .ibb archive to MariaDB replicas (a binlog server)",
        description="Speak the primary side of the replication protocol so that MariaDB replicas"
        " (CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos) replicate from an .ibb archive directory.",
    )
    parser.add_argument("--dir", dest="directory", required=True, help="the .ibb directory")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3306, help="port to listen on (default 3306; 0 = any free)")
    parser.add_argument("--account", dest="accounts", type=_account, action="append", default=[],
                        metavar="USER:PASSWORD", help="a mysql_native_password account replicas may use (repeatable)")
    parser.add_argument("--ed25519-account", dest="ed25519_accounts", type=_account, action="append", default=[],
                        metavar="USER:PASSWORD", help="an account identified via ed25519 (repeatable)")
    parser.add_argument("--server-id", type=int, default=1, help="server id the server reports (default 1)")
    parser.add_argument("--ssl-cert", metavar="FILE", help="certificate for TLS (with --ssl-key)")
    parser.add_argument("--ssl-key", metavar="FILE", help="private key for TLS")
    parser.add_argument("--port-file", metavar="FILE", help="write the port listened on to FILE once ready")
    limits = parser.add_argument_group("limits for hostile or broken clients (MariaDB's variables and defaults)")
    limits.add_argument("--max-connections", type=int, default=151, metavar="N",
                        help="connections served at once; more get ERROR 1040 (default 151)")
    limits.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                        help="seconds a connection has to log in (default 10)")
    limits.add_argument("--wait-timeout", type=float, default=28800.0, metavar="S",
                        help="seconds a logged-in connection may stay idle between commands (default 28800)")
    limits.add_argument("--net-read-timeout", type=float, default=30.0, metavar="S",
                        help="seconds the rest of a packet that has begun may take (default 30)")
    limits.add_argument("--net-write-timeout", type=float, default=60.0, metavar="S",
                        help="seconds a replica may take no byte before it is dropped; a slow one that reads"
                        " is never dropped (default 60)")
    limits.add_argument("--login-delay", type=float, default=1.0, metavar="S",
                        help="after 3 failed logins from an address, answer its logins this many seconds"
                        " later, doubling per failure (default 1; 0 = off)")
    limits.add_argument("--login-delay-max", type=float, default=30.0, metavar="S",
                        help="the longest such delay (default 30)")
    parser.set_defaults(handler=serve_main)


def serve_main(args: argparse.Namespace) -> int:
    """Run ``serve`` until SIGTERM/SIGINT."""
    import ssl

    from .server import BinlogServer, ServerConfig, ed25519_key, hash_password

    if not args.accounts and not args.ed25519_accounts:
        raise ReplicationError("serve needs at least one --account or --ed25519-account USER:PASSWORD")
    context = None
    if args.ssl_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.ssl_cert, args.ssl_key)
    config = ServerConfig(
        directory=args.directory,
        accounts={user: hash_password(password) for user, password in args.accounts},
        ed25519_accounts={user: ed25519_key(password) for user, password in args.ed25519_accounts},
        host=args.host,
        port=args.port,
        server_id=args.server_id,
        ssl=context,
        max_connections=args.max_connections,
        connect_timeout=args.connect_timeout,
        wait_timeout=args.wait_timeout,
        net_read_timeout=args.net_read_timeout,
        net_write_timeout=args.net_write_timeout,
        login_delay=args.login_delay,
        login_delay_max=args.login_delay_max,
    )
    server = BinlogServer(config).start()
    host, port = server.address
    print(f"mariabinlog serve: listening on {host}:{port}, serving {args.directory}", file=sys.stderr, flush=True)
    if args.port_file:
        with open(args.port_file + ".tmp", "w", encoding="ascii") as handle:
            handle.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    with _stop_signals(server.stop):
        server.serve_forever()
    server.stop()
    return 0
