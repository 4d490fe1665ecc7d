"""File-backed `.ibb` page source: ``binlog-NNNNNN.ibb`` files of one directory, mmapped.

:class:`IbbDirectory` implements :class:`mariabinlog.codec.ibb.PageSource`
(``page(file_no, page_no)`` and ``name(file_no)``) so the pure record reader
can walk pages, follow a record into the next file and fetch OOB nodes from
earlier files.  Files are opened by number on first use and mapped read-only;
a page past the end of a file (or of a file that does not exist) is None.
With ``strict=True`` an incomplete last page (a file cut in the middle of a
page) is an error naming the file and offset instead of the end of the data.
"""

from __future__ import annotations

import mmap
import os
import re
from types import TracebackType
from typing import Self

from ..codec.ibb import PAGE_SIZE
from ..errors import TruncatedError

_IBB_NAME = re.compile(r"binlog-(\d{6,})\.ibb")


def ibb_file_name(file_no: int) -> str:
    """``binlog-NNNNNN.ibb`` (at least six digits), as the server names its files."""
    return f"binlog-{file_no:06d}.ibb"


def ibb_file_no(path: str) -> int | None:
    """The file number in a ``binlog-NNNNNN.ibb`` path, None for another name."""
    match = _IBB_NAME.fullmatch(os.path.basename(path))
    return int(match.group(1)) if match else None


class _Mapped:
    __slots__ = ("data", "path", "size", "view")

    def __init__(self, path: str) -> None:
        self.path = path
        fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(fd).st_size
            self.data = (
                mmap.mmap(fd, self.size, access=mmap.ACCESS_READ) if self.size else None
            )
        finally:
            os.close(fd)
        self.view = memoryview(self.data) if self.data is not None else memoryview(b"")

    def close(self) -> None:
        self.view.release()
        if self.data is not None:
            self.data.close()


class IbbDirectory:
    """PageSource over the `.ibb` files of ``directory``.

    ``paths`` maps file numbers to explicit paths (files named on a command
    line need not follow the ``binlog-NNNNNN.ibb`` pattern); other numbers are
    looked up by that pattern in ``directory``.  Pages are zero-copy
    ``memoryview`` slices of the mappings, valid until :meth:`close`.
    """

    def __init__(self, directory: str, paths: dict[int, str] | None = None, *, strict: bool = False) -> None:
        self.directory = directory
        self.paths = dict(paths or {})
        self.strict = strict
        self._files: dict[int, _Mapped | None] = {}

    def path(self, file_no: int) -> str:
        """Path of file ``file_no``."""
        return self.paths.get(file_no) or os.path.join(
            self.directory, ibb_file_name(file_no)
        )

    def name(self, file_no: int) -> str:
        """File name for messages: the path of file ``file_no``."""
        return self.path(file_no)

    def _file(self, file_no: int) -> _Mapped | None:
        if file_no in self._files:
            return self._files[file_no]
        try:
            mapped: _Mapped | None = _Mapped(self.path(file_no))
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
