"""Binlog files of one directory: names, pre-allocation, page I/O, fsync, truncation, deletion.

Why a module of its own: the writer's flush thread, the pre-allocation
thread, readers, recovery, purge and backup all touch the same
``binlog-NNNNNN.ibb`` files (ibb-format.md §1), and they must agree on names,
sizes and on which descriptors are open.  Nothing here knows the page format
beyond its size; pages arrive finished (CRC-sealed by the codec).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterable, Iterator

from ..codec.ibb.page import PAGE_SIZE, PAGE_SIZE_SHIFT
from .files import IbbFiles
from .redo import fsync_dir

MIN_PAGES = 4
MAX_PAGES = (1 << 32) - 1


def pages_for_size(max_binlog_size: int) -> int:
    """Pages per file for ``max_binlog_size`` bytes, clamped to [4, 2**32-1] like ``ibb_set_max_size``."""
    return min(max(max_binlog_size >> PAGE_SIZE_SHIFT, MIN_PAGES), MAX_PAGES)


class BinlogFiles(IbbFiles):
    """Open descriptors and file operations for the binlog files of ``directory``; the page
    reader by ``pread`` (see :class:`~mariabinlog.engine.files.IbbFiles`).

    One read/write descriptor per file, opened on demand and shared by all
    threads (``pread``/``pwrite`` need no seek position, so sharing is safe).  Nothing is
    mapped, so a file that a writer truncates or purges under a reader can never fault the
    process: readers of a directory another process writes (the replication archive reader,
    the binlog server) use it read-only.
    """

    def __init__(self, directory: str, *, readonly: bool = False, paths: dict[int, str] | None = None) -> None:
        super().__init__(directory, paths)
        #: look-only users (checker, settings, views, archive readers) open files read-only
        self.readonly = readonly
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        #: held across every change of a file's size (create, pre-allocate, truncate): the
        #: pre-allocation thread must not grow a file that FLUSH cut between its look and its
        #: fallocate (a cut file grown back keeps an empty tail before the next file, §5.2)
        self._resize = threading.Lock()

    def exists(self, file_no: int) -> bool:
        """True if the file exists."""
        return os.path.exists(self.path(file_no))

    def _fd(self, file_no: int, create: bool = False) -> int | None:
        fd = self._fds.get(file_no)
        if fd is not None:
            return fd
        with self._lock:
            fd = self._fds.get(file_no)
            if fd is not None:
                return fd
            flags = os.O_RDONLY if self.readonly else os.O_RDWR | (os.O_CREAT if create else 0)
            try:
                fd = os.open(self.path(file_no), flags, 0o644)
            except FileNotFoundError:
                return None
            self._fds[file_no] = fd
            return fd

    def create(self, file_no: int, pages: int) -> None:
        """Make the file exist with at least ``pages`` zero pages (pre-allocated blocks), durably."""
        with self._resize:
            self._create(file_no, pages)

    def preallocate(self, file_no: int, pages: int) -> bool:
        """Create the file with ``pages`` zero pages unless it exists; True if it was created.

        Unlike :meth:`create` it never grows an existing file: a file the writer reached,
        wrote and FLUSHed (cut) before the pre-allocation thread got to it stays cut.
        """
        with self._resize:
            if self.exists(file_no):
                return False
            self._create(file_no, pages)
            return True

    def _create(self, file_no: int, pages: int) -> None:
        existed = self.exists(file_no)
        fd = self._fd(file_no, create=True)
        assert fd is not None
        size = pages << PAGE_SIZE_SHIFT
        current = os.fstat(fd).st_size
        if current < size:
            try:
                os.posix_fallocate(fd, current, size - current)
            except OSError:
                os.ftruncate(fd, size)
            os.fsync(fd)
        if not existed:
            fsync_dir(self.directory)

    def size(self, file_no: int) -> int:
        """Current size in bytes, 0 when missing."""
        try:
            return os.stat(self.path(file_no)).st_size
        except FileNotFoundError:
            return 0

    def write_pages(self, file_no: int, page_no: int, pages: Iterable[bytes]) -> None:
        """Write consecutive pages starting at ``page_no`` (the file is created when missing)."""
        fd = self._fd(file_no, create=True)
        assert fd is not None
        data = list(pages)
        offset = page_no << PAGE_SIZE_SHIFT
        while data:
            written = os.pwritev(fd, data, offset)
            offset += written
            # pwritev may write less than asked (large batches): continue after the written part
            while data and written >= len(data[0]):
                written -= len(data[0])
                data.pop(0)
            if data and written:
                data[0] = data[0][written:]

    def page(self, file_no: int, page_no: int) -> bytes | None:
        """The codec ``PageSource`` view of :meth:`read_page`."""
        return self.read_page(file_no, page_no)

    def read_page(self, file_no: int, page_no: int) -> bytes | None:
        """One page, or None when the file or the page does not exist."""
        fd = self._fd(file_no)
        if fd is None:
            return None
        try:
            data = os.pread(fd, PAGE_SIZE, page_no << PAGE_SIZE_SHIFT)
        except OSError:  # purged (descriptor closed) while being read
            return None
        if len(data) < PAGE_SIZE:
            return None
        return data

    def pages_with_data(self, file_no: int, first: int) -> Iterator[int]:
        """Numbers of the pages from ``first`` to the end of the file that may hold non-zero
        bytes, ascending: the file's data extents (``SEEK_DATA``/``SEEK_HOLE``).  Holes and
        pre-allocated blocks never written read as zeros and are skipped, so a 1 GiB file that
        is mostly pre-allocated is scanned in a few calls; a file system without ``SEEK_DATA``
        yields every page."""
        fd = self._fd(file_no)
        if fd is None:
            return
        end = self.size(file_no) >> PAGE_SIZE_SHIFT
        page_no = first
        while page_no < end:
            try:
                start = os.lseek(fd, page_no << PAGE_SIZE_SHIFT, os.SEEK_DATA) >> PAGE_SIZE_SHIFT
                stop = -(-os.lseek(fd, start << PAGE_SIZE_SHIFT, os.SEEK_HOLE) >> PAGE_SIZE_SHIFT)
            except OSError as err:
                if err.errno == errno.ENXIO:  # nothing but holes up to the end
                    return
                start, stop = page_no, end
            stop = min(max(stop, start + 1), end)
            yield from range(start, stop)
            page_no = stop

    def sync(self, file_no: int) -> None:
        """fsync the file's data (no-op when missing)."""
        fd = self._fd(file_no)
        if fd is not None:
            os.fdatasync(fd)

    def truncate(self, file_no: int, pages: int) -> None:
        """Cut the file to ``pages`` pages, durably."""
        fd = self._fd(file_no)
        if fd is None:
            return
        with self._resize:
            os.ftruncate(fd, pages << PAGE_SIZE_SHIFT)
            os.fsync(fd)

    def delete(self, file_no: int) -> None:
        """Remove the file (descriptor closed first); the directory is not synced here."""
        with self._lock:
            fd = self._fds.pop(file_no, None)
            if fd is not None:
                os.close(fd)
        try:
            os.unlink(self.path(file_no))
        except FileNotFoundError:
            pass

    def sync_dir(self) -> None:
        """fsync the directory."""
        fsync_dir(self.directory)

    def close(self) -> None:
        """Close every descriptor (a reader calls it when files may have been purged or
        re-created; descriptors reopen on demand)."""
        with self._lock:
            fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    forget = close
