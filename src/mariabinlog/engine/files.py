"""Binlog files on disk: which files a path names, and the `.ibb` page source over them.

:func:`discover_binlogs` turns a file, directory or glob into :class:`BinlogFile` s (kind by
magic, number from the `.ibb` header or the legacy name), ordered as one stream per directory
by the one rule (:func:`binlog_streams`: a directory's ``.index`` where it has one, else by
number) that the tools' directory listing and the Spark source's listing also apply.

:class:`IbbDirectory` implements :class:`mariabinlog.codec.ibb.PageSource`
(``page(file_no, page_no)`` and ``name(file_no)``) so the pure record reader
can walk pages, follow a record into the next file and fetch OOB nodes from
earlier files.  Files are opened by number on first use and mapped read-only
(:class:`MappedFile`: the pages read are released from the RSS every
:data:`RELEASE_BYTES`, so reading a multi-GB transaction keeps the RSS bounded);
a page past the end of a file (or of a file that does not exist) is None.
With ``strict=True`` an incomplete last page (a file cut in the middle of a
page) is an error naming the file and offset instead of the end of the data.
"""

from __future__ import annotations

import glob
import mmap
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from ..codec.ibb import PAGE_SIZE, decode_header_page, file_kind
from ..errors import OptionError, TruncatedError

IBB_NAME_RE = re.compile(r"binlog-(\d{6,})\.ibb")
_LEGACY_NUMBER = re.compile(r"\.(\d+)$")


def binlog_name(file_no: int) -> str:
    """``binlog-NNNNNN.ibb`` (``binlog-%06llu.ibb``, ibb-format.md §1), as the server names its files."""
    return f"binlog-{file_no:06d}.ibb"


def ibb_file_no(path: str) -> int | None:
    """The file number in a ``binlog-NNNNNN.ibb`` path, None for another name."""
    match = IBB_NAME_RE.fullmatch(os.path.basename(path))
    return int(match.group(1)) if match else None


def list_binlogs(directory: str) -> list[int]:
    """File numbers of the ``binlog-NNNNNN.ibb`` files in ``directory``, ascending."""
    numbers = [n for n in (ibb_file_no(entry) for entry in os.listdir(directory)) if n is not None]
    numbers.sort()
    return numbers


def legacy_file_no(path: str) -> int:
    """The number in a legacy binlog name's numeric extension (``mysql-bin.000002`` -> 2), 0
    for a name without one."""
    match = _LEGACY_NUMBER.search(path)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True, order=True)
class BinlogFile:
    """One binlog file: ``kind`` is ``"ibb"`` or ``"legacy"``; ``file_no`` comes from the
    `.ibb` header or the legacy name's numeric extension (``mysql-bin.000002`` -> 2)."""

    directory: str
    kind: str
    file_no: int
    path: str
    size: int


def binlog_kind(path: str) -> str | None:
    """``"ibb"``, ``"legacy"``, ``"empty"`` (a pre-allocated `.ibb` file nothing was written to
    yet) or None (not a binlog file, or unreadable), from the file's magic bytes."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    return file_kind(head)


def describe_binlog(path: str) -> BinlogFile | None:
    """The :class:`BinlogFile` for ``path``; None for non-binlog and empty pre-allocated files."""
    path = os.path.abspath(path)
    kind = binlog_kind(path)
    if kind not in ("ibb", "legacy"):
        return None
    size = os.path.getsize(path)
    if kind == "ibb":
        with open(path, "rb") as handle:
            header = decode_header_page(handle.read(PAGE_SIZE))
        if header is None:
            return None
        file_no = header.file_no
    else:
        file_no = legacy_file_no(path)
    return BinlogFile(os.path.dirname(path), kind, file_no, path, size)


def index_names(text: str) -> list[str]:
    """The file names a binlog ``.index`` file lists (the server writes ``./mysql-bin.000001``
    lines), in its order."""
    return [os.path.basename(line.strip()) for line in text.splitlines() if line.strip()]


def binlog_order(files: Iterable[BinlogFile], index: Sequence[str] | None = None) -> list[BinlogFile]:
    """The binlog files of one directory in the order MariaDB lists them (SHOW BINARY LOGS).

    With the names of the directory's ``.index`` file (:func:`index_names`), the files it names
    in its order: files it does not name are not the server's logs.  Without one, the `.ibb`
    files, then the legacy files, each by number (the `.ibb` header's, the legacy name's
    extension: the server's sequence number, which outgrows six digits).
    """
    if index is None:
        return sorted(files)
    by_name = {os.path.basename(f.path): f for f in files}
    return [by_name[name] for name in index if name in by_name]


def binlog_streams(files: Iterable[BinlogFile], indexes: Mapping[str, Sequence[str]]) -> list[BinlogFile]:
    """Binlog files as one stream per directory (directories in order), each in
    :func:`binlog_order` with its directory's index names from ``indexes`` (by directory).
    The one rule every discovery applies: local (:func:`discover_binlogs`), the tools'
    directory listing and the Spark source's listing of any filesystem."""
    by_directory: dict[str, list[BinlogFile]] = {}
    for f in files:
        by_directory.setdefault(f.directory, []).append(f)
    return [f for d in sorted(by_directory) for f in binlog_order(by_directory[d], indexes.get(d))]


def is_index(path: str) -> bool:
    """Whether ``path`` names a binlog index file (``<base>.index``)."""
    return path.endswith(".index")


def local_indexes(paths: Iterable[str]) -> dict[str, list[str]]:
    """The index names of the ``.index`` files among ``paths``, by directory (first per directory)."""
    indexes: dict[str, list[str]] = {}
    for path in paths:
        if is_index(path) and os.path.isfile(path):
            directory = os.path.dirname(os.path.abspath(path))
            if directory not in indexes:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    indexes[directory] = index_names(f.read())
    return indexes


def discover_binlogs(spec: str) -> list[BinlogFile]:
    """The binlog files ``spec`` names: a file, a directory (its binlog files) or a glob, in
    :func:`binlog_streams` order (a directory's ``.index`` file, where it lists one, rules).
    A spec that names no binlog file is an :class:`OptionError`.
    """
    if any(ch in spec for ch in "*?["):
        candidates = sorted(glob.glob(spec))
    elif os.path.isdir(spec):
        candidates = sorted(os.path.join(spec, name) for name in os.listdir(spec))
    elif os.path.exists(spec):
        candidates = [spec]
    else:
        raise OptionError(f"binlog path {spec!r} does not exist")
    files = [f for f in (describe_binlog(p) for p in candidates if os.path.isfile(p)) if f is not None]
    if not files:
        raise OptionError(f"no binlog files (legacy or .ibb) found at {spec!r}")
    return binlog_streams(files, local_indexes(candidates))


#: Bytes read from a mapping between two releases of its resident pages: bounds what a reader of
#: a multi-GB file (an OOB transaction) keeps in its RSS; the pages stay in the page cache.
RELEASE_BYTES = 32 << 20


class MappedFile:
    """A file mapped read-only whose resident pages are handed back to the kernel as reading goes.

    The mapping is zero-copy and fast, but every page touched would stay in the process's RSS
    until unmapped: a 4 GiB file read through would cost 4 GiB of RSS.  The reader reports what
    it read (:meth:`note`); every :data:`RELEASE_BYTES` the whole mapping is released with
    ``madvise(MADV_DONTNEED)``.  For a read-only shared file mapping that only drops the page
    table entries: a page still in use (a view handed out before) faults back in from the page
    cache with the same bytes, so no view ever sees different data.
    """

    __slots__ = ("data", "path", "read", "size", "view")

    def __init__(self, path: str) -> None:
        self.path = path
        fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(fd).st_size
            self.data = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ) if self.size else None
        finally:
            os.close(fd)
        self.view = memoryview(self.data) if self.data is not None else memoryview(b"")
        self.read = 0

    def note(self, nbytes: int) -> bool:
        """Count ``nbytes`` more read; past :data:`RELEASE_BYTES` release the resident pages.
        Returns whether it released."""
        self.read += nbytes
        if self.read < RELEASE_BYTES:
            return False
        self.release()
        return True

    def release(self) -> None:
        """Drop the mapping's resident pages from the RSS (they stay valid; see the class)."""
        self.read = 0
        if self.data is not None:
            self.data.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        """Unmap the file (views handed out before become invalid)."""
        self.view.release()
        if self.data is not None:
            self.data.close()


class IbbFiles:
    """The `.ibb` files of ``directory`` by number: the one rule the page readers share.

    ``paths`` maps file numbers to explicit paths (files named on a command line need not
    follow the ``binlog-NNNNNN.ibb`` pattern); other numbers are looked up by that pattern in
    ``directory``.  Two readers build on it: :class:`IbbDirectory` maps files (zero-copy, for
    reading whole files) and :class:`~mariabinlog.engine.storage.BinlogFiles` reads by
    ``pread`` (for files a writer truncates or purges under the reader: nothing mapped can
    fault).
    """

    def __init__(self, directory: str, paths: dict[int, str] | None = None) -> None:
        self.directory = directory
        self.paths = dict(paths or {})

    def path(self, file_no: int) -> str:
        """Path of file ``file_no``."""
        return self.paths.get(file_no) or os.path.join(self.directory, binlog_name(file_no))

    def name(self, file_no: int) -> str:
        """The file's name (``PageSource``; as replicas see it in Master_Log_File)."""
        return os.path.basename(self.path(file_no))

    def list(self) -> list[int]:
        """The file numbers present (those of ``paths`` when given), ascending."""
        if self.paths:
            return sorted(self.paths)
        return list_binlogs(self.directory)


class IbbDirectory(IbbFiles):
    """PageSource over the `.ibb` files of ``directory``, memory-mapped (see :class:`IbbFiles`).

    Pages are zero-copy ``memoryview`` slices of the mappings, valid until :meth:`close`.
    """

    #: True for a view of the files as recovery would leave them (``engine.view.RecoveredDirectory``)
    recovered = False

    def __init__(self, directory: str, paths: dict[int, str] | None = None, *, strict: bool = False) -> None:
        super().__init__(directory, paths)
        self.strict = strict
        self._files: dict[int, MappedFile | None] = {}
        self._read = 0  # bytes of pages handed out since the mappings' pages were last released

    def name(self, file_no: int) -> str:
        """File name for messages: the path of file ``file_no`` (as it was named)."""
        return self.path(file_no)

    def _file(self, file_no: int) -> MappedFile | None:
        if file_no in self._files:
            return self._files[file_no]
        try:
            mapped: MappedFile | None = MappedFile(self.path(file_no))
        except FileNotFoundError:
            mapped = None
        self._files[file_no] = mapped
        return mapped

    def size(self, file_no: int) -> int | None:
        """Size in bytes of file ``file_no`` (None if it does not exist)."""
        mapped = self._file(file_no)
        return None if mapped is None else mapped.size

    def page(self, file_no: int, page_no: int) -> memoryview | None:
        """The 16 KiB page ``page_no`` of file ``file_no``; None past the end or for a missing file."""
        mapped = self._file(file_no)
        if mapped is None or page_no < 0:
            return None
        start = page_no * PAGE_SIZE
        end = start + PAGE_SIZE
        if end > mapped.size:
            if self.strict and start < mapped.size:
                raise TruncatedError(
                    f"file truncated: page {page_no} has only {mapped.size - start} of {PAGE_SIZE} bytes",
                    offset=start,
                    expected=f"a file of whole {PAGE_SIZE}-byte pages",
                    file=self.name(file_no),
                )
            return None
        self._read += PAGE_SIZE
        if self._read >= RELEASE_BYTES:
            # Bound the RSS of a long read (OOB nodes are fetched from earlier files too).
            self._read = 0
            for other in self._files.values():
                if other is not None:
                    other.release()
        return mapped.view[start:end]

    def close(self) -> None:
        """Unmap every file (pages handed out before become invalid)."""
        for mapped in self._files.values():
            if mapped is not None:
                try:
                    mapped.close()
                except (
                    BufferError
                ):  # a page view is still referenced; the GC unmaps later
                    pass
        self._files.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
