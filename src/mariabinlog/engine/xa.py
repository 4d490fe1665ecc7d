"""XA in the engine: prepared transactions, their XA_PREPARE / XA_COMPLETE records and the
file references that keep them readable (ibb-format.md §6.4, seed 002 "XA").

Why a room of its own: a prepared XA transaction outlives the file it was prepared in, so
three other concepts depend on the set of pending transactions: the GTID state record
(its ``xa_ref_file_no``), the file header (``xa_ref_file_no``, ``oob_ref_file_no``) and
purge (which must not remove a file a pending XA needs).  :class:`XaRoom` owns that set;
the :class:`~mariabinlog.engine.engine.Engine` inherits it and lends it the write lock,
the page writer and the append path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..codec.events import FL_TRANSACTIONAL
from ..codec.gtid import Gtid
from ..codec.ibb.page import RecordType
from ..codec.ibb.records import CommitRecord, XaComplete, XaPrepare, Xid
from ..codec.ibb.writer import PageWriter, RecordSpan
from ..errors import EngineError
from .transaction import CommitInfo, PendingXa, Transaction


class XaRoom:
    """XA PREPARE / COMMIT / ROLLBACK and the pending set (mixed into the engine)."""

    _lock: threading.Lock
    _pending_xa: dict[Xid, PendingXa]
    _oob_active: Any
    _oob_hold: list[int]
    _writer: PageWriter
    _append: Callable[..., Any]
    _after_write: Callable[[int, bool], None]
    _check_open: Callable[[], None]
    _assign: Callable[[Gtid | None, int, int | None], Gtid]
    _note_gtid: Callable[[Gtid], None]
    gtid_event: Callable[..., bytes]

    def _xa_ref(self) -> int | None:
        refs = [p.file_no for p in self._pending_xa.values()]
        return min(refs) if refs else None


    def xa_prepare(self, trx: Transaction, xid: Xid, engine_count: int, host_redo: Sequence[bytes]) -> None:
        """XA PREPARE (:meth:`Transaction.prepare`): spill everything, write a durable XA_PREPARE."""
        if trx.state != "active":
            raise EngineError(f"transaction is {trx.state}")
        with self._lock:
            if xid in self._pending_xa:
                raise EngineError(f"XA transaction {xid!r} is already prepared")
        trx._spill_rest(force=True)
        with self._lock:
            self._check_open()
            ref = trx.forest.ref if trx.forest is not None else None
            record = XaPrepare(xid, engine_count, ref).encode()
            writer = self._writer

            def op() -> RecordSpan:
                file_no = writer.prepare()[0]
                self._pending_xa[xid] = PendingXa(xid, file_no, ref, engine_count)
                return writer.write_record(RecordType.XA_PREPARE, record)

            _, end_lsn = self._append(op, host_redo, size=len(record))
            self._oob_active.pop(trx, None)
            trx.state = "prepared"
        self._after_write(end_lsn, True)

    def xa_commit(
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
        with self._lock:
            self._check_open()
            prepared = self._pending_xa.get(xid)
            if prepared is None:
                raise EngineError(f"XAER_NOTA: Unknown XID {xid!r}")
            gtid = self._assign(gtid, domain_id, server_id)
            event = self.gtid_event(gtid, flags2=flags2, timestamp=timestamp)
            payload = CommitRecord((prepared.oob,) if prepared.oob is not None else (), event).encode()
            complete = XaComplete(xid, False).encode()
            writer = self._writer

            def op() -> RecordSpan:
                writer.prepare()
                del self._pending_xa[xid]
                writer.write_record(RecordType.XA_COMPLETE, complete)
                writer.prepare()
                self._note_gtid(gtid)
                return writer.write_record(RecordType.COMMIT, payload)

            hold = prepared.oob.first_file_no if prepared.oob is not None else None
            if hold is not None:
                self._oob_hold.append(hold)
            try:
                span, end_lsn = self._append(op, host_redo, size=len(payload) + len(complete))
            finally:
                if hold is not None:
                    self._oob_hold.remove(hold)
        self._after_write(end_lsn, wait)
        return CommitInfo(gtid, span.file_no, span.offset, span.end_file_no, span.end_offset, end_lsn)

    def xa_rollback(self, xid: Xid, *, host_redo: Sequence[bytes] = (), wait: bool = True) -> None:
        """XA ROLLBACK of a prepared transaction: an XA_COMPLETE record, nothing visible to readers."""
        with self._lock:
            self._check_open()
            if xid not in self._pending_xa:
                raise EngineError(f"XAER_NOTA: Unknown XID {xid!r}")
            record = XaComplete(xid, True).encode()
            writer = self._writer

            def op() -> RecordSpan:
                writer.prepare()
                del self._pending_xa[xid]
                return writer.write_record(RecordType.XA_COMPLETE, record)

            _, end_lsn = self._append(op, host_redo, size=len(record))
        self._after_write(end_lsn, wait)

    def pending_xa(self) -> list[PendingXa]:
        """Prepared XA transactions waiting for commit or rollback (after a crash: for the host)."""
        with self._lock:
            return list(self._pending_xa.values())
