"""The ``mariabinlog dump`` command: options in, the reader loop run, an exit status out.

:func:`dump_main` parses ``mariadb-binlog``'s options (:mod:`.options`),
picks where the events go (the text printer, ``--format=json``, or one of the
two conversions of :mod:`..convert`) and runs the :class:`~.dumper.Dumper` over
the named files, or over a primary's dump stream that the caller passes in
for ``--read-from-remote-server``.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from ...errors import MariabinlogError
from .dumper import Dumper, RemoteSource
from .help import VERSION_TEXT, help_text
from .options import PROG, DumpOptions, OptionExit, log_level, parse_options, write_line
from .progress import progress_for


def dump_main(
    argv: list[str],
    *,
    stdout: BinaryIO | None = None,
    stderr: Any = None,
    sink: Callable[[Callable[[bytes], Any]], Any] | None = None,
    remote: RemoteSource | None = None,
    defaults_help: Callable[[], str] | None = None,
) -> int:
    """Run ``mariadb-binlog`` with ``argv`` (options and files); returns the exit status.

    ``sink`` makes the events go to another sink than the text printer (see
    :mod:`mariabinlog.tools.dump.sink`); ``--format``, ``--convert-engine-binlog`` and
    ``--convert-to-engine-binlog`` choose one from the command line.  ``remote``
    opens a primary's dump stream for ``--read-from-remote-server`` (the
    ``mariabinlog`` command wires in the replication client; without it the
    option is refused).  ``defaults_help`` gives ``--help`` its option-file paragraph
    (the command line reads option files, so it knows which).
    """
    err = stderr if stderr is not None else sys.stderr
    try:
        opts, files, notices = parse_options(argv)
        for note in notices:
            write_line(err, note)
        if opts.help:
            sys.stdout.write(help_text(defaults_help() if defaults_help is not None else ""))
            return 0
        if opts.version:
            sys.stdout.write(VERSION_TEXT)
            return 0
        if opts.log_level is not None:
            logging.getLogger("mariabinlog").setLevel(log_level(opts.log_level))
        if opts.password_prompt:
            # mariadb-binlog asks as soon as the options are read, on the terminal.
            opts.password = getpass.getpass("Enter password: ")
        if not files:
            raise OptionExit(
                "ERROR: Please provide the log file(s). Run with '--help' for usage instructions.", 1
            )
        if not opts.remote:
            files = _expand_directories(files)
        if opts.convert_engine_binlog or opts.convert_to_engine_binlog is not None:
            return _convert(opts, files, err)
        if opts.remote and remote is None:
            raise OptionExit(
                "ERROR: --read-from-remote-server needs the mariabinlog command (mariabinlog dump)", 1
            )
        if opts.raw and not opts.remote:
            raise OptionExit(
                "ERROR: The --raw mode only works with --read-from-remote-server", 1
            )
        schema_options = opts.schema_from or opts.schema_file or opts.schema_history
        if sink is None and opts.format == "text" and schema_options and not opts.schema_metadata:
            raise OptionExit(
                "ERROR: --schema-from/--schema-file/--schema-history work with --schema-metadata or "
                "--format=json, debezium or schema-history",
                1,
            )
        if sink is None and opts.format != "text":
            sink = _format_sink(opts)
        if sink is not None and opts.flashback:
            raise OptionExit("ERROR: --flashback works only with the text output", 1)
        if sink is not None and opts.rewrite_db:
            # The JSON records name the databases as logged; refused rather than ignored.
            raise OptionExit("ERROR: --rewrite-db works only with the text output", 1)
        out: BinaryIO
        close_out = False
        if opts.result_file and not opts.raw:  # with --raw it is the prefix of the files written
            try:
                out = open(opts.result_file, "wb")  # noqa: SIM115 - closed in the finally below
            except OSError:
                raise OptionExit(
                    f"ERROR: Could not create log file '{opts.result_file}'", 1
                ) from None
            close_out = True
        else:
            out = stdout if stdout is not None else sys.stdout.buffer
        dumper = Dumper(
            opts, err, sink, progress_for(err, None if close_out else out)
        )
        dumper.out_stream = out
        if opts.schema_metadata and sink is None:
            dumper.printer.schema = _schema_tracker(opts)
        try:
            status = dumper.run(files) if remote is None or not opts.remote else dumper.run_remote(remote, files)
        finally:
            out.flush()
            if close_out:
                out.close()
        return status
    except OptionExit as exc:
        if exc.message:
            write_line(err, exc.message)
        return exc.status
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 1


def _expand_directories(files: list[str]) -> list[str]:
    """Each directory named becomes its binlog files, in the order SHOW BINARY LOGS lists them.

    mariadb-binlog itself takes files only; a directory holding no binlog is refused
    with one line (exit 1) rather than read as one.
    """
    if not any(name != "-" and os.path.isdir(name) for name in files):
        return files
    from ..binlog_dir import binary_logs

    expanded: list[str] = []
    for name in files:
        if name == "-" or not os.path.isdir(name):
            expanded.append(name)
            continue
        logs = binary_logs(name)
        if not logs:
            raise OptionExit(f"{PROG}: '{name}' is a directory without binlog files (legacy or .ibb)", 1)
        expanded.extend(os.path.join(name, log) for log, _ in logs)
    return expanded


def _convert(opts: DumpOptions, files: list[str], err: Any) -> int:
    """Run one of the two conversions: the dumper reads, the converter writes files."""
    from .. import convert  # imports the engine: slow, and only conversions need it

    dumper = Dumper(opts, err, convert.conversion_sink(opts, files, err), progress_for(err, None))
    with open(os.devnull, "wb") as nowhere:  # the conversions write files, never stdout
        dumper.out_stream = nowhere
        try:
            return dumper.run(files)
        except MariabinlogError as exc:
            write_line(err, f"ERROR: {exc}")
            dumper.printer.finish(False)
            return 1


def _schema_tracker(opts: DumpOptions) -> Any:
    """The schema history the ``--schema-*`` options start, wrapped in a tracker."""
    from ...errors import SchemaHistoryError
    from ...schema import SchemaTracker
    from ...schema.start import starting_history

    try:
        history = starting_history(schema_from=opts.schema_from, schema_file=opts.schema_file, saved=opts.schema_history)
    except SchemaHistoryError as error:
        raise OptionExit(f"ERROR: {error}", 1) from None
    return SchemaTracker(history)


def _format_sink(opts: DumpOptions) -> Callable[[Callable[[bytes], Any]], Any]:
    """The sink ``--format`` names (``text`` is the printer itself)."""
    if opts.format in ("json", "debezium", "schema-history"):
        tracker = _schema_tracker(opts)
        if opts.format == "schema-history":
            from .schema import SchemaHistorySink

            return lambda write: SchemaHistorySink(write, tracker)
        if opts.format == "debezium":
            from ..debezium import DebeziumSink

            return lambda write: DebeziumSink(write, opts, tracker)
        from ..jsonout import JsonSink

        return lambda write: JsonSink(write, opts, tracker)
    raise OptionExit(
        f"ERROR: Unknown output format '{opts.format}'. Alternatives are: 'text','json','debezium','schema-history'", 1
    )


def add_dump_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    remote: RemoteSource | None = None,
    defaults_help: Callable[[], str] | None = None,
) -> None:
    """Register ``dump``: every argument after it goes to :func:`dump_main` untouched."""
    parser = subparsers.add_parser(
        "dump",
        help="print binlog files as mariadb-binlog does (legacy and .ibb)",
        add_help=False,
        prefix_chars="\x01",
    )
    parser.add_argument("dump_argv", nargs="*", metavar="ARGS")
    parser.set_defaults(
        handler=lambda args: dump_main(list(args.dump_argv), remote=remote, defaults_help=defaults_help)
    )


def main() -> None:
    """``python -m mariabinlog.tools.dump.cli``."""
    sys.exit(dump_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
