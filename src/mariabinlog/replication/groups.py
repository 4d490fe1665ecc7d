"""Event groups: the unit that replication streams, stores, filters and applies.

An event group is a GTID event and the events of its transaction (or of its one stand-alone
statement).  :class:`GroupAssembler` cuts a stream of decoded events into groups using the
rules of MariaDB's dump thread and I/O thread (``sql/sql_repl.cc`` ``send_event_to_slave``
skip logic): a transactional group ends at its XID event, a ``COMMIT``/``ROLLBACK`` Query or
an XA_PREPARE event; a stand-alone group (``FL_STANDALONE``, DDL) ends at its first Query
event.  Events outside groups (Format_description, Rotate, Gtid_list, Binlog_checkpoint,
Heartbeat, Stop) are *control* events: sources handle them and never put them in a group.

Groups keep each event's bytes without the CRC footer (``raw``), which is what `.ibb`
files store and what ``BINLOG`` statements and the binlog server re-send.
"""

from __future__ import annotations

from collections.abc import Callable

from ..codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_LEN,
    FL_COMPLETED_XA,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROTATE_EVENT,
    STOP_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    QueryEvent,
    reframe,
)
from ..codec.gtid import Gtid
from ..errors import DecodeError

#: Event types that never belong to an event group.
CONTROL_EVENTS = frozenset(
    {
        FORMAT_DESCRIPTION_EVENT,
        ROTATE_EVENT,
        GTID_LIST_EVENT,
        BINLOG_CHECKPOINT_EVENT,
        HEARTBEAT_LOG_EVENT,
        STOP_EVENT,
    }
)

_LOG_POS = slice(13, 17)
_ZERO_POS = bytes(4)


def strip_checksum(raw: bytes) -> bytes:
    """``raw`` without its 4-byte CRC footer, with the header's length field fixed."""
    return reframe(raw[:-CHECKSUM_LEN])


def clear_log_pos(raw: bytes) -> bytes:
    """``raw`` with header ``log_pos`` 0 (as `.ibb` files store events)."""
    if raw[_LOG_POS] == _ZERO_POS:
        return raw
    return raw[:13] + _ZERO_POS + raw[17:]


def is_commit_or_rollback(query: bytes) -> bool:
    """``Query_log_event::peek_is_commit_rollback``: exactly ``COMMIT`` or ``ROLLBACK``."""
    return query == b"COMMIT" or query == b"ROLLBACK"


class EventGroup:
    """One GTID event group: ``events[0]`` is the GTID event; ``raw[i]`` the bytes of ``events[i]``.

    ``fd`` is the Format_description in force (None for `.ibb` data without one), ``source``
    and ``end_position`` say where the group came from (file name or primary, end offset;
    0 where offsets do not exist).
    """

    __slots__ = ("gtid", "events", "raw", "fd", "source", "end_position")

    def __init__(
        self,
        gtid: Gtid,
        events: list[Event],
        raw: list[bytes],
        fd: FormatDescriptionEvent | None = None,
        source: str = "",
        end_position: int = 0,
    ) -> None:
        self.gtid = gtid
        self.events = events
        self.raw = raw
        self.fd = fd
        self.source = source
        self.end_position = end_position

    @property
    def gtid_event(self) -> GtidEvent:
        """The group's GTID event."""
        return self.events[0]  # type: ignore[return-value]

    @property
    def timestamp(self) -> int:
        """Commit timestamp of the group (its GTID event's header timestamp)."""
        return self.events[0].timestamp

    @property
    def size(self) -> int:
        """Bytes of all events (no CRC footers)."""
        return sum(map(len, self.raw))

    def data(self) -> bytes:
        """The events concatenated with ``log_pos`` 0: the payload of a `.ibb` commit record."""
        return b"".join(clear_log_pos(raw) for raw in self.raw)

    def __repr__(self) -> str:
        names = ",".join(event.name for event in self.events)
        return f"EventGroup({self.gtid}, [{names}])"


class GroupAssembler:
    """Cuts decoded events into :class:`EventGroup` objects.

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

    def feed(
        self, event: Event, raw: bytes, fd: FormatDescriptionEvent | None = None, source: str = "", end: int = 0
    ) -> EventGroup | None:
        """Add ``event`` (bytes ``raw`` without CRC); return the group it completes, if any."""
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
        if not self._ends(event, code):
            return None
        group = EventGroup(self._gtid, self._events, self._raw, self._fd, source, end)
        self._events = []
        self._raw = []
        self._gtid = None
        return group

    def _ends(self, event: Event, code: int) -> bool:
        if code == XID_EVENT or code == XA_PREPARE_LOG_EVENT:
            return True
        if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
            if self._standalone:
                return True
            assert isinstance(event, QueryEvent)
            query = event.query
            if is_commit_or_rollback(query):
                return True
            return self._xa_complete and query[:9].upper() in (b"XA COMMIT", b"XA ROLLBA")
        return False

