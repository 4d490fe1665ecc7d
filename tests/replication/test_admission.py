"""The binlog server's door on its own: connection count, failed-login slowdown, one login at a
time for a slowed address, what counts as a failure, bounded memory."""

from __future__ import annotations

import pytest

from mariabinlog.replication import admission as A


def _fail(door: A.Admission, address: str, times: int) -> None:
    for _ in range(times):
        ticket = door.admit(address)
        ticket.login_done(False)
        ticket.close()


def test_max_connections_refuses_with_1040_and_frees_on_close() -> None:
    door = A.Admission(max_connections=2)
    first, _ = door.admit("10.0.0.1"), door.admit("10.0.0.2")
    with pytest.raises(A.Refusal) as refused:
        door.admit("10.0.0.3")
    assert (refused.value.code, refused.value.message) == (1040, "Too many connections")
    first.close()
    first.close()  # twice is once
    door.admit("10.0.0.3")
    assert door.connections == 2 and door.refused == 1


def test_failed_logins_slow_their_address_down_doubling_up_to_the_cap() -> None:
    door = A.Admission(login_delay=1.0, login_delay_max=5.0)
    delays = []
    for _ in range(7):
        ticket = door.admit("10.0.0.1")
        delays.append(ticket.login_delay())
        ticket.login_done(False)
        ticket.close()
    assert delays == [0, 0, 0, 1, 2, 4, 5]
    assert door.admit("10.0.0.2").login_delay() == 0  # other addresses are not concerned
    # Right or wrong, the answer waits; a success clears the address.
    ticket = door.admit("10.0.0.1")
    assert ticket.login_delay() == 5
    ticket.login_done(True)
    ticket.close()
    assert door.failures("10.0.0.1") == 0 and door.admit("10.0.0.1").login_delay() == 0


def test_a_slowed_address_may_log_in_once_at_a_time() -> None:
    door = A.Admission()
    _fail(door, "10.0.0.1", A.THRESHOLD)
    trying = door.admit("10.0.0.1")
    with pytest.raises(A.Refusal) as refused:
        door.admit("10.0.0.1")
    assert refused.value.code == 1129 and "10.0.0.1" in refused.value.message
    trying.login_done(False)  # answered: the next may come (before the connection is closed)
    door.admit("10.0.0.1").close()
    trying.close()
    assert door.connections == 0


def test_what_counts_as_a_failure() -> None:
    door = A.Admission()
    door.admit("10.0.0.1").close()  # closed before trying: a health check, no failure
    assert door.failures("10.0.0.1") == 0
    door.admit("10.0.0.1").close(failed=True)  # a malformed handshake, or no login in time
    assert door.failures("10.0.0.1") == 1
    ticket = door.admit("10.0.0.1")
    ticket.login_done(True)
    ticket.close(failed=True)  # after a login, the session's end is no login failure
    assert door.failures("10.0.0.1") == 0


def test_no_delay_when_off_and_old_failures_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    door = A.Admission(login_delay=0)
    _fail(door, "10.0.0.1", 10)
    assert door.admit("10.0.0.1").login_delay() == 0 and door.admit("10.0.0.1")  # and no one-at-a-time
    door = A.Admission()
    _fail(door, "10.0.0.1", 5)
    later = A.time.monotonic() + A.FORGET_AFTER + 1
    monkeypatch.setattr(A.time, "monotonic", lambda: later)
    assert door.failures("10.0.0.1") == 0


def test_the_address_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(A, "CAPACITY", 100)
    door = A.Admission()
    for n in range(250):
        _fail(door, f"10.0.{n // 256}.{n % 256}", 1)
    assert len(door._addresses) == 100  # noqa: SLF001
    assert door.failures("10.0.0.249") == 1 and door.failures("10.0.0.0") == 0  # oldest forgotten first
