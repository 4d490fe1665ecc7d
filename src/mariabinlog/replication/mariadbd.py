"""A private ``mariadbd`` that mariabinlog starts itself: the server ``restore`` replays into.

:class:`PrivateServer` runs the installed ``mariadbd`` on an existing datadir with its own
Unix socket (in a fresh 0700 folder) and a free port bound to 127.0.0.1 only, without
grant checks (nobody but this process knows the socket; the port answers on loopback only),
without a binlog and without starting replication.  It is stopped by its process id
(SIGTERM: a clean InnoDB shutdown), and the kernel sends it SIGTERM too if the process that
started it dies (``PR_SET_PDEATHSIG``), so a killed ``restore`` never leaves a server behind.
Nothing of the Debian service is used: no ``/etc/mysql`` option files, no ``/run/mysqld``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from ..errors import ConnectionLostError, RestoreError, ServerError
from .net import Connection, ConnectionOptions

log = logging.getLogger(__name__)

#: Where Debian and tarballs put the server programs, searched after ``PATH``.
_BIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/bin")

_PR_SET_PDEATHSIG = 1


def find_program(name: str, *aliases: str) -> str:
    """The full path of program ``name`` (or one of its older ``aliases``); RestoreError when absent."""
    for candidate in (name, *aliases):
        found = shutil.which(candidate)
        if found:
            return found
        for folder in _BIN_DIRS:
            path = Path(folder, candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    raise RestoreError(f"{name} not found (install it: Debian's package is {_PACKAGES.get(name, name)})")


_PACKAGES = {"mariadbd": "mariadb-server", "mariadb-backup": "mariadb-backup"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """SIGTERM this child when the process that started it dies (Linux; elsewhere a no-op)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _tail(path: Path, size: int = 3000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - size))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


class PrivateServer:
    """One ``mariadbd`` on ``datadir`` (see the module docstring); use as a context manager."""

    def __init__(
        self,
        datadir: str | os.PathLike[str],
        *,
        defaults_file: str | os.PathLike[str] | None = None,
        options: tuple[str, ...] = (),
        start_timeout: float = 300.0,
        stop_timeout: float = 600.0,
    ) -> None:
        self.datadir = Path(datadir).resolve()
        self.defaults_file = Path(defaults_file).resolve() if defaults_file else None
        self.options = options
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.rundir: Path | None = None
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self.process.pid if self.process is not None else None

    @property
    def socket(self) -> str:
        """The server's Unix socket."""
        assert self.rundir is not None
        return str(self.rundir / "mysqld.sock")

    @property
    def error_log(self) -> Path:
        """The server's error log (in its run folder, removed after a clean stop)."""
        assert self.rundir is not None
        return self.rundir / "error.log"

    def connection_options(self) -> ConnectionOptions:
        """How to reach it: root over the Unix socket (no grant checks), generous timeouts."""
        return ConnectionOptions(socket=self.socket, user="root", read_timeout=3600.0)

    def command(self) -> list[str]:
        """The ``mariadbd`` command line."""
        assert self.rundir is not None
        first = [f"--defaults-file={self.defaults_file}"] if self.defaults_file else ["--no-defaults"]
        user = ["--user=root"] if os.geteuid() == 0 else []
        return [
            find_program("mariadbd", "mysqld"),
            *first,
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self.rundir / 'mariadbd.pid'}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.rundir}",
            "--skip-grant-tables",
            "--skip-log-bin",
            "--skip-slave-start",
            "--skip-name-resolve",
            *user,
            *self.options,
        ]

    def start(self) -> PrivateServer:
        """Start the server and wait until it answers; RestoreError with its log when it does not."""
        for attempt in range(3):
            self.rundir = Path(tempfile.mkdtemp(prefix="mbl-srv-", dir="/tmp" if os.access("/tmp", os.W_OK) else None))
            self.port = _free_port()
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            log.info("started mariadbd (pid %d) on %s, socket %s, port %d", self.process.pid, self.datadir,
                     self.socket, self.port)
            try:
                self._wait_ready()
                return self
            except RestoreError:
                text = _tail(self.error_log)
                self.stop(check=False)
                if "Address already in use" in text and attempt < 2:
                    continue
                raise RestoreError(f"mariadbd did not start on {self.datadir}; its error log ends:\n{text}") from None
        raise AssertionError("unreachable")

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RestoreError(f"mariadbd exited with status {self.process.returncode}")
            if os.path.exists(self.socket):
                try:
                    with Connection.open(self.connection_options()) as conn:
                        conn.query("SELECT 1")
                    return
                except (ConnectionLostError, ServerError):
                    pass
            time.sleep(0.05)
        raise RestoreError(f"mariadbd did not answer within {self.start_timeout:.0f} s")

    def stop(self, *, check: bool = True) -> None:
        """Shut the server down cleanly (SIGTERM to its pid) and wait; RestoreError (with
        ``check``) when it does not exit with status 0 in time."""
        process, self.process = self.process, None
        try:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=60)
                    if check:
                        raise RestoreError(
                            f"mariadbd (pid {process.pid}) did not shut down within {self.stop_timeout:.0f} s;"
                            " it was killed, InnoDB will recover at the next start"
                        ) from None
            if check and process is not None and process.returncode != 0:
                raise RestoreError(
                    f"mariadbd (pid {process.pid}) ended with status {process.returncode};"
                    f" its error log ends:\n{_tail(self.error_log)}"
                )
        finally:
            if self.rundir is not None and (process is None or process.poll() is not None):
                shutil.rmtree(self.rundir, ignore_errors=True)
                self.rundir = None

    def __enter__(self) -> PrivateServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(check=exc[0] is None)


def wait_gone(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` has exited within ``timeout`` seconds (a server left by a killed run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
        time.sleep(0.1)
    return False
