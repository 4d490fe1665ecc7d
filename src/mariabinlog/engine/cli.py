"""``mariabinlog engine {init,status,files,flush,purge,reset,backup,check} DIR``.

Why: the administrative statements of ibb-format.md §8 (SHOW MASTER STATUS,
SHOW BINARY LOGS, FLUSH BINARY LOGS, PURGE BINARY LOGS, RESET MASTER), backup
and an offline verifier, on an engine directory from the shell.

``status``, ``files`` and ``check`` only look: they read a snapshot
(:mod:`mariabinlog.engine.view`) and never create, grow, truncate or fsync anything,
also while another process has the engine open; a directory a crash left is shown (and
checked) as the next open will recover it, recovery running in memory.  ``init`` is the only command that
creates an engine; every other one refuses a path that holds none.  ``flush``,
``purge`` and ``reset`` open the engine (recovering it after a crash), which needs the
directory to itself; ``reset`` asks first unless given ``--yes``.  Settings for files
created by a command default to those recorded in the newest file's header.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from typing import Any

from ..errors import LogInUseError, OptionError
from .backup import backup_from_outside, prepare
from .check import check_directory
from .config import EngineConfig, recorded_settings
from .engine import Engine
from .files import binlog_name
from .view import require_engine, view

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _config(args: argparse.Namespace) -> EngineConfig:
    """Settings from the options, else from the newest existing header, else the defaults."""
    options: dict[str, Any] = {"durability": args.durability}
    recorded = recorded_settings(args.directory) if os.path.isdir(args.directory) else {}
    size = args.max_binlog_size if args.max_binlog_size is not None else recorded.get("max_binlog_size")
    interval = args.state_interval if args.state_interval is not None else recorded.get("state_interval")
    if size is not None:
        options["max_binlog_size"] = size
    if interval is not None:
        options["state_interval"] = interval
    return EngineConfig(**options)


def _open(args: argparse.Namespace) -> Engine:
    require_engine(args.directory)
    return Engine.open(args.directory, _config(args), restart_marker=False, create=False)


def _init(args: argparse.Namespace) -> int:
    if os.path.exists(args.directory) and not os.path.isdir(args.directory):
        raise OptionError(f"{args.directory}: not a directory")
    if os.path.isdir(args.directory) and os.listdir(args.directory):
        require_engine(args.directory)
        print(f"{args.directory}: already holds a binlog engine")
        return 0
    with Engine.open(args.directory, _config(args), restart_marker=False, create=True):
        pass
    print(f"created a binlog engine in {args.directory}")
    return 0


def _status(args: argparse.Namespace) -> int:
    seen = view(args.directory)
    end_file, end_offset = seen.end
    state = seen.state
    print(f"File: {binlog_name(end_file)}")
    print(f"Position: {end_offset}")
    print(f"Durable: {binlog_name(end_file)} {end_offset}")
    print(f"LSN: {seen.lsn} (checkpoint {seen.checkpoint_lsn})")
    print(f"Gtid_Binlog_Pos: {state.connect_state()}")
    print(f"Gtid_Binlog_State: {state}")
    print(f"Pending_XA: {len(seen.restored.pending_xa)}")
    if not seen.clean:
        print(f"Recovery: needed at the next open ({seen.records} redo records after the checkpoint)")
    return 0


def _files(args: argparse.Namespace) -> int:
    seen = view(args.directory)
    print("Log_name\tFile_size")
    for file_no, size in seen.files:
        print(f"{binlog_name(file_no)}\t{size}")
    return 0


def _flush(args: argparse.Namespace) -> int:
    with _open(args) as engine:
        warnings = engine.flush(args.delete_domain_id or ())
        status = engine.status()
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    print(f"now writing {binlog_name(status.file_no)}")
    return 0


def _purge(args: argparse.Namespace) -> int:
    before = None
    if args.before is not None:
        try:
            before = datetime.datetime.fromisoformat(args.before).timestamp()
        except ValueError:
            raise OptionError(f"--before: not an ISO date/time: {args.before!r}") from None
    if args.to is None and before is None and args.expire_seconds is None and args.max_total_size is None:
        raise OptionError("purge needs --to, --before, --expire-seconds or --max-total-size")
    config = _config(args)
    if args.expire_seconds is not None or args.max_total_size is not None:
        config = config.with_options(
            expire_seconds=args.expire_seconds or 0.0, max_total_size=args.max_total_size or 0
        )
    status = 0
    require_engine(args.directory)
    with Engine.open(args.directory, config, restart_marker=False, create=False) as engine:
        try:
            purged = engine.purge(args.to, before=before) if args.to is not None or before is not None else engine.purge()
        except LogInUseError as err:
            purged = getattr(err, "purged", [])
            print(f"mariabinlog: {err}", file=sys.stderr)
            status = 1
    for file_no in purged:
        print(f"purged {binlog_name(file_no)}")
    return status


def _reset(args: argparse.Namespace) -> int:
    require_engine(args.directory)
    if not args.yes:
        if not sys.stdin.isatty():
            raise OptionError("reset deletes every binlog file: pass --yes to confirm")
        answer = input(f"Delete every binlog file in {args.directory}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("reset cancelled")
            return 1
    with _open(args) as engine:
        engine.reset()
    print("binlog reset: now writing binlog-000000.ibb")
    return 0


def _backup(args: argparse.Namespace) -> int:
    require_engine(args.directory)
    if args.prepare_only:
        recovered = prepare(args.directory)
        print(f"prepared {args.directory}: binlog ends at {binlog_name(recovered.end[0])} {recovered.end[1]}")
        return 0
    if args.destination is None:
        raise OptionError("backup needs a DESTINATION directory")
    require_engine(args.directory)
    if Engine.in_use(args.directory):  # a running archive has it: copy from outside
        info = backup_from_outside(args.directory, args.destination)
    else:
        with _open(args) as engine:
            info = engine.backup(args.destination)
    print(f"copied {len(info.files)} files, {info.bytes_copied} bytes, redo LSN {info.start_lsn}..{info.end_lsn}")
    if not args.no_prepare:
        recovered = prepare(args.destination)
        print(f"prepared: binlog ends at {binlog_name(recovered.end[0])} {recovered.end[1]}")
    return 0


def _check(args: argparse.Namespace) -> int:
    require_engine(args.directory)
    report = check_directory(args.directory, as_recovered=True)
    print(report.summary())
    return 0 if report.ok else 1


def add_engine_parser(subparsers: Any) -> None:
    """Register ``mariabinlog engine ...``."""
    parser = subparsers.add_parser("engine", help="administer a binlog engine directory (.ibb files + redo log)")
    commands = parser.add_subparsers(dest="engine_command", metavar="COMMAND", required=True)

    def command(name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(name, help=help_text)
        sub.add_argument("directory", help="binlog directory")
        sub.add_argument("--max-binlog-size", type=int, default=None, help="bytes per new file")
        sub.add_argument("--state-interval", type=int, default=None, help="GTID state interval in bytes")
        sub.add_argument("--durability", type=int, default=1, choices=(0, 1, 2))
        sub.set_defaults(handler=handler)
        return sub

    command("init", _init, "create a binlog engine in DIRECTORY (the only command that creates one)")
    command("status", _status, "SHOW MASTER STATUS (look only)")
    command("files", _files, "SHOW BINARY LOGS (look only)")
    flush = command("flush", _flush, "FLUSH BINARY LOGS")
    flush.add_argument("--delete-domain-id", type=int, action="append", metavar="N",
                       help="also remove GTID domain N from the binlog state (repeatable)")
    purge = command("purge", _purge, "PURGE BINARY LOGS")
    purge.add_argument("--to", metavar="FILE", help="purge files before FILE (name or number)")
    purge.add_argument("--before", metavar="DATETIME", help="purge files last written before DATETIME (ISO)")
    purge.add_argument("--expire-seconds", type=float, default=None, help="automatic purge by age")
    purge.add_argument("--max-total-size", type=int, default=None, help="automatic purge by total size")
    reset = command("reset", _reset, "RESET MASTER")
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    backup = command("backup", _backup, "consistent copy (files + redo) and prepare")
    backup.add_argument("destination", nargs="?", help="empty directory for the copy")
    backup.add_argument("--no-prepare", action="store_true", help="copy only; prepare later with --prepare-only")
    backup.add_argument("--prepare-only", action="store_true", help="DIRECTORY is a copy: make it consistent")
    command("check", _check, "verify every page CRC, record and GTID state record")
