"""The archiver: a primary's binlog stream stored durably in an `.ibb` directory by the engine.

``mariabinlog archive --from PRIMARY --dir DIR`` is a replica whose "relay log" is a real
`.ibb` binlog.  Its position is the engine's GTID state and nothing else: on start it opens
the engine (which recovers after a crash), asks the primary for everything after
``gtid_binlog_state``'s last GTID per domain, and appends each complete event group with
:meth:`Engine.commit` under the group's own GTID.  A crash loses at most groups that were
not yet durable, and those are simply fetched again: no group is missing or stored twice.

Durability is group commit: groups are appended without waiting, and a syncer thread makes
them durable every ``sync_interval`` seconds (and at the end).  When the stream is idle the
archiver also checkpoints, so that the last, partly filled page reaches its file and readers
in other processes (``mariabinlog serve --dir``) see the newest groups.

The engine writes each group's GTID event from the primary's: GTID, ``flags2``, timestamp
and its optional fields (commit id, XA xid, extra flags, thread id), so archived groups,
XA PREPARE / XA COMMIT groups included, are served back unchanged.

The archive describes itself: its schema history (``schema-history.json`` beside the `.ibb`
files) is saved when the archiver starts (the snapshot: empty, or ``--schema-from`` a
server) and again for every group holding DDL, before that group is handed to the engine,
so readers of the archive get column names and types even from a
``binlog_row_metadata=NO_LOG`` primary, and no group the archive holds (durable, or seen
by a live reader) has DDL the saved history lacks.  Each statement is recorded with the
stream's GTID position once its group is logged (the history follows every group's GTID,
from the engine's GTID state on start), which places it against rows of every domain in
the archive's own files (and in the primary's).  A restart continues the saved history;
DDL of a group fetched again after a crash is applied once (by GTID).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable

from ..codec.gtid import ConnectState
from ..engine import Engine, EngineConfig
from ..schema import SchemaHistory
from ..schema.history import SCHEMA_HISTORY_FILE
from .client import BinlogClient
from ..codec.groups import EventGroup
from .progress import JobProgress


class Archiver:
    """Streams groups from a :class:`BinlogClient` into an engine directory (module docstring)."""

    def __init__(
        self,
        directory: str,
        *,
        config: EngineConfig | None = None,
        sync_interval: float = 0.05,
        sync_bytes: int = 8 << 20,
        publish_interval: float = 0.5,
        purge_interval: float = 60.0,
        progress: JobProgress | None = None,
        schema_start: Callable[[], SchemaHistory] | None = None,
    ) -> None:
        self.directory = directory
        #: Makes the starting schema history when the directory has none saved yet.
        self.schema_start = schema_start or SchemaHistory
        self.schema: SchemaHistory | None = None
        self.config = config or EngineConfig()
        #: A batch is durable at most this many seconds after it was written ...
        self.sync_interval = sync_interval
        #: ... or as soon as this many bytes wait for an fsync.
        self.sync_bytes = sync_bytes
        self.publish_interval = publish_interval
        self.purge_interval = purge_interval
        self.progress = progress or JobProgress("archive")
        self.engine: Engine | None = None
        self._stop = threading.Event()
        self._lsn = 0
        self._synced = 0
        self._published = 0
        self._unsynced_bytes = 0
        #: (LSN, archive position after it) of the batches not yet durable, oldest first.
        self._pending: deque[tuple[int, ConnectState]] = deque()
        self._durable_lock = threading.Lock()
        self._error: BaseException | None = None

    def open(self) -> Engine:
        """Open (recover) the engine; its GTID state is where the stream resumes."""
        self.engine = Engine.open(self.directory, self.config, restart_marker=False)
        state = self.engine.gtid_state()
        self.progress.position = state.connect_state()
        self.progress.durable = self.progress.position.copy()
        path = os.path.join(self.directory, SCHEMA_HISTORY_FILE)
        self.schema = SchemaHistory.load(path) if os.path.exists(path) else self.schema_start()
        self.schema.save(path)
        return self.engine

    def store(self, group: EventGroup) -> None:
        """Append one group (not yet durable), its DDL saved in the schema history first."""
        self.store_batch([group])

    def store_batch(self, batch: list[EventGroup]) -> None:
        """Append the groups of one batch in one go (not yet durable: :meth:`sync`)."""
        engine = self.engine
        assert engine is not None
        if self.schema is not None:  # the DDL saved before any reader can see its group
            for group in batch:
                self._follow_schema(group)
        lsn = engine.commit_groups(batch)
        progress = self.progress
        progress.done_many(batch)
        size = sum(group.size for group in batch)
        with self._durable_lock:
            self._lsn = lsn
            self._pending.append((lsn, progress.position.copy()))
            self._unsynced_bytes += size
            due = self._unsynced_bytes >= self.sync_bytes
        if due:
            self.sync()

    def sync(self) -> None:
        """Make every group appended so far durable (one fsync); the archive's durable position
        (:attr:`JobProgress.durable`) moves to the last of them."""
        engine = self.engine
        assert engine is not None
        with self._durable_lock:
            lsn = self._lsn
            self._unsynced_bytes = 0
        if lsn <= self._synced:
            return
        engine.group_commit(lsn)
        with self._durable_lock:
            self._synced = max(self._synced, lsn)
            durable = None
            while self._pending and self._pending[0][0] <= self._synced:
                durable = self._pending.popleft()[1]
        if durable is not None:
            self.progress.mark_durable(durable)

    def _follow_schema(self, group: EventGroup) -> None:
        """Follow the group in the schema history: its GTID, and its DDL, saved when it changed."""
        schema = self.schema
        if schema is None:
            return
        statements = group.statements()
        if not statements:  # the history's GTID position follows every group
            schema.position.update(group.gtid)
            return
        before = len(schema.records)
        for event in statements:
            schema.observe_query(event, file=group.source, pos=group.end_position, gtid=str(group.gtid))
        if len(schema.records) != before:
            schema.save(os.path.join(self.directory, SCHEMA_HISTORY_FILE))

    def _sync_loop(self, idle: Callable[[], bool]) -> None:
        engine = self.engine
        assert engine is not None
        last_purge = time.monotonic()
        try:
            while not self._stop.wait(self.sync_interval):
                lsn = self._lsn
                if lsn > self._synced:
                    self.sync()
                elif lsn > self._published and idle():
                    engine.checkpoint()
                    self._published = lsn
                if self.purge_interval and time.monotonic() - last_purge > self.purge_interval:
                    engine.purge()
                    last_purge = time.monotonic()
        except BaseException as err:  # reported by run()
            self._error = err

    def run(self, client: BinlogClient) -> None:
        """Archive until the client's stream ends or :meth:`stop`; always leaves everything durable."""
        self.engine or self.open()
        client.position = self.progress.position.copy()
        if self.schema is not None:  # the stream resumes here: the history's GTID position
            self.schema.position = self.progress.position.copy()
        syncer = threading.Thread(target=self._sync_loop, args=(lambda: client.idle,), name="archive-sync", daemon=True)
        syncer.start()
        self.progress.state = "running"
        try:
            for batch in client.batches():
                self.store_batch(batch)
                if self._error is not None or self._stop.is_set():
                    break
        finally:
            self._stop.set()
            syncer.join()
            self.sync()
            self.progress.state = "stopped"
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Ask :meth:`run` to end after the current batch."""
        self._stop.set()

    def close(self, *, trim: bool = False) -> None:
        """Close the engine (clean shutdown: checkpoint); ``trim`` cuts the last file to its
        written pages, as FLUSH BINARY LOGS leaves a file (a run that ends)."""
        if self.engine is not None:
            self.engine.close(trim=trim)
            self.engine = None
