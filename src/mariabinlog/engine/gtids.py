"""The binlog's GTID state as the writer keeps it: ``@@gtid_binlog_state``, the pairs changed
in the current file, the next sequence number of each domain.

Why a room of its own: the state is what the GTID state records carry (full at page 1 of a
file, differential at interval pages, ibb-format.md §6.2), what commits are numbered from,
and what FLUSH BINARY LOGS DELETE_DOMAIN_ID and RESET MASTER change.  :class:`Gtids` owns it;
the :class:`~mariabinlog.engine.engine.Engine` holds it and calls it with the write lock held
(every method but the constructor), so the state is exactly commit order.  The GTID event
that starts a group (:func:`gtid_event`) is written from it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..codec.events import FL_TRANSACTIONAL, GtidEvent
from ..codec.gtid import BinlogState, Gtid
from ..errors import EngineError


class Gtids:
    """The GTID state, the pairs changed since the current file began, the next seq_no per domain."""

    def __init__(self, server_id: int) -> None:
        self.server_id = server_id
        self.state = BinlogState()
        #: (domain, server) pairs written since page 1 of the current file (differential records)
        self.changed: set[tuple[int, int]] = set()
        self._next_seq: dict[int, int] = {}

    def restore(self, state: BinlogState, changed: set[tuple[int, int]]) -> None:
        """The state recovery found (at open)."""
        self.state = state
        self.changed = changed
        self._next_seq = {}
        for domain, _, seq in state.to_list():
            if seq + 1 > self._next_seq.get(domain, 0):
                self._next_seq[domain] = seq + 1

    def clear(self) -> None:
        """RESET MASTER: an empty state."""
        self.state = BinlogState()
        self.changed = set()
        self._next_seq = {}

    def record_gtids(self, page_no: int) -> list[Gtid]:
        """The GTIDs of a state record: full at page 1 (which starts the changed set afresh),
        differential (pairs changed in this file) at interval pages."""
        gtids = list(self.state.to_list())
        if page_no == 1:
            self.changed = set()
        else:
            changed = self.changed
            gtids = [g for g in gtids if (g.domain, g.server) in changed]
        return gtids

    def assign(self, gtid: Gtid | None, domain_id: int, server_id: int | None) -> Gtid:
        """The GTID to write: the one given, or the next seq_no of ``domain_id``."""
        if gtid is None:
            gtid = Gtid(domain_id, self.server_id if server_id is None else server_id,
                        self._next_seq.get(domain_id, 1))
        return gtid

    def note(self, gtid: Gtid) -> None:
        """A group with ``gtid`` is being written (inside the layout operation)."""
        self.note_many((gtid,))

    def note_many(self, gtids: Sequence[Gtid]) -> None:
        """Groups with these GTIDs, in commit order, are being written (a batch's records)."""
        update, changed, next_seq = self.state.update, self.changed, self._next_seq
        for gtid in gtids:
            update(gtid)
            domain, server, seq = gtid
            changed.add((domain, server))
            if seq >= next_seq.get(domain, 0):
                next_seq[domain] = seq + 1

    def delete_domains(self, domains: Iterable[int], initial: BinlogState | None) -> list[str]:
        """FLUSH BINARY LOGS DELETE_DOMAIN_ID: drop domains whose GTIDs are all in the initial
        state (``initial``: the state at the start of the oldest file); returns warnings."""
        warnings = []
        gone = set()
        current = self.state.to_list()
        start = initial.to_list() if initial is not None else ()
        for domain in domains:
            mine = [g for g in current if g.domain == domain]
            if not mine:
                warnings.append(f"The gtid domain being deleted ('{domain}') is not in the current binlog state")
                continue
            if sorted(mine) != sorted(g for g in start if g.domain == domain):
                raise EngineError(
                    "Could not delete gtid domain. Reason: binlog files may contain gtids from the domain"
                    f" ('{domain}') being deleted. Make sure to first purge those files."
                )
            gone.add(domain)
        if gone:
            self.state = BinlogState.from_list(g for g in current if g.domain not in gone)
            self.changed = {pair for pair in self.changed if pair[0] not in gone}
            for domain in gone:
                self._next_seq.pop(domain, None)
        return warnings


def gtid_event(gtid: Gtid, *, flags2: int = FL_TRANSACTIONAL, timestamp: int | None = None, **fields: Any) -> bytes:
    """The GTID event that starts an event group (no checksum, ``log_pos`` 0)."""
    return GtidEvent(
        seq_no=gtid.seq,
        domain_id=gtid.domain,
        flags2=flags2,
        server_id=gtid.server,
        timestamp=int(time.time()) if timestamp is None else timestamp,
        **fields,
    ).encode()
