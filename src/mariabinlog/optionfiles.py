"""MariaDB option files (``my.cnf``), read exactly as MariaDB's clients read them.

MariaDB's ``load_defaults`` puts the options found in option files *before* the
command-line arguments, so that the command line wins, and the program then parses
one argument list.  :func:`load_defaults` does the same for our commands: it takes the
leading ``--no-defaults`` / ``--defaults-file=`` / ``--defaults-extra-file=`` /
``--defaults-group-suffix=`` / ``--print-defaults`` arguments, reads the files in
MariaDB's order (``/etc/my.cnf``, ``/etc/mysql/my.cnf``, ``$MARIADB_HOME/my.cnf`` (or
``$MYSQL_HOME``), the extra file, ``~/.my.cnf``), follows ``!include`` and
``!includedir``, keeps the options of the requested groups (case-insensitively, plus the
group suffix variants) and returns the argument list the program would have been
started with.  The syntax rules (comments, quotes, escapes, error texts) follow
MariaDB's ``mysys/my_default.c``, checked against the real ``mariadb-binlog
--print-defaults`` in the tests.

This module only reads files; it sits in the command-line layer, which hands the
resulting argument list to the tool that parses it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .errors import OptionFileError

#: The groups every MariaDB client reads, after its own.
CLIENT_GROUPS: tuple[str, ...] = ("client", "client-server", "client-mariadb")
#: ``mariadb-binlog``'s groups, in the order its ``--help`` lists them.
BINLOG_GROUPS: tuple[str, ...] = ("mysqlbinlog", "mariadb-binlog", *CLIENT_GROUPS)

_MAX_INCLUDE_DEPTH = 10
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'", "\\": "\\"}
# C's isspace() in the latin1 charset, as my_default.c uses it.
_SPACE = " \t\n\r\f\v"


@dataclass
class Defaults:
    """The outcome of reading option files for one command line."""

    #: Options from the files, then the command-line arguments: what the program parses.
    args: list[str]
    #: ``--print-defaults`` was given: print :attr:`args` (see :func:`print_defaults_text`) and exit 0.
    print_requested: bool
    #: The real client's warnings (world-writable file, include depth), for stderr.
    warnings: list[str]


@dataclass
class DefaultsRequest:
    """What the leading defaults options of a command line ask for."""

    no_defaults: bool = False
    defaults_file: str | None = None
    extra_file: str | None = None
    group_suffix: str | None = None
    print_defaults: bool = False
    rest: list[str] = field(default_factory=list)


def split_defaults_options(argv: Sequence[str]) -> DefaultsRequest:
    """Take the defaults options off the front of ``argv`` (the program name excluded).

    As in MariaDB, ``--no-defaults`` counts only as the very first argument; otherwise
    ``--defaults-file=``, ``--defaults-extra-file=`` and ``--defaults-group-suffix=`` are
    taken in any order (each once) until another argument comes; ``--print-defaults``
    counts only right after them.
    """
    args = list(argv)
    req = DefaultsRequest()
    i = 0
    if args and args[0] == "--no-defaults":
        req.no_defaults = True
        i = 1
    else:
        prefixes = {"--defaults-file=": "defaults_file", "--defaults-extra-file=": "extra_file",
                    "--defaults-group-suffix=": "group_suffix"}
        while i < len(args):
            for prefix, attr in prefixes.items():
                if getattr(req, attr) is None and args[i].startswith(prefix):
                    setattr(req, attr, args[i][len(prefix):])
                    break
            else:
                break
            i += 1
    if i < len(args) and args[i] == "--print-defaults":
        req.print_defaults = True
        i += 1
    req.rest = args[i:]
    return req


def default_files(env: Mapping[str, str], extra_file: str | None) -> list[str]:
    """The files read when no ``--defaults-file`` is given, in order (missing ones are skipped)."""
    dirs = ["/etc/", "/etc/mysql/"]
    home_dir = env.get("MARIADB_HOME") or env.get("MYSQL_HOME")
    if home_dir:
        dirs.append(home_dir)
    files = [os.path.join(d, "my.cnf") for d in dirs]
    if extra_file is not None:
        files.append(extra_file)
    home = env.get("HOME")
    if home:
        files.append(os.path.join(home, ".my.cnf"))
    # A directory listed twice is read once, at its last place (MariaDB moves it to the end).
    unique: list[str] = []
    for name in files:
        if name in unique:
            unique.remove(name)
        unique.append(name)
    return unique


class _Reader:
    """One pass over option files, collecting the options of the wanted groups."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.groups = {g.lower() for g in groups}
        self.options: list[str] = []
        self.warnings: list[str] = []

    def read(self, path: str, *, required: bool, depth: int = 0) -> None:
        """Read ``path``; a missing file is an error only when ``required``."""
        try:
            info = os.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in a path (an !include line's)
            if required:
                raise OptionFileError(f"Could not open required defaults file: {path}") from None
            return
        if info.st_mode & stat.S_IWOTH and stat.S_ISREG(info.st_mode):
            # Skipped with the real client's warning; the file counts as read.
            self.warnings.append(f"Warning: World-writable config file '{path}' is ignored")
            return
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                lines = fh.read().splitlines()
        except OSError:
            if required:
                raise OptionFileError(f"Could not open required defaults file: {path}") from None
            return
        self._parse(path, lines, depth)

    def _parse(self, path: str, lines: list[str], depth: int) -> None:
        group: str | None = None
        for number, raw in enumerate(lines, 1):
            text = raw.lstrip(_SPACE)
            if not text or text[0] in "#;":
                continue
            if text[0] == "!":
                self._directive(path, number, text, depth)
                continue
            if text[0] == "[":
                end = text.find("]", 1)
                if end < 0:
                    raise OptionFileError(f"error: Wrong group definition in config file: {path} at line {number}")
                group = text[1:end].rstrip(_SPACE)
                continue
            if group is None:
                raise OptionFileError(
                    f"error: Found option without preceding group in config file: {path} at line: {number}"
                )
            option = _option(text)
            if group.lower() in self.groups:
                self.options.append(option)

    def _directive(self, path: str, number: int, text: str, depth: int) -> None:
        if depth >= _MAX_INCLUDE_DEPTH:
            self.warnings.append(f"Warning: skipping '{text.rstrip(_SPACE)}' directive as maximum include"
                                 f"recursion level was reached in file {path} at line {number}")
            return
        body = text[1:].lstrip(_SPACE)
        for keyword in ("includedir", "include"):
            rest = body[len(keyword):]
            # The line's end counts as the space after the keyword (MariaDB reads lines with their newline).
            if body.startswith(keyword) and (not rest or rest[0] in _SPACE):
                target = body[len(keyword):].strip(_SPACE)
                if not target:
                    raise OptionFileError(f"error: Wrong '!{keyword}' directive in config file: {path} at line {number}")
                if keyword == "include":
                    self.read(target, required=False, depth=depth + 1)
                    return
                try:
                    names = sorted(os.listdir(target))
                except (OSError, ValueError) as err:  # ValueError: a NUL in the path
                    errno = err.errno if isinstance(err, OSError) else 2
                    raise OptionFileError(f"Can't read dir of '{target}' (Errcode: {errno})") from None
                for name in names:
                    if name.endswith(".cnf"):
                        self.read(os.path.join(target, name), required=False, depth=depth + 1)
                return
        # Any other '!' directive is ignored, as MariaDB does.


def _option(text: str) -> str:
    """One option line (comment removed, spaces trimmed, quotes and escapes resolved) as ``--name[=value]``."""
    text = _remove_end_comment(text)
    name, eq, value = text.partition("=")
    name = name.rstrip(_SPACE)
    if not eq:
        return "--" + name
    value = value.strip(_SPACE)
    if len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]:
        value = value[1:-1]
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i != len(value) - 1:
            i += 1
            nxt = value[i]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
        else:
            out.append(ch)
        i += 1
    return f"--{name}={''.join(out)}"


def _remove_end_comment(text: str) -> str:
    """``text`` up to the first ``#`` outside quotes (a backslash inside quotes escapes the next char)."""
    quote = ""
    escape = False
    for i, ch in enumerate(text):
        if ch in "'\"" and not escape:
            if not quote:
                quote = ch
            elif quote == ch:
                quote = ""
        if not quote and ch == "#":
            return text[:i]
        escape = bool(quote) and ch == "\\" and not escape
    return text


def load_defaults(groups: Sequence[str], argv: Sequence[str], env: Mapping[str, str] | None = None) -> Defaults:
    """What a MariaDB client reading ``groups`` and started with ``argv`` would parse.

    Raises :class:`~mariabinlog.errors.OptionFileError` with the real client's message
    for an unreadable required file or a malformed line.
    """
    env = os.environ if env is None else env
    req = split_defaults_options(argv)
    if req.no_defaults:
        return Defaults(req.rest, req.print_defaults, [])
    suffix = req.group_suffix if req.group_suffix is not None else (
        env.get("MARIADB_GROUP_SUFFIX") or env.get("MYSQL_GROUP_SUFFIX")
    )
    wanted = list(groups) + ([g + suffix for g in groups] if suffix else [])
    reader = _Reader(wanted)
    if req.defaults_file is not None:
        reader.read(_expand(req.defaults_file), required=True)
    else:
        extra = _expand(req.extra_file) if req.extra_file is not None else None
        for path in default_files(env, extra):
            reader.read(path, required=path == extra)
    return Defaults(reader.options + req.rest, req.print_defaults, reader.warnings)


def _expand(path: str) -> str:
    """A defaults file named on the command line, made absolute against the working directory."""
    return path if os.path.isabs(path) or path.startswith("~") else os.path.join(os.getcwd(), path)


def print_defaults_text(program: str, args: Sequence[str]) -> str:
    """What ``--print-defaults`` prints: the program and the argument list it would parse."""
    return f"{program} would have been started with the following arguments:\n" + "".join(
        f"{a} " for a in args
    ) + "\n"


def describe_defaults(program_groups: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The option-files paragraph of a client's ``--help``, as MariaDB prints it."""
    env = os.environ if env is None else env
    files = ["/etc/my.cnf", "/etc/mysql/my.cnf"]
    home_dir = env.get("MARIADB_HOME") or env.get("MYSQL_HOME")
    if home_dir:
        files.append(os.path.join(home_dir, "my.cnf"))
    files.append("~/.my.cnf")
    return (
        "Default options are read from the following files in the given order:\n"
        + " ".join(files) + " \n"
        + "The following groups are read: " + " ".join(program_groups) + "\n"
        + "The following options may be given as the first argument:\n"
        + "--print-defaults          Print the program argument list and exit.\n"
        + "--no-defaults             Don't read default options from any option file.\n"
        + "The following specify which files/extra groups are read (specified before remaining options):\n"
        + "--defaults-file=#         Only read default options from the given file #.\n"
        + "--defaults-extra-file=#   Read this file after the global files are read.\n"
        + "--defaults-group-suffix=# Additionally read default groups with # appended as a suffix.\n"
    )
