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
from typing import Protocol, Self

from ..codec.gtid import ConnectState
from ..codec.ibb.page import PAGE_SIZE
from ..codec.ibb.reader import EventGroup, RecordReader
from ..codec.ibb.state import commit_gtid, seek_gtid
from ..errors import EngineError
from .source import ClippedSource
from .storage import BinlogFiles

POSITION_PURGED = (
    "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old"
    " and required binlog files have been purged."
)


class ReaderHost(Protocol):
    """What a reader needs from the engine it reads (the engine is one)."""

    files: BinlogFiles
    generation: int

    @property
    def durable_position(self) -> tuple[int, int]:
        """End of the durable binlog."""
        ...

    @property
    def written_position(self) -> tuple[int, int]:
        """End of the binlog written so far."""
        ...

    def fetch(self, file_no: int, page_no: int) -> bytes | None:
        """A page as written so far (FIFO or file)."""
        ...

    def source(self, *, durable: bool = True) -> ClippedSource:
        """A page source ending at the durable (or written) end."""
        ...

    def filename(self, file_no: int) -> str:
        """The name of file ``file_no``."""
        ...

    def register_reader(self, reader: EngineReader) -> None:
        """Make the reader's purge guard known."""
        ...

    def wait_data(self, position: tuple[int, int], durable: bool, timeout: float | None) -> bool:
        """Wait until the end passes ``position``."""
        ...


class EngineReader:
    """Event groups of an engine from a start position, durable data only (unless ``durable=False``).

    ``groups(timeout)`` yields groups as they become available; ``poll()`` returns
    what is available now.  Restart-marker records (no GTID) are skipped.  With a
    GTID start and ``skip_seen``, groups the replica already has are skipped.
    While open, the reader keeps purge away from the file it is in.
    """

    def __init__(
        self,
        engine: ReaderHost,
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
        engine.register_reader(self)
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
        self._source = ClippedSource(engine.fetch, None)
        self._records = RecordReader(self._source, file_no, offset, skip_partial=True)

    # ------------------------------------------------------------------ positioning

    def _seek(self, target: ConnectState) -> tuple[int, int]:
        source = self.engine.source(durable=self.durable)
        assert source.end is not None
        files = self.engine.files.list()
        found = seek_gtid(source, files, target, source.end)
        if found is not None:
            return found.file_no, found.offset
        if files and files[0] == 0:
            return 0, PAGE_SIZE
        raise EngineError(POSITION_PURGED)

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
        gtid = commit_gtid(group.record.payload)
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
        return self.engine.wait_data(self.position, self.durable, timeout)

    def close(self) -> None:
        """Release the reader (and its purge guard)."""
        self.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
