"""The ``mariabinlog`` command line: one argparse parser, one subcommand per tool.

Each subcommand lives in the module that implements it and contributes a
``register(subparsers)`` function that adds its parser and sets
``handler=<function(args) -> int>``; listing it in :data:`COMMANDS` (by
command name, module and function name) is all it takes to appear here.

Startup time matters (``mariabinlog dump`` is run once per file in pipelines
and by the corpus checker hundreds of times), so the modules are imported
lazily: a run of one subcommand imports only that subcommand's module; only
``--help`` without a command, or an unknown command, imports them all.

Diagnostics go through the standard :mod:`logging` module: every module logs to
``logging.getLogger(__name__)`` (the ``mariabinlog`` hierarchy) and :func:`main`
sends that hierarchy to stderr, at WARNING by default; ``-v`` (INFO), ``-vv``
(DEBUG) or ``--log-level=LEVEL`` before the command change it.  ``dump`` keeps
``-v`` for mariadb-binlog's row verbosity and takes ``--log-level`` itself.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING

from mariabinlog import __version__
from mariabinlog.errors import MariabinlogError

if TYPE_CHECKING:
    from mariabinlog.replication.client import StreamEvent
    from mariabinlog.tools.dump.options import DumpOptions

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


class LazyCommand:
    """A registrar for subcommand ``name`` that imports ``module`` only when it is called."""

    __slots__ = ("function", "module", "name")

    def __init__(self, name: str, module: str, function: str) -> None:
        self.name = name
        self.module = module
        self.function = function

    def __call__(
        self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
    ) -> None:
        register: Registrar = getattr(importlib.import_module(self.module), self.function)
        register(subparsers)


def remote_events(
    opts: DumpOptions, start: str, binlog_file: str | None, position: int
) -> Generator[StreamEvent, None, None]:
    """``dump --read-from-remote-server``'s event source: the replication client's dump,
    by GTID (``start``) or, when ``binlog_file`` is given, by file name and ``position``.

    The tools and the replication package are siblings that never import each
    other; the command line is where the dump meets the client.  A failure to connect
    or log in raises :class:`~mariabinlog.errors.ConnectFailedError` in the client's words.
    """
    from mariabinlog.errors import ConnectionLostError, ServerError
    from mariabinlog.replication.client import BinlogClient
    from mariabinlog.replication.net import ClientSettings, ConnectionOptions

    settings = ClientSettings(
        host=opts.host,
        port=opts.port,
        socket=opts.socket,
        protocol=opts.protocol,
        user=opts.user,
        # As MariaDB's client library: MYSQL_PWD when no password was given.
        password=opts.password if opts.password is not None else os.environ.get("MYSQL_PWD"),
        ssl=opts.ssl,
        ssl_ca=opts.ssl_ca,
        ssl_capath=opts.ssl_capath,
        ssl_cert=opts.ssl_cert,
        ssl_key=opts.ssl_key,
        ssl_cipher=opts.ssl_cipher,
        ssl_verify_server_cert=opts.ssl_verify_server_cert,
        tls_version=opts.tls_version,
    )
    client = BinlogClient(
        ConnectionOptions.from_client_settings(settings),
        start=start,
        blocking=opts.stop_never,
        annotate=not opts.skip_annotate,
        register=False,
        # --raw writes the files as the primary keeps them: with their checksums.
        checksum="server" if opts.raw else "NONE",
        binlog_file=binlog_file,
        binlog_position=position,
        server_id=opts.stop_never_server_id or None,
    )
    events = client.events()
    try:
        try:
            first = next(events)
        except StopIteration:
            return
        except (ConnectionLostError, ServerError) as err:
            if client.connects:
                raise
            raise client.options.connect_failure(err) from None
        yield first
        yield from events
    finally:
        events.close()
        client.close()


def add_dump_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``dump`` with the replication client as its remote event source."""
    from mariabinlog.optionfiles import BINLOG_GROUPS, describe_defaults
    from mariabinlog.tools.dump.cli import add_dump_parser

    add_dump_parser(subparsers, remote=remote_events, defaults_help=lambda: describe_defaults(BINLOG_GROUPS))


#: Subcommand registrars, in the order ``--help`` lists them.
COMMANDS: tuple[LazyCommand, ...] = (
    LazyCommand("dump", "mariabinlog.cli", "add_dump_command"),
    LazyCommand("events", "mariabinlog.tools.listing", "add_events_parser"),
    LazyCommand("files", "mariabinlog.tools.listing", "add_files_parser"),
    LazyCommand("replicate", "mariabinlog.replication.cli", "add_replicate_parser"),
    LazyCommand("archive", "mariabinlog.replication.cli", "add_archive_parser"),
    LazyCommand("serve", "mariabinlog.replication.cli", "add_serve_parser"),
    LazyCommand("engine", "mariabinlog.engine.cli", "add_engine_parser"),
    LazyCommand("pipeline", "mariabinlog.spark.pipeline", "add_pipeline_parser"),
)


def build_parser(
    commands: Sequence[Registrar] = COMMANDS, only: str | None = None
) -> argparse.ArgumentParser:
    """The top-level parser with the registered subcommands (just ``only`` when it names one)."""
    parser = argparse.ArgumentParser(
        prog="mariabinlog",
        description="Read, store, replicate and analyse MariaDB binary logs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more diagnostics on stderr (-v info, -vv debug)"
    )
    parser.add_argument(
        "--log-level", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
        help=f"diagnostics from this level on ({', '.join(LOG_LEVELS)}; default WARNING)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = [c for c in commands if getattr(c, "name", None) == only] if only else []
    for register in chosen or commands:
        register(subparsers)
    return parser


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first argument that is not an option (or its value)."""
    after_option = False
    for arg in argv:
        if after_option:
            after_option = False
        elif arg == "--log-level":
            after_option = True
        elif not arg.startswith("-"):
            return arg
    return None


#: The option-file groups each command reads, besides ``[client]``, ``[client-server]`` and
#: ``[client-mariadb]`` (``dump`` reads ``mariadb-binlog``'s own groups).
OWN_GROUPS: dict[str, tuple[str, ...]] = {
    "archive": ("mariabinlog-archive",),
    "replicate": ("mariabinlog-replicate",),
}
#: The connection options the replication commands take from ``[client]`` groups; the rest
#: of those groups is meant for other clients and left alone.
CLIENT_OPTIONS = (
    "host", "port", "user", "password", "socket", "protocol", "ssl", "ssl-ca", "ssl-capath",
    "ssl-cert", "ssl-key", "ssl-cipher", "ssl-verify-server-cert", "tls-version",
)


#: The boolean ones among them (``ssl=0``, ``skip-ssl``... in files).
_CLIENT_FLAGS = ("ssl", "ssl-verify-server-cert")


def _client_option(arg: str) -> bool:
    """Whether a ``--name[=value]`` from a ``[client]`` group is one of :data:`CLIENT_OPTIONS`."""
    name = arg[2:].partition("=")[0].replace("_", "-").removeprefix("loose-")
    for prefix in ("skip-", "disable-", "enable-"):
        name = name.removeprefix(prefix)
    return name in CLIENT_OPTIONS


def _argparse_form(arg: str) -> list[str]:
    """An option-file ``--name[=value]`` in the spelling our argparse commands take: ``-`` for
    ``_``, no ``loose-``, and MariaDB's boolean forms of the TLS flags (``skip-ssl``, ``ssl=0``,
    ``enable-ssl``, ``ssl=ON``) as a flag or nothing (off is the default)."""
    name, eq, value = arg[2:].partition("=")
    name = name.replace("_", "-").removeprefix("loose-")
    on = not eq or value.upper() not in ("0", "OFF", "FALSE")
    for prefix, negates in (("skip-", True), ("disable-", True), ("enable-", False)):
        if name.startswith(prefix) and name[len(prefix):] in _CLIENT_FLAGS:
            name, on = name[len(prefix):], not negates
    if name in _CLIENT_FLAGS:
        return [f"--{name}"] if on else []
    return [f"--{name}{eq}{value}"]


def _with_defaults(command: str, argv: list[str]) -> list[str] | int:
    """``argv`` (after the command's name) with the option files' options put first, as
    MariaDB's ``load_defaults`` does; an exit status when ``--print-defaults`` or a broken
    option file ends the run here."""
    from mariabinlog.errors import OptionFileError
    from mariabinlog.optionfiles import (
        BINLOG_GROUPS,
        CLIENT_GROUPS,
        load_defaults,
        print_defaults_text,
        split_defaults_options,
    )

    own = OWN_GROUPS.get(command, ())
    try:
        if command == "dump":
            defaults = load_defaults(BINLOG_GROUPS, argv)
            args = defaults.args
        else:
            # Of the shared client groups, only the connection settings concern us (the rest
            # is for other clients); our own group is all ours and comes after them.
            defaults = load_defaults(CLIENT_GROUPS, argv)
            user_args = split_defaults_options(argv).rest
            shared = defaults.args[: len(defaults.args) - len(user_args)]
            mine = load_defaults(own, argv).args
            from_files = [a for a in shared if _client_option(a)] + mine[: len(mine) - len(user_args)]
            args = [form for a in from_files for form in _argparse_form(a)] + user_args
    except OptionFileError as err:
        print(err, file=sys.stderr)
        print("Fatal error in defaults handling. Program aborted", file=sys.stderr)
        return 1
    for warning in defaults.warnings:
        print(warning, file=sys.stderr)
    if defaults.print_requested:
        program = "mariadb-binlog" if command == "dump" else f"mariabinlog {command}"
        sys.stdout.write(print_defaults_text(program, args))
        return 0
    return args


#: The levels ``--log-level`` accepts.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (tests swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> object:
        """The current ``sys.stderr``."""
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""


def configure_logging(level: int) -> None:
    """Send the ``mariabinlog`` logger hierarchy to stderr from ``level`` on (once per process)."""
    logger = logging.getLogger("mariabinlog")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        logger.addHandler(_StderrHandler())
        logger.propagate = False
    logger.setLevel(level)


def _level(args: argparse.Namespace) -> int:
    """The log level the options ask for: ``--log-level``, else WARNING lowered by each ``-v``."""
    if args.log_level:
        return int(getattr(logging, args.log_level))
    return max(logging.WARNING - 10 * args.verbose, logging.DEBUG)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit status (2 = usage error, 1 = failure).

    ``dump``, ``archive`` and ``replicate`` first read MariaDB's option files (see
    :func:`_with_defaults`)."""
    if argv is None:
        argv = sys.argv[1:]
    command = _command_name(argv)
    if command in ("dump", "archive", "replicate"):
        at = argv.index(command)
        expanded = _with_defaults(command, argv[at + 1 :])
        if isinstance(expanded, int):
            return expanded
        argv = [*argv[: at + 1], *expanded]
    parser = build_parser(only=command)
    args = parser.parse_args(argv)
    configure_logging(_level(args))
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return handler(args)
    except MariabinlogError as err:
        print(f"mariabinlog: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``mariabinlog dump ... | head``): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
