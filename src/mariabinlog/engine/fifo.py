"""Page FIFO, flush thread and pre-allocation thread (seed 002 "Page FIFO", ibb-format.md §8).

Why: the binlog is append-only, so instead of a buffer pool the engine keeps
the pages it has produced but not yet written in a FIFO.  The writer appends
completed pages and republishes its current, partly filled page after every
append; readers look a page up here first and fall back to the file (a page
leaves the FIFO only after it is written, so a miss means it is on disk); the
flush thread writes completed pages in order, fsyncs a file once the flush
reaches the next one, and the pre-allocation thread creates file N+1 while N
is being written.  The lock is held only for dictionary operations, never
during I/O, so readers never wait for the writer's or the flusher's I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..codec.ibb.writer import WrittenPage
from ..errors import EngineError
from .storage import BinlogFiles

BATCH_PAGES = 256


class PageFifo:
    """Completed pages waiting to be written, the writer's partial page, and the flush thread.

    ``flushed`` is the (file_no, page_no) of the first page not known to be on
    disk: every page before it has been written.  ``synced_file`` is the
    newest file that is completely written and fsynced.
    """

    def __init__(self, files: BinlogFiles, pages_for_file: Callable[[int], int], *, max_pages: int = 1024) -> None:
        self.files = files
        self.pages_for_file = pages_for_file
        self.max_pages = max_pages
        self._cond = threading.Condition(threading.Lock())
        self._io_lock = threading.Lock()
        self._pages: dict[tuple[int, int], bytes] = {}
        self._partial: WrittenPage | None = None
        self.flushed: tuple[int, int] = (0, 0)
        self.synced_file = -1
        self._dirty: set[int] = set()
        self._current_file = -1
        self._stop = False
        self._paused = 0
        self._busy = False
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._prealloc: list[int] = []
        self._prealloc_cond = threading.Condition()
        self._prealloc_busy = False
        self._prealloc_thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, flushed: tuple[int, int], synced_file: int) -> None:
        """Start the flush and pre-allocation threads; everything before ``flushed`` is on disk."""
        self.flushed = flushed
        self.synced_file = synced_file
        self._current_file = -1
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="binlog-flush", daemon=True)
        self._thread.start()
        self._prealloc_thread = threading.Thread(target=self._run_prealloc, name="binlog-prealloc", daemon=True)
        self._prealloc_thread.start()

    def stop(self) -> None:
        """Write every completed page, then stop both threads."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        with self._prealloc_cond:
            self._prealloc_cond.notify_all()
        for thread in (self._thread, self._prealloc_thread):
            if thread is not None:
                thread.join()
        self._thread = self._prealloc_thread = None

    def check(self) -> None:
        """Raise if a background thread failed."""
        if self.error is not None:
            raise EngineError(f"binlog background I/O failed: {self.error}") from self.error

    # ------------------------------------------------------------------ writer side

    def publish(self, done: list[WrittenPage], partial: WrittenPage | None) -> None:
        """Add completed pages (in order) and replace the partial page; waits while the FIFO is full."""
        cond = self._cond
        with cond:
            pages = self._pages
            for page in done:
                pages[(page.file_no, page.page_no)] = page.data
            self._partial = partial
            if done:
                cond.notify_all()
                while len(pages) > self.max_pages and self.error is None and not self._stop:
                    cond.wait()
        self.check()

    def reset(self, flushed: tuple[int, int]) -> None:
        """Drop every queued page (RESET MASTER); waits for a write in progress."""
        with self._io_lock, self._cond:
            self._pages.clear()
            self._partial = None
            self.flushed = flushed
            self.synced_file = flushed[0] - 1
            self._current_file = -1
            self._dirty.clear()
        with self._prealloc_cond:
            self._prealloc.clear()
            while self._prealloc_busy:
                self._prealloc_cond.wait()

    # ------------------------------------------------------------------ readers

    def get(self, file_no: int, page_no: int) -> bytes | None:
        """The page if it is still in memory (queued or the partial page), else None: read the file."""
        with self._cond:
            data = self._pages.get((file_no, page_no))
            if data is None:
                partial = self._partial
                if partial is not None and partial.file_no == file_no and partial.page_no == page_no:
                    data = partial.data
        return data

    # ------------------------------------------------------------------ waiting

    def wait_flushed(self, position: tuple[int, int]) -> None:
        """Block until every page before ``position`` (file_no, page_no) is written."""
        with self._cond:
            while self.flushed < position and self.error is None:
                self._cond.wait()
        self.check()

    def wait_synced(self, file_no: int) -> None:
        """Block until files up to ``file_no`` are written completely and fsynced."""
        with self._cond:
            while self.synced_file < file_no and self.error is None:
                self._cond.wait()
        self.check()

    def write_partial(self, page: WrittenPage) -> bool:
        """Write a partly filled page for a checkpoint unless a complete version is queued or written.

        Returns True if the page was written (the writer must then redo-log that
        page in full on its next append: the partial-last-page rule).
        """
        with self._io_lock:
            with self._cond:
                key = (page.file_no, page.page_no)
                if self.flushed > key or key in self._pages:
                    return False
            self.files.write_pages(page.file_no, page.page_no, [page.data])
            with self._cond:
                self._dirty.add(page.file_no)
        return True

    def sync_dirty(self) -> None:
        """fsync every file written since the last call."""
        with self._cond:
            dirty, self._dirty = self._dirty, set()
        for file_no in sorted(dirty):
            self.files.sync(file_no)

    def pause(self) -> None:
        """Stop taking new batches (a batch in progress completes first)."""
        with self._io_lock, self._cond:
            self._paused += 1

    def resume(self) -> None:
        """Undo :meth:`pause`."""
        with self._cond:
            self._paused -= 1
            self._cond.notify_all()

    # ------------------------------------------------------------------ pre-allocation

    def preallocate(self, file_no: int) -> None:
        """Ask the background thread to create ``file_no`` at full size."""
        with self._prealloc_cond:
            self._prealloc.append(file_no)
            self._prealloc_cond.notify_all()

    def _run_prealloc(self) -> None:
        cond = self._prealloc_cond
        while True:
            with cond:
                while not self._prealloc and not self._stop:
                    cond.wait()
                if self._stop:
                    return
                file_no = self._prealloc.pop(0)
                self._prealloc_busy = True
            try:
                self.files.preallocate(file_no, self.pages_for_file(file_no))
            except BaseException as err:  # noqa: BLE001 - reported through check()
                self.fail(err)
                return
            finally:
                with cond:
                    self._prealloc_busy = False
                    cond.notify_all()

    # ------------------------------------------------------------------ flush thread

    def fail(self, err: BaseException) -> None:
        """Mark the engine broken: every later operation raises (a background thread failed)."""
        with self._cond:
            if self.error is None:
                self.error = err
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as err:  # noqa: BLE001 - reported through check()
            self.fail(err)

    def _loop(self) -> None:
        cond = self._cond
        files = self.files
        while True:
            with cond:
                while (not self._pages or self._paused) and not (self._stop and not self._paused):
                    cond.wait()
                if not self._pages:
                    return
            with self._io_lock:
                with cond:
                    if not self._pages or self._paused:
                        continue
                    iterator = iter(self._pages.items())
                    (file_no, first), data = next(iterator)
                    batch = [data]
                    for (f, p), data in iterator:
                        if f != file_no or p != first + len(batch) or len(batch) >= BATCH_PAGES:
                            break
                        batch.append(data)
                if file_no != self._current_file:
                    previous = self._current_file
                    files.create(file_no, self.pages_for_file(file_no))
                    if 0 <= previous < file_no:
                        files.sync(previous)
                        with cond:
                            self._dirty.discard(previous)
                            self.synced_file = max(self.synced_file, file_no - 1)
                            cond.notify_all()
                    self._current_file = file_no
                files.write_pages(file_no, first, batch)
                with cond:
                    for page_no in range(first, first + len(batch)):
                        del self._pages[(file_no, page_no)]
                    self.flushed = max(self.flushed, (file_no, first + len(batch)))
                    self._dirty.add(file_no)
                    cond.notify_all()
