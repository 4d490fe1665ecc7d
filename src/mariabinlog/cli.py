"""The ``mariabinlog`` command line: one argparse parser, one subcommand per tool.

Each subcommand lives in the module that implements it and contributes a
``register(subparsers)`` function that adds its parser and sets
``handler=<function(args) -> int>``; listing it in :data:`COMMANDS` (by
command name, module and function name) is all it takes to appear here.

Startup time matters (``mariabinlog dump`` is run once per file in pipelines
and by the corpus checker hundreds of times), so the modules are imported
lazily: a run of one subcommand imports only that subcommand's module; only
``--help`` without a command, or an unknown command, imports them all.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from mariabinlog import __version__
from mariabinlog.errors import MariabinlogError

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


#: Subcommand registrars, in the order ``--help`` lists them.
COMMANDS: tuple[LazyCommand, ...] = (
    LazyCommand("dump", "mariabinlog.tools.dump", "add_dump_parser"),
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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = [c for c in commands if getattr(c, "name", None) == only] if only else []
    for register in chosen or commands:
        register(subparsers)
    return parser


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first argument that is not an option."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit status (2 = usage error, 1 = failure)."""
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(only=_command_name(argv))
    args = parser.parse_args(argv)
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
