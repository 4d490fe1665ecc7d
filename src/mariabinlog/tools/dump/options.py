"""mariadb-binlog's option policy: its option table, my_getopt's parsing rules, values.

:func:`parse_options` reads the command line as the C tool's ``handle_options``
does (unique prefixes with their ``Info:`` notice, ``--skip-``/``--enable-``
negation, number suffixes, the same error texts and exit statuses), into a
:class:`DumpOptions` whose values are checked later, where they are used.  The
reader loop (:mod:`.dumper`), the converters (:mod:`..convert`) and the listing
(:mod:`..listing`) all take their options from here; :func:`write_line` is how
they print the tool's own stderr lines.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from ...errors import OptionExit
from ..printer import base as PB
from .gtid_filter import GtidFilter

PROG = "mariadb-binlog"

# process_event's exit statuses (mysqlbinlog.cc's ``Exit_status``): what each of the dump's
# readers (legacy files, `.ibb` files, a primary's stream) returns for an event or a file.
OK_CONTINUE = 0
ERROR_STOP = 1
OK_STOP = 2

#: Input bytes the readers take between two writes of the pending output (and progress updates).
DRAIN_STEP = 1 << 20

__all__ = [
    "PROG",
    "OPTIONS",
    "DumpOptions",
    "OptionExit",
    "base64_mode",
    "leading_defaults_options",
    "log_level",
    "parse_datetime",
    "parse_options",
    "write_line",
]


def write_line(stream: Any, message: str) -> None:
    """One line of the tool's own text on ``stream`` (stderr), flushed at once as the C tool does."""
    stream.write(message + "\n")
    stream.flush()


# --------------------------------------------------------------------------- options

#: (name, short, kind, dest) — kind: "bool" (no argument, negatable), "str"
#: (required argument), "opt" (optional argument), "int" (number with K/M/G
#: suffixes), "count" (-v), "ignore" (accepted, no effect), "ignore_arg".
OPTIONS: tuple[tuple[str, str | None, str, str], ...] = (
    ("help", "?", "bool", "help"),
    ("base64-output", None, "str", "base64_output"),
    ("character-sets-dir", None, "str", "ignored"),
    ("database", "d", "str", "database"),
    ("debug-check", None, "bool", "ignored"),
    ("debug-info", None, "bool", "ignored"),
    ("default-auth", None, "str", "ignored"),
    ("disable-log-bin", "D", "bool", "disable_log_bin"),
    ("flashback", "B", "bool", "flashback"),
    ("force-if-open", "F", "bool", "force_if_open"),
    ("force-read", "f", "bool", "force_read"),
    ("hexdump", "H", "bool", "hexdump"),
    ("host", "h", "str", "host"),
    ("local-load", "l", "str", "local_load"),
    ("offset", "o", "int", "offset"),
    ("password", "p", "opt", "password"),
    ("plugin-dir", None, "str", "ignored"),
    ("port", "P", "int", "port"),
    ("protocol", None, "str", "protocol"),
    ("read-from-remote-server", "R", "bool", "remote"),
    ("raw", None, "bool", "raw"),
    ("result-file", "r", "str", "result_file"),
    ("print-row-count", None, "bool", "print_row_count"),
    ("print-row-event-positions", None, "bool", "print_row_event_positions"),
    ("ignore-domain-ids", None, "str", "ignore_domain_ids"),
    ("do-domain-ids", None, "str", "do_domain_ids"),
    ("ignore-server-ids", None, "str", "ignore_server_ids"),
    ("do-server-ids", None, "str", "do_server_ids"),
    ("server-id", None, "str", "server_id"),
    ("set-charset", None, "str", "set_charset"),
    ("short-form", "s", "bool", "short_form"),
    ("socket", "S", "str", "socket"),
    ("ssl", None, "bool", "ssl"),
    ("ssl-ca", None, "str", "ssl_ca"),
    ("ssl-capath", None, "str", "ssl_capath"),
    ("ssl-cert", None, "str", "ssl_cert"),
    ("ssl-cipher", None, "str", "ssl_cipher"),
    ("ssl-key", None, "str", "ssl_key"),
    ("ssl-crl", None, "str", "ignored"),
    ("ssl-crlpath", None, "str", "ignored"),
    ("tls-version", None, "str", "tls_version"),
    ("ssl-verify-server-cert", None, "bool", "ssl_verify_server_cert"),
    ("start-datetime", None, "str", "start_datetime"),
    ("start-position", "j", "str", "start_position"),
    ("gtid-strict-mode", None, "bool", "gtid_strict_mode"),
    ("stop-datetime", None, "str", "stop_datetime"),
    ("stop-never", None, "bool", "stop_never"),
    ("stop-never-slave-server-id", None, "int", "stop_never_server_id"),
    ("stop-position", None, "str", "stop_position"),
    ("table", "T", "str", "table"),
    ("to-last-log", "t", "bool", "to_last_log"),
    ("user", "u", "str", "user"),
    ("verbose", "v", "count", "verbose"),
    ("version", "V", "bool", "version"),
    ("open-files-limit", None, "int", "ignored"),
    ("binlog-row-event-max-size", None, "int", "ignored"),
    ("verify-binlog-checksum", "c", "bool", "verify_checksum"),
    ("rewrite-db", None, "str", "rewrite_db"),
    ("skip-annotate-row-events", None, "bool", "skip_annotate"),
    ("print-table-metadata", None, "bool", "print_table_metadata"),
    # MariaDB 12 (MDEV-37605): `.ibb` files to legacy binlog files.
    ("convert-engine-binlog", None, "bool", "convert_engine_binlog"),
    ("max-binlog-size", None, "int", "max_binlog_size"),
    # mariabinlog's own.
    ("format", None, "str", "format"),
    ("convert-to-engine-binlog", None, "str", "convert_to_engine_binlog"),
    ("schema-from", None, "str", "schema_from"),
    ("schema-file", None, "str", "schema_file"),
    ("schema-history", None, "str", "schema_history"),
    ("schema-metadata", None, "bool", "schema_metadata"),
    ("topic-prefix", None, "str", "topic_prefix"),
    ("log-level", None, "str", "log_level"),
)
_BY_NAME = {name: spec for spec in OPTIONS for name in (spec[0],)}
_BY_SHORT = {spec[1]: spec for spec in OPTIONS if spec[1]}
_DEFAULTS_OPTIONS = (
    "no-defaults",
    "defaults-file",
    "defaults-extra-file",
    "defaults-group-suffix",
    "print-defaults",
)


class DumpOptions:
    """Parsed ``mariadb-binlog`` options (values as given, checked later)."""

    def __init__(self) -> None:
        self.help = False
        self.version = False
        self.base64_output: str | None = None
        self.database: str | None = None
        self.table: str | None = None
        self.disable_log_bin = False
        self.flashback = False
        self.force_if_open = True
        self.force_read = False
        self.hexdump = False
        self.host: str | None = None
        self.port = 0
        self.socket: str | None = None
        self.user: str | None = None
        self.password: str | None = None
        #: ``-p`` / ``--password`` without a value: ask on the terminal.
        self.password_prompt = False
        self.protocol: str | None = None
        self.ssl = False
        self.ssl_ca: str | None = None
        self.ssl_capath: str | None = None
        self.ssl_cert: str | None = None
        self.ssl_cipher: str | None = None
        self.ssl_key: str | None = None
        self.ssl_verify_server_cert = False
        self.tls_version: str | None = None
        self.offset = 0
        self.remote = False
        self.raw = False
        self.result_file: str | None = None
        self.print_row_count = True
        self.print_row_event_positions = True
        self.ignore_domain_ids: str | None = None
        self.do_domain_ids: str | None = None
        self.ignore_server_ids: str | None = None
        self.do_server_ids: str | None = None
        self.server_id: str | None = None
        self.set_charset: str | None = None
        self.short_form = False
        self.start_datetime: str | None = None
        self.stop_datetime: str | None = None
        self.start_position: str | None = None
        self.stop_position: str | None = None
        self.gtid_strict_mode = True
        self.stop_never = False
        #: The server id a -R dump announces (0: one derived from the process id).
        self.stop_never_server_id = 0
        self.to_last_log = False
        self.verbose = 0
        self.verify_checksum = True
        self.rewrite_db: list[str] = []
        self.skip_annotate = False
        self.print_table_metadata = False
        self.convert_engine_binlog = False
        self.max_binlog_size = 1 << 30
        self.local_load: str | None = None
        self.format = "text"
        self.convert_to_engine_binlog: str | None = None
        #: Starting schema of the schema history (json/debezium output): server URL, dump file, saved history.
        self.schema_from: str | None = None
        self.schema_file: str | None = None
        self.schema_history: str | None = None
        #: Text output: fill --print-table-metadata from the schema history (changes the text).
        self.schema_metadata = False
        #: --format=debezium: Debezium's topic.prefix (the ``name`` of every record's source).
        self.topic_prefix = "mariabinlog"
        self.log_level: str | None = None
        self.ignored: Any = None
        #: The GTID filter options in command-line order (they override each other).
        self.gtid_options: list[tuple[str, str | None]] = []


_TRUE = ("1", "on", "true")
_FALSE = ("0", "off", "false")


def _parse_int(name: str, value: str) -> int:
    text = value.strip()
    mult = 1
    if text and text[-1].upper() in "KMGTPE" and not text[-1].isdigit():
        mult = 1024 ** ("KMGTPE".index(text[-1].upper()) + 1)
        text = text[:-1]
    try:
        return int(text, 0 if text.lower().startswith("0x") else 10) * mult
    except ValueError:
        raise OptionExit(
            f"Unknown suffix '{value[-1:]}' used for variable '{name}' (value '{value}'). "
            "Legal suffix characters are: K, M, G, T, P, E\n"
            f"{PROG}: Error while setting value '{value}' to '{name}'",
            9,
        ) from None


def _find_long(
    name: str, arg: str | None = None
) -> tuple[tuple[str, str | None, str, str], str | None]:
    """Exact or unique-prefix lookup; returns the spec and an 'Info:' notice for prefixes."""
    key = name.replace("_", "-")
    spec = _BY_NAME.get(key)
    if spec is not None:
        return spec, None
    matches = [s for s in OPTIONS if s[0].startswith(key)]
    if len(matches) == 1:
        return matches[0], (
            f"Info: Using unique option prefix '{key}' is error-prone and can break in the future. "
            f"Please use the full name '{matches[0][0]}' instead."
        )
    if matches:
        raise OptionExit(
            f"{PROG}: ambiguous option '{arg or '--' + name}' ({matches[0][0]}, {matches[-1][0]})",
            3,
        )
    if arg is not None and "=" in arg:
        raise OptionExit(f"{PROG}: unknown variable '{arg[2:]}'", 7)
    raise OptionExit(f"{PROG}: unknown option '{arg or '--' + name}'", 2)


def _known(name: str) -> bool:
    """Whether ``name`` (``_`` or ``-``, negation prefixes included) names one of our options."""
    key = name.replace("_", "-")
    for prefix in ("skip-", "disable-", "enable-"):
        if key.startswith(prefix) and key not in _BY_NAME:
            key = key[len(prefix):]
            break
    try:
        _find_long(key)
    except OptionExit:
        return False
    return True


def _set(opts: DumpOptions, spec: tuple[str, str | None, str, str], value: Any) -> None:
    name, _, kind, dest = spec
    if dest == "ignored":
        return
    if name in GtidFilter.OPTIONS:
        if kind == "bool":
            opts.gtid_options.append((name, "1" if value else "0"))
        else:
            opts.gtid_options.append((name, value))
    if kind == "count":
        opts.verbose += 1
    elif dest == "rewrite_db":
        opts.rewrite_db.append(value)
    elif kind == "int":
        setattr(opts, dest, _parse_int(name, value))
    elif dest == "password":
        opts.password = value
        opts.password_prompt = value is None
    else:
        setattr(opts, dest, value)


def leading_defaults_options(argv: Sequence[str]) -> int:
    """How many of the first arguments are defaults-file options (only recognised first; ignored)."""
    i = 0
    while i < len(argv) and any(
        argv[i] == "--" + d or argv[i].startswith("--" + d + "=")
        for d in _DEFAULTS_OPTIONS
    ):
        i += 1
    return i


def parse_options(argv: Sequence[str]) -> tuple[DumpOptions, list[str], list[str]]:
    """my_getopt's handle_options for ``mariadb-binlog``'s options: (options, files, notices)."""
    opts = DumpOptions()
    files: list[str] = []
    notices: list[str] = []
    args = list(argv)
    i = leading_defaults_options(args)
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            files.extend(args[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            body = arg[2:]
            name, eq, value = body.partition("=")
            loose = name.startswith("loose-")
            name = name.removeprefix("loose-").replace("_", "-")
            if loose and not _known(name):
                # my_getopt: an unknown loose option is a warning, never an error.
                notices.append(
                    f"Warning: {PROG}: unknown variable '{body}'"
                    if eq
                    else f"Warning: {PROG}: unknown option '{arg}'"
                )
                continue
            negate = None
            for prefix, neg in (
                ("skip-", True),
                ("disable-", True),
                ("enable-", False),
            ):
                if name.startswith(prefix) and name not in _BY_NAME:
                    candidate = name[len(prefix) :]
                    try:
                        spec_c, _ = _find_long(candidate)
                    except OptionExit:
                        continue
                    if spec_c[2] == "bool":
                        negate = neg
                        name = candidate
                    break
            if name.startswith("maximum-"):
                continue
            spec, note = _find_long(name, arg)
            if note:
                notices.append(note)
            kind = spec[2]
            if negate is not None:
                if eq:
                    raise OptionExit(
                        f"{PROG}: option '--{arg[2:].partition('=')[0]}' cannot take an argument",
                        4,
                    )
                _set(opts, spec, not negate)
                continue
            if kind in ("bool",):
                if eq:
                    low = value.lower()
                    if low in _TRUE:
                        _set(opts, spec, True)
                    elif low in _FALSE:
                        _set(opts, spec, False)
                    else:
                        raise OptionExit(
                            f"{PROG}: option '--{spec[0]}': boolean value '{value}' wasn't recognized. Set to OFF.",
                            0,
                        )
                else:
                    _set(opts, spec, True)
                continue
            if kind == "count":
                if eq:
                    raise OptionExit(
                        f"{PROG}: option '--{spec[0]}' cannot take an argument", 4
                    )
                _set(opts, spec, None)
                continue
            if kind == "opt":
                _set(opts, spec, value if eq else None)
                continue
            if not eq:
                if i >= len(args):
                    raise OptionExit(
                        f"{PROG}: option '--{spec[0]}' requires an argument", 4
                    )
                value = args[i]
                i += 1
            _set(opts, spec, value)
            continue
        if arg.startswith("-") and len(arg) > 1:
            j = 1
            while j < len(arg):
                ch = arg[j]
                spec_s = _BY_SHORT.get(ch)
                if spec_s is None:
                    raise OptionExit(f"{PROG}: unknown option '-{ch}'", 2)
                kind = spec_s[2]
                if kind in ("bool", "count"):
                    _set(opts, spec_s, True if kind == "bool" else None)
                    j += 1
                    continue
                rest = arg[j + 1 :]
                if kind == "opt":
                    _set(opts, spec_s, rest or None)
                    break
                if not rest:
                    if i >= len(args):
                        raise OptionExit(
                            f"{PROG}: option '-{ch}' requires an argument", 4
                        )
                    rest = args[i]
                    i += 1
                _set(opts, spec_s, rest)
                break
            continue
        files.append(arg)
    return opts, files, notices


# --------------------------------------------------------------------------- datetimes


def parse_datetime(value: str) -> int:
    """convert_str_to_timestamp: a full DATETIME in the local time zone -> epoch seconds."""
    m = re.fullmatch(
        r"\s*(\d{2,4})[-/.:](\d{1,2})[-/.:](\d{1,2})[ T]+(\d{1,2})[:.](\d{1,2})(?:[:.](\d{1,2})(?:\.(\d{1,6}))?)?\s*",
        value,
    )
    if m is None:
        m2 = re.fullmatch(r"\s*(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?\s*", value)
        if m2 is None:
            raise OptionExit(f"ERROR: Incorrect date and time argument: {value}", 1)
        parts = [int(x) if x else 0 for x in m2.groups()]
    else:
        parts = [int(x) if x else 0 for x in m.groups()[:6]]
    year, month, day, hour, minute, second = parts
    if year < 100:
        year += 2000 if year < 70 else 1900
    if not (
        1 <= month <= 12
        and 1 <= day <= 31
        and hour < 24
        and minute < 60
        and second < 60
    ):
        raise OptionExit(f"ERROR: Incorrect date and time argument: {value}", 1)
    return int(time.mktime((year, month, day, hour, minute, second, 0, 0, -1)))


def log_level(value: str) -> int:
    """``--log-level``'s value (a level name of :mod:`logging`) as a level number."""
    names = ("DEBUG", "INFO", "WARNING", "ERROR")
    if value.upper() not in names:
        raise OptionExit(
            f"ERROR: Unknown log level '{value}'. Alternatives are: {','.join(repr(n) for n in names)}", 1
        )
    return int(getattr(logging, value.upper()))


def base64_mode(value: str) -> int:
    """--base64-output's value (a unique prefix of its names) as the printer's mode."""
    names = ("NEVER", "AUTO", "UNSPEC", "DECODE-ROWS")
    up = value.upper()
    exact = [i for i, n in enumerate(names) if n == up]
    matches = exact or [i for i, n in enumerate(names) if n.startswith(up) and up]
    if len(matches) != 1:
        raise OptionExit(
            f"Unknown option to base64-output: {value}\nAlternatives are: 'NEVER','AUTO','UNSPEC','DECODE-ROWS'",
            1,
        )
    mode = matches[0]
    return PB.BASE64_AUTO if mode == 2 else mode
