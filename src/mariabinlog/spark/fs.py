"""Where binlog files live: local paths and ``file://``, ``s3://`` (``s3a://``), ``gs://``,
``abfs://`` (``abfss://``) and ``hdfs://`` URIs, through :mod:`pyarrow.fs`.

Every path the Spark source handles is a string: a local path (read through ``mmap``) or a
URI (read with ranged reads of what a split needs, never the whole object).  :class:`Storage`
carries the data-source options that configure remote filesystems (``fs.s3.endpoint`` ...) to
the executors; credentials and endpoints not given as options come from each filesystem's
standard environment and configuration (``AWS_*`` variables and ``~/.aws``, Google application
default credentials, ``AZURE_*``, ``HADOOP_HOME``/``CLASSPATH``).

:func:`list_files` expands paths, globs and directories like Spark's file sources
(``pathGlobFilter``, ``recursiveFileLookup``, ``modifiedBefore``/``modifiedAfter``,
``ignoreMissingFiles``); :func:`describe` sniffs a listed file's kind from its first page;
:func:`open_pages` and :class:`ByteWindow` read `.ibb` pages and legacy bytes.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from ..codec.ibb import PAGE_SIZE, decode_header_page, file_kind
from ..engine.files import (
    BinlogFile,
    IbbDirectory,
    MappedFile,
    binlog_name,
    binlog_streams,
    index_names,
    is_index,
    legacy_file_no,
)
from ..errors import DecodeError, OptionError, TruncatedError

log = logging.getLogger(__name__)

#: URI schemes read through pyarrow (``s3a``/``abfss`` are aliases Spark users type).
REMOTE_SCHEMES = frozenset(("s3", "s3a", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs"))
#: Bytes fetched per ranged read of a remote file (pages of a split, legacy events).
BLOCK_BYTES = 1 << 20
_CACHED_BLOCKS = 16

#: Data-source options that configure filesystems (keys lower-cased, Hadoop spellings accepted).
FS_OPTIONS = {
    "fs.s3.endpoint": "s3.endpoint", "fs.s3a.endpoint": "s3.endpoint",
    "fs.s3.region": "s3.region", "fs.s3a.endpoint.region": "s3.region",
    "fs.s3.accesskey": "s3.access_key", "fs.s3a.access.key": "s3.access_key",
    "fs.s3.secretkey": "s3.secret_key", "fs.s3a.secret.key": "s3.secret_key",
    "fs.s3.sessiontoken": "s3.session_token", "fs.s3a.session.token": "s3.session_token",
    "fs.s3.anonymous": "s3.anonymous",
    "fs.s3.pathstyle": "s3.path_style", "fs.s3a.path.style.access": "s3.path_style",
    "fs.gs.endpoint": "gs.endpoint", "fs.gs.anonymous": "gs.anonymous",
    "fs.azure.accountname": "azure.account_name", "fs.azure.accountkey": "azure.account_key",
    "fs.azure.endpoint": "azure.endpoint",
}


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI read through pyarrow (not a local path or ``file://``)."""
    return urlsplit(path).scheme.lower() in REMOTE_SCHEMES


def local_path(path: str) -> str:
    """A local path for ``path`` (``file://`` URIs unwrapped), made absolute."""
    if path.startswith("file:"):
        parts = urlsplit(path)
        return os.path.abspath(parts.path)
    return os.path.abspath(path)


def _truthy(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option {name}: {text!r} is not true or false")
    return value == "true"


@dataclass(frozen=True)
class Storage:
    """Filesystem settings from the data-source options; picklable, so executors open the same
    filesystems as the driver.  Filesystem objects are made once per process and URI root."""

    settings: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Storage:
        """The ``fs.*`` options among ``options`` (keys lower-cased); an unknown ``fs.*`` key is
        an :class:`OptionError`."""
        found = {}
        for key, value in options.items():
            if not key.startswith("fs."):
                continue
            if key not in FS_OPTIONS:
                known = ", ".join(sorted(FS_OPTIONS))
                raise OptionError(f"unknown filesystem option {key!r} (known: {known})")
            found[FS_OPTIONS[key]] = value
        return cls(tuple(sorted(found.items())))

    def filesystem(self, uri: str) -> tuple[pafs.FileSystem, str]:
        """``(filesystem, path inside it)`` for a remote ``uri`` (see :func:`uri_of`)."""
        parts = urlsplit(uri)
        scheme = parts.scheme.lower()
        key = (self, scheme, parts.netloc.partition("@")[2] if scheme in ("abfs", "abfss") else parts.netloc)
        with _LOCK:
            fs = _FILESYSTEMS.get(key)
        if fs is None:
            fs = self._s3() if scheme in ("s3", "s3a") else self._other(uri, scheme)
            with _LOCK:
                fs = _FILESYSTEMS.setdefault(key, fs)
        if scheme in ("s3", "s3a", "gs", "gcs", "abfs", "abfss"):
            # Paths inside these filesystems start with the bucket (container).
            bucket = parts.netloc.partition("@")[0]
            return fs, (bucket + parts.path).rstrip("/") or bucket
        return fs, parts.path.rstrip("/") or "/"

    def _get(self, name: str) -> str | None:
        return dict(self.settings).get(name)

    def _s3(self) -> pafs.FileSystem:
        kwargs: dict[str, Any] = {}
        endpoint = self._get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL")
        if endpoint:
            parsed = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            kwargs["endpoint_override"] = parsed.netloc
            kwargs["scheme"] = parsed.scheme
        region = self._get("s3.region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kwargs["region"] = region
        access, secret = self._get("s3.access_key"), self._get("s3.secret_key")
        if access or secret:
            if not (access and secret):
                raise OptionError("options fs.s3.accessKey and fs.s3.secretKey go together")
            kwargs.update(access_key=access, secret_key=secret, session_token=self._get("s3.session_token"))
        anonymous = self._get("s3.anonymous")
        if anonymous is not None:
            kwargs["anonymous"] = _truthy("fs.s3.anonymous", anonymous)
        path_style = self._get("s3.path_style")
        if path_style is not None:
            kwargs["force_virtual_addressing"] = not _truthy("fs.s3.pathStyle", path_style)
        return pafs.S3FileSystem(**kwargs)

    def _other(self, uri: str, scheme: str) -> pafs.FileSystem:
        if scheme in ("gs", "gcs") and (self._get("gs.endpoint") or self._get("gs.anonymous")):
            kwargs: dict[str, Any] = {}
            if self._get("gs.endpoint"):
                parsed = urlsplit(self._get("gs.endpoint") or "")
                kwargs["endpoint_override"] = parsed.netloc or parsed.path
                kwargs["scheme"] = parsed.scheme or "https"
            if self._get("gs.anonymous"):
                kwargs["anonymous"] = _truthy("fs.gs.anonymous", self._get("gs.anonymous") or "")
            return pafs.GcsFileSystem(**kwargs)
        if scheme in ("abfs", "abfss") and self._get("azure.account_name"):
            kwargs = {"account_name": self._get("azure.account_name")}
            if self._get("azure.account_key"):
                kwargs["account_key"] = self._get("azure.account_key")
            if self._get("azure.endpoint"):
                parsed = urlsplit(self._get("azure.endpoint") or "")
                kwargs["blob_storage_authority"] = kwargs["dfs_storage_authority"] = parsed.netloc
                kwargs["blob_storage_scheme"] = kwargs["dfs_storage_scheme"] = parsed.scheme or "https"
            return pafs.AzureFileSystem(**kwargs)
        try:
            fs, _ = pafs.FileSystem.from_uri(uri)
        except (OSError, ValueError) as err:
            raise OptionError(f"cannot open the filesystem of {uri!r}: {err}") from None
        return fs


_FILESYSTEMS: dict[tuple[Any, ...], pafs.FileSystem] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Listing:
    """How paths expand to files, as Spark's file sources do (see the module docstring)."""

    glob_filter: str | None = None
    recursive: bool = False
    modified_before: float | None = None
    modified_after: float | None = None
    ignore_missing: bool = False
    ignore_corrupt: bool = False
    storage: Storage = field(default_factory=Storage)


@dataclass(frozen=True)
class Entry:
    """A listed file: path (local path or URI), size and modification time (epoch seconds)."""

    path: str
    size: int
    mtime: float


def uri_of(spec: str, inner: str) -> str:
    """The URI of ``inner`` (a path inside the filesystem of the remote URI ``spec``)."""
    parts = urlsplit(spec)
    scheme = parts.scheme.lower()
    if scheme in ("s3", "s3a", "gs", "gcs"):
        return f"{parts.scheme}://{inner}"
    if scheme in ("abfs", "abfss"):
        bucket, _, rest = inner.partition("/")
        account = parts.netloc.partition("@")[2]
        return f"{parts.scheme}://{bucket}{'@' + account if account else ''}/{rest}"
    return f"{parts.scheme}://{parts.netloc}{inner}"


def _has_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[{")


def _expand_braces(pattern: str) -> list[str]:
    """Hadoop-style ``{a,b}`` alternatives expanded into several fnmatch patterns."""
    start = pattern.find("{")
    end = pattern.find("}", start)
    if start < 0 or end < 0:
        return [pattern]
    head, tail = pattern[:start], pattern[end + 1 :]
    return [p for alt in pattern[start + 1 : end].split(",") for p in _expand_braces(head + alt + tail)]


def _matches(path: str, pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in _expand_braces(pattern))


def _entries(spec: str, listing: Listing) -> list[Entry]:
    """The files ``spec`` (path, directory or glob) names, before the listing filters."""
    if is_remote(spec):
        fs, path = listing.storage.filesystem(spec)
    else:
        fs, path = pafs.LocalFileSystem(), local_path(spec)
    if _has_glob(path):
        base = path
        while _has_glob(base):
            base = posixpath.dirname(base)
        depth = path.count("/") - base.count("/")
        infos = [i for i in fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
                 if i.path.count("/") - base.count("/") == depth and _matches(i.path, path)]
        found = []
        for info in infos:
            if info.type == pafs.FileType.Directory:
                found += [i for i in fs.get_file_info(pafs.FileSelector(info.path, recursive=listing.recursive))
                          if i.type == pafs.FileType.File]
            elif info.type == pafs.FileType.File:
                found.append(info)
    else:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            if listing.ignore_missing:
                log.warning("binlog path %s does not exist; skipped (ignoreMissingFiles)", spec)
                return []
            raise OptionError(f"binlog path {spec!r} does not exist")
        if info.type == pafs.FileType.Directory:
            found = [i for i in fs.get_file_info(pafs.FileSelector(path, recursive=listing.recursive))
                     if i.type == pafs.FileType.File]
        else:
            found = [info]
    return [Entry(uri_of(spec, i.path) if is_remote(spec) else i.path, i.size or 0, i.mtime.timestamp() if i.mtime is not None else 0.0)
            for i in found]


def list_files(specs: Iterable[str], listing: Listing) -> list[Entry]:
    """Files named by ``specs`` after ``pathGlobFilter`` and the modification-time filters,
    each once, in path order."""
    out: dict[str, Entry] = {}
    for spec in specs:
        for entry in _entries(spec, listing):
            name = posixpath.basename(entry.path)
            if listing.glob_filter is not None and not _matches(name, listing.glob_filter):
                continue
            if listing.modified_before is not None and entry.mtime >= listing.modified_before:
                continue
            if listing.modified_after is not None and entry.mtime <= listing.modified_after:
                continue
            out.setdefault(entry.path, entry)
    return sorted(out.values(), key=lambda e: e.path)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if is_remote(path) else os.path.dirname(path)


def is_file(path: str, storage: Storage) -> bool:
    """Whether ``path`` names a file (not a directory, not missing)."""
    if is_remote(path):
        fs, inner = storage.filesystem(path)
        return fs.get_file_info(inner).type == pafs.FileType.File
    return os.path.isfile(local_path(path))


def read_range(path: str, start: int, length: int, storage: Storage) -> bytes:
    """``length`` bytes of ``path`` from ``start`` (fewer at the end of the file)."""
    if not is_remote(path):
        with open(local_path(path), "rb") as handle:
            handle.seek(start)
            return handle.read(length)
    fs, inner = storage.filesystem(path)
    with fs.open_input_file(inner) as handle:
        return handle.read_at(length, start) if start < handle.size() else b""


def read_file(path: str, storage: Storage) -> bytes:
    """The whole of a small file at ``path`` (local or remote), e.g. a saved schema history."""
    if not is_remote(path):
        with open(local_path(path), "rb") as handle:
            return handle.read()
    fs, inner = storage.filesystem(path)
    with fs.open_input_file(inner) as handle:
        return handle.read()


def child_path(directory: str, name: str) -> str:
    """The path of ``name`` inside ``directory`` (a local path or a remote URI prefix)."""
    if is_remote(directory):
        return directory.rstrip("/") + "/" + name
    return os.path.join(local_path(directory), name)


def describe(entry: Entry, storage: Storage) -> BinlogFile | None:
    """The :class:`BinlogFile` of a listed file from its first page (None for a file that is no
    binlog or an `.ibb` file nothing was written to yet)."""
    head = read_range(entry.path, 0, PAGE_SIZE, storage)
    kind = file_kind(head)
    if kind == "ibb":
        header = decode_header_page(head) if len(head) == PAGE_SIZE else None
        if header is None:
            return None
        file_no = header.file_no
    elif kind == "legacy":
        file_no = legacy_file_no(entry.path)
    else:
        return None
    return BinlogFile(_parent(entry.path), kind, file_no, entry.path, entry.size)


def discover(specs: Iterable[str], listing: Listing) -> list[BinlogFile]:
    """The binlog files ``specs`` name, ordered as one stream per directory by the engine's
    rule (``binlog_streams``: a listed ``.index`` where there is one, else kind and number);
    naming no binlog file at all is an :class:`OptionError`."""
    specs = list(specs)
    entries = list_files(specs, listing)
    files = [f for f in (describe(e, listing.storage) for e in entries if not is_index(e.path)) if f is not None]
    if not files:
        raise OptionError(f"no binlog files (legacy or .ibb) found at {', '.join(map(repr, specs))}")
    indexes: dict[str, list[str]] = {}
    for entry in entries:
        if is_index(entry.path):
            text = read_file(entry.path, listing.storage).decode("utf-8", "surrogateescape")
            indexes.setdefault(_parent(entry.path), index_names(text))
    return binlog_streams(files, indexes)


class RemotePages:
    """:class:`~mariabinlog.codec.ibb.PageSource` over remote `.ibb` files: pages come from
    ranged reads of :data:`BLOCK_BYTES` blocks (a few kept), never whole objects."""

    def __init__(self, directory: str, paths: Mapping[int, str], storage: Storage) -> None:
        self.directory = directory
        self.paths = dict(paths)
        self.storage = storage
        self._handles: dict[int, Any] = {}
        self._blocks: OrderedDict[tuple[int, int], bytes] = OrderedDict()

    def path(self, file_no: int) -> str:
        """URI of file ``file_no``."""
        return self.paths.get(file_no) or f"{self.directory.rstrip('/')}/{binlog_name(file_no)}"

    def name(self, file_no: int) -> str:
        """File name for messages: the URI of file ``file_no``."""
        return self.path(file_no)

    def _handle(self, file_no: int) -> Any:
        if file_no not in self._handles:
            fs, inner = self.storage.filesystem(self.path(file_no))
            try:
                self._handles[file_no] = fs.open_input_file(inner)
            except FileNotFoundError:
                self._handles[file_no] = None
        return self._handles[file_no]

    def size(self, file_no: int) -> int | None:
        """Size in bytes of file ``file_no`` (None if it does not exist)."""
        handle = self._handle(file_no)
        return None if handle is None else handle.size()

    def page(self, file_no: int, page_no: int) -> memoryview | None:
        """Page ``page_no`` of file ``file_no``; None past the end or for a missing file."""
        handle = self._handle(file_no)
        if handle is None or page_no < 0:
            return None
        start = page_no * PAGE_SIZE
        block_no, within = divmod(start, BLOCK_BYTES)
        block = self._blocks.get((file_no, block_no))
        if block is None:
            size = handle.size()
            first = block_no * BLOCK_BYTES
            block = handle.read_at(min(BLOCK_BYTES, max(size - first, 0)), first) if first < size else b""
            self._blocks[(file_no, block_no)] = block
            if len(self._blocks) > _CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        else:
            self._blocks.move_to_end((file_no, block_no))
        if within + PAGE_SIZE > len(block):
            return None
        return memoryview(block)[within : within + PAGE_SIZE]

    def close(self) -> None:
        """Close the open objects and drop cached blocks."""
        for handle in self._handles.values():
            if handle is not None:
                handle.close()
        self._handles.clear()
        self._blocks.clear()


def open_pages(directory: str, paths: Mapping[int, str], storage: Storage) -> IbbDirectory | RemotePages:
    """The page source of an `.ibb` stream: memory-mapped for a local directory, ranged reads
    for a remote one."""
    if is_remote(directory):
        return RemotePages(directory, paths, storage)
    return IbbDirectory(local_path(directory), {n: local_path(p) for n, p in paths.items()})


class ByteWindow:
    """A legacy file's bytes at absolute offsets: the whole file memory-mapped when local (its
    pages released from the RSS as events are decoded, see :class:`MappedFile`), a sliding
    window of ranged reads when remote.  :meth:`span` hands out a buffer and its base."""

    def __init__(self, path: str, storage: Storage) -> None:
        self.path = path
        self._map: MappedFile | None = None
        self._handle: Any = None
        if is_remote(path):
            fs, inner = storage.filesystem(path)
            self._handle = fs.open_input_file(inner)
            self.size = self._handle.size()
            self._buf, self._base = b"", 0
        else:
            self._map = MappedFile(local_path(path))
            self.size = self._map.size
            self._buf, self._base = self._map.data if self._map.data is not None else b"", 0

    def span(self, start: int, length: int) -> tuple[Any, int]:
        """``(buffer, base)`` where ``buffer[i]`` is the file's byte ``base + i`` and the buffer
        covers ``[start, start + length)`` or up to the end of the file."""
        if self._handle is None:
            return self._buf, 0
        end = min(self.size, start + length)
        if self._base <= start and end <= self._base + len(self._buf):
            return self._buf, self._base
        want = max(end - start, BLOCK_BYTES)
        self._base = start
        self._buf = self._handle.read_at(min(want, self.size - start), start) if start < self.size else b""
        return self._buf, self._base

    def __getitem__(self, key: slice) -> bytes:
        start, stop = key.start or 0, key.stop
        buf, base = self.span(start, stop - start)
        return bytes(buf[start - base : stop - base])

    def consumed(self, nbytes: int) -> None:
        """``nbytes`` more of the file were read by a scan of their own (see :meth:`decode`: a
        local file's pages are released from the RSS as reading goes on)."""
        if self._map is not None:
            self._map.note(nbytes)

    def decode(self, decoder: Any, pos: int) -> Any:
        """The event at file offset ``pos`` decoded by ``decoder`` (an EventStreamDecoder), its
        positions absolute; a longer event than the window widens it."""
        length = BLOCK_BYTES
        while True:
            buf, base = self.span(pos, length)
            try:
                event = decoder.decode(buf, pos - base)
            except TruncatedError as err:
                if base + len(buf) >= self.size or self._handle is None:
                    raise err.located(self.path, base) from None
                length = max(length * 2, len(buf) * 2)
                continue
            except DecodeError as err:
                raise err.located(self.path, base) from None
            if base:
                event.position += base
                event.end_position += base
            elif self._map is not None:
                self._map.note(event.end_position - pos)
            return event

    def close(self) -> None:
        """Release the mapping or the remote object."""
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # an event still references the mapping; the GC unmaps later
                pass
        if self._handle is not None:
            self._handle.close()
