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
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING

from mariabinlog import __version__
from mariabinlog.errors import MariabinlogError

if TYPE_CHECKING:
    from mariabinlog.codec.gtid import Gtid
    from mariabinlog.replication.client import StreamEvent
    from mariabinlog.codec.groups import EventGroup
    from mariabinlog.schema import SchemaHistory
    from mariabinlog.tools.dump.options import DumpOptions

log = logging.getLogger(__name__)

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


def _archive_groups(directory: str) -> tuple[Iterator[EventGroup], SchemaHistory | None]:
    """Every group of the ``.ibb`` archive ``directory``, oldest first, and its schema history
    (``schema-history.json`` beside the files) when it has one."""
    from mariabinlog.errors import OptionError
    from mariabinlog.replication.sources import ArchiveReader, archive_pages
    from mariabinlog.schema import SchemaHistory
    from mariabinlog.schema.history import SCHEMA_HISTORY_FILE

    if not os.path.isdir(directory):
        raise OptionError(f"--archive {directory}: not a directory")
    path = os.path.join(directory, SCHEMA_HISTORY_FILE)
    history = SchemaHistory.load(path) if os.path.exists(path) else None
    return ArchiveReader(archive_pages(directory), None).groups(), history


def _gtid(option: str, text: str) -> Gtid:
    from mariabinlog.codec.gtid import Gtid
    from mariabinlog.errors import GtidError, OptionError

    try:
        return Gtid.parse(text.strip())
    except (GtidError, ValueError) as err:
        raise OptionError(f"{option} {text!r}: {err}") from None


def add_restore_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``restore``: a ``mariadb-backup`` backup replayed from an archive to a point in time."""
    parser = subparsers.add_parser(
        "restore",
        help="point-in-time restore: a mariadb-backup backup plus an archive's groups up to a stop point",
        description="Prepare a copy of a mariadb-backup backup in a new datadir, start a private server on it,"
        " apply the archive's groups from the backup's GTID position to the stop point (crash-safe, resumable),"
        " and shut it down cleanly.",
    )
    parser.add_argument("--backup", required=True, metavar="DIR", help="a full backup made by mariadb-backup --backup")
    parser.add_argument("--archive", required=True, metavar="DIR", help="the .ibb archive (mariabinlog archive)")
    parser.add_argument("--datadir", required=True, metavar="NEW", help="the new datadir (new or empty; or a restore cut short)")
    stop = parser.add_mutually_exclusive_group(required=True)
    stop.add_argument("--stop-before-gtid", metavar="GTID", help="apply everything before this group, not the group")
    stop.add_argument("--stop-gtid", metavar="GTID", help="apply everything up to and including this group")
    stop.add_argument("--stop-datetime", metavar="'YYYY-MM-DD HH:MM:SS'",
                      help="apply the groups committed before this time (local time zone, as mariadb-binlog)")
    parser.add_argument("--parallel", type=int, default=4, metavar="N",
                        help="connections applying GTID domains in parallel (default 4)")
    parser.add_argument("--server-option", dest="server_options", action="append", default=[], metavar="OPTION",
                        help="an extra option for the private mariadbd, e.g. --server-option=--innodb-buffer-pool-size=1G")
    parser.add_argument("--progress-interval", type=float, default=10.0, metavar="SECONDS",
                        help="seconds between progress lines on stderr (default 10)")
    parser.add_argument("--progress-json", metavar="FILE", help="also write progress as JSON lines to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(handler=restore_main)


def restore_main(args: argparse.Namespace) -> int:
    """Run ``restore``; prints the GTID position reached."""
    import signal
    import threading

    from mariabinlog.replication.progress import Reporter
    from mariabinlog.replication.restore import Restore, StopPoint
    from mariabinlog.tools.dump.options import parse_datetime

    stop = StopPoint(
        before=_gtid("--stop-before-gtid", args.stop_before_gtid) if args.stop_before_gtid else None,
        at=_gtid("--stop-gtid", args.stop_gtid) if args.stop_gtid else None,
        time=parse_datetime(args.stop_datetime) if args.stop_datetime else None,
    )
    restore = Restore(args.backup, args.archive, args.datadir, stop, parallel=args.parallel,
                      server_options=tuple(args.server_options))
    json_out = open(args.progress_json, "a", encoding="utf-8") if args.progress_json else None  # noqa: SIM115
    reporter = Reporter(restore.progress, interval=args.progress_interval, json_out=json_out,
                        human=None if args.quiet else sys.stderr).start()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, lambda *_: restore.close()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        reached = restore.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        reporter.stop()
        if json_out is not None:
            json_out.close()
    print(f"restore: reached {reached}")
    return 0


def add_find_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``find``: the archive's groups that match, one line each."""
    parser = subparsers.add_parser(
        "find",
        help="list an archive's event groups by statement, table, operation or time (to find a stop point)",
        description="Print the archive's event groups that match every criterion given, one line each:"
        " GTID, time, row counts per operation, tables, statement text (tab-separated).",
    )
    parser.add_argument("--archive", required=True, metavar="DIR", help="the .ibb archive")
    parser.add_argument("--statement", metavar="PATTERN", help="statement text matches this regular expression (any case)")
    parser.add_argument("--table", dest="tables", action="append", default=[], metavar="DB.TABLE",
                        help="changes this table (repeatable: any of them)")
    parser.add_argument("--op", dest="ops", action="append", default=[], choices=("insert", "update", "delete", "ddl"),
                        help="does this operation (repeatable: any of them)")
    parser.add_argument("--since", metavar="'YYYY-MM-DD HH:MM:SS'", help="committed at or after (local time)")
    parser.add_argument("--until", metavar="'YYYY-MM-DD HH:MM:SS'", help="committed before (local time)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="text lines or JSON lines")
    parser.set_defaults(handler=find_main)


def find_main(args: argparse.Namespace) -> int:
    """Run ``find``."""
    from mariabinlog.tools.dump.options import parse_datetime
    from mariabinlog.tools.groupinfo import GroupQuery, find_groups, print_json

    query = GroupQuery.build(
        statement=args.statement, tables=args.tables, ops=args.ops,
        since=parse_datetime(args.since) if args.since else None,
        until=parse_datetime(args.until) if args.until else None,
    )
    groups, history = _archive_groups(args.archive)
    for summary in find_groups(groups, query, history):
        print(print_json(summary) if args.format == "json" else summary.line())
    return 0


def add_undo_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``undo``: revert archived groups' row changes on a live server."""
    parser = subparsers.add_parser(
        "undo",
        help="revert the row changes of archived groups on a live server (as --flashback would)",
        description="Invert the row changes of the given groups (newest first, one transaction per group) and"
        " apply them to a server; refuses when later groups of the archive changed the same rows.",
    )
    parser.add_argument("--to", dest="target", metavar="URL", help="the server: mariadb://user:password@host:port")
    parser.add_argument("--archive", required=True, metavar="DIR", help="the .ibb archive holding the groups")
    parser.add_argument("--gtid", required=True, metavar="G[,G...]", help="the groups to undo")
    parser.add_argument("--table", dest="tables", action="append", default=[], metavar="DB.TABLE",
                        help="undo only the changes of this table (repeatable)")
    parser.add_argument("--force", action="store_true", help="undo even when later groups changed the same rows")
    parser.add_argument("--dry-run", action="store_true", help="print the SQL, change nothing")
    parser.set_defaults(handler=undo_main)


def undo_main(args: argparse.Namespace) -> int:
    """Run ``undo``."""
    from mariabinlog.errors import OptionError, ServerError, UndoError
    from mariabinlog.replication.net import Connection, ConnectionOptions
    from mariabinlog.codec.events import format_description_statement
    from mariabinlog.tools.undo import plan_undo

    if not args.dry_run and not args.target:
        raise OptionError("undo needs --to URL (or --dry-run)")
    for name in args.tables:
        if "." not in name:
            raise OptionError(f"--table {name!r}: give it as DB.TABLE")
    gtids = [_gtid("--gtid", text) for text in args.gtid.split(",") if text.strip()]
    groups, history = _archive_groups(args.archive)
    plan = plan_undo(groups, gtids, tables=args.tables, history=history, force=args.force)
    for undone, later in plan.conflicts.items():
        log.warning("--force: %s was changed later by %s", undone, ", ".join(later))
    if args.dry_run:
        out = sys.stdout.buffer
        for undo in plan.groups:
            out.write(format_description_statement(undo.fd) + b";\n" + undo.script())
        out.flush()
        return 0
    with Connection.open(ConnectionOptions.from_url(args.target, read_timeout=3600.0)) as conn:
        for undo in plan.groups:
            statements = [format_description_statement(undo.fd), *undo.transaction()]
            try:
                conn.query(b";\n".join(statements), statements=len(statements))
            except ServerError as err:
                try:
                    conn.query("ROLLBACK")
                except ServerError:
                    pass
                raise UndoError(f"GTID {undo.gtid}: the server refused its undo, nothing of it was applied: {err}") from err
            print(f"undo: reverted {undo.gtid} ({undo.rows} rows of {', '.join(undo.tables)})", flush=True)
    return 0


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
    LazyCommand("restore", "mariabinlog.cli", "add_restore_command"),
    LazyCommand("find", "mariabinlog.cli", "add_find_command"),
    LazyCommand("undo", "mariabinlog.cli", "add_undo_command"),
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
