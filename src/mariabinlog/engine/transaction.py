"""An event group being built (``binlog_oob_data``) and the OOB forest it spills into.

Why a room of its own: a transaction larger than the spill size is written out-of-band
while it runs, piece by piece, as the nodes of an OOB forest (ibb-format.md §6.3); its
COMMIT (or XA_PREPARE) record then only names the forest.  :class:`Transaction` decides
what is buffered and what is spilled; the engine (an :class:`OobHost`) writes each piece in
commit order and remembers the oldest file a running forest lives in (purge guard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ..codec.gtid import Gtid
from ..codec.ibb.records import OobRef, Xid
from ..codec.ibb.writer import OobForestBuilder
from ..codec.primitives import byte_view
from ..errors import EngineError


class CommitInfo(NamedTuple):
    """Where a commit record went and the LSN that makes it durable."""

    gtid: Gtid
    file_no: int
    offset: int
    end_file_no: int
    end_offset: int
    lsn: int


@dataclass
class PendingXa:
    """A prepared XA transaction not yet committed or rolled back."""

    xid: Xid
    file_no: int
    oob: OobRef | None
    engine_count: int = 1


class OobHost(Protocol):
    """What a :class:`Transaction` needs from the engine that writes it."""

    @property
    def spill_size(self) -> int:
        """Bytes a group may buffer before it goes out-of-band."""
        ...

    @property
    def piece_size(self) -> int:
        """Bytes per OOB node."""
        ...

    def write_oob_piece(self, trx: Transaction, data: bytes | memoryview) -> None:
        """Write one OOB node of ``trx`` in commit order."""
        ...

    def xa_prepare(self, trx: Transaction, xid: Xid, engine_count: int, host_redo: Sequence[bytes]) -> None:
        """XA PREPARE of ``trx``."""
        ...

    def forget(self, trx: Transaction) -> None:
        """Drop ``trx``'s purge guard (rolled back)."""
        ...


class Transaction:
    """An event group being built (``binlog_oob_data``): kept in memory up to the spill size,
    then written out-of-band piece by piece while it runs.

    Finish it with :meth:`Engine.commit` (``trx=``), :meth:`prepare` (XA) or :meth:`rollback`;
    OOB data already written by a rolled-back transaction stays in the binlog as garbage.
    """

    __slots__ = ("__weakref__", "_buf", "engine", "forest", "size", "state")

    def __init__(self, engine: OobHost) -> None:
        self.engine = engine
        self._buf = bytearray()
        self.forest: OobForestBuilder | None = None
        self.state = "active"
        self.size = 0

    @property
    def spilled(self) -> bool:
        """True once part of the group went out-of-band."""
        return self.forest is not None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append event bytes; spills out-of-band once the group passes the spill size."""
        if self.state != "active":
            raise EngineError(f"transaction is {self.state}")
        view = byte_view(data)
        self.size += len(view)
        if self.forest is None and len(self._buf) + len(view) <= self.engine.spill_size:
            self._buf += view
            return
        if self.forest is None:
            self.forest = OobForestBuilder()
        piece = self.engine.piece_size
        buf = self._buf
        # the buffer (up to the spill size) goes first, in pieces: no node is ever larger than
        # a piece, so no record is larger than a binlog file holds (EngineConfig.record_room)
        while buf and len(buf) + len(view) >= piece:
            if len(buf) < piece:
                take = piece - len(buf)
                buf += view[:take]
                view = view[take:]
            self.engine.write_oob_piece(self, bytes(buf[:piece]))
            del buf[:piece]
        while len(view) >= piece:
            self.engine.write_oob_piece(self, view[:piece])
            view = view[piece:]
        buf += view

    def _spill_rest(self, force: bool = False) -> None:
        """Write what is still buffered as OOB (at commit of a spilled group, or at XA PREPARE)."""
        if self._buf and (self.forest is not None or force):
            if self.forest is None:
                self.forest = OobForestBuilder()
            piece = self.engine.piece_size
            view = memoryview(bytes(self._buf))
            self._buf = bytearray()
            while view:
                self.engine.write_oob_piece(self, view[:piece])
                view = view[piece:]

    def prepare(self, xid: Xid, *, engine_count: int = 1, host_redo: Sequence[bytes] = ()) -> None:
        """XA PREPARE: spill everything out-of-band and write a durable XA_PREPARE record."""
        self.engine.xa_prepare(self, xid, engine_count, host_redo)

    def rollback(self) -> None:
        """Forget the group; its OOB records remain as unreferenced garbage."""
        if self.state == "active":
            self.engine.forget(self)
        self.state = "rolled back"
        self._buf = bytearray()


class EngineStatus(NamedTuple):
    """SHOW MASTER STATUS and more: write and durable positions, LSNs, GTID position."""

    file_no: int
    offset: int
    durable_file_no: int
    durable_offset: int
    lsn: int
    durable_lsn: int
    checkpoint_lsn: int
    gtid_binlog_pos: str
    gtid_binlog_state: str
    pending_xa: int
    active_oob: int


class BinlogListEntry(NamedTuple):
    """One row of SHOW BINARY LOGS."""

    name: str
    file_no: int
    size: int
