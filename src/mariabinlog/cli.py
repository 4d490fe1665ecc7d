"""The ``mariabinlog`` command line: one argparse parser, one subcommand per tool.

Each subcommand lives in the module that implements it and contributes a
``register(subparsers)`` function that adds its parser and sets
``handler=<function(args) -> int>``; listing that function in :data:`COMMANDS`
is all it takes to appear here.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from mariabinlog import __version__
from mariabinlog.errors import MariabinlogError
from mariabinlog.tools.dump import add_dump_parser

Registrar = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Subcommand registrars, in the order ``--help`` lists them.
COMMANDS: tuple[Registrar, ...] = (add_dump_parser,)


def build_parser(commands: Sequence[Registrar] = COMMANDS) -> argparse.ArgumentParser:
    """Return the top-level parser with every registered subcommand added."""
    parser = argparse.ArgumentParser(
        prog="mariabinlog",
        description="Read, store, replicate and analyse MariaDB binary logs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in commands:
        register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit status (2 = usage error, 1 = failure)."""
    parser = build_parser()
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
