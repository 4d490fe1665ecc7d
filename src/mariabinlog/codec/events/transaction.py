"""Transaction boundaries: GTID, GTID list, Binlog_checkpoint, Xid and XA_prepare events."""

from __future__ import annotations

import struct

from ...errors import DecodeError
from .header import (
    BINLOG_CHECKPOINT_EVENT,
    DecodeContext,
    Decoder,
    Event,
    GTID_EVENT,
    GTID_LIST_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from ..primitives import Buffer, need, need_within, U32, U64, U8

class XidEvent(Event):
    """Xid (16): commit of a transactional event group."""

    type_code = XID_EVENT
    __slots__ = ("xid",)

    def __init__(self, *, xid: int, **header: int) -> None:
        super().__init__(**header)
        self.xid = xid

    def encode_body(self) -> bytes:
        return U64.pack(self.xid)


class XaPrepareEvent(Event):
    """XA_prepare (38): ends an XA PREPARE event group (legacy binlogs)."""

    type_code = XA_PREPARE_LOG_EVENT
    __slots__ = ("one_phase", "format_id", "gtrid", "bqual")

    def __init__(self, *, one_phase: bool, format_id: int, gtrid: bytes, bqual: bytes, **header: int) -> None:
        super().__init__(**header)
        self.one_phase = one_phase
        self.format_id = format_id
        self.gtrid = gtrid
        self.bqual = bqual

    def encode_body(self) -> bytes:
        return (
            struct.pack("<BiII", 1 if self.one_phase else 0, self.format_id, len(self.gtrid), len(self.bqual))
            + self.gtrid
            + self.bqual
        )


def serialize_xid(format_id: int, gtrid: bytes, bqual: bytes) -> bytes:
    """An XA xid as the server writes it in SQL (``XID::serialize``): ``X'gtrid',X'bqual',formatID``
    in lower-case hex; the form of the binlog's ``XA ...`` statements and of ``mariadb-binlog``."""
    return b"X'%s',X'%s',%d" % (gtrid.hex().encode(), bqual.hex().encode(), format_id & 0xFFFFFFFF)


class BinlogCheckpointEvent(Event):
    """Binlog_checkpoint (161): oldest binlog file still needed for crash recovery."""

    type_code = BINLOG_CHECKPOINT_EVENT
    __slots__ = ("filename",)

    def __init__(self, *, filename: bytes, **header: int) -> None:
        super().__init__(**header)
        self.filename = filename

    def encode_body(self) -> bytes:
        return U32.pack(len(self.filename)) + self.filename


# GTID flags2 (sql/log_event.h Gtid_log_event).
FL_STANDALONE = 0x01
FL_GROUP_COMMIT_ID = 0x02
FL_TRANSACTIONAL = 0x04
FL_ALLOW_PARALLEL = 0x08
FL_WAITED = 0x10
FL_DDL = 0x20
FL_PREPARED_XA = 0x40
FL_COMPLETED_XA = 0x80
# flags_extra
FL_EXTRA_MULTI_ENGINE_E1 = 0x01
FL_START_ALTER_E1 = 0x02
FL_COMMIT_ALTER_E1 = 0x04
FL_ROLLBACK_ALTER_E1 = 0x08
FL_EXTRA_THREAD_ID = 0x10

GTID_BODY_MIN = 19
_GTID_OPTIONAL_FIELDS = ("commit_id", "xa_format_id", "xa_gtrid", "xa_bqual", "flags_extra", "extra_engines", "sa_seq_no", "thread_id")


class GtidEvent(Event):
    """GTID (162): starts an event group; the GTID's server id is the header's server_id."""

    type_code = GTID_EVENT
    __slots__ = (
        "seq_no",
        "domain_id",
        "flags2",
        "commit_id",
        "xa_format_id",
        "xa_gtrid",
        "xa_bqual",
        "flags_extra",
        "extra_engines",
        "sa_seq_no",
        "thread_id",
    )

    def __init__(
        self,
        *,
        seq_no: int,
        domain_id: int,
        flags2: int = 0,
        commit_id: int | None = None,
        xa_format_id: int | None = None,
        xa_gtrid: bytes = b"",
        xa_bqual: bytes = b"",
        flags_extra: int = 0,
        extra_engines: int | None = None,
        sa_seq_no: int | None = None,
        thread_id: int | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.seq_no = seq_no
        self.domain_id = domain_id
        self.flags2 = flags2
        self.commit_id = commit_id
        self.xa_format_id = xa_format_id
        self.xa_gtrid = xa_gtrid
        self.xa_bqual = xa_bqual
        self.flags_extra = flags_extra
        self.extra_engines = extra_engines
        self.sa_seq_no = sa_seq_no
        self.thread_id = thread_id

    @property
    def standalone(self) -> bool:
        """True when one self-contained event follows (no implicit BEGIN / end event)."""
        return bool(self.flags2 & FL_STANDALONE)

    def optional_fields(self) -> dict[str, object]:
        """Everything besides GTID, flags2 and header (commit id, XA xid, extra flags, thread id).

        Keyword arguments that rebuild this event's optional part, so a writer that
        makes its own GTID event (the engine) can copy an original one unchanged.
        """
        return {name: getattr(self, name) for name in _GTID_OPTIONAL_FIELDS}

    def encode_body(self) -> bytes:
        out = bytearray(U64.pack(self.seq_no) + U32.pack(self.domain_id) + U8.pack(self.flags2))
        if self.flags2 & FL_GROUP_COMMIT_ID:
            out += U64.pack(self.commit_id or 0)
        if self.flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
            out += struct.pack("<iBB", self.xa_format_id or 0, len(self.xa_gtrid), len(self.xa_bqual))
            out += self.xa_gtrid + self.xa_bqual
        if self.flags_extra:
            out.append(self.flags_extra)
            if self.flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
                out.append(self.extra_engines or 0)
            if self.flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
                out += U64.pack(self.sa_seq_no or 0)
            if self.flags_extra & FL_EXTRA_THREAD_ID:
                out += U32.pack(self.thread_id or 0)
        if len(out) < GTID_BODY_MIN:
            out += bytes(GTID_BODY_MIN - len(out))
        return bytes(out)


def py_stored_group(data: Buffer, length: int, prefix: bytes = b"") -> bytes | None:
    """A group's events (``data``, its GTID event first, ``length`` bytes, no footers) as a writer
    that makes its own GTID events stores them, after ``prefix`` (a record's header), when the
    GTID event is, header flags and ``log_pos`` aside, byte for byte what :meth:`GtidEvent.encode`
    makes of its own decoding (the fixed layout: sequence number, domain, flags2, a commit id,
    zero padding; no XA xid, no extra flags): the bytes with that event's header flags cleared.
    None when the GTID event must be encoded anew.  Compiled as ``codec.framing.stored_group``."""
    if length < 19 + GTID_BODY_MIN or length > len(data) or data[4] != GTID_EVENT:
        return None
    flags2 = data[31]
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        return None
    used = 13 + (8 if flags2 & FL_GROUP_COMMIT_ID else 0)
    if length != 19 + max(used, GTID_BODY_MIN) or data[19 + used : length] != _PADDING[: length - 19 - used]:
        return None
    view = memoryview(data)
    return b"".join((prefix, view[:17], b"\0\0", view[19:]))  # header flags (bytes 17-18): the writer's own


_PADDING = bytes(GTID_BODY_MIN)


GTID_LIST_FLAG_UNTIL_REACHED = 1
GTID_LIST_FLAG_IGN_GTIDS = 2
_GTID_ENTRY = struct.Struct("<IIQ")


class GtidListEvent(Event):
    """Gtid_list (163): binlog GTID state at the start of a file; entries (domain, server, seq)."""

    type_code = GTID_LIST_EVENT
    __slots__ = ("list_flags", "gtids", "padding")

    def __init__(
        self, *, gtids: list[tuple[int, int, int]], list_flags: int = 0, padding: bytes = b"", **header: int
    ) -> None:
        super().__init__(**header)
        self.list_flags = list_flags
        self.gtids = gtids
        # MariaDB pads an empty list with two zero bytes; kept for byte-exact round trips.
        self.padding = padding

    def encode_body(self) -> bytes:
        out = U32.pack(len(self.gtids) | (self.list_flags << 28))
        return out + b"".join(_GTID_ENTRY.pack(d, s, n) for d, s, n in self.gtids) + self.padding


_GTID_HEAD = struct.Struct("<QIB")
_XA_PREPARE_HEAD = struct.Struct("<BIII")

#: ``gtid_head(buf, pos)``: the fixed start of a GTID body (13 bytes), unchecked, as
#: ``(seq_no, domain_id, flags2)`` (hot loops that checked the body's length).
gtid_head = _GTID_HEAD.unpack_from


def gtid_fields(buf: Buffer, pos: int, end: int) -> tuple[int, int, int]:
    """:data:`gtid_head` of a GTID body from ``pos`` to ``end``, TruncatedError when shorter."""
    need_within(pos, 13, end, "GTID event body")
    return gtid_head(buf, pos)  # type: ignore[no-any-return]


def gtid_commit_id(buf: Buffer, pos: int, end: int, flags2: int) -> int | None:
    """The commit id of a GTID body from ``pos`` to ``end`` whose flags2 is ``flags2`` (None
    without FL_GROUP_COMMIT_ID); TruncatedError when the body is too short for it."""
    if not flags2 & FL_GROUP_COMMIT_ID:
        return None
    need_within(pos, 21, end, "GTID commit id")
    return U64.unpack_from(buf, pos + 13)[0]  # type: ignore[no-any-return]


def gtid_short_flags_extra(buf: Buffer, pos: int, end: int) -> int:
    """The ``flags_extra`` byte of a GTID body at ``pos`` that has no commit id and no XA id
    (the byte right after the 13-byte head), 0 when the body ends there; unchecked."""
    return buf[pos + 13] if end > pos + 13 else 0  # type: ignore[no-any-return]


def xa_prepare_fields(buf: Buffer, pos: int, end: int) -> tuple[int, int, bytes, bytes]:
    """An XA_prepare body from ``pos`` to ``end``: ``(one_phase, format_id, gtrid, bqual)`` (the
    format id unsigned, as the printer shows it); TruncatedError when the ids do not fit."""
    need_within(pos, 13, end, "XA_prepare event body")
    one_phase, format_id, glen, blen = _XA_PREPARE_HEAD.unpack_from(buf, pos)
    q = pos + 13
    need_within(q, glen + blen, end, "XA_prepare xid")
    return one_phase, format_id, bytes(buf[q : q + glen]), bytes(buf[q + glen : q + glen + blen])


def xid_value(buf: Buffer, pos: int, end: int) -> int:
    """An Xid body from ``pos`` to ``end``: the transaction id."""
    need_within(pos, 8, end, "Xid event body")
    return U64.unpack_from(buf, pos)[0]  # type: ignore[no-any-return]


def checkpoint_name(buf: Buffer, pos: int, end: int) -> bytes:
    """A Binlog_checkpoint body from ``pos`` to ``end``: the file name."""
    need_within(pos, 4, end, "Binlog_checkpoint event body")
    n = U32.unpack_from(buf, pos)[0]
    need_within(pos + 4, n, end, "Binlog_checkpoint file name")
    return bytes(buf[pos + 4 : pos + 4 + n])


def _dec_xid(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 8, "Xid body")
    return XidEvent(xid=U64.unpack_from(buf, p)[0], **hdr)


def _dec_xa_prepare(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 13, "XA_prepare body")
    one_phase, format_id, glen, blen = struct.unpack_from("<BiII", buf, p)
    if glen > 64 or blen > 64:
        raise DecodeError("XA_prepare xid part longer than 64 bytes", offset=p + 5, expected="gtrid/bqual length <= 64")
    need(buf, p + 13, glen + blen, "XA_prepare xid")
    q = p + 13
    return XaPrepareEvent(
        one_phase=bool(one_phase),
        format_id=format_id,
        gtrid=bytes(buf[q : q + glen]),
        bqual=bytes(buf[q + glen : q + glen + blen]),
        **hdr,
    )


def _dec_checkpoint(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "Binlog_checkpoint name length")
    n = U32.unpack_from(buf, p)[0]
    need(buf, p + 4, n, "Binlog_checkpoint name")
    return BinlogCheckpointEvent(filename=bytes(buf[p + 4 : p + 4 + n]), **hdr)


def _dec_gtid(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 13, "GTID body")
    seq_no = U64.unpack_from(buf, p)[0]
    domain_id = U32.unpack_from(buf, p + 8)[0]
    flags2 = buf[p + 12]
    q = p + 13
    commit_id = None
    if flags2 & FL_GROUP_COMMIT_ID:
        need(buf, q, 8, "GTID commit id")
        commit_id = U64.unpack_from(buf, q)[0]
        q += 8
    xa_format_id = None
    gtrid = bqual = b""
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        need(buf, q, 6, "GTID XA xid")
        xa_format_id, glen, blen = struct.unpack_from("<iBB", buf, q)
        if glen > 64 or blen > 64:
            raise DecodeError("GTID XA xid part longer than 64 bytes", offset=q + 4, expected="gtrid/bqual length <= 64")
        q += 6
        need(buf, q, glen + blen, "GTID XA xid data")
        gtrid = bytes(buf[q : q + glen])
        bqual = bytes(buf[q + glen : q + glen + blen])
        q += glen + blen
    flags_extra = 0
    extra_engines = sa_seq_no = thread_id = None
    if q < end:
        flags_extra = buf[q]
        q += 1
        if flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
            need(buf, q, 1, "GTID extra engines")
            extra_engines = buf[q]
            q += 1
        if flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            need(buf, q, 8, "GTID start-alter seq_no")
            sa_seq_no = U64.unpack_from(buf, q)[0]
            q += 8
        if flags_extra & FL_EXTRA_THREAD_ID:
            need(buf, q, 4, "GTID thread id")
            thread_id = U32.unpack_from(buf, q)[0]
            q += 4
    return GtidEvent(
        seq_no=seq_no,
        domain_id=domain_id,
        flags2=flags2,
        commit_id=commit_id,
        xa_format_id=xa_format_id,
        xa_gtrid=gtrid,
        xa_bqual=bqual,
        flags_extra=flags_extra,
        extra_engines=extra_engines,
        sa_seq_no=sa_seq_no,
        thread_id=thread_id,
        **hdr,
    )


def _dec_gtid_list(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "Gtid_list count")
    word = U32.unpack_from(buf, p)[0]
    count = word & 0x0FFFFFFF
    need(buf, p + 4, 16 * count, "Gtid_list entries")
    gtids = [_GTID_ENTRY.unpack_from(buf, p + 4 + 16 * i) for i in range(count)]
    padding = bytes(buf[p + 4 + 16 * count : end])
    return GtidListEvent(gtids=gtids, list_flags=word >> 28, padding=padding, **hdr)


#: Decoders of this room's event types, merged by :func:`mariabinlog.codec.events.decode_event`.
DECODERS: dict[int, Decoder] = {
    XID_EVENT: _dec_xid,
    XA_PREPARE_LOG_EVENT: _dec_xa_prepare,
    BINLOG_CHECKPOINT_EVENT: _dec_checkpoint,
    GTID_EVENT: _dec_gtid,
    GTID_LIST_EVENT: _dec_gtid_list,
}
