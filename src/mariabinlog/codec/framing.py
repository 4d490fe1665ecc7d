"""The one fast event path: framing, CRC32, GTID and group assembly, one Python object per group.

The readers of whole event groups go through a :class:`Scanner`: the replication client (a
dump stream's event packets) and the Spark readers of legacy files for the rows view and the
schema scan (a file's bytes).  ``dump`` prints whole groups in compiled code of its own, over
``codec/_event.h``; ``replicate``'s file source still assembles groups event by event.  The
scanner frames each event, checks its CRC32 footer, and cuts the events into
:class:`~mariabinlog.codec.groups.EventGroup` objects by the codec's one rule
(:func:`~mariabinlog.codec.groups.ends_group`), storing them as `.ibb` files do (no footers,
``log_pos`` 0).  It decodes nothing but the GTID event's head and a Query's text: events are
decoded later, and only if someone asks.

A scan stops, leaving the position at the event in question, at everything it does not take
itself: a control event (Format_description, Rotate, Gtid_list, Heartbeat ...), an event outside
a group, a GTID event while a group is open (:data:`SCAN_CUT`: that group was cut off), a
damaged event or a packet that is not an event packet (ERR, EOF, a multi-part packet).  The
caller's slow path then handles that one event exactly as it always did: the fast path never
decides anything the slow path would decide differently.

:func:`encode_dump` is the way back for the binlog server: a group's events as dump-stream
packets with their positions and CRC32 footers.  :func:`stored_events` makes the same group
tuple of a stored `.ibb` COMMIT record's events (the archive readers' small commits), and
:func:`stored_group` the archive's COMMIT record of a received group.

Compiled in ``_framefast.c``; this module is its pure-Python twin, with the same API and the
same results (one test suite runs both; ``MARIABINLOG_PURE_PYTHON=1`` forces this one).
"""

from __future__ import annotations

from typing import Any

from .checksum import crc32
from .events.header import (
    BINLOG_CHECKPOINT_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    START_EVENT_V3,
    STOP_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    ANNOTATE_ROWS_EVENT,
)
from .events.transaction import FL_COMPLETED_XA, FL_STANDALONE, py_stored_group
from .groups import EventGroup, gtid_of, is_commit_or_rollback
from .native import FRAMEFAST_VERSION, load_fast
from .primitives import U16, U32, U64, Buffer

#: Why a scan returned.
SCAN_END = 0  #: the data given is used up, at an event boundary
SCAN_MORE = 1  #: an incomplete event or packet at ``pos``: more data is needed
SCAN_EVENT = 2  #: the event or packet at ``pos`` is for the caller's slow path
SCAN_CUT = 3  #: a GTID event at ``pos`` while a group is open: that group was cut off
SCAN_LIMIT = 4  #: ``limit`` groups taken

_HEADER_LEN = 19
_GTID_BODY_LEN = 13
_MAX_PAYLOAD = 0xFFFFFF
_CONTROL = frozenset(
    (START_EVENT_V3, STOP_EVENT, ROTATE_EVENT, FORMAT_DESCRIPTION_EVENT, HEARTBEAT_LOG_EVENT, BINLOG_CHECKPOINT_EVENT,
     GTID_LIST_EVENT, START_ENCRYPTION_EVENT)
)
_XA_ENDS = (b"XA COMMIT", b"XA ROLLBA")
_ZERO = bytes(4)


class PyScanner:
    """Cuts legacy events or a dump stream's event packets into groups (module docstring).

    ``checksum``: the events end with a CRC32 footer (settable: a Format_description changes
    it); ``verify``: check it; ``query_header_len``: the Query post-header length of the
    stream's Format_description (13 for binlog v4; older formats take the slow path).
    A group's tuple is ``(data, offsets, domain, server, seq, flags2, timestamp, end_log_pos)``.
    """

    __slots__ = ("checksum", "verify", "query_header_len", "_parts", "_offsets", "_size", "_head", "_standalone",
                 "_xa_complete", "_end_log_pos")

    def __init__(self, checksum: bool = False, verify: bool = True, query_header_len: int = 13) -> None:
        if query_header_len < 13:
            raise ValueError("query_header_len must be at least 13 (binlog v4)")
        self.checksum = checksum
        self.verify = verify
        self.query_header_len = query_header_len
        self._parts: list[bytes] = []
        self._offsets: list[int] = []
        self._size = 0
        self._head: tuple[int, int, int, int, int] | None = None  # domain, server, seq, flags2, timestamp
        self._standalone = False
        self._xa_complete = False
        self._end_log_pos = 0

    @property
    def open(self) -> bool:
        """True while a group is open."""
        return self._head is not None

    def discard(self) -> tuple[Any, ...] | None:
        """Drop the open group: its events so far (a group tuple), or None without one (the
        scan drops a group cut off, or hands it to the caller's slow path to go on with)."""
        if self._head is None:
            return None
        domain, server, seq, flags2, timestamp = self._head
        found = (b"".join(self._parts), (*self._offsets, self._size), domain, server, seq, flags2, timestamp,
                 self._end_log_pos)
        self._head = None
        self._parts, self._offsets, self._size = [], [], 0
        return found

    def _append(self, event: Buffer, pos: int, end: int) -> None:
        n = end - pos
        self._parts.append(bytes(event[pos : pos + 9]) + U32.pack(n) + _ZERO + bytes(event[pos + 17 : end]))
        self._offsets.append(self._size)
        self._size += n
        self._end_log_pos = U32.unpack_from(event, pos + 13)[0]

    def _take(self, buf: Buffer, pos: int, n: int, groups: list[Any]) -> int:
        """One framed event of ``n`` bytes at ``pos``: 0 when taken, else a SCAN_* code."""
        if n < _HEADER_LEN or U32.unpack_from(buf, pos + 9)[0] != n:
            return SCAN_EVENT
        end = pos + n
        if self.checksum:
            if n < _HEADER_LEN + 4:
                return SCAN_EVENT
            end -= 4
            if self.verify and crc32(memoryview(buf)[pos:end]) != U32.unpack_from(buf, end)[0]:
                return SCAN_EVENT
        code = buf[pos + 4]
        if code in _CONTROL:
            return SCAN_EVENT
        if code == GTID_EVENT:
            if self._head is not None:
                # a GTID event that does not end after the open group's last event is a
                # repeated one, not a new group after a crash: the slow path names it
                gtid_pos = U32.unpack_from(buf, pos + 13)[0]
                return SCAN_EVENT if gtid_pos and self._end_log_pos and gtid_pos <= self._end_log_pos else SCAN_CUT
            if end - pos < _HEADER_LEN + _GTID_BODY_LEN:
                return SCAN_EVENT
            flags2 = buf[pos + 31]
            self._head = (U32.unpack_from(buf, pos + 27)[0], U32.unpack_from(buf, pos + 5)[0],
                          U64.unpack_from(buf, pos + 19)[0], flags2, U32.unpack_from(buf, pos)[0])
            self._standalone = bool(flags2 & FL_STANDALONE)
            self._xa_complete = bool(flags2 & FL_COMPLETED_XA)
            self._parts, self._offsets, self._size = [], [], 0
            self._append(buf, pos, end)
            return 0
        if self._head is None:
            return SCAN_EVENT
        log_pos = U32.unpack_from(buf, pos + 13)[0]
        if log_pos and self._end_log_pos and log_pos <= self._end_log_pos:
            return SCAN_EVENT  # not after the previous event of its group: the slow path names it
        ends = False
        if code == XID_EVENT or code == XA_PREPARE_LOG_EVENT:
            ends = True
        elif code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
            if self._standalone:
                ends = True
            else:
                if code == QUERY_COMPRESSED_EVENT:
                    return SCAN_EVENT
                post = pos + _HEADER_LEN + self.query_header_len
                if end < post:
                    return SCAN_EVENT
                q = post + U16.unpack_from(buf, pos + _HEADER_LEN + 11)[0] + buf[pos + _HEADER_LEN + 8]
                if q >= end or buf[q] != 0:
                    return SCAN_EVENT
                text = bytes(buf[q + 1 : end])
                ends = is_commit_or_rollback(text) or (self._xa_complete and text[:9].upper() in _XA_ENDS)
        self._append(buf, pos, end)
        if ends:
            groups.append(self.discard())
        return 0

    def scan_events(self, buf: Buffer, pos: int, end: int, limit: int = 1 << 62) -> tuple[list[Any], int, int]:
        """Groups of the legacy events in ``buf[pos:end]``: (groups, where it stopped, why)."""
        groups: list[Any] = []
        end = min(end, len(buf))
        while pos < end:
            if len(groups) >= limit:
                return groups, pos, SCAN_LIMIT
            if end - pos < _HEADER_LEN:
                return groups, pos, SCAN_MORE
            length = U32.unpack_from(buf, pos + 9)[0]
            if length < _HEADER_LEN:
                return groups, pos, SCAN_EVENT
            if length > end - pos:
                return groups, pos, SCAN_MORE
            stop = self._take(buf, pos, length, groups)
            if stop:
                return groups, pos, stop
            pos += length
        return groups, pos, SCAN_END

    def scan_packets(self, buf: Buffer, pos: int, end: int, seq: int,
                     limit: int = 1 << 62) -> tuple[list[Any], int, int, int]:
        """Groups of the dump stream's event packets in ``buf[pos:end]`` (``seq``: the sequence id
        the next packet must carry, -1 for any): (groups, where it stopped, the id after the last
        packet taken or -1, why)."""
        groups: list[Any] = []
        end = min(end, len(buf))
        following = -1
        while pos < end:
            if len(groups) >= limit:
                return groups, pos, following, SCAN_LIMIT
            if end - pos < 4:
                return groups, pos, following, SCAN_MORE
            length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            packet_seq = buf[pos + 3]
            if length >= _MAX_PAYLOAD or length < 1 + _HEADER_LEN:
                return groups, pos, following, SCAN_EVENT
            if length + 4 > end - pos:
                return groups, pos, following, SCAN_MORE
            if (seq >= 0 and packet_seq != seq) or buf[pos + 4] != 0:
                return groups, pos, following, SCAN_EVENT
            stop = self._take(buf, pos + 5, length - 1, groups)
            if stop:
                return groups, pos, following, stop
            pos += 4 + length
            following = (packet_seq + 1) & 0xFF
            if seq >= 0:
                seq = following
        return groups, pos, following, SCAN_END


def py_event_offsets(data: Buffer) -> tuple[int, ...] | None:
    """The start offsets of the events of a stored group's ``data`` (no footers) and its end, or
    None when they do not frame it (:func:`~mariabinlog.codec.events.header.split_events` names
    the error)."""
    pos, offsets, size = 0, [0], len(data)
    while pos < size:
        if size - pos < _HEADER_LEN:
            return None
        length = U32.unpack_from(data, pos + 9)[0]
        if length < _HEADER_LEN or length > size - pos:
            return None
        pos += length
        offsets.append(pos)
    return tuple(offsets)


def py_stored_events(buf: Buffer, pos: int) -> tuple[Any, ...] | None:
    """The events of ``buf[pos:]`` (a stored group: no footers) as a scanner's group tuple
    (``end_log_pos`` 0), when they frame it and the first is a GTID event long enough for its
    head; else None (the caller's slow path says what is wrong)."""
    if pos < 0 or pos > len(buf):
        return None
    data = bytes(buf[pos:])
    offsets = py_event_offsets(data)
    if offsets is None or len(offsets) < 2 or data[4] != GTID_EVENT or U32.unpack_from(data, 9)[0] < (
            _HEADER_LEN + _GTID_BODY_LEN):
        return None
    gtid, flags2, timestamp = gtid_of(data)
    return data, offsets, gtid.domain, gtid.server, gtid.seq, flags2, timestamp, 0


def py_encode_dump(data: Buffer, offsets: tuple[int, ...], log_pos: int, checksum: bool, seq: int,
                   skip_annotate: bool) -> tuple[bytes, int, int]:
    """A group's events as dump packets (``00`` + event): each event's ``log_pos`` the end of the
    event in a virtual file counted from ``log_pos`` (0: left 0), a CRC32 footer when
    ``checksum``, Annotate_rows events left out when ``skip_annotate``; returns the packets,
    the position after them and the next sequence id."""
    out = bytearray()
    foot = 4 if checksum else 0
    for i in range(len(offsets) - 1):
        a, b = offsets[i], offsets[i + 1]
        if a < 0 or b > len(data) or b - a < _HEADER_LEN:
            raise ValueError("offsets do not frame the data")
        if b - a + 1 + foot >= _MAX_PAYLOAD:
            raise ValueError("an event too large for one packet")
    for i in range(len(offsets) - 1):
        a, b = offsets[i], offsets[i + 1]
        if skip_annotate and data[a + 4] == ANNOTATE_ROWS_EVENT:
            continue
        total = b - a + foot
        if log_pos:
            log_pos += total
        event = bytes(data[a : a + 9]) + U32.pack(total) + U32.pack(log_pos & 0xFFFFFFFF) + bytes(data[a + 17 : b])
        out += U32.pack(total + 1)[:3] + bytes((seq, 0)) + event
        if foot:
            out += U32.pack(crc32(event))
        seq = (seq + 1) & 0xFF
    return bytes(out), log_pos, seq


_fast = load_fast("mariabinlog.codec._framefast", "FAST_VERSION", FRAMEFAST_VERSION, "framing.py")

#: The scanner in use: the compiled one, or its pure twin.
Scanner: Any = _fast.Scanner if _fast is not None else PyScanner
#: :func:`py_encode_dump`, compiled where available.
encode_dump: Any = _fast.encode_dump if _fast is not None else py_encode_dump
#: :func:`py_event_offsets`, compiled where available.
event_offsets: Any = _fast.event_offsets if _fast is not None else py_event_offsets
#: :func:`py_stored_events`, compiled where available (the readers of `.ibb` COMMIT records).
stored_events: Any = _fast.stored_events if _fast is not None else py_stored_events
#: :func:`~mariabinlog.codec.events.transaction.py_stored_group`, compiled where available (the
#: archive's per-group copy into a COMMIT record).
stored_group: Any = _fast.stored_group if _fast is not None else py_stored_group


def scanner_for(ctx: Any, *, checksum: bool, verify: bool) -> Any:
    """A :data:`Scanner` for the events after a Format_description whose context is ``ctx``
    (CRC32 footers when ``checksum``), or None for a format it does not take (not binlog v4:
    another header length, a Query post-header under 13 bytes)."""
    query_header_len = ctx.post_header_len(QUERY_EVENT)
    if ctx.header_len != _HEADER_LEN or query_header_len < 13:
        return None
    return Scanner(checksum=checksum, verify=verify, query_header_len=query_header_len)


def group_of(found: tuple[Any, ...], fd: Any = None, source: str = "") -> EventGroup:
    """The :class:`EventGroup` of one group a scanner returned."""
    return EventGroup.of_scan(found, fd, source)
