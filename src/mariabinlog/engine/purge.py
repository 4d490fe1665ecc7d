"""PURGE BINARY LOGS in the engine, and how a purge cut short by a crash is completed.

What a purge may remove (ibb-format.md §8): never the active file, a file a reader is still
on, a file holding an XA_PREPARE of a pending XA or OOB data of a running transaction, nor
a file whose OOB data a retained file may reference (the header's ``oob_ref_file_no``).
So for the purge limit L every file >= L has ``oob_ref_file_no >= L``.

Crash atomicity (docs/engine-crash-safety.md): files are unlinked oldest first and the
directory is fsynced once at the end, so a crash (or a power cut, which may undo any
subset of the unlinks) leaves some files below L and every file from L on.  A retained
file below L may hold groups whose OOB data was in a file already gone.  Recovery
therefore calls :func:`complete_purge`: the binlog starts at the first file K such that
every file from K to the end exists and has ``oob_ref_file_no >= K``; files below K are
deleted.  K <= L always (the files from L on satisfy the rule), so the effect of an
interrupted purge is exactly "the binlog now starts at file K", and no visible group
points into a missing file.  The rule reads headers only, needs no intent record, and is
idempotent: a crash while completing it is completed by the next open.

:class:`Purge` owns the readers' purge guards and whether an automatic purge is due; the
:class:`~mariabinlog.engine.engine.Engine` holds it and lends it a :class:`~.host.PurgeHost`
(its locks, files and header cache, the active file, the files running transactions and
pending XA hold).
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from typing import Protocol

from ..codec.ibb.state import read_header
from ..errors import EngineError, LogInUseError
from .files import ibb_file_no
from .host import PurgeHost
from .storage import BinlogFiles

LOG_IN_USE = "A purgeable log is in use, will not purge"

log = logging.getLogger(__name__)


def complete_purge(files: BinlogFiles, end_file: int) -> list[int]:
    """Finish a purge a crash cut short (module docstring); returns the files it deleted.

    Looks only at files up to ``end_file`` (the recovered end); a directory without an
    interrupted purge is left as it is.
    """
    existing = [n for n in files.list() if n <= end_file]
    if not existing:
        return []
    present = set(existing)
    start = existing[-1]
    while start - 1 in present:
        start -= 1
    for file_no in range(start, existing[-1] + 1):
        header = read_header(files, file_no)
        if header is not None and header.oob_ref_file_no < start and file_no < end_file:
            start = file_no + 1
    gone = [n for n in existing if n < start]
    for file_no in gone:
        files.delete(file_no)
    if gone:
        files.sync_dir()
        log.info("completed an interrupted purge: the binlog now starts at file %d", start)
    return gone


class PurgeGuard(Protocol):
    """A reader, as purge sees it (:class:`~mariabinlog.engine.reader.EngineReader`)."""

    closed: bool

    def holds(self) -> int | None:
        """The oldest file the reader still needs, or None."""
        ...


class Purge:
    """PURGE BINARY LOGS TO / BEFORE and the automatic purge (held by the engine)."""

    def __init__(self, host: PurgeHost) -> None:
        self._host = host
        #: live readers: purge keeps the files they are on (and counts them for the replica rule)
        self._readers: weakref.WeakSet[PurgeGuard] = weakref.WeakSet()
        #: a file switch asked the background thread for an automatic purge
        self.due = False

    def register_reader(self, reader: PurgeGuard) -> None:
        """Keep the files ``reader`` is on while it lives."""
        with self._host.admin:
            self._readers.add(reader)

    def purge(self, to_file: int | str | None = None, *, before: float | None = None) -> list[int]:
        """PURGE BINARY LOGS TO / BEFORE; with no argument the automatic rules
        (``expire_seconds``, ``max_total_size``).  Returns the purged file numbers.

        Never removes the active file, a file a reader is still on, a file whose
        OOB data a retained file may reference (header ``oob_ref_file_no``), or a
        file holding an XA_PREPARE of a pending XA or OOB data of a running
        transaction.  An explicit request that is cut short by those rules purges
        what it may and raises LogInUseError("A purgeable log is in use, will not purge").
        """
        if to_file is None and before is None:
            return self.auto(explicit=True)
        host = self._host
        with host.admin:
            existing = host.files.list()
            if to_file is not None:
                target = self._parse_file(to_file)
                if target not in existing:
                    raise EngineError("Target log not found in binlog index")
            else:
                assert before is not None
                target = existing[-1] if existing else 0
                for file_no in existing:
                    if os.stat(host.files.path(file_no)).st_mtime >= before:
                        target = file_no
                        break
            purged, limited = self._purge_to(target)
        if limited:
            err = LogInUseError(LOG_IN_USE)
            err.purged = purged  # type: ignore[attr-defined]
            raise err
        return purged

    @staticmethod
    def _parse_file(to_file: int | str) -> int:
        if isinstance(to_file, int):
            return to_file
        if to_file.isdigit():
            return int(to_file)
        file_no = ibb_file_no(to_file)
        if file_no is None:
            raise EngineError("Target log not found in binlog index")
        return file_no

    def _purge_limit(self, target: int) -> int:
        """The highest file number purge may go up to (exclusive) given every guard."""
        host = self._host
        with host.lock:
            active = host.active_file()
            limit = min(target, active)
            guards = host.held_files()
        for reader in list(self._readers):
            position = reader.holds()
            if position is not None:
                guards.append(position)
        if guards:
            limit = min(limit, min(guards))
        existing = host.files.list()
        while True:
            lowest = limit
            for file_no in existing:
                if file_no >= limit:
                    header = host.header(file_no)
                    if header is not None:
                        lowest = min(lowest, header.oob_ref_file_no)
            if lowest >= limit:
                return limit
            limit = lowest

    def _purge_to(self, target: int) -> tuple[list[int], bool]:
        """Delete files below ``min(target, guards)``; return (purged, limited)."""
        host = self._host
        limit = self._purge_limit(target)
        existing = [n for n in host.files.list() if n < limit]
        if existing:
            host.wait_synced(existing[-1])
        for file_no in existing:
            host.files.delete(file_no)
            host.forget_file(file_no)
        if existing:
            host.files.sync_dir()
        return existing, limit < target

    def auto(self, explicit: bool = False) -> list[int]:
        """Purge by age and total size, if the replica-count rule allows it."""
        host = self._host
        config = host.config
        if not config.expire_seconds and not config.max_total_size:
            return []
        with host.admin:
            if host.closed():
                return []
            if sum(not reader.closed for reader in list(self._readers)) < config.slave_connections_needed_for_purge:
                return []
            existing = host.files.list()
            target = existing[0] if existing else 0
            if config.expire_seconds:
                cutoff = time.time() - config.expire_seconds
                for file_no in existing:
                    if os.stat(host.files.path(file_no)).st_mtime >= cutoff:
                        break
                    target = file_no + 1
            if config.max_total_size:
                sizes = {n: host.files.size(n) for n in existing}
                total = sum(sizes.values())
                for file_no in existing:
                    if total <= config.max_total_size:
                        break
                    total -= sizes[file_no]
                    target = max(target, file_no + 1)
            with host.lock:
                target = min(target, host.active_file())
            purged, _ = self._purge_to(target)
            return purged
