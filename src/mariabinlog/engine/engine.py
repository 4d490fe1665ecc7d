"""The binlog storage engine: MariaDB's binlog-in-engine design (seed 002) over the `.ibb` codec.

What: an :class:`Engine` owns one directory of ``binlog-NNNNNN.ibb`` files and a
redo log.  Committers append event groups in commit order; the codec's
``PageWriter`` lays them out into pages (header page, page-1 and interval GTID
state records, chunks, OOB forests); the engine logs every append in the redo
log, publishes the pages to the page FIFO, and reports durability per
``durability`` mode.  Readers get only durable data.  Administrative
operations (FLUSH / PURGE / RESET / backup) follow ibb-format.md §8.

Why this shape:

* One write lock (MariaDB's ``LOCK_commit_ordered``) serialises layout, GTID
  assignment and redo appends, so the binlog is exactly commit order.  It is
  never held during an fsync: durability waits happen after it is released,
  in redo-log group commit, so concurrent committers share one fsync.
* The order inside an append is: lay out -> publish pages -> wait until the
  file two before the one just entered is fsynced -> append the redo record.
  Hence the redo log never holds a record for file N while N-2 is not yet
  durable, which is what lets recovery replay only the last two files.
* Pages that one append fills completely are *forced*: the flush thread writes
  them and the redo record only names them (with their CRC); the log write
  that makes such a record durable first waits for those pages and fsyncs the
  file.  A multi-GB transaction is therefore written once, not twice, and
  memory stays bounded by the FIFO size.
* Checkpoints flush the FIFO, write the half-filled last page, fsync, and move
  the redo start.  The page written half-filled is logged in full by its next
  append (the partial-last-page rule), so no doublewrite buffer is needed.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self, TypeVar

from .. import server_version
from ..codec.events import FL_TRANSACTIONAL, FormatDescriptionEvent
from ..codec.groups import EventGroup
from ..codec.gtid import BinlogState, ConnectState, Gtid
from ..codec.ibb.page import (
    NO_FILE_REF, PAGE_DATA_END, PAGE_SIZE, PAGE_SIZE_SHIFT, IbbHeader, RecordType, decode_header_page, page_crc,
)
from ..codec.ibb.records import CommitRecord, GtidState, Xid
from ..codec.ibb.state import read_header, state_at_page
from ..codec.ibb.writer import PageWriter, RecordSpan, WrittenPage
from ..errors import EngineError
from .backup import Backup, BackupInfo
from .batch import Batch
from .config import EngineConfig, recorded_settings
from .dirlock import in_use, lock_directory
from .fifo import PageFifo
from .files import binlog_name
from .gtids import Gtids, gtid_event
from .host import BackupHost, PurgeHost, WritePath
from .purge import Purge
from .reader import EngineReader
from .recovery import HostRecords, PendingXa, Recovered, adopt, finish_recovery, recover, restore_state
from ..codec.ibb.redo import RecordBuilder
from .redo import REDO_NAME
from .source import ClippedSource
from .storage import BinlogFiles
from .transaction import BinlogListEntry, CommitInfo, EngineStatus, Transaction
from .view import require_engine
from .xa import Xa

T = TypeVar("T")

RESET_REFUSED = "Cannot execute RESET MASTER as the binlog is in use by an active transaction"
REDO_RESERVE = 4096
#: Bytes a COMMIT record holds besides the group's events (its header, a GTID event with an
#: XA xid and extra fields), and an OOB node besides its data (five compr integers).
COMMIT_OVERHEAD = 512
NODE_OVERHEAD = 45
#: (domain, server) pairs the GTID state may gain between the sizing of a record and its append.
STATE_SLACK = 16
REDO_WRITE_AHEAD = 1 << 20
SERVER_VERSION = server_version()


class Engine:
    """A crash-safe binlog storage engine over one directory (see the module docstring).

    Open with :meth:`open`; every method is thread-safe.  ``on_checkpoint(lsn)`` is
    called before a checkpoint moves the redo start to ``lsn``: a host that adds
    ``host_redo`` records must make the data they describe durable there.
    ``on_recover(records)`` receives the host records found after the last
    checkpoint by crash recovery (before the engine checkpoints them away).

    XA, purge, backup, an archiver's batches and the GTID state are rooms the engine holds
    (``_xa``, ``_purge``, ``_backup``, ``_batch``, ``_gtids``); each owns its state and sees
    the engine only through the interface it is given here (``engine/host.py``).
    """

    def __init__(self, directory: str, config: EngineConfig, *, server_id: int = 1,
                 on_checkpoint: Callable[[int], None] | None = None) -> None:
        self.directory = directory
        self.config = config
        self.server_id = server_id
        self.on_checkpoint = on_checkpoint
        self.files = BinlogFiles(directory)
        self.fifo = PageFifo(self.files, self._pages_for_file, max_pages=config.fifo_pages)
        self._piece = max(1, min(config.oob_piece_size, config.spill))
        self._lock = threading.Lock()
        self._admin = threading.RLock()
        self._ckpt_lock = threading.Lock()
        self._dur_cond = threading.Condition()
        self._pending: deque[tuple[int, tuple[int, int]]] = deque()
        self._synced_seen = 0
        self._data_waiters = 0
        self._gtids = Gtids(server_id)
        self._oob_active: weakref.WeakKeyDictionary[Transaction, int] = weakref.WeakKeyDictionary()
        self._scratch = bytearray()
        self._full_image: set[tuple[int, int]] = set()
        self._file_pages: dict[int, int] = {}
        self._headers: dict[int, IbbHeader] = {}
        self._entered: int | None = None
        self._written_end = (0, 0)
        self._durable_end = (0, 0)
        self.generation = 0
        self.closed = False
        self.recovered: Recovered | None = None
        self.host_records: HostRecords = []
        self._wake = threading.Event()
        self._background: threading.Thread | None = None
        self._dir_fd = -1
        #: Recovery of a clean directory writes nothing; its new epoch starts with the first append.
        self._epoch_due = False
        #: FLUSHed files not cut yet: file_no -> pages to keep
        self._truncate_due: dict[int, int] = {}
        self._grow_due = False
        path = WritePath(self._lock, lambda: self._writer, self._check_open, self._append, self._after_write,
                         self._gtids.assign, self._gtids.note_many, self.gtid_event)
        self._xa = Xa(path, self._drop_oob_guard)
        self._batch = Batch(path, config, lambda: self.redo.capacity, self._record_room, self.commit)
        self._purge = Purge(PurgeHost(
            config, self.files, self._admin, self._lock, lambda: self.closed, lambda: self._writer.position[0],
            self._held_files, self.header, self.fifo.wait_synced, self._forget_file,
        ))
        self._backup = Backup(BackupHost(
            self.files, lambda: self.redo, self._admin, self._lock, self._check_open,
            lambda: self._writer.position, self._capture, self._checkpoint_now,
        ))

    # ================================================================== opening

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        config: EngineConfig | None = None,
        *,
        server_id: int = 1,
        restart_marker: bool | bytes = True,
        on_checkpoint: Callable[[int], None] | None = None,
        on_recover: Callable[[HostRecords], None] | None = None,
        create: bool = True,
        **options: Any,
    ) -> Engine:
        """Open (creating, or recovering after a crash) the engine in ``directory``.

        ``options`` are :class:`EngineConfig` fields; without ``config`` the settings the
        newest file's header records are kept (file size, state interval).  With
        ``create=False`` a path holding no engine is refused (``OptionError``) instead of
        becoming one.  ``restart_marker`` writes the server-start COMMIT record with a
        Format_description event (ibb-format.md §6.1); pass bytes for a Format_description
        of your own, False for none.
        """
        directory = os.fspath(directory)
        if not create:
            require_engine(directory)
        if config is None:
            config = EngineConfig(**recorded_settings(directory)) if os.path.isdir(directory) else EngineConfig()
        if options:
            config = config.with_options(**options)
        os.makedirs(directory, exist_ok=True)
        engine = cls(directory, config, server_id=server_id, on_checkpoint=on_checkpoint)
        engine._dir_fd = lock_directory(directory)
        try:
            engine._start(on_recover)
            if restart_marker:
                engine.write_restart_marker(restart_marker if isinstance(restart_marker, bytes) else None)
        except BaseException:
            engine._abandon()
            raise
        return engine

    init = open
    in_use = staticmethod(in_use)
    #: the GTID event that starts an event group (no checksum, ``log_pos`` 0)
    gtid_event = staticmethod(gtid_event)

    def _start(self, on_recover: Callable[[HostRecords], None] | None) -> None:
        config = self.config
        files = self.files
        if os.path.exists(os.path.join(self.directory, REDO_NAME)):
            recovered = recover(self.directory, files)
            if recovered.host_records and on_recover is not None:
                on_recover(recovered.host_records)
            self.host_records = recovered.host_records
            if recovered.records or recovered.truncated_pages or recovered.deleted_files:
                finish_recovery(recovered)
            else:
                # a clean directory: the new epoch's checkpoint waits for the first write
                self._epoch_due = True
        else:
            recovered = adopt(self.directory, files, config.redo_capacity)
        self.recovered = recovered
        self.redo = recovered.redo
        self.redo.on_sync = self._on_sync
        self.redo.barrier = self._barrier
        end = recovered.end
        restored = restore_state(files, end)
        self._gtids.restore(restored.state, restored.changed)
        self._xa.restore(restored.pending_xa)
        end_file, end_offset = end
        if end_file >= 1 and files.exists(end_file - 1):
            files.sync(end_file - 1)
        if end == (0, 0):
            self._writer = self._new_writer(0)
        else:
            header = read_header(files, end_file)
            if header is None:
                raise EngineError(f"{binlog_name(end_file)}: the recovered end lies in a file without a valid header")
            self._headers[end_file] = header
            self._file_pages[end_file] = header.page_count
            page_no, in_page = end_offset >> PAGE_SIZE_SHIFT, end_offset & (PAGE_SIZE - 1)
            page = files.read_page(end_file, page_no) if in_page else None
            if in_page:
                self._full_image.add((end_file, page_no))
            self._writer = PageWriter.resume(
                header,
                page_no,
                in_page,
                page,
                pages_per_file=config.pages_per_file,
                state_payload=self._state_payload,
                state_interval=config.interval_pages,
                header_factory=self._header,
                pages_in_file=header.page_count,
            )
        self._written_end = self._durable_end = end
        self._synced_seen = self.redo.synced_lsn
        self.fifo.start((end_file, end_offset >> PAGE_SIZE_SHIFT), end_file - 1)
        self._grow_due = end != (0, 0)
        self._background = threading.Thread(target=self._run_background, name="binlog-background", daemon=True)
        self._background.start()
        if end == (0, 0):
            self._initial_file()

    def _new_writer(self, file_no: int) -> PageWriter:
        return PageWriter(
            file_no,
            pages_per_file=self.config.pages_per_file,
            state_payload=self._state_payload,
            state_interval=self.config.interval_pages,
            header_factory=self._header,
        )

    def _initial_file(self) -> None:
        """Write file 0's header and page-1 state and make them durable (``binlog_sync_initial``)."""
        with self._lock:
            _, end_lsn = self._append(self._writer.prepare)
        self.redo.flush(end_lsn)
        self.checkpoint()

    # ================================================================== callbacks of the codec writer

    def _pages_for_file(self, file_no: int) -> int:
        return self._file_pages.get(file_no, self.config.pages_per_file)

    def _oob_ref(self, file_no: int) -> int:
        refs = list(self._oob_active.values()) + self._xa.oob_refs()
        return min(refs + [file_no])

    def _header(self, file_no: int, page_count: int) -> IbbHeader:
        """Header of a file the writer begins (start LSN = LSN of the record that writes it)."""
        xa_ref = self._xa.ref()
        header = IbbHeader(
            file_no,
            page_count,
            start_lsn=self.redo.buffered_lsn,
            gtid_state_interval=self.config.interval_pages,
            oob_ref_file_no=self._oob_ref(file_no),
            xa_ref_file_no=NO_FILE_REF if xa_ref is None else xa_ref,
        )
        self._file_pages[file_no] = page_count
        self._headers[file_no] = header
        self._entered = file_no
        return header

    def _state_payload(self, file_no: int, page_no: int) -> bytes:
        """Full state at page 1, differential (pairs changed in this file) at interval pages."""
        return GtidState(tuple(self._gtids.record_gtids(page_no)), self._xa.ref()).encode()

    # ================================================================== appending

    def _append(
        self,
        op: Callable[[], T],
        host_redo: Sequence[bytes] = (),
        extra: Callable[[RecordBuilder, T], None] | None = None,
        size: int = 0,
    ) -> tuple[T, int]:
        """Run a layout operation on the writer and log it; caller holds the write lock.

        ``size`` is the payload the operation writes: if the redo record could
        not fit, a checkpoint runs *before* the layout, so a record (with its host
        records) is never separated from the binlog data it describes.
        """
        if size > self._record_room(1):
            # one redo record would begin two files at one start LSN (EngineConfig.record_room)
            raise EngineError(
                f"a record of {size} bytes does not fit in one binlog file of {self.config.pages_per_file} pages"
            )
        redo = self.redo
        if self._epoch_due:
            # the new epoch (records framed with it) needs a checkpoint that names it
            self._epoch_due = False
            redo.write_checkpoint(redo.buffered_lsn, self._writer.position, epoch=redo.epoch)
        if self._grow_due:
            # files are grown to full size when writing goes on, not by opening
            self._grow_due = False
            file_no = self._writer.position[0]
            if file_no in self._file_pages:  # a file cut by close(trim=True) grows back here
                self.files.create(file_no, self._file_pages[file_no])
            self.fifo.preallocate(file_no + 1)
        needed = size + sum(map(len, host_redo)) + 3 * PAGE_SIZE + 64 * (len(self._gtids.state) + 8) + REDO_RESERVE
        if redo.free() < needed:
            self._checkpoint_now(self._capture())
        writer = self._writer
        before = writer.position
        self._entered = None
        result = op()
        done = writer.drain()
        partial = writer.partial_page()
        end = writer.position
        builder = RecordBuilder()
        barrier = self._log_pages(builder, before, done, partial, end)
        for data in host_redo:
            builder.host(data)
        if extra is not None:
            extra(builder, result)
        body = builder.end(end)
        self.fifo.publish(done, partial)
        entered = self._entered
        if entered is not None:
            self.fifo.preallocate(entered + 1)
            if entered >= 2:
                self.fifo.wait_synced(entered - 2)
            if self.config.expire_seconds or self.config.max_total_size:
                self._purge.due = True
                self._wake.set()
        if redo.free() < len(body):
            raise EngineError(f"redo record of {len(body)} bytes does not fit in the redo log")
        _, end_lsn = redo.append(body, barrier)
        self._written_end = end
        with self._dur_cond:
            if end_lsn <= self._synced_seen:
                self._durable_end = end
            else:
                self._pending.append((end_lsn, end))
            if self._data_waiters:
                self._dur_cond.notify_all()
        return result, end_lsn

    def _log_pages(
        self,
        builder: RecordBuilder,
        before: tuple[int, int],
        done: list[WrittenPage],
        partial: WrittenPage | None,
        end: tuple[int, int],
    ) -> tuple[int, int] | None:
        """Redo operations for the pages an append touched; returns the forced-page barrier."""
        before_key = (before[0], before[1] >> PAGE_SIZE_SHIFT)
        before_off = before[1] & (PAGE_SIZE - 1)
        full = self._full_image
        whole = [p for p in done if p.page_no > 0 and ((p.file_no, p.page_no) != before_key or before_off == 0)]
        threshold = self.config.forced_page_threshold
        forcing = threshold > 0 and len(whole) >= threshold
        barrier = None
        for page in done:
            key = (page.file_no, page.page_no)
            start = before_off if key == before_key else 0
            if key in full:
                start = 0
                full.discard(key)
            if forcing and start == 0 and page.page_no > 0:
                builder.forced(page.file_no, page.page_no, page_crc(page.data))
                barrier = (page.file_no, page.page_no + 1)
            else:
                builder.page(page.file_no, page.page_no, start, page.data[start:PAGE_DATA_END])
        if partial is not None:
            key = (partial.file_no, partial.page_no)
            start = before_off if key == before_key else 0
            if key in full:
                start = 0
                full.discard(key)
            stop = end[1] & (PAGE_SIZE - 1)
            if stop > start:
                builder.page(partial.file_no, partial.page_no, start, partial.data[start:stop])
        return barrier

    def _barrier(self, token: object) -> None:
        """Before the log write of forced pages: they must be written and fsynced."""
        assert isinstance(token, tuple)
        self.fifo.wait_flushed(token)
        self.fifo.sync_dirty()

    def _on_sync(self, lsn: int) -> None:
        with self._dur_cond:
            self._synced_seen = lsn
            pending = self._pending
            end = None
            while pending and pending[0][0] <= lsn:
                end = pending.popleft()[1]
            if end is not None:
                self._durable_end = end
                if self._data_waiters:
                    self._dur_cond.notify_all()

    def _after_write(self, end_lsn: int, wait: bool) -> None:
        """Durability per mode once the write lock is released."""
        redo = self.redo
        mode = self.config.durability
        if wait and mode == 1:
            redo.flush(end_lsn, sync=True)
        elif wait and mode == 2:
            redo.flush(end_lsn, sync=False)
        elif redo.buffered_bytes() > REDO_WRITE_AHEAD:
            if redo.buffered_bytes() > 4 * REDO_WRITE_AHEAD:
                redo.flush(sync=False)  # the background thread is behind: write here
            else:
                self._wake.set()  # the background thread writes it while this one goes on
        if redo.free() < redo.capacity * (1 - self.config.checkpoint_fill):
            self._wake.set()

    def _check_open(self) -> None:
        if self.closed:
            raise EngineError("the binlog engine is closed")
        self.fifo.check()

    # ================================================================== writing

    def begin(self) -> Transaction:
        """A new event group that may grow beyond the spill size (OOB)."""
        self._check_open()
        return Transaction(self)

    def commit(
        self,
        events: bytes | bytearray | memoryview = b"",
        *,
        trx: Transaction | None = None,
        gtid: Gtid | None = None,
        domain_id: int = 0,
        server_id: int | None = None,
        flags2: int = FL_TRANSACTIONAL,
        timestamp: int | None = None,
        host_redo: Sequence[bytes] = (),
        wait: bool = True,
        gtid_fields: Mapping[str, Any] | None = None,
    ) -> CommitInfo:
        """Write one event group in commit order (``binlog_write_direct_ordered``).

        The engine puts the GTID event first (``gtid`` or the next seq_no of
        ``domain_id``) followed by ``events`` (and ``trx``'s data).  Groups larger
        than the spill size go out-of-band.  ``host_redo`` records go into the same
        redo record.  With ``wait`` the call returns once the commit is as durable
        as the durability mode promises (group commit).  ``gtid_fields`` carries
        the rest of a GTID event copied from elsewhere (commit id, XA xid, extra
        flags, thread id: :class:`~mariabinlog.codec.events.GtidEvent` keywords),
        so converters and archivers store the original event unchanged.
        """
        if trx is None and len(events) > self.spill_size:
            trx = self.begin()
        if trx is not None:
            if trx.state != "active":
                raise EngineError(f"transaction is {trx.state}")
            if len(events):
                trx.write(events)
            trx._spill_rest(force=len(trx._buf) > self.spill_size)
        with self._lock:
            self._check_open()
            gtid = self._gtids.assign(gtid, domain_id, server_id)
            event = self.gtid_event(gtid, flags2=flags2, timestamp=timestamp, **(gtid_fields or {}))
            if trx is not None and trx.forest is not None:
                ref = trx.forest.ref
                payload = CommitRecord((ref,) if ref is not None else (), event).encode()
            else:
                body = bytes(trx._buf) if trx is not None else bytes(events)
                payload = CommitRecord((), event + body).encode()
            writer = self._writer

            def op() -> RecordSpan:
                writer.prepare()
                self._gtids.note(gtid)
                return writer.write_record(RecordType.COMMIT, payload)

            span, end_lsn = self._append(op, host_redo, size=len(payload))
            if trx is not None:
                trx.state = "committed"
                trx._buf = bytearray()
                self._oob_active.pop(trx, None)
        self._after_write(end_lsn, wait)
        return CommitInfo(gtid, span.file_no, span.offset, span.end_file_no, span.end_offset, end_lsn)

    def write_restart_marker(self, format_description: bytes | None = None) -> None:
        """The server-start record: a COMMIT with header ``00`` and one Format_description event."""
        event = format_description or FormatDescriptionEvent(
            server_version=SERVER_VERSION, create_timestamp=int(time.time()), timestamp=int(time.time())
        ).encode()
        with self._lock:
            self._check_open()
            writer = self._writer
            _, end_lsn = self._append(lambda: writer.write_record(RecordType.COMMIT, CommitRecord((), event).encode()), size=len(event))
        self._after_write(end_lsn, True)

    def write_oob_piece(self, trx: Transaction, data: bytes | memoryview) -> None:
        """One OOB node of ``trx`` (``binlog_oob_data_ordered``)."""
        assert trx.forest is not None
        forest = trx.forest
        with self._lock:
            self._check_open()
            writer = self._writer
            if trx not in self._oob_active:
                self._oob_active[trx] = writer.position[0]
            # header and data go into one reused buffer: a multi-GB transaction then allocates
            # no large transient objects (they fragment the heap and inflate RSS)
            header = forest.next_node(b"").header()
            size = len(header) + len(data)
            scratch = self._scratch
            if len(scratch) < size:
                scratch = self._scratch = bytearray(size)
            scratch[: len(header)] = header
            scratch[len(header) : size] = data
            record = memoryview(scratch)[:size]
            try:
                span, end_lsn = self._append(lambda: writer.write_record(RecordType.OOB_DATA, record), size=size)
            finally:
                record.release()
            forest.added(span.file_no, span.offset)
            if forest.num_nodes == 1:
                self._oob_active[trx] = span.file_no
        self._after_write(end_lsn, False)

    def _record_room(self, slack: int = STATE_SLACK) -> int:
        """Bytes one append may lay out and begin at most one new file (``EngineConfig.record_room``)."""
        return self.config.record_room(len(self._gtids.state) + slack)

    @property
    def spill_size(self) -> int:
        """Bytes a group may buffer before it goes out-of-band (``OobHost``): the setting, but never
        more than one COMMIT record that fits in one file."""
        return max(1, min(self.config.spill, self._record_room() - COMMIT_OVERHEAD))

    @property
    def piece_size(self) -> int:
        """Bytes per OOB node (``OobHost``): the setting, but never more than one file holds."""
        return max(1, min(self._piece, self._record_room() - NODE_OVERHEAD))

    def write_oob(self, trx: Transaction, data: bytes | bytearray | memoryview) -> None:
        """Append data to a running transaction (spilled out-of-band past the spill size)."""
        trx.write(data)

    def forget(self, trx: Transaction) -> None:
        """Drop a rolled-back transaction's purge guard."""
        with self._lock:
            self._oob_active.pop(trx, None)

    def _drop_oob_guard(self, trx: Transaction) -> None:
        """A prepared transaction's OOB data is held by its XA from now on; write lock held."""
        self._oob_active.pop(trx, None)

    def _held_files(self) -> list[int]:
        """Files running transactions and pending XA need (purge guards); write lock held."""
        return list(self._oob_active.values()) + self._xa.held_files()

    def _forget_file(self, file_no: int) -> None:
        """A purged file leaves the header and page-count caches."""
        self._headers.pop(file_no, None)
        self._file_pages.pop(file_no, None)

    # ================================================================== XA (engine/xa.py)

    def xa_prepare(self, trx: Transaction, xid: Xid, engine_count: int, host_redo: Sequence[bytes]) -> None:
        """XA PREPARE (:meth:`Transaction.prepare`): spill everything, write a durable XA_PREPARE."""
        self._xa.prepare(trx, xid, engine_count, host_redo)

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
        return self._xa.commit(xid, gtid=gtid, domain_id=domain_id, server_id=server_id, flags2=flags2,
                               timestamp=timestamp, host_redo=host_redo, wait=wait)

    def xa_rollback(self, xid: Xid, *, host_redo: Sequence[bytes] = (), wait: bool = True) -> None:
        """XA ROLLBACK of a prepared transaction: an XA_COMPLETE record, nothing visible to readers."""
        self._xa.rollback(xid, host_redo=host_redo, wait=wait)

    def pending_xa(self) -> list[PendingXa]:
        """Prepared XA transactions waiting for commit or rollback (after a crash: for the host)."""
        return self._xa.prepared()

    # ================================================================== batches (engine/batch.py)

    def commit_groups(self, groups: Sequence[EventGroup]) -> int:
        """Write whole event groups received from elsewhere (an archiver's batch) under their own
        GTIDs in few appends, without waiting for durability (:meth:`Batch.commit_groups`)."""
        return self._batch.commit_groups(groups)

    # ================================================================== durability

    def group_commit(self, lsn: int | None = None) -> None:
        """Make everything appended so far (or up to ``lsn``) durable with one log fsync."""
        self.redo.flush(lsn, sync=True)

    # ================================================================== checkpoints

    def _capture(self) -> tuple[int, tuple[int, int], WrittenPage | None, int]:
        """What a checkpoint makes durable; caller holds the write lock."""
        partial = self._writer.partial_page()
        if partial is not None:
            self._full_image.add((partial.file_no, partial.page_no))
        return self.redo.buffered_lsn, self._writer.position, partial, self.generation

    def _checkpoint_now(self, capture: tuple[int, tuple[int, int], WrittenPage | None, int]) -> None:
        lsn, end, partial, generation = capture
        with self._ckpt_lock:
            redo = self.redo
            if generation != self.generation or lsn < redo.checkpoint.lsn:
                return
            if lsn == redo.checkpoint.lsn and end == redo.checkpoint.end:
                return
            redo.flush(lsn, sync=True)
            self.fifo.wait_flushed((end[0], end[1] >> PAGE_SIZE_SHIFT))
            if partial is not None and not self.fifo.write_partial(partial):
                # the end page was completed since the capture and waits in the FIFO: the
                # checkpoint must not name an end on a page that is not on disk yet
                self.fifo.wait_flushed((partial.file_no, partial.page_no + 1))
            self.fifo.sync_dirty()
            # a FLUSH whose redo record this checkpoint drops must have cut its file first,
            # or a crash before the FLUSH gets to it would leave the file's empty tail for good
            for file_no, pages in list(self._truncate_due.items()):
                if file_no < end[0]:
                    self._truncate(file_no, pages)
            if self.on_checkpoint is not None:
                self.on_checkpoint(lsn)
            redo.write_checkpoint(lsn, end)

    def checkpoint(self) -> int:
        """Write a checkpoint now; returns its LSN."""
        with self._lock:
            self._check_open()
            capture = self._capture()
        self._checkpoint_now(capture)
        return capture[0]

    def _run_background(self) -> None:
        """Mode 0/2 log fsync every ``flush_interval`` s, checkpoints when the log fills or
        every ``checkpoint_interval`` s while the binlog grows, automatic purge after a file
        switch."""
        every = self.config.checkpoint_interval
        interval = min(self.config.flush_interval, every) if every else self.config.flush_interval
        threshold = self.redo.capacity * self.config.checkpoint_fill
        last = time.monotonic()
        while not self.closed:
            self._wake.wait(interval)
            self._wake.clear()
            if self.closed:
                return
            try:
                if self.redo.synced_lsn < self.redo.buffered_lsn:
                    self.redo.flush(sync=True)
                behind = self.redo.buffered_lsn - self.redo.checkpoint.lsn
                if behind > threshold or (every and behind and time.monotonic() - last >= every):
                    self.checkpoint()
                    last = time.monotonic()
                if self._purge.due:
                    self._purge.due = False
                    self._purge.auto()
            except BaseException as err:  # noqa: BLE001 - the engine is unusable now; operations report it
                if not self.closed:
                    self.fifo.fail(err)
                return

    # ================================================================== status

    @property
    def durable_position(self) -> tuple[int, int]:
        """End of the durable binlog (file_no, offset): what readers may see."""
        return self._durable_end

    @property
    def written_position(self) -> tuple[int, int]:
        """End of the binlog written so far (durable or not)."""
        return self._written_end

    def status(self) -> EngineStatus:
        """SHOW MASTER STATUS: current file and offset, plus durability and GTID position."""
        with self._lock:
            file_no, offset = self._writer.position
            state = self._gtids.state.copy()
            xa = len(self._xa.pending)
            oob = len(self._oob_active)
        durable = self._durable_end
        return EngineStatus(
            file_no,
            offset,
            durable[0],
            durable[1],
            self.redo.buffered_lsn,
            self.redo.synced_lsn,
            self.redo.checkpoint.lsn,
            str(state.connect_state()),
            str(state),
            xa,
            oob,
        )

    def gtid_state(self) -> BinlogState:
        """``@@gtid_binlog_state`` as of the last write."""
        with self._lock:
            return self._gtids.state.copy()

    def filename(self, file_no: int) -> str:
        """``get_filename``: the name of binlog file ``file_no``."""
        return binlog_name(file_no)

    def files_list(self) -> list[BinlogListEntry]:
        """SHOW BINARY LOGS: every file up to the active one with its size."""
        with self._lock:
            active = self._writer.position[0]
        return [BinlogListEntry(binlog_name(n), n, self.files.size(n)) for n in self.files.list() if n <= active]

    def header(self, file_no: int) -> IbbHeader | None:
        """The header of ``file_no`` (cached: headers never change)."""
        header = self._headers.get(file_no)
        if header is None:
            page = self.fifo.get(file_no, 0) or self.files.read_page(file_no, 0)
            if page is None:
                return None
            header = decode_header_page(page)
            if header is not None:
                self._headers[file_no] = header
        return header

    def source(self, *, durable: bool = True) -> ClippedSource:
        """A codec PageSource over the FIFO and the files, ending at the durable (or written) end."""
        return ClippedSource(self.fetch, self._durable_end if durable else self._written_end)

    def fetch(self, file_no: int, page_no: int) -> bytes | None:
        """Page ``page_no`` of ``file_no`` as written so far: from the page FIFO, else the file."""
        page = self.fifo.get(file_no, page_no)
        if page is None:
            page = self.files.read_page(file_no, page_no)
        return page

    def initial_state(self) -> BinlogState:
        """``binlog_get_init_state``: the GTID state at the start of the oldest binlog file."""
        with self._admin:
            files = self.files.list()
            for file_no in files:
                state = state_at_page(self.source(durable=False), file_no, 1)
                if state is not None:
                    return state
            return BinlogState()

    # ================================================================== readers

    def reader(
        self,
        start: tuple[int, int] | ConnectState | str | None = None,
        *,
        durable: bool = True,
        skip_seen: bool = True,
    ) -> EngineReader:
        """A binlog reader (``get_binlog_reader``): see :class:`mariabinlog.engine.reader.EngineReader`.

        ``start``: None (oldest file), ``(file_no, offset)`` (a legacy position at a
        chunk boundary), or a GTID position (:class:`ConnectState` or its text).
        """
        self._check_open()
        if isinstance(start, str):
            start = ConnectState.parse(start)
        return EngineReader(self, start, durable=durable, skip_seen=skip_seen)

    def register_reader(self, reader: EngineReader) -> None:
        """Let purge see ``reader``'s guard (:meth:`EngineReader.holds`) while it lives."""
        self._purge.register_reader(reader)

    def wait_data(self, position: tuple[int, int], durable: bool, timeout: float | None) -> bool:
        """Wait until the (durable) end passes ``position``; a reader at the durable end
        triggers a log flush so it sees recent commits without waiting for the timer."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.closed:
                raise EngineError("the binlog engine is closed")
            end = self._durable_end if durable else self._written_end
            if end > position:
                return True
            if durable and self._written_end > position:
                self.redo.flush(sync=True)
                continue
            with self._dur_cond:
                end = self._durable_end if durable else self._written_end
                if end > position or (durable and self._written_end > position):
                    continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._data_waiters += 1
                try:
                    self._dur_cond.wait(remaining if remaining is not None else 1.0)
                finally:
                    self._data_waiters -= 1

    # ================================================================== FLUSH BINARY LOGS

    def flush(self, delete_domain_ids: Iterable[int] = ()) -> list[str]:
        """FLUSH BINARY LOGS [DELETE_DOMAIN_ID=(...)]: DUMMY to the page end, truncate, go on in the next file.

        Returns warnings (domains not in the state); raises EngineError when a
        domain still has GTIDs in the existing files.
        """
        with self._admin:
            domains = list(delete_domain_ids)
            initial = self.initial_state() if domains else None
            with self._lock:
                self._check_open()
                warnings = self._gtids.delete_domains(domains, initial) if domains else []
                writer = self._writer
                file_no = writer.position[0]

                def add_truncate(builder: RecordBuilder, pages: int) -> None:
                    builder.truncate(file_no, pages)

                pages, end_lsn = self._append(writer.flush_file, extra=add_truncate)
                self._truncate_due[file_no] = pages
            self.redo.flush(end_lsn, sync=True)
            self.fifo.wait_flushed((file_no + 1, 0))
            self.files.sync(file_no)
            self._truncate(file_no, pages)
            self._file_pages[file_no] = pages
        self._purge.auto()
        return warnings

    def _truncate(self, file_no: int, pages: int) -> None:
        """Cut a flushed file to its used pages (idempotent; FLUSH or the next checkpoint)."""
        if self.files.size(file_no) > pages << PAGE_SIZE_SHIFT:
            self.files.truncate(file_no, pages)
        self._truncate_due.pop(file_no, None)

    # ================================================================== PURGE (engine/purge.py)

    def purge(self, to_file: int | str | None = None, *, before: float | None = None) -> list[int]:
        """PURGE BINARY LOGS TO / BEFORE; with no argument the automatic rules (:meth:`Purge.purge`)."""
        return self._purge.purge(to_file, before=before)

    # ================================================================== backup (engine/backup.py)

    def backup(self, destination: str | os.PathLike[str]) -> BackupInfo:
        """Copy the directory consistently into ``destination`` (must be empty or new; :meth:`Backup.backup`)."""
        return self._backup.backup(destination)

    # ================================================================== RESET MASTER

    def reset(self) -> None:
        """RESET MASTER: delete every binlog file and start again at file 0 with an empty state."""
        with self._admin:
            with self._lock:
                self._check_open()
                if self._xa.pending or len(self._oob_active):
                    raise EngineError(RESET_REFUSED)
                with self._ckpt_lock:
                    redo = self.redo
                    redo.flush(sync=True)
                    self.fifo.pause()
                    try:
                        self.fifo.reset((0, 0))
                        redo.write_checkpoint(redo.buffered_lsn, (0, 0), epoch=redo.epoch)
                        self._epoch_due = False
                        for file_no in self.files.list():
                            self.files.delete(file_no)
                        self.files.sync_dir()
                        self._headers.clear()
                        self._file_pages.clear()
                        self._truncate_due.clear()
                        self._full_image.clear()
                        self._gtids.clear()
                        self._writer = self._new_writer(0)
                        with self._dur_cond:
                            self._pending.clear()
                            self._written_end = self._durable_end = (0, 0)
                        self.generation += 1
                    finally:
                        self.fifo.resume()
            self._initial_file()

    # ================================================================== closing

    def close(self, *, trim: bool = False) -> None:
        """Clean shutdown: checkpoint (everything durable, last page written), stop threads,
        remove pre-allocated files nothing was written to (a clean directory reopens without
        a write).  ``trim`` also cuts the active file to its used pages, as a finished
        conversion wants (the file grows again when writing goes on)."""
        if self.closed:
            return
        with self._lock:
            if self.closed:
                return
            self.fifo.check()
            self.closed = True
        # The background thread is stopped before taking the admin lock: an automatic purge
        # it is starting waits for that lock (and then sees the engine closed).
        self._wake.set()
        if self._background is not None:
            self._background.join()
        with self._admin:
            with self._lock:
                capture = self._capture()
            self._checkpoint_now(capture)
            with self._dur_cond:
                self._dur_cond.notify_all()
            self.fifo.stop()
            self._drop_unused(trim)
            self.redo.close()
            self.files.close()
            self._unlock_directory()

    def _drop_unused(self, trim: bool) -> None:
        """Delete pre-allocated files past the active one; with ``trim`` cut the active file."""
        file_no, offset = self._writer.position
        changed = False
        for later in self.files.list():
            if later > file_no and read_header(self.files, later) is None:
                self.files.delete(later)
                changed = True
        if trim and offset:
            pages = -(-offset >> PAGE_SIZE_SHIFT)
            if self.files.size(file_no) > pages << PAGE_SIZE_SHIFT:
                self.files.truncate(file_no, pages)
        if changed:
            self.files.sync_dir()

    def _abandon(self) -> None:
        """Stop without a checkpoint (failed open)."""
        self.closed = True
        self._wake.set()
        try:
            self.fifo.stop()
        finally:
            if getattr(self, "redo", None) is not None:
                self.redo.close()
            self.files.close()
            self._unlock_directory()

    def _unlock_directory(self) -> None:
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

