"""Engine binlog readers (``handler_binlog_reader``): durable event groups, GTID seek, waiting.

Why: a replica must never receive a transaction that a crash could still take
back (seed 002 "Crash-safe replication"), yet it should see commits with low
latency.  A reader reads pages through the engine's FIFO/file source clipped
at the durable end, with the codec's ``RecordReader``; when it has consumed
everything durable while newer data exists, it triggers a redo-log fsync
itself instead of waiting for the mode 0/2 timer.

Positioning follows ibb-format.md §7: walk files newest to oldest until the
page-1 full state is "before" the requested GTID position, then binary-search
the differential states at the interval pages of that file, and read from
there in skip-partial mode, skipping groups the replica already has.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Self

from ..codec.gtid import BinlogState, ConnectState, Gtid
from ..codec.ibb_page import PAGE_SIZE, PAGE_SIZE_SHIFT
from ..codec.ibb_reader import EventGroup, RecordReader
from ..errors import EngineError
from .recovery import commit_gtid, read_state_record
from .source import ClippedSource

if TYPE_CHECKING:
    from .engine import Engine

POSITION_PURGED = (
    "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old"
    " and required binlog files have been purged."
)


class EngineReader:
    """Event groups of an engine from a start position, durable data only (unless ``durable=False``).

    ``groups(timeout)`` yields groups as they become available; ``poll()`` returns
    what is available now.  Restart-marker records (no GTID) are skipped.  With a
    GTID start and ``skip_seen``, groups the replica already has are skipped.
    While open, the reader keeps purge away from the file it is in.
    """

    def __init__(
        self,
        engine: Engine,
        start: tuple[int, int] | ConnectState | None,
        *,
        durable: bool = True,
        skip_seen: bool = True,
    ) -> None:
        self.engine = engine
        self.durable = durable
        self._generation = engine.generation
        existing = engine.files.list()
        self._hold: int | None = existing[0] if existing else 0
        self.closed = False
        engine._register(self)
        self.target: ConnectState | None = None
        try:
            if start is None:
                file_no, offset = self._hold, PAGE_SIZE
            elif isinstance(start, ConnectState):
                self.target = start if skip_seen else None
                file_no, offset = self._seek(start)
            else:
                file_no, offset = start
                if existing and file_no < existing[0]:
                    raise EngineError(f"{engine.filename(file_no)} was purged")
        except BaseException:
            self.closed = True
            raise
        self._hold = file_no
        self._source = ClippedSource(engine._fetch, None)
        self._records = RecordReader(self._source, file_no, offset, skip_partial=True)

    # ------------------------------------------------------------------ positioning

    def _seek(self, target: ConnectState) -> tuple[int, int]:
        engine = self.engine
        source = engine.source(durable=self.durable)
        assert source.end is not None
        end_file, end_offset = source.end
        files = [n for n in engine.files.list() if n <= end_file]
        chosen: tuple[int, BinlogState] | None = None
        for file_no in reversed(files):
            self._hold = file_no
            record = read_state_record(source, file_no, 1)
            if record is None:
                continue
            state = BinlogState.from_list(Gtid(*g) for g in record.gtids)
            if state.is_before_pos(target):
                chosen = (file_no, state)
                break
        if chosen is None:
            if files and files[0] == 0:
                return 0, PAGE_SIZE
            raise EngineError(POSITION_PURGED)
        file_no, base = chosen
        header = engine.header(file_no)
        interval = header.gtid_state_interval if header is not None else 0
        if file_no == end_file:
            last_page = end_offset >> PAGE_SIZE_SHIFT
        else:
            last_page = (engine.files.size(file_no) >> PAGE_SIZE_SHIFT) - 1
        best = 1
        if 1 < interval <= last_page:
            low, high = 1, last_page // interval
            while low <= high:
                middle = (low + high) // 2
                page_no = middle * interval
                diff = read_state_record(source, file_no, page_no)
                state = base.copy()
                if diff is not None:
                    for gtid in diff.gtids:
                        state.update(Gtid(*gtid))
                if diff is not None and state.is_before_pos(target):
                    best = page_no
                    low = middle + 1
                else:
                    high = middle - 1
        return file_no, best << PAGE_SIZE_SHIFT

    # ------------------------------------------------------------------ reading

    @property
    def position(self) -> tuple[int, int]:
        """(file_no, offset) after the last group read: a chunk boundary, valid as a start."""
        return self._records.position

    def holds(self) -> int | None:
        """The oldest file this reader still needs (purge guard), None once closed."""
        return None if self.closed else self._hold

    def _check(self) -> None:
        if self.closed:
            raise EngineError("reader is closed")
        if self.engine.generation != self._generation:
            raise EngineError("the binlog was reset (RESET MASTER) under this reader")

    def _wanted(self, group: EventGroup) -> bool:
        gtid = commit_gtid(group.record)
        if gtid is None:
            return False
        target = self.target
        return target is None or gtid.domain not in target or gtid.seq > target[gtid.domain].seq

    def poll(self) -> list[EventGroup]:
        """Every group available now (may be empty)."""
        return list(self._available())

    def _available(self) -> Iterator[EventGroup]:
        self._check()
        engine = self.engine
        self._source.end = engine.durable_position if self.durable else engine.written_position
        for group in self._records.event_groups():
            self._hold = group.record.file_no
            if self._wanted(group):
                yield group
        self._hold = self._records.position[0]

    def groups(self, timeout: float | None = None) -> Iterator[EventGroup]:
        """Groups as they become durable; stops after ``timeout`` seconds without new data
        (None: never; 0: only what is available now)."""
        while True:
            yield from self._available()
            if timeout == 0:
                return
            if not self.wait(timeout):
                return

    def wait(self, timeout: float | None = None) -> bool:
        """Block until more data may be readable; True if so, False on timeout."""
        self._check()
        return self.engine._wait_data(self.position, self.durable, timeout)

    def close(self) -> None:
        """Release the reader (and its purge guard)."""
        self.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
