"""Printing of transaction boundaries as ``mariadb-binlog`` does: GTID (with its session
variables), Xid and XA_prepare events.

:class:`GtidFamily` owns the session variables a GTID event prints when they change
(``skip_parallel_replication``, ``gtid_domain_id``, ``server_id``); it talks to the rest of
the printer only through its :class:`~.base.PrintContext` (output lists, options, the header
comment), where it leaves the last GTID's flags for the query family
(``gtid_flags2``, ``gtid_flags_extra``).
"""

from __future__ import annotations

from ...codec.events import (
    FL_ALLOW_PARALLEL,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_DDL,
    FL_EXTRA_THREAD_ID,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FL_TRANSACTIONAL,
    FL_WAITED,
    GtidEvent,
    gtid_fields,
    gtid_short_flags_extra,
    LOG_EVENT_SKIP_REPLICATION_F,
    serialize_xid,
    xa_prepare_fields,
    xid_value,
)
from .base import _COMMIT_DELIM, DELIM, EventView, PrintContext, PrintFamily, _START_TRANSACTION


class GtidFamily(PrintFamily):
    """GTID, Xid and XA_prepare events; owns the GTID session variables last printed.

    Handlers (for the Printer's dispatch table): :meth:`gtid_event`, :meth:`xid_event`,
    :meth:`xa_prepare`.
    """

    def __init__(self, pc: PrintContext) -> None:
        super().__init__(pc)
        self.reset()

    def reset(self) -> None:
        """A fresh PRINT_EVENT_INFO's GTID session variables (one per input file)."""
        self.server_id = 0
        self.server_id_printed = False
        self.domain_id = 0
        self.domain_id_printed = False
        self.allow_parallel = True
        self.allow_parallel_printed = False

    def session(self) -> list[int]:
        """The session variables last printed, as ``_dumpfast.print_groups`` takes and updates
        them: skip_parallel_replication (printed, value), gtid_domain_id, server_id, then the
        last GTID's flags2."""
        return [
            self.allow_parallel_printed, self.allow_parallel, self.domain_id_printed, self.domain_id,
            self.server_id_printed, self.server_id, self.pc.gtid_flags2,
        ]

    def set_session(self, values: list[int]) -> None:
        """Take back :meth:`session` as the compiled groups left it."""
        (self.allow_parallel_printed, self.allow_parallel, self.domain_id_printed, self.domain_id,
         self.server_id_printed, self.server_id, self.pc.gtid_flags2) = values
        self.pc.gtid_flags_extra = 0

    def gtid_event(self, ev: EventView) -> None:
        if ev.flags & LOG_EVENT_SKIP_REPLICATION_F or self.pc.skip_replication:
            self.pc.skip_replication_statement(ev.flags)
        self.gtid(ev)

    def xid_event(self, ev: EventView) -> None:
        if ev.flags & LOG_EVENT_SKIP_REPLICATION_F or self.pc.skip_replication:
            self.pc.skip_replication_statement(ev.flags)
        self.xid(ev)

    def xa_prepare(self, ev: EventView) -> None:
        pc = self.pc
        pc.skip_replication_statement(ev.flags)
        _one_phase, fmt, gtrid, bqual = xa_prepare_fields(ev.buf, ev.body_pos, ev.body_end)
        xid = serialize_xid(fmt, gtrid, bqual)
        h = self.head
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tXID = %s\n" % xid)
        h.append(b"XA PREPARE %s\n%s\n" % (xid, DELIM))
        pc.release_owned()


    def gtid(self, ev: EventView) -> None:
        seq_no, domain_id, flags2 = gtid_fields(ev.buf, ev.body_pos, ev.body_end)
        pc = self.pc
        if pc.schema is not None:
            pc.schema_gtid = f"{domain_id}-{ev.server_id}-{seq_no}"
        if not flags2 & (FL_GROUP_COMMIT_ID | FL_PREPARED_XA | FL_COMPLETED_XA) and not gtid_short_flags_extra(
            ev.buf, ev.body_pos, ev.body_end
        ):
            # The common case: no commit id, no XA, no extra flags.
            opt = self.opt
            h = self.head
            if not opt.short_form and not opt.flashback:
                self.header(ev, h)
                h.append(
                    b"\tGTID %d-%d-%d%s%s%s\n"
                    % (
                        domain_id,
                        ev.server_id,
                        seq_no,
                        b" ddl" if flags2 & FL_DDL else b"",
                        b" trans" if flags2 & FL_TRANSACTIONAL else b"",
                        b" waited" if flags2 & FL_WAITED else b"",
                    )
                )
                self._gtid_session(h, flags2, domain_id, ev.server_id, seq_no)
            if not flags2 & FL_STANDALONE:
                h.append(_COMMIT_DELIM if opt.flashback else _START_TRANSACTION)
            pc.gtid_flags2 = flags2
            pc.gtid_flags_extra = 0
            if opt.flashback:
                pc.release_owned()
            else:
                self.out.extend(h)
                h.clear()
            return
        self._gtid_full(ev)

    def _gtid_session(self, h: list[bytes], flags2: int, domain_id: int, server_id: int, seq_no: int) -> None:
        """The session variables a GTID event sets, each only when it changed (the tool's
        output cache): skip_parallel_replication, gtid_domain_id, server_id, gtid_seq_no."""
        allow = bool(flags2 & FL_ALLOW_PARALLEL)
        if not self.allow_parallel_printed or self.allow_parallel != allow:
            h.append(b"/*M!100101 SET @@session.skip_parallel_replication=%d*/%s\n" % (0 if allow else 1, DELIM))
            self.allow_parallel = allow
            self.allow_parallel_printed = True
        if not self.domain_id_printed or self.domain_id != domain_id:
            h.append(b"/*M!100001 SET @@session.gtid_domain_id=%d*/%s\n" % (domain_id, DELIM))
            self.domain_id = domain_id
            self.domain_id_printed = True
        if not self.server_id_printed or self.server_id != server_id:
            h.append(b"/*M!100001 SET @@session.server_id=%d*/%s\n" % (server_id, DELIM))
            self.server_id = server_id
            self.server_id_printed = True
        h.append(b"/*M!100001 SET @@session.gtid_seq_no=%d*/%s\n" % (seq_no, DELIM))

    def _gtid_full(self, ev: EventView) -> None:
        g: GtidEvent = ev.decoded()
        opt = self.opt
        h = self.head
        if not opt.short_form and not opt.flashback:
            self.header(ev, h)
            parts = [b"\tGTID %d-%d-%d" % (g.domain_id, ev.server_id, g.seq_no)]
            flags2 = g.flags2
            if flags2 & FL_GROUP_COMMIT_ID:
                parts.append(b" cid=%d" % (g.commit_id or 0))
            if flags2 & FL_DDL:
                parts.append(b" ddl")
            if flags2 & FL_TRANSACTIONAL:
                parts.append(b" trans")
            if flags2 & FL_WAITED:
                parts.append(b" waited")
            fe = g.flags_extra
            if fe & FL_START_ALTER_E1:
                parts.append(b" START ALTER")
            if fe & FL_COMMIT_ALTER_E1:
                parts.append(b" COMMIT ALTER id= %d" % (g.sa_seq_no or 0))
            if fe & FL_ROLLBACK_ALTER_E1:
                parts.append(b" ROLLBACK ALTER id= %d" % (g.sa_seq_no or 0))
            if fe & FL_EXTRA_THREAD_ID:
                parts.append(b" thread_id=%d" % (g.thread_id or 0))
            parts.append(b"\n")
            h.append(b"".join(parts))
            self._gtid_session(h, flags2, g.domain_id, ev.server_id, g.seq_no)
        if g.flags2 & FL_PREPARED_XA and not opt.flashback:
            h.append(
                b"XA START %s%s\n"
                % (serialize_xid(g.xa_format_id or 0, g.xa_gtrid, g.xa_bqual), DELIM)
            )
        elif not g.flags2 & FL_STANDALONE:
            h.append(
                b"COMMIT\n%s\n" % DELIM
                if opt.flashback
                else b"START TRANSACTION\n%s\n" % DELIM
            )
        pc = self.pc
        pc.gtid_flags2 = g.flags2
        pc.gtid_flags_extra = g.flags_extra
        pc.release_owned()


    def xid(self, ev: EventView) -> None:
        h = self.head
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tXid = %d\n" % xid_value(ev.buf, ev.body_pos, ev.body_end))
        if self.opt.flashback:
            h.append(b"START TRANSACTION%s\n" % DELIM)
            self.pc.release_owned()
        else:
            h.append(b"COMMIT/*!*/;\n")
            self.out.extend(h)
            h.clear()
