"""Fixtures of the replication tests: a real primary with a password-protected replication user.

``primary`` is module-scoped (each test module gets its own binlog history); tests that
need a private history ask ``mariadb_server_factory`` for their own server.  The helpers
live in ``replication_helpers.py``; this folder is put on ``sys.path`` so that test modules
import it by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mariadb_server import MariaDBServer, MariaDBServerFactory  # noqa: E402
from replication_helpers import PRIMARY_OPTIONS, Load, create_repl_user  # noqa: E402


@pytest.fixture(scope="module")
def primary(mariadb_server_factory: MariaDBServerFactory) -> MariaDBServer:
    """A primary with server id 1, ROW binlog, CRC32 checksums and the replication user."""
    server = mariadb_server_factory(*PRIMARY_OPTIONS, "--server-id=1", name="primary")
    create_repl_user(server)
    return server


@pytest.fixture
def load_factory() -> Iterator[Callable[..., Load]]:
    """Make :class:`Load` writers; every one still running at the end is stopped."""
    loads: list[Load] = []

    def make(
        server: MariaDBServer, table: str, domains: tuple[int, ...], pause: float = 0.002, *, ddl: bool = False
    ) -> Load:
        load = Load(server, table, domains, pause, ddl=ddl)
        loads.append(load)
        return load

    yield make
    for load in loads:
        load.stop_event.set()
        for thread in load.threads:
            thread.join(timeout=30)
