"""A look-only view of an engine directory: what opening it would find, without writing.

Why: ``engine status``, ``engine files``, ``engine check``, ``dump``, ``events`` and ``files``
must never create, grow, truncate or fsync anything, yet after a crash (a killed ``archive``,
a power cut) the truth is "the files plus the redo log replayed onto them".
:class:`OverlayFiles` is a :class:`~mariabinlog.engine.storage.BinlogFiles` whose writes,
truncations and deletions stay in memory (reads see them), so the very recovery code the
engine runs (:func:`~mariabinlog.engine.recovery.recover`, the purge completion and
:func:`~mariabinlog.engine.recovery.restore_state`) computes the view, and the two cannot
disagree.  The redo log is opened read-only and no directory lock is taken: the view is a
snapshot, also of a directory another process is writing.  :class:`RecoveredDirectory` serves
the recovered files to the codec's reader (``dump``, ``events``).

:func:`engine_kind` tells an engine directory from anything else, so that every engine
command except an explicit create refuses a directory holding no engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..codec.gtid import BinlogState
from ..codec.ibb.page import PAGE_SIZE, PAGE_SIZE_SHIFT, ZERO_PAGE
from ..codec.ibb.state import read_header
from ..errors import EngineError, OptionError
from .files import IbbDirectory, list_binlogs
from .recovery import RestoredState, adopted_end, recover, restore_state
from .redo import REDO_NAME
from .storage import BinlogFiles


class OverlayFiles(BinlogFiles):
    """Binlog files opened read-only; every change is kept in memory and seen by reads."""

    def __init__(self, directory: str) -> None:
        super().__init__(directory, readonly=True)
        self._pages: dict[tuple[int, int], bytes] = {}
        self._sizes: dict[int, int] = {}
        self._deleted: set[int] = set()

    def _fd(self, file_no: int, create: bool = False) -> int | None:
        if file_no in self._deleted:
            return None
        fd = self._fds.get(file_no)
        if fd is None:
            try:
                fd = os.open(self.path(file_no), os.O_RDONLY)
            except OSError:
                return None
            self._fds[file_no] = fd
        return fd

    def list(self) -> list[int]:
        """Files present in the view."""
        names = set(list_binlogs(self.directory)) | set(self._sizes)
        return sorted(names - self._deleted)

    def exists(self, file_no: int) -> bool:
        """True if the file is in the view."""
        return file_no in self.list()

    def size(self, file_no: int) -> int:
        """Size in the view."""
        if file_no in self._deleted:
            return 0
        if file_no in self._sizes:
            return self._sizes[file_no]
        return super().size(file_no)

    def create(self, file_no: int, pages: int) -> None:
        """Grow the file in the view only."""
        self._deleted.discard(file_no)
        self._sizes[file_no] = max(self.size(file_no), pages << PAGE_SIZE_SHIFT)

    def write_pages(self, file_no: int, page_no: int, pages: Iterable[bytes]) -> None:
        """Keep the pages in memory."""
        self._deleted.discard(file_no)
        for index, page in enumerate(pages):
            self._pages[(file_no, page_no + index)] = bytes(page)
            end = (page_no + index + 1) << PAGE_SIZE_SHIFT
            if end > self.size(file_no):
                self._sizes[file_no] = end

    def read_page(self, file_no: int, page_no: int) -> bytes | None:
        """The page as the view has it."""
        if file_no in self._deleted or (page_no + 1) << PAGE_SIZE_SHIFT > self.size(file_no):
            return None
        page = self._pages.get((file_no, page_no))
        if page is not None:
            return page
        fd = self._fd(file_no)
        if fd is None:
            return bytes(PAGE_SIZE)
        data = os.pread(fd, PAGE_SIZE, page_no << PAGE_SIZE_SHIFT)
        return data if len(data) == PAGE_SIZE else bytes(PAGE_SIZE)

    def memory_page(self, file_no: int, page_no: int) -> bytes | None:
        """The page if the view changed it (written in memory), else None: it is as on disk."""
        return self._pages.get((file_no, page_no))

    def pages_with_data(self, file_no: int, first: int) -> Iterator[int]:
        """Pages that may hold data in the view: the file's data extents and the pages written
        in memory."""
        end = self.size(file_no) >> PAGE_SIZE_SHIFT
        pages = set(super().pages_with_data(file_no, first))
        pages.update(p for f, p in self._pages if f == file_no and first <= p < end)
        yield from sorted(pages)

    def sync(self, file_no: int) -> None:
        """Nothing to make durable."""

    def truncate(self, file_no: int, pages: int) -> None:
        """Cut the file in the view."""
        self._sizes[file_no] = min(self.size(file_no), pages << PAGE_SIZE_SHIFT)
        for key in [k for k in self._pages if k[0] == file_no and k[1] >= pages]:
            del self._pages[key]

    def delete(self, file_no: int) -> None:
        """Remove the file from the view."""
        self._deleted.add(file_no)
        self._sizes.pop(file_no, None)

    def sync_dir(self) -> None:
        """Nothing to make durable."""


@dataclass
class EngineView:
    """What an open of the directory would find: the binlog end and LSNs, the files with their
    sizes, the GTID state and pending XA transactions."""

    directory: str
    end: tuple[int, int]
    lsn: int
    checkpoint_lsn: int
    files: list[tuple[int, int]]
    restored: RestoredState
    clean: bool
    records: int

    @property
    def state(self) -> BinlogState:
        """``@@gtid_binlog_state`` at the end."""
        return self.restored.state


def engine_kind(directory: str) -> str:
    """``"engine"`` (a redo log or `.ibb` files with a valid header), ``"empty"`` (an empty
    directory), or ``"other"``; raises :class:`OptionError` for a missing or unreadable path."""
    if not os.path.exists(directory):
        raise OptionError(f"{directory}: no such directory")
    if not os.path.isdir(directory):
        raise OptionError(f"{directory}: not a directory")
    try:
        entries = os.listdir(directory)
    except OSError as err:
        raise OptionError(f"{directory}: cannot read the directory ({err.strerror})") from None
    if REDO_NAME in entries:
        return "engine"
    files = BinlogFiles(directory, readonly=True)
    try:
        if any(read_header(files, n) is not None for n in list_binlogs(directory)):
            return "engine"
    except OSError:
        pass
    finally:
        files.close()
    return "empty" if not entries else "other"


def require_engine(directory: str) -> None:
    """Refuse (``OptionError``, one line) a path that holds no binlog engine."""
    kind = engine_kind(directory)
    if kind != "engine":
        what = "is empty" if kind == "empty" else "holds no binlog engine (no redo.log, no .ibb files)"
        raise OptionError(f"{directory}: {what}; create one with: mariabinlog engine init {directory}")


@dataclass
class InMemoryRecovery:
    """What recovery in memory found: the binlog end, LSNs, whether an open would change anything."""

    end: tuple[int, int]
    lsn: int
    checkpoint_lsn: int
    clean: bool
    records: int
    #: pages after the end recovery zeroes or cuts, files it deletes (a purge it completes, too)
    cut_pages: int = 0
    deleted_files: int = 0
    #: the end page if recovery seals it again over an invalid CRC-32C (a torn write or damage)
    resealed: int | None = None


def _recover_in_memory(directory: str, files: OverlayFiles) -> InMemoryRecovery:
    """Run recovery over ``files`` (the redo log opened read-only) or, without a redo log, find
    where the readable data ends, as :meth:`Engine.open` would."""
    if not os.path.exists(os.path.join(directory, REDO_NAME)):
        return InMemoryRecovery(adopted_end(files)[0], 0, 0, False, 0)
    recovered = recover(directory, files, readonly=True)
    recovered.redo.close()
    # the same test as Engine.open: anything to replay, zero or delete makes the open write
    clean = not (recovered.records or recovered.truncated_pages or recovered.deleted_files)
    return InMemoryRecovery(recovered.end, recovered.redo.buffered_lsn, recovered.redo.checkpoint.lsn, clean,
                            recovered.records, recovered.truncated_pages, len(recovered.deleted_files),
                            recovered.resealed)


def recovered_files(directory: str) -> tuple[OverlayFiles, InMemoryRecovery]:
    """The files of an engine directory as an open would leave them, in memory (the caller
    closes the :class:`OverlayFiles`), and what recovery found; writes nothing."""
    require_engine(directory)
    files = OverlayFiles(directory)
    try:
        return files, _recover_in_memory(directory, files)
    except EngineError:
        files.close()
        raise
    except OSError as err:
        files.close()
        raise EngineError(f"{directory}: {err}") from None


def view(directory: str) -> EngineView:
    """The look-only view of an engine directory (module docstring); writes nothing."""
    files, found = recovered_files(directory)
    try:
        end = found.end
        restored = restore_state(files, end)
        sizes = [(n, files.size(n)) for n in files.list() if n <= end[0]]
        return EngineView(directory, end, found.lsn, found.checkpoint_lsn, sizes, restored, found.clean,
                          found.records)
    except EngineError:
        raise
    except OSError as err:
        raise EngineError(f"{directory}: {err}") from None
    finally:
        files.close()


class RecoveredDirectory(IbbDirectory):
    """The `.ibb` files of an engine directory that needs recovery, read as an open would recover
    them: pages recovery rewrites (redo replayed, the tail after the end zeroed) come from
    memory, files it would delete are missing, every other page is mapped from disk as
    :class:`IbbDirectory` maps it.  So ``dump`` and ``events`` read a directory whose writer
    was killed (or cut off by a power loss) the way the writer will when it reopens it, and
    write nothing (``engine check`` reads the :class:`OverlayFiles` of :func:`recovered_files`)."""

    recovered = True

    def __init__(self, directory: str, files: OverlayFiles, paths: dict[int, str] | None = None, *,
                 strict: bool = False) -> None:
        super().__init__(directory, paths, strict=strict)
        self.files = files
        self._sizes = {n: files.size(n) for n in files.list()}

    def page(self, file_no: int, page_no: int) -> memoryview | bytes | None:  # type: ignore[override]
        """The page as recovery leaves it; None past the end of the file or for a missing file."""
        size = self._sizes.get(file_no)
        if size is None or page_no < 0 or (page_no + 1) << PAGE_SIZE_SHIFT > size:
            return None
        page = self.files.memory_page(file_no, page_no)
        if page is not None:
            return page
        mapped = super().page(file_no, page_no)
        return ZERO_PAGE if mapped is None else mapped

    def size(self, file_no: int) -> int | None:
        """Size of file ``file_no`` after recovery (None if recovery deletes it or it is missing)."""
        return self._sizes.get(file_no)

    def close(self) -> None:
        """Unmap the files and drop the recovered pages."""
        super().close()
        self.files.close()


def open_pages(directory: str, paths: dict[int, str] | None = None, *, strict: bool = False) -> IbbDirectory:
    """The page source for reading the `.ibb` files of ``directory``: a :class:`RecoveredDirectory`
    when it is an engine directory that an open would recover (a crash left it), else the
    files as they are (:class:`IbbDirectory`).  Look-only: nothing is written."""
    if os.path.exists(os.path.join(directory, REDO_NAME)):
        files, found = recovered_files(directory)
        if not found.clean:
            return RecoveredDirectory(directory, files, paths, strict=strict)
        files.close()
    return IbbDirectory(directory, paths, strict=strict)
