"""The client and server state machines keep every transition in one table (h11's way)."""

from __future__ import annotations

from enum import Enum

import pytest

from mariabinlog.codec.wire import protocol as P


@pytest.mark.parametrize(
    ("table", "states", "machine"),
    [
        (P.CLIENT_TRANSITIONS, P.ClientState, P.ClientProtocol),
        (P.SERVER_TRANSITIONS, P.ServerState, P.ServerProtocol),
    ],
)
def test_every_state_has_a_row_and_every_trigger_is_real(
    table: dict[Enum, dict[type | str, Enum]], states: type[Enum], machine: type
) -> None:
    assert set(table) == set(states)
    for row in table.values():
        for trigger, target in row.items():
            assert isinstance(target, states)
            if isinstance(trigger, str) and trigger != P.MORE_RESULTS:
                assert callable(getattr(machine, trigger)), trigger
            elif not isinstance(trigger, str):
                assert trigger in P.ClientEvent.__args__ + P.ServerEvent.__args__, trigger


def test_a_send_the_table_does_not_allow_names_the_states_that_do() -> None:
    server = P.ServerProtocol()
    with pytest.raises(P.LocalProtocolError, match=r"cannot send_eof in state start \(allowed: dumping\)"):
        server.send_eof()
    assert server.state is P.ServerState.START  # a refused send moves nothing


def test_quit_and_a_closed_peer_move_any_state() -> None:
    client = P.ClientProtocol()
    client.send_quit()
    assert client.state is P.ClientState.CLOSED
    server = P.ServerProtocol()
    server.receive_data(b"")
    assert isinstance(server.next_event(), P.ConnectionClosed) and server.state is P.ServerState.CLOSED
