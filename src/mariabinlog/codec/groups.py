"""Event groups: the unit that replication streams, stores, filters and applies, and that dump and
Spark read by; the one rule for where a group ends.

An event group is a GTID event and the events of its transaction (or of its one stand-alone
statement).  Where it ends is MariaDB's rule (``Log_event::is_group_event``, the dump thread's
and the I/O thread's ``send_event_to_slave`` logic, :func:`ends_group`): a transactional group
ends at its Xid event, at a Query that is exactly ``COMMIT`` or ``ROLLBACK``
(``Query_log_event::peek_is_commit_rollback``) or at an XA_prepare event; a stand-alone group
(``FL_STANDALONE``: DDL, a non-transactional statement) ends at its first Query event, after
any Intvar/Rand/User_var events before it; the ``XA COMMIT``/``XA ROLLBACK`` group of a
completed XA transaction ends at that query.  Events outside groups (:data:`CONTROL_EVENTS`:
Format_description, Rotate, Gtid_list, Binlog_checkpoint, Heartbeat, Stop, Start_encryption)
never belong to one; one of them, or a GTID event, arriving while a group is open means that
group was cut off (a primary crashed while writing it).

:class:`EventGroup` holds a group's events as the `.ibb` format stores them: without CRC
footers, ``log_pos`` 0, one after another in :attr:`EventGroup.data`; the compiled fast path
(:mod:`.framing`) builds them straight from a file or a dump stream, a stored `.ibb` group reads
its out-of-band pieces only when asked, and events are decoded only when someone asks for
:attr:`EventGroup.events`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import DecodeError
from .events.header import HEADER, iter_events, reframe, split_events
from .events import (
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_LEN,
    DEFAULT_CONTEXT,
    FL_COMPLETED_XA,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    QueryEvent,
    decode_event,
    gtid_head,
)
from .gtid import Gtid
from .native import FRAMEFAST_VERSION, load_fast
from .primitives import U32, Buffer

#: Event types that never belong to an event group.
CONTROL_EVENTS = frozenset(
    {
        FORMAT_DESCRIPTION_EVENT,
        ROTATE_EVENT,
        GTID_LIST_EVENT,
        BINLOG_CHECKPOINT_EVENT,
        HEARTBEAT_LOG_EVENT,
        STOP_EVENT,
        START_ENCRYPTION_EVENT,
    }
)

_LOG_POS = slice(13, 17)
_ZERO_POS = bytes(4)
_XA_ENDS = (b"XA COMMIT", b"XA ROLLBA")
_TRANSACTION_QUERIES = frozenset((b"BEGIN", b"COMMIT", b"ROLLBACK"))
#: A Query event's bytes end with its text right after the database name's NUL.
_TRANSACTION_TAILS = (b"\0BEGIN", b"\0COMMIT", b"\0ROLLBACK")


def py_statement_events(data: Buffer, offsets: tuple[int, ...]) -> tuple[int, ...]:
    """The indices of a group's Query events after its first event, except those whose text
    is ``BEGIN``, ``COMMIT`` or ``ROLLBACK`` (read from the event's end; a compressed one always
    counts): the events :meth:`EventGroup.statements` decodes.  Compiled in ``_framefast.c``."""
    found = []
    for index in range(1, len(offsets) - 1):
        start, end = offsets[index], offsets[index + 1]
        if start < 0 or end > len(data) or end - start < 5:
            raise ValueError("offsets do not frame the data")
        code = data[start + 4]
        if code != QUERY_EVENT and code != QUERY_COMPRESSED_EVENT:
            continue
        if not bytes(data[max(start, end - 9) : end]).endswith(_TRANSACTION_TAILS):
            found.append(index)
    return tuple(found)


_fast = load_fast("mariabinlog.codec._framefast", "FAST_VERSION", FRAMEFAST_VERSION, "groups.py")
#: :func:`py_statement_events`, compiled where available.
statement_events: Any = _fast.statement_events if _fast is not None else py_statement_events


def is_commit_or_rollback(query: bytes) -> bool:
    """``Query_log_event::peek_is_commit_rollback``: exactly ``COMMIT`` or ``ROLLBACK``."""
    return query == b"COMMIT" or query == b"ROLLBACK"


def ends_group(code: int, query: bytes | None, standalone: bool, xa_complete: bool) -> bool:
    """Whether an event of type ``code`` (a Query's text ``query``) ends the open group, whose
    GTID event said ``standalone`` (``FL_STANDALONE``) and ``xa_complete`` (``FL_COMPLETED_XA``).

    The one rule of every reader (module docstring); the compiled fast path applies the same.
    """
    if code == XID_EVENT or code == XA_PREPARE_LOG_EVENT:
        return True
    if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
        if standalone:
            return True
        assert query is not None
        return is_commit_or_rollback(query) or (xa_complete and query[:9].upper() in _XA_ENDS)
    return False


class GroupBoundary:
    """Where groups start and end in a stream seen one event at a time (printers, converters):
    :meth:`start` at a GTID event, :meth:`end_after` for each event after it (True: it ended the
    group), :meth:`cut` at a control event."""

    __slots__ = ("open", "standalone", "xa_complete")

    def __init__(self) -> None:
        self.open = False
        self.standalone = False
        self.xa_complete = False

    def start(self, flags2: int) -> None:
        """A GTID event with ``flags2`` opens a group."""
        self.open = True
        self.standalone = bool(flags2 & FL_STANDALONE)
        self.xa_complete = bool(flags2 & FL_COMPLETED_XA)

    def end_after(self, code: int, query: bytes | None = None) -> bool:
        """Whether the event (type ``code``, a Query's text ``query``) ends the open group."""
        if not self.open:
            return False
        if code in CONTROL_EVENTS:
            self.open = False
            return True
        if ends_group(code, query, self.standalone, self.xa_complete):
            self.open = False
            return True
        return False

    def cut(self) -> None:
        """The stream moved on without ending the group (a control event, a new file)."""
        self.open = False


def strip_checksum(raw: bytes) -> bytes:
    """``raw`` without its 4-byte CRC footer, with the header's length field fixed."""
    return reframe(raw[:-CHECKSUM_LEN])


def clear_log_pos(raw: bytes) -> bytes:
    """``raw`` with header ``log_pos`` 0 (as `.ibb` files store events)."""
    if raw[_LOG_POS] == _ZERO_POS:
        return raw
    return raw[:13] + _ZERO_POS + raw[17:]


#: ``(seq_no, domain_id, flags2)`` at the start of a GTID event's body.
_GTID_BODY_LEN = 13


def gtid_of(event: Buffer, pos: int = 0) -> tuple[Gtid, int, int]:
    """(GTID, flags2, timestamp) of the GTID event at ``pos`` (19-byte header, no decoding)."""
    if len(event) - pos < 19 + _GTID_BODY_LEN:
        raise DecodeError("GTID event too short", offset=pos, expected=f"{19 + _GTID_BODY_LEN} bytes")
    timestamp, _, server, _, _, _ = HEADER.unpack_from(event, pos)
    seq, domain, flags2 = gtid_head(event, pos + 19)
    return Gtid(domain, server, seq), flags2, timestamp


class EventGroup:
    """One GTID event group (see the module docstring).

    Made from its events' bytes (``data`` with the events' start ``offsets``, or a list of
    ``raw`` events), or lazily from ``pieces`` (a callable yielding the data in pieces: a
    stored `.ibb` group whose out-of-band data is read only as it is iterated).  ``gtid`` is
    None for a group without a GTID event (an `.ibb` restart marker).  ``fd`` is the
    Format_description in force (None for `.ibb` data without one), ``source`` and
    ``end_position`` say where the group came from (file name or primary, end offset; 0 where
    offsets do not exist); ``record`` and ``commit`` are a stored group's COMMIT record and its
    decoded header.
    """

    __slots__ = ("gtid", "flags2", "timestamp", "fd", "source", "end_position", "record", "commit",
                 "_data", "_offsets", "_raw", "_events", "_pieces", "_size")

    def __init__(
        self,
        gtid: Gtid | None,
        data: bytes | None = None,
        offsets: Iterable[int] | None = None,
        *,
        raw: list[bytes] | None = None,
        events: list[Event] | None = None,
        flags2: int | None = None,
        timestamp: int | None = None,
        fd: FormatDescriptionEvent | None = None,
        source: str = "",
        end_position: int = 0,
        pieces: Callable[[], Iterator[bytes]] | None = None,
        size: int | None = None,
        record: Any = None,
        commit: Any = None,
    ) -> None:
        self.gtid = gtid
        self._data = data
        self._offsets = tuple(offsets) if offsets is not None and type(offsets) is not tuple else offsets
        self._raw = raw
        self._events = events
        self._pieces = pieces
        self._size = size
        self.fd = fd
        self.source = source
        self.end_position = end_position
        self.record = record
        self.commit = commit
        if flags2 is None or timestamp is None:
            head = self._head()
            if gtid is not None and head is not None and len(head) >= 19 + _GTID_BODY_LEN and head[4] == GTID_EVENT:
                _, found_flags, found_time = gtid_of(head)
            else:
                found_flags, found_time = 0, (U32.unpack_from(head, 0)[0] if head is not None and len(head) >= 4 else 0)
            flags2 = found_flags if flags2 is None else flags2
            timestamp = found_time if timestamp is None else timestamp
        self.flags2 = flags2
        self.timestamp = timestamp

    @classmethod
    def of_scan(cls, found: tuple[Any, ...], fd: FormatDescriptionEvent | None, source: str) -> EventGroup:
        """A group a :class:`~mariabinlog.codec.framing.Scanner` cut: ``(data, offsets, domain,
        server, seq, flags2, timestamp, end)``.  The per-group path of every fast reader, so it
        sets the slots itself rather than going through ``__init__``'s keywords."""
        data, offsets, domain, server, seq, flags2, timestamp, end = found
        group = cls.__new__(cls)
        group.gtid = Gtid(domain, server, seq)
        group._data = data
        group._offsets = offsets
        group._raw = group._events = group._pieces = group._size = None
        group.fd = fd
        group.source = source
        group.end_position = end
        group.record = group.commit = None
        group.flags2 = flags2
        group.timestamp = timestamp
        return group

    @classmethod
    def of_events(cls, events: list[Event], raw: list[bytes], fd: FormatDescriptionEvent | None = None,
                  source: str = "", end_position: int = 0) -> EventGroup:
        """A group of decoded ``events`` (``events[0]`` its GTID event) with their bytes ``raw``."""
        head = events[0]
        assert isinstance(head, GtidEvent)
        gtid = Gtid(head.domain_id, head.server_id, head.seq_no)
        return cls(gtid, raw=raw, events=events, flags2=head.flags2, timestamp=head.timestamp, fd=fd,
                   source=source, end_position=end_position)

    def _head(self) -> bytes | None:
        """The first event's bytes (without reading a stored group's out-of-band data)."""
        if self._raw is not None:
            return self._raw[0] if self._raw else None
        if self._data is not None:
            return self._data[:(self._offsets[1] if self._offsets and len(self._offsets) > 1 else len(self._data))]
        if self.commit is not None:
            return bytes(self.commit.data[:U32.unpack_from(self.commit.data, 9)[0]]) if len(self.commit.data) >= 19 else None
        return None

    # -- bytes ------------------------------------------------------------------------------------

    def pieces(self) -> Iterator[bytes]:
        """The events' bytes in pieces (a stored group's out-of-band nodes read as reached)."""
        if self._pieces is not None and self._data is None and self._raw is None:
            yield from self._pieces()
        elif self._data is not None:
            yield self._data
        else:
            assert self._raw is not None
            yield from self._raw

    def data(self) -> bytes:
        """The events one after another (for groups that fit in memory)."""
        if self._data is None:
            self._data = b"".join(self._raw) if self._raw is not None else b"".join(self.pieces())
        return self._data

    def raw_events(self) -> Iterator[bytes]:
        """The events, one bytes object each, read lazily (a stored group's huge out-of-band
        data is never whole in memory)."""
        if self._raw is not None:
            return iter(self._raw)
        if self._data is not None:
            return iter(self.raw)
        return iter_events(self.pieces())

    @property
    def offsets(self) -> tuple[int, ...]:
        """Start offsets of the events in :meth:`data`, and its end."""
        if self._offsets is None:
            if self._raw is not None:
                pos, offsets = 0, [0]
                for raw in self._raw:
                    pos += len(raw)
                    offsets.append(pos)
                self._offsets = tuple(offsets)
            else:
                spans = split_events(self.data())
                self._offsets = tuple(s for s, _ in spans) + (len(self.data()),)
        return self._offsets

    @property
    def raw(self) -> list[bytes]:
        """The events, one bytes object each."""
        if self._raw is None:
            data, offsets = self.data(), self.offsets
            self._raw = [data[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
        return self._raw

    def types(self) -> bytes:
        """The events' type codes."""
        if self._raw is not None:
            return bytes(raw[4] for raw in self._raw)
        data, offsets = self.data(), self.offsets
        return bytes(data[offset + 4] for offset in offsets[:-1])

    def body(self) -> bytes:
        """The events after the GTID event (what a writer that makes its own GTID event stores)."""
        if self._raw is not None and self._data is None:
            return b"".join(self._raw[1:])
        return self.data()[self.offsets[1]:] if len(self.offsets) > 1 else b""

    @property
    def size(self) -> int:
        """Bytes of all events (no CRC footers)."""
        if self._size is None:
            self._size = len(self._data) if self._data is not None else sum(map(len, self.raw))
        return self._size

    def __len__(self) -> int:
        """The number of events."""
        if self._raw is not None:
            return len(self._raw)
        return len(self.offsets) - 1

    # -- decoded ----------------------------------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        """The events decoded (once, on first use) with :attr:`fd`'s context."""
        if self._events is None:
            ctx = self.fd.context() if self.fd is not None else DEFAULT_CONTEXT
            self._events = [decode_event(raw, 0, None, ctx) for raw in self.raw]
        return self._events

    def statements(self) -> list[QueryEvent]:
        """The group's Query events other than ``BEGIN``/``COMMIT``/``ROLLBACK`` (the statements a
        schema history looks at), decoded without decoding the rest."""
        if self._events is not None:
            return [e for e in self._events if isinstance(e, QueryEvent) and e.query not in _TRANSACTION_QUERIES]
        data, offsets = self.data(), self.offsets
        indices = statement_events(data, offsets)
        if not indices:
            return []
        ctx = self.fd.context() if self.fd is not None else DEFAULT_CONTEXT
        found = []
        for index in indices:
            event = decode_event(data, offsets[index], offsets[index + 1], ctx)
            assert isinstance(event, QueryEvent)
            if event.query not in _TRANSACTION_QUERIES:
                found.append(event)
        return found

    @property
    def gtid_event(self) -> GtidEvent:
        """The group's GTID event."""
        if self._events is not None:
            return self._events[0]  # type: ignore[return-value]
        head = self._head()
        assert head is not None
        event = decode_event(head, 0, None, self.fd.context() if self.fd is not None else DEFAULT_CONTEXT)
        assert isinstance(event, GtidEvent)
        return event

    @property
    def standalone(self) -> bool:
        """``FL_STANDALONE``: one self-contained statement, no BEGIN/COMMIT."""
        return bool(self.flags2 & FL_STANDALONE)

    def __repr__(self) -> str:
        from .events import event_type_name

        names = ",".join(event_type_name(code) for code in self.types())
        return f"EventGroup({self.gtid}, [{names}])"


class GroupAssembler:
    """Cuts decoded events into :class:`EventGroup` objects by :func:`ends_group`.

    Feed every non-control event with :meth:`feed`; it returns the group that event
    completes.  A GTID event while a group is open means the open group was cut off (a
    primary crashed in the middle of writing it): :attr:`on_discard` is called with it and
    it is dropped, as MariaDB's replica rolls back such a partial group.
    """

    __slots__ = ("_events", "_raw", "_gtid", "_standalone", "_xa_complete", "_fd", "on_discard")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._raw: list[bytes] = []
        self._gtid: Gtid | None = None
        self._standalone = False
        self._xa_complete = False
        self._fd: FormatDescriptionEvent | None = None
        #: Called with the events of a group cut off by a new GTID event (primary crash).
        self.on_discard: Callable[[list[Event]], None] | None = None

    @property
    def open(self) -> bool:
        """True while a group has started and not ended."""
        return self._gtid is not None

    def discard(self) -> list[Event]:
        """Drop the open group (connection lost, server restart); returns its events."""
        events = self._events
        self._events = []
        self._raw = []
        self._gtid = None
        return events

    def resume(self, group: EventGroup) -> None:
        """Go on with a group begun elsewhere (the fast path hands its open group over when an
        event needs the slow path)."""
        assert group.gtid is not None
        self._gtid = group.gtid
        self._standalone = bool(group.flags2 & FL_STANDALONE)
        self._xa_complete = bool(group.flags2 & FL_COMPLETED_XA)
        self._fd = group.fd
        self._events = list(group.events)
        self._raw = list(group.raw)

    def feed(
        self, event: Event, raw: bytes, fd: FormatDescriptionEvent | None = None, source: str = "", end: int = 0
    ) -> EventGroup | None:
        """Add ``event`` (bytes ``raw`` without CRC); return the group it completes, if any."""
        raw = clear_log_pos(raw)
        code = event.type_code
        if code == GTID_EVENT:
            if self._gtid is not None:
                dropped = self.discard()
                if self.on_discard is not None:
                    self.on_discard(dropped)
            assert isinstance(event, GtidEvent)
            self._gtid = Gtid(event.domain_id, event.server_id, event.seq_no)
            flags2 = event.flags2
            self._standalone = bool(flags2 & FL_STANDALONE)
            self._xa_complete = bool(flags2 & FL_COMPLETED_XA)
            self._fd = fd
            self._events = [event]
            self._raw = [raw]
            return None
        if self._gtid is None:
            raise DecodeError(
                f"{event.name} event outside an event group",
                offset=event.position,
                expected="a GTID event first (MariaDB 10.0+ binlogs)",
            )
        self._events.append(event)
        self._raw.append(raw)
        query = event.query if isinstance(event, QueryEvent) else None
        if not ends_group(code, query, self._standalone, self._xa_complete):
            return None
        head = self._events[0]
        group = EventGroup(self._gtid, raw=self._raw, events=self._events, flags2=head.flags2,  # type: ignore[attr-defined]
                           timestamp=head.timestamp, fd=self._fd, source=source, end_position=end)
        self._events = []
        self._raw = []
        self._gtid = None
        return group
