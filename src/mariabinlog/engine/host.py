"""What the :class:`~mariabinlog.engine.engine.Engine` lends its rooms: one small interface each.

Why: XA, purge, backup and the archiver's batches each own their state in an object of their
own (:class:`~.xa.Xa`, :class:`~.purge.Purge`, :class:`~.backup.Backup`, :class:`~.batch.Batch`)
that the engine holds by composition.  What a room may touch of the engine is written down here,
field by field, and the engine builds each interface in one place (``Engine.__init__``); a room
never sees the engine itself (no room imports ``engine.py``).  Fields are callables where the
engine's value changes over its life (RESET MASTER replaces the page writer, ``close`` sets
``closed``, the redo log exists only once the engine is started).

Lock order (every room keeps it): the admin lock (FLUSH / PURGE / RESET / backup, re-entrant)
before the write lock (``LOCK_commit_ordered``) before the engine's checkpoint lock; nothing
takes the admin lock while holding the write lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..codec.gtid import Gtid
from ..codec.ibb.page import IbbHeader
from ..codec.ibb.writer import PageWriter, WrittenPage
from .config import EngineConfig
from .redo import RedoLog
from .storage import BinlogFiles

#: What a checkpoint makes durable (``Engine._capture``): LSN, end position, the partly filled
#: end page as captured, the RESET generation.
Capture = tuple[int, tuple[int, int], WrittenPage | None, int]


@dataclass(frozen=True, slots=True)
class WritePath:
    """The engine's append path in commit order, for rooms that write records (XA, batches).

    Everything but ``lock`` and ``after_write`` is called with the write lock held.
    """

    #: the write lock (MariaDB's ``LOCK_commit_ordered``): layout, GTID assignment, redo append
    lock: threading.Lock
    #: the current page writer (RESET MASTER replaces it)
    writer: Callable[[], PageWriter]
    #: raise EngineError if the engine is closed or its flush thread failed
    check_open: Callable[[], None]
    #: ``append(op, host_redo=(), extra=None, size=0) -> (op's result, end LSN)``: run a layout
    #: operation on the writer and log it in one redo record (``Engine._append``)
    append: Callable[..., tuple[Any, int]]
    #: ``after_write(end_lsn, wait)``: durability per mode, once the write lock is released
    after_write: Callable[[int, bool], None]
    #: ``assign(gtid, domain_id, server_id)``: the GTID to write (given, or the domain's next)
    assign: Callable[[Gtid | None, int, int | None], Gtid]
    #: record written GTIDs, in commit order, in the binlog state (inside the layout operation)
    note_gtids: Callable[[Sequence[Gtid]], None]
    #: the GTID event that starts a group (``Engine.gtid_event``)
    gtid_event: Callable[..., bytes]


@dataclass(frozen=True, slots=True)
class PurgeHost:
    """What purge needs of the engine: its locks, files and caches, and what holds a file."""

    config: EngineConfig
    files: BinlogFiles
    #: the admin lock, taken by purge for its whole run (before the write lock)
    admin: threading.RLock
    #: the write lock, taken briefly to read the active file and the guards
    lock: threading.Lock
    closed: Callable[[], bool]
    #: the file the writer is in (write lock held)
    active_file: Callable[[], int]
    #: files running transactions (OOB data) and pending XA (prepare, OOB data) need; write lock held
    held_files: Callable[[], list[int]]
    #: the header of a file (cached by the engine)
    header: Callable[[int], IbbHeader | None]
    #: wait until every file up to this one is fsynced (the page FIFO)
    wait_synced: Callable[[int], None]
    #: drop a deleted file from the engine's header and page-count caches
    forget_file: Callable[[int], None]


@dataclass(frozen=True, slots=True)
class BackupHost:
    """What an online backup needs of the engine: its files, redo log, locks and checkpoints."""

    files: BinlogFiles
    #: the redo log (the backup taps its writes)
    redo: Callable[[], RedoLog]
    #: the admin lock, held for the whole backup: no FLUSH / PURGE / RESET cuts the files
    admin: threading.RLock
    lock: threading.Lock
    check_open: Callable[[], None]
    #: the write position (write lock held)
    position: Callable[[], tuple[int, int]]
    #: what a checkpoint makes durable (write lock held)
    capture: Callable[[], Capture]
    #: write that checkpoint (outside the write lock)
    checkpoint_now: Callable[[Capture], None]
