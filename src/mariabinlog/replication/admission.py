"""Who may connect to the binlog server, and how fast an address may fail to log in.

:class:`Admission` is the server's door (``mariabinlog serve``), kept apart from the sockets
so that its rules read, and are tested, on their own:

* At most ``max_connections`` connections at once (MariaDB's ``max_connections``): one more
  is answered ERROR 1040 "Too many connections" instead of a handshake and closed, before
  any thread is spent on it.
* Failed logins slow their address down, as MySQL's ``connection_control`` plugin does (MariaDB
  itself only blocks a host after ``max_connect_errors`` broken handshakes).  A failure is a
  wrong password, a malformed handshake, or no login within ``connect_timeout``; a client
  that closes before sending anything (a health check) is none.  From the
  :data:`THRESHOLD`-th consecutive failure of an address on, every login attempt from it is
  answered only after ``login_delay`` seconds, doubled per further failure and capped at
  ``login_delay_max``, right or wrong (so that the timing of an answer tells nothing), and it
  may have one login in progress at a time (ERROR 1129 for more), so that parallel
  connections neither multiply its guesses nor fill the server.  A successful login clears
  the address, and so do :data:`FORGET_AFTER` seconds without a failure.  At most
  :data:`CAPACITY` addresses are remembered (least recently failed forgotten first), so a
  flood of addresses cannot grow the table.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Final

THRESHOLD: Final = 3
"""Consecutive failed logins of an address before its attempts are slowed down."""

FORGET_AFTER: Final = 600.0
"""Seconds without a failure after which an address starts afresh."""

CAPACITY: Final = 4096
"""Addresses remembered at most."""

ER_CON_COUNT_ERROR: Final = 1040
ER_HOST_IS_BLOCKED: Final = 1129


class Refusal(Exception):
    """A connection the door does not let in: the MariaDB error ``code`` and ``message`` it gets."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Address:
    """What the door remembers of one client address."""

    __slots__ = ("failures", "last_failure", "logging_in")

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure = 0.0
        self.logging_in = 0


class Ticket:
    """One admitted connection: its login's delay and outcome, and its end (:meth:`close`)."""

    __slots__ = ("_door", "address", "_counted", "_login_open", "_closed")

    def __init__(self, door: Admission, address: str, counted: bool) -> None:
        self._door = door
        self.address = address
        self._counted = counted  # counted as a login in progress of its address
        self._login_open = True
        self._closed = False

    def login_delay(self) -> float:
        """Seconds to wait before answering this connection's login (0 unless its address failed)."""
        return self._door._delay(self.address)

    def login_done(self, ok: bool) -> None:
        """The login succeeded or failed (call before answering it, so the address is free again)."""
        if self._login_open:
            self._login_open = False
            self._door._login_done(self.address, ok, self._counted)

    def close(self, *, failed: bool = False) -> None:
        """The connection ended; ``failed``: during a login that broke the protocol or timed out."""
        if self._closed:
            return
        self._closed = True
        if self._login_open:
            self._login_open = False
            self._door._login_done(self.address, False if failed else None, self._counted)
        self._door._release()


class Admission:
    """The binlog server's door; thread-safe (see the module docstring)."""

    def __init__(self, *, max_connections: int = 151, login_delay: float = 1.0, login_delay_max: float = 30.0) -> None:
        self.max_connections = max_connections
        self.login_delay = login_delay
        self.login_delay_max = login_delay_max
        self._lock = threading.Lock()
        self._connections = 0
        self._addresses: OrderedDict[str, _Address] = OrderedDict()
        #: Connections refused so far (too many, or a slowed address already logging in).
        self.refused = 0

    @property
    def connections(self) -> int:
        """Connections admitted and not yet closed."""
        with self._lock:
            return self._connections

    def admit(self, address: str) -> Ticket:
        """A ticket for a new connection from ``address``, or :class:`Refusal`."""
        with self._lock:
            if self._connections >= self.max_connections:
                self.refused += 1
                raise Refusal(ER_CON_COUNT_ERROR, "Too many connections")
            record = self._record(address, create=False)
            if record is not None and self._slowed(record) and record.logging_in:
                self.refused += 1
                raise Refusal(
                    ER_HOST_IS_BLOCKED,
                    f"Host '{address}' is blocked because of many connection errors;"
                    " it may try one login at a time until one succeeds",
                )
            if record is not None:
                record.logging_in += 1
            self._connections += 1
            return Ticket(self, address, record is not None)

    def failures(self, address: str) -> int:
        """Consecutive failed logins remembered for ``address``."""
        with self._lock:
            record = self._record(address, create=False)
            return 0 if record is None else record.failures

    # -- for Ticket ------------------------------------------------------------------------------

    def _record(self, address: str, *, create: bool) -> _Address | None:
        """The address's record (lock held); an old one is forgotten, a new one made if ``create``."""
        record = self._addresses.get(address)
        if record is not None and time.monotonic() - record.last_failure > FORGET_AFTER and not record.logging_in:
            del self._addresses[address]
            record = None
        if record is None and create:
            record = self._addresses[address] = _Address()
            while len(self._addresses) > CAPACITY:
                self._addresses.popitem(last=False)
        return record

    def _slowed(self, record: _Address) -> bool:
        return self.login_delay > 0 and record.failures >= THRESHOLD

    def _delay(self, address: str) -> float:
        with self._lock:
            record = self._record(address, create=False)
            if record is None or not self._slowed(record):
                return 0.0
            return min(self.login_delay * 2 ** (record.failures - THRESHOLD), self.login_delay_max)

    def _login_done(self, address: str, ok: bool | None, counted: bool) -> None:
        """``ok`` None: the client left before trying (not a failure)."""
        with self._lock:
            record = self._record(address, create=ok is False)
            if record is None:
                return
            if counted and record.logging_in:
                record.logging_in -= 1
            if ok:
                del self._addresses[address]
            elif ok is False:
                record.failures += 1
                record.last_failure = time.monotonic()
                self._addresses.move_to_end(address)

    def _release(self) -> None:
        with self._lock:
            self._connections -= 1
