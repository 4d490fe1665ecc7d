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
    from mariabinlog.tools.dump_options import DumpOptions

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


def remote_events(opts: DumpOptions, start: str) -> Generator[StreamEvent, None, None]:
    """``dump --read-from-remote-server``'s event source: the replication client's GTID dump.

    The tools and the replication package are siblings that never import each
    other; the command line is where the dump meets the client.
    """
    from mariabinlog.replication.client import BinlogClient
    from mariabinlog.replication.net import ConnectionOptions

    client = BinlogClient(
        ConnectionOptions(
            host=opts.host or "127.0.0.1",
            port=opts.port or 3306,
            socket=opts.socket,
            user=opts.user or "root",
            password=opts.password or "",
        ),
        start=start,
        blocking=opts.stop_never,
        annotate=not opts.skip_annotate,
        register=False,
        checksum="NONE",
    )
    try:
        yield from client.events()
    finally:
        client.close()


def add_dump_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``dump`` with the replication client as its remote event source."""
    from mariabinlog.tools.dump_cli import add_dump_parser

    add_dump_parser(subparsers, remote=remote_events)


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
    """Run one subcommand and return its exit status (2 = usage error, 1 = failure)."""
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(only=_command_name(argv))
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
