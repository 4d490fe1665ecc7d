"""A private, real MariaDB server for tests and benchmarks.

:class:`MariaDBServer` creates its own datadir with ``mariadb-install-db``, runs
``/usr/sbin/mariadbd --no-defaults`` on a Unix socket in a short temporary folder
and on a free port bound to 127.0.0.1 only, and talks to it through the real
``mariadb`` command-line client.  Nothing of the Debian service is used: no
``/etc/mysql`` option files, no ``/run/mysqld``, no systemd.  Running as root
works (``--user=root`` is passed where the effective user is root).

Used by ``tests/conftest.py`` (fixtures) and ``bench/workload.py`` (which puts
this folder on ``sys.path``).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

#: Folders searched after ``PATH``: Debian puts ``mariadbd`` in /usr/sbin, which a
#: non-root ``PATH`` often lacks.
_EXTRA_BIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin", "/usr/local/mysql/bin")

#: The programs the harness needs.
REQUIRED_PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-binlog")

#: Options of the server that recorded ``tests/corpus`` (see its README and
#: ``scripts/make_corpus.py``), without ``--log-bin``: a replay server started with these
#: matches the recording one.
CORPUS_OPTIONS: tuple[str, ...] = (
    "--server-id=1",
    "--binlog-annotate-row-events=ON",
    "--default-time-zone=+00:00",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--gtid-strict-mode=0",
    "--innodb-log-file-size=8M",
    "--innodb-buffer-pool-size=64M",
    "--max-allowed-packet=64M",
)

#: Small-footprint defaults; options given to a server come after these and win.
#: ``--skip-name-resolve``: no DNS look-ups, so a machine without a resolvable hostname works.
DEFAULT_OPTIONS: tuple[str, ...] = (
    "--skip-name-resolve",
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--max-allowed-packet=64M",
)

#: Options that shape the files ``mariadb-install-db`` creates, so it gets them too.
_INSTALL_TIME_OPTIONS = ("innodb-", "lower-case-table-names")

_BATCH_ESCAPES = {"\\0": "\0", "\\b": "\b", "\\n": "\n", "\\r": "\r", "\\t": "\t", "\\Z": "\x1a", "\\\\": "\\"}
_BATCH_ESCAPE_RE = re.compile(r"\\[0bnrtZ\\]")

_running: set["MariaDBServer"] = set()


class MariaDBUnavailable(RuntimeError):
    """A program the harness needs is not installed."""


class MariaDBClientError(RuntimeError):
    """The ``mariadb`` client exited non-zero (an SQL error, or no server)."""

    def __init__(self, command: Sequence[str], returncode: int, stderr: str) -> None:
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"mariadb client exited {returncode}: {stderr.strip()}")


def find_program(name: str) -> str | None:
    """Return the full path of ``name`` from ``PATH`` or the usual sbin folders, or None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _EXTRA_BIN_DIRS:
        candidate = Path(folder, name)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_programs() -> list[str]:
    """Names from :data:`REQUIRED_PROGRAMS` that cannot be found."""
    return [name for name in REQUIRED_PROGRAMS if find_program(name) is None]


def program(name: str) -> str:
    """Full path of a required program; :class:`MariaDBUnavailable` if it is missing."""
    found = find_program(name)
    if found is None:
        raise MariaDBUnavailable(f"{name} not found (install mariadb-server and mariadb-client)")
    return found


def unescape_batch(value: str) -> str:
    """Undo the escaping that ``mariadb --batch`` applies to tabs, newlines, NULs, backslashes."""
    return _BATCH_ESCAPE_RE.sub(lambda match: _BATCH_ESCAPES[match.group(0)], value)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _option_name(option: str) -> str:
    return option.lstrip("-").split("=", 1)[0].replace("_", "-")


def _short_tempdir() -> Path:
    """A fresh folder with a short path: a Unix socket path must fit in 107 bytes."""
    base = "/tmp" if os.access("/tmp", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="mbl-", dir=base))


class MariaDBServer:
    """One private ``mariadbd`` with its own datadir under ``basedir``.

    ``options`` are extra server options (``--log-bin``, ``--binlog-format=ROW``,
    ``--server-id=2``, ...).  ``env`` is added to ``mariadbd``'s environment only (the
    corpus generator runs the server under libfaketime this way).  With a bare ``--log-bin`` the binlogs are named
    ``mysql-bin.NNNNNN`` like the corpus's.  The datadir is kept after
    :meth:`stop` so tests can read the binlogs; a later :meth:`start` reuses it.
    """

    host = "127.0.0.1"
    user = "root"

    def __init__(
        self,
        basedir: Path,
        options: Sequence[str] = (),
        *,
        start_timeout: float = 90.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.basedir = Path(basedir).resolve()
        self.datadir = self.basedir / "data"
        self.error_log = self.basedir / "error.log"
        self.options = tuple(options)
        self.start_timeout = start_timeout
        self.env = dict(env or {})
        self.port = 0
        self._rundir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def socket(self) -> Path:
        """Path of the server's Unix socket (valid while running)."""
        if self._rundir is None:
            raise RuntimeError("server is not running")
        return self._rundir / "mysqld.sock"

    @property
    def running(self) -> bool:
        """True while the ``mariadbd`` process started by :meth:`start` is alive."""
        return self._process is not None and self._process.poll() is None

    def server_options(self) -> list[str]:
        """Every option after ``--no-defaults`` that :meth:`start` passes (port and socket included)."""
        assert self._rundir is not None
        user = ["--user=root"] if os.geteuid() == 0 else []
        return [
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            # The pid file's base name is the default binlog base name: mysql-bin.NNNNNN.
            f"--pid-file={self._rundir / 'mysql.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self._rundir}",
            *user,
            *DEFAULT_OPTIONS,
            *self.options,
        ]

    def install(self) -> None:
        """Create the datadir with ``mariadb-install-db`` (root: no password, TCP and socket)."""
        self.basedir.mkdir(parents=True, exist_ok=True)
        install_options = [
            option
            for option in (*DEFAULT_OPTIONS, *self.options)
            if _option_name(option).startswith(_INSTALL_TIME_OPTIONS)
        ]
        user = ["--user=root"] if os.geteuid() == 0 else []
        # A private tmpdir: bootstraps running side by side in /tmp can meet each other's
        # temporary tables (#sql-temptable-PID-...) and abort.
        tmpdir = self.basedir / "install-tmp"
        tmpdir.mkdir(exist_ok=True)
        command = [
            program("mariadb-install-db"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={tmpdir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            # Grants for 127.0.0.1 and ::1, and no hostname look-up (--force skips it), so a
            # machine whose hostname does not resolve (no /etc/hosts) still works.
            "--skip-name-resolve",
            "--force",
            *user,
            *install_options,
        ]
        log = self.basedir / "install.log"
        with log.open("wb") as out:
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed ({result.returncode}):\n{_tail(log)}")

    def start(self) -> "MariaDBServer":
        """Install if needed, start ``mariadbd`` and wait until it answers a query."""
        if self.running:
            return self
        if not (self.datadir / "mysql").is_dir():
            self.install()
        mariadbd = program("mariadbd")
        for attempt in range(3):
            self._rundir = _short_tempdir()
            self.port = free_port()
            log_start = self.error_log.stat().st_size if self.error_log.exists() else 0
            self._process = subprocess.Popen(
                [mariadbd, "--no-defaults", *self.server_options()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **self.env} if self.env else None,
            )
            _running.add(self)
            _stop_on_sigterm()
            try:
                self._wait_ready()
                return self
            except RuntimeError:
                log_text = _read_from(self.error_log, log_start)
                self.stop()
                port_taken = "Address already in use" in log_text or "Do you already have another" in log_text
                if port_taken and attempt < 2:
                    continue
                raise RuntimeError(f"mariadbd did not start; error log:\n{log_text[-4000:]}") from None
        raise AssertionError("unreachable")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"mariadbd exited with status {self._process.returncode}")
            if self.socket.exists():
                try:
                    probe = subprocess.run(
                        self.client_command("--connect-timeout=5", "-e", "SELECT 1"),
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        timeout=30,
                    )
                except subprocess.TimeoutExpired:
                    continue
                if probe.returncode == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"mariadbd not ready after {self.start_timeout:.0f} s")

    def stop(self, timeout: float = 60.0) -> None:
        """Shut down cleanly (SIGTERM), SIGKILL after ``timeout`` s; keeps the datadir."""
        process, self._process = self._process, None
        _running.discard(self)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        if self._rundir is not None:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    def __enter__(self) -> "MariaDBServer":
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"port {self.port}" if self.running else "stopped"
        return f"MariaDBServer({self.basedir}, {state})"

    # ------------------------------------------------------------------ client

    def client_command(self, *args: str, database: str | None = None) -> list[str]:
        """Command line of the ``mariadb`` client connected to this server (batch, binary mode)."""
        command = [
            program("mariadb"),
            "--no-defaults",
            f"--socket={self.socket}",
            f"--user={self.user}",
            "--default-character-set=utf8mb4",
            "--batch",
            "--binary-mode",
            *args,
        ]
        if database is not None:
            command.append(f"--database={database}")
        return command

    def connect_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``pymysql.connect`` over TCP on 127.0.0.1."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": ""}

    def _client(self, args: Sequence[str], stdin: bytes | None, database: str | None, timeout: float) -> str:
        command = self.client_command(*args, database=database)
        result = subprocess.run(
            command,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise MariaDBClientError(command, result.returncode, result.stderr.decode("utf-8", "replace"))
        return result.stdout.decode("utf-8", "surrogateescape")

    def sql(self, query: str, *, database: str | None = None, header: bool = False, timeout: float = 300) -> str:
        """Run ``query`` (one or more ``;``-separated statements); return the client's batch output."""
        args = ["-e", query] if header else ["--skip-column-names", "-e", query]
        return self._client(args, None, database, timeout)

    def rows(self, query: str, *, database: str | None = None, timeout: float = 300) -> list[tuple[str, ...]]:
        """Run ``query`` and return its rows as tuples of unescaped strings (NULL reads ``'NULL'``)."""
        text = self.sql(query, database=database, timeout=timeout)
        return [tuple(unescape_batch(field) for field in line.split("\t")) for line in text.splitlines()]

    def records(self, query: str, *, database: str | None = None, timeout: float = 300) -> list[dict[str, str]]:
        """Run ``query`` and return its rows as dicts keyed by column name."""
        lines = self.sql(query, database=database, header=True, timeout=timeout).splitlines()
        if not lines:
            return []
        names = lines[0].split("\t")
        return [dict(zip(names, (unescape_batch(f) for f in line.split("\t")), strict=True)) for line in lines[1:]]

    def pipe(self, sql_text: str | bytes, *, database: str | None = None, timeout: float = 600) -> str:
        """Feed a script (e.g. ``mariadb-binlog`` output) to the client's stdin; return its output."""
        data = sql_text.encode("utf-8") if isinstance(sql_text, str) else sql_text
        return self._client([], data, database, timeout)

    def checksum_table(self, *tables: str, extended: bool = True) -> dict[str, int | None]:
        """``CHECKSUM TABLE`` of ``db.table`` names; None for a table that does not exist."""
        if not tables:
            raise ValueError("checksum_table needs at least one table")
        query = f"CHECKSUM TABLE {', '.join(tables)}{' EXTENDED' if extended else ''}"
        return {name: None if value == "NULL" else int(value) for name, value in self.rows(query)}

    # ------------------------------------------------------------------ binlogs

    def binlog_basename(self) -> Path:
        """``@@log_bin_basename``: the binlog path without the ``.NNNNNN`` suffix."""
        (value,) = self.rows("SELECT @@log_bin_basename")[0]
        if value == "NULL":
            raise RuntimeError("binary logging is off (start the server with --log-bin)")
        return Path(value)

    def binlog_files(self) -> list[Path]:
        """Paths of the binlog files, oldest first, from ``SHOW BINARY LOGS``."""
        folder = self.binlog_basename().parent
        return [folder / row[0] for row in self.rows("SHOW BINARY LOGS")]

    def binlog_events(self, log_name: str | None = None) -> list[dict[str, str]]:
        """``SHOW BINLOG EVENTS [IN log_name]`` as dicts (Log_name, Pos, Event_type, ...)."""
        where = f" IN '{log_name}'" if log_name else ""
        return self.records(f"SHOW BINLOG EVENTS{where}")

    def flush_binlogs(self) -> None:
        """``FLUSH BINARY LOGS``: close the current binlog file and open the next."""
        self.sql("FLUSH BINARY LOGS")


class MariaDBServerFactory:
    """Starts private MariaDB servers (each in its own folder) and stops them all at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.servers: list[MariaDBServer] = []

    def __call__(self, *options: str, name: str = "server") -> MariaDBServer:
        """Start and return a server with these extra options (``"--log-bin"``, ...)."""
        server = MariaDBServer(self.root / f"{name}-{len(self.servers) + 1}", options)
        self.servers.append(server)
        return server.start()

    def stop_all(self) -> None:
        """Stop every server this factory started."""
        for server in self.servers:
            server.stop()


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def _tail(path: Path, size: int = 4000) -> str:
    return _read_from(path, 0)[-size:]


def _stop_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, ``kill``) unwind like Ctrl-C, so ``finally`` blocks, pytest's
    teardown and :func:`_stop_leftovers` stop the servers: by default SIGTERM ends Python at
    once, and a ``start_new_session`` server outlives it.  Only from the main thread, and only
    where nobody installed a handler of their own."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(number: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise KeyboardInterrupt(f"signal {number}")


@atexit.register
def _stop_leftovers() -> None:
    """Never leave a private server behind when the Python process ends."""
    for server in list(_running):
        server.stop(timeout=30)
