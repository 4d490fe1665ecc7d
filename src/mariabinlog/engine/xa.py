"""XA in the engine: prepared transactions, their XA_PREPARE / XA_COMPLETE records and the
file references that keep them readable (ibb-format.md §6.4, seed 002 "XA").

Why a room of its own: a prepared XA transaction outlives the file it was prepared in, so
three other concepts depend on the set of pending transactions: the GTID state record
(its ``xa_ref_file_no``), the file header (``xa_ref_file_no``, ``oob_ref_file_no``) and
purge (which must not remove a file a pending XA needs).  :class:`Xa` owns that set (and
the OOB files an XA COMMIT holds while it writes); the
:class:`~mariabinlog.engine.engine.Engine` holds it and lends it the append path
(:class:`~.host.WritePath`) and a way to drop a running transaction's OOB purge guard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..codec.events import FL_TRANSACTIONAL
from ..codec.gtid import Gtid
from ..codec.ibb.page import RecordType
from ..codec.ibb.records import CommitRecord, XaComplete, XaPrepare, Xid
from ..codec.ibb.writer import RecordSpan
from ..errors import EngineError
from .host import WritePath
from .transaction import CommitInfo, PendingXa, Transaction


class Xa:
    """XA PREPARE / COMMIT / ROLLBACK and the pending set (held by the engine)."""

    def __init__(self, path: WritePath, drop_oob_guard: Callable[[Transaction], None]) -> None:
        self._path = path
        #: ``drop_oob_guard(trx)``: a prepared transaction's OOB data is held by its XA now (write lock held)
        self._drop_oob_guard = drop_oob_guard
        #: prepared transactions not yet committed or rolled back
        self.pending: dict[Xid, PendingXa] = {}
        #: first OOB files of prepared transactions an XA COMMIT is writing (no longer pending)
        self._oob_hold: list[int] = []

    def restore(self, pending: dict[Xid, PendingXa]) -> None:
        """The pending set recovery found (at open)."""
        self.pending = pending

    def ref(self) -> int | None:
        """The oldest file holding an XA_PREPARE of a pending XA (``xa_ref_file_no``); write lock held."""
        refs = [p.file_no for p in self.pending.values()]
        return min(refs) if refs else None

    def oob_refs(self) -> list[int]:
        """First OOB files of prepared transactions (pending or being committed); write lock held."""
        return self._oob_hold + [p.oob.first_file_no for p in self.pending.values() if p.oob is not None]

    def held_files(self) -> list[int]:
        """Files purge must keep for pending XA: the prepare's file and its OOB data; write lock held."""
        held = []
        for prepared in self.pending.values():
            held.append(prepared.file_no)
            if prepared.oob is not None:
                held.append(prepared.oob.first_file_no)
        return held

    def prepare(self, trx: Transaction, xid: Xid, engine_count: int, host_redo: Sequence[bytes]) -> None:
        """XA PREPARE (:meth:`Transaction.prepare`): spill everything, write a durable XA_PREPARE."""
        path = self._path
        if trx.state != "active":
            raise EngineError(f"transaction is {trx.state}")
        with path.lock:
            if xid in self.pending:
                raise EngineError(f"XA transaction {xid!r} is already prepared")
        trx._spill_rest(force=True)
        with path.lock:
            path.check_open()
            ref = trx.forest.ref if trx.forest is not None else None
            record = XaPrepare(xid, engine_count, ref).encode()
            writer = path.writer()

            def op() -> RecordSpan:
                file_no = writer.prepare()[0]
                self.pending[xid] = PendingXa(xid, file_no, ref, engine_count)
                return writer.write_record(RecordType.XA_PREPARE, record)

            _, end_lsn = path.append(op, host_redo, size=len(record))
            self._drop_oob_guard(trx)
            trx.state = "prepared"
        path.after_write(end_lsn, True)

    def commit(
        self,
        xid: Xid,
        *,
        gtid: Gtid | None = None,
        domain_id: int = 0,
        server_id: int | None = None,
        flags2: int = FL_TRANSACTIONAL,
        timestamp: int | None = None,
        host_redo: Sequence[bytes] = (),
        wait: bool = True,
    ) -> CommitInfo:
        """XA COMMIT of a prepared transaction: XA_COMPLETE then its COMMIT record (forest of the prepare)."""
        path = self._path
        with path.lock:
            path.check_open()
            prepared = self.pending.get(xid)
            if prepared is None:
                raise EngineError(f"XAER_NOTA: Unknown XID {xid!r}")
            gtid = path.assign(gtid, domain_id, server_id)
            event = path.gtid_event(gtid, flags2=flags2, timestamp=timestamp)
            payload = CommitRecord((prepared.oob,) if prepared.oob is not None else (), event).encode()
            complete = XaComplete(xid, False).encode()
            writer = path.writer()

            def op() -> RecordSpan:
                writer.prepare()
                del self.pending[xid]
                writer.write_record(RecordType.XA_COMPLETE, complete)
                writer.prepare()
                path.note_gtids((gtid,))
                return writer.write_record(RecordType.COMMIT, payload)

            hold = prepared.oob.first_file_no if prepared.oob is not None else None
            if hold is not None:
                self._oob_hold.append(hold)
            try:
                span, end_lsn = path.append(op, host_redo, size=len(payload) + len(complete))
            finally:
                if hold is not None:
                    self._oob_hold.remove(hold)
        path.after_write(end_lsn, wait)
        return CommitInfo(gtid, span.file_no, span.offset, span.end_file_no, span.end_offset, end_lsn)

    def rollback(self, xid: Xid, *, host_redo: Sequence[bytes] = (), wait: bool = True) -> None:
        """XA ROLLBACK of a prepared transaction: an XA_COMPLETE record, nothing visible to readers."""
        path = self._path
        with path.lock:
            path.check_open()
            if xid not in self.pending:
                raise EngineError(f"XAER_NOTA: Unknown XID {xid!r}")
            record = XaComplete(xid, True).encode()
            writer = path.writer()

            def op() -> RecordSpan:
                writer.prepare()
                del self.pending[xid]
                return writer.write_record(RecordType.XA_COMPLETE, record)

            _, end_lsn = path.append(op, host_redo, size=len(record))
        path.after_write(end_lsn, wait)

    def prepared(self) -> list[PendingXa]:
        """Prepared XA transactions waiting for commit or rollback (after a crash: for the host)."""
        with self._path.lock:
            return list(self.pending.values())
