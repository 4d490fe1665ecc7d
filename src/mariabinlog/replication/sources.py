"""Event sources: where replication reads event groups from (seed 004's "event source").

Three kinds, one interface (:class:`GroupSource`): ``groups()`` yields
:class:`~mariabinlog.codec.groups.EventGroup` objects in binlog order.

* :class:`PrimarySource`: a live MariaDB primary through :class:`BinlogClient` (GTID
  positioned, reconnecting).
* :class:`ArchiveSource`: an `.ibb` directory (one the archiver writes), read through the
  codec's record reader, optionally following it as it grows.  It is read without the
  engine's directory lock, so an archiver may be writing it at the same time; torn pages
  at the growing end are retried, and a position lost under it (a file rewritten by
  recovery) is found again by GTID.
* :class:`FileSource`: binlog files named on the command line, legacy or `.ibb`.

:class:`ArchiveReader` also gives the binlog server what a primary needs to check a
replica's start position: the archive's first and current GTID state.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Iterator
from typing import Any, Protocol

from ..codec.events import (
    CHECKSUM_OFF,
    FORMAT_DESCRIPTION_EVENT,
    START_ENCRYPTION_EVENT,
    FormatDescriptionEvent,
    decode_event,
    encrypted_error,
    reframe,
)
from ..codec.gtid import BinlogState, ConnectState
from ..codec.ibb.page import (
    PAGE_SIZE,
    decode_header_page,
    file_kind,
)
from ..codec.ibb.reader import RecordReader
from ..codec.events.stream import EventStreamDecoder, iter_legacy_events
from ..codec.ibb.state import EndState, seek_gtid, state_at_page
from ..engine.files import ibb_file_no
from ..engine.storage import BinlogFiles
from ..errors import DecodeError, OptionError, ReplicationError, TruncatedError
from .client import BinlogClient
from ..codec.groups import CONTROL_EVENTS, EventGroup, GroupAssembler
from .net import ConnectionOptions

PURGED = (
    "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old"
    " and required binlog files have been purged."
)


class GroupSource(Protocol):
    """Anything that yields event groups in binlog order."""

    def groups(self) -> Iterator[EventGroup]:
        """Event groups from the source's start position on."""
        ...

    @property
    def idle(self) -> bool:
        """True when the source has delivered everything it has right now."""
        ...

    def close(self) -> None:
        """Stop reading (a blocked ``groups()`` iteration ends)."""
        ...


# --------------------------------------------------------------------------- live primary


class PrimarySource:
    """Groups streamed from a live primary by :class:`BinlogClient` (which owns the position)."""

    def __init__(self, client: BinlogClient) -> None:
        self.client = client

    @property
    def idle(self) -> bool:
        """The primary's last message was a heartbeat."""
        return self.client.idle

    def groups(self) -> Iterator[EventGroup]:
        """Groups from the client's position, reconnecting as needed."""
        return self.client.groups()

    def close(self) -> None:
        """Drop the connection (ends the iteration)."""
        self.client.reconnect = 0
        self.client.close()


# --------------------------------------------------------------------------- .ibb archives


def archive_pages(directory: str, paths: dict[int, str] | None = None) -> BinlogFiles:
    """The engine's page reader over an archive's files, read-only (see
    :class:`~mariabinlog.engine.storage.BinlogFiles`: nothing mapped, so a file the writer
    truncates or purges under us never faults the process)."""
    return BinlogFiles(directory, readonly=True, paths=paths)


class ArchiveReader:
    """Event groups of an `.ibb` archive after a GTID connect state, optionally following it.

    Positioning as ibb-format.md §7 (and :class:`mariabinlog.engine.EngineReader`): the newest
    file whose page-1 state lies before the connect state, then the interval states of that
    file, then read skipping the groups the connect state already covers.
    """

    def __init__(
        self,
        pages: BinlogFiles,
        start: ConnectState | None,
        *,
        follow: bool = False,
        poll_interval: float = 0.05,
        torn_retries: int = 100,
    ) -> None:
        self.pages = pages
        #: None: read from the oldest file present, whatever GTIDs it starts with.
        self.from_oldest = start is None
        self.position = ConnectState() if start is None else start.copy()
        #: The connect state asked for, and the domains whose exact start GTID the archive
        #: holds (seen while skipping, or as a state record's entry): what a primary's
        #: strict-mode "hole" check needs.
        self.start = self.position.copy()
        self.start_found: set[int] = set()
        #: Domains still looking for their place (:attr:`position`'s GTID or a later one):
        #: their groups up to it are skipped; once past it, every group of the domain is read,
        #: a lower sequence number too (a primary without strict mode logs those, and sends
        #: them to its replicas, which apply them).
        self._looking: set[int] = set()
        self.follow = follow
        self.poll_interval = poll_interval
        self.torn_retries = torn_retries
        self.idle = False
        self.file_no = 0
        self.fd: FormatDescriptionEvent | None = None
        self._closed = False
        self._records: RecordReader | None = None

    def close(self) -> None:
        """End a following iteration at its next poll."""
        self._closed = True

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the archive files' descriptors (a long-lived process opens a reader per
        request; they reopen on demand)."""
        self.pages.close()

    # -- state --------------------------------------------------------------------------------

    def _state_at(self, file_no: int) -> BinlogState | None:
        return state_at_page(self.pages, file_no, 1)

    def current_state(self) -> BinlogState:
        """The GTID state after the last group written so far (a torn page at the growing end:
        the state up to it)."""
        return EndState(self.pages, self.pages.list()).walk(torn_end=True)

    def _seek(self, target: ConnectState) -> tuple[int, int]:
        files = self.pages.list()
        if not files:
            return 0, PAGE_SIZE
        found = seek_gtid(self.pages, files, target)
        if found is not None:
            for gtid in target.values():
                held = found.state.find(gtid.domain, gtid.server)
                if held is not None and held.seq == gtid.seq:
                    self.start_found.add(gtid.domain)
                if found.state.last(gtid.domain) == gtid:
                    self._looking.discard(gtid.domain)  # the place is right here: read everything after it
            return found.file_no, found.offset
        if all(self._state_at(file_no) is None for file_no in files):
            return files[0], PAGE_SIZE  # nothing readable yet: wait at the start
        raise ReplicationError(PURGED)

    # -- reading ------------------------------------------------------------------------------

    def groups(self) -> Iterator[EventGroup]:
        """Groups after :attr:`position`; with ``follow`` waits for more until :meth:`close`."""
        while not self._closed:
            produced = False
            for group in self.available():
                produced = True
                yield group
            if not self.follow:
                return
            if not produced:
                time.sleep(self.poll_interval)

    def seek(self) -> int:
        """Position the reader after :attr:`position`; returns the file number it starts in.

        Raises :class:`ReplicationError` (the primary's "purged" text) when the archive no
        longer has the files that position needs.
        """
        if self.from_oldest:
            files = self.pages.list()
            file_no, offset = (files[0] if files else 0), PAGE_SIZE
            self.from_oldest = False
        else:
            self._looking = set(self.position)
            file_no, offset = self._seek(self.position)
        self._records = RecordReader(self.pages, file_no, offset, skip_partial=True)
        self.file_no = file_no
        return file_no

    def available(self) -> Iterator[EventGroup]:
        """The groups that can be read now (none when the reader is at the current end)."""
        if self._records is None:
            self.seek()
        assert self._records is not None
        torn = 0
        while True:
            try:
                for stored in self._records.event_groups():
                    group = self._group(stored)
                    torn = 0
                    if group is None:
                        continue
                    position = self.position
                    domain = group.gtid.domain
                    if domain in self._looking:  # (every looking domain has its place in position)
                        seen = position[domain]
                        if group.gtid.seq <= seen.seq:
                            if seen.seq == group.gtid.seq:
                                self._looking.discard(domain)  # the place itself: read on after it
                            if self.start.get(domain) == group.gtid:
                                self.start_found.add(domain)
                            continue
                        self._looking.discard(domain)
                    position.update(group.gtid)
                    self.file_no = stored.record.file_no
                    self.idle = False
                    yield group
            except TruncatedError:
                # The last record continues in a page the writer has not written out yet: that
                # is the current end of the archive; the reader resumes at the record's start.
                pass
            except DecodeError:
                # A page torn by a concurrent write, or a layout rewritten by the writer's
                # recovery: retry, then find our place again by GTID.
                torn += 1
                if torn > self.torn_retries:
                    raise
                time.sleep(self.poll_interval)
                if torn % 10 == 0:
                    self.pages.forget()
                    self.seek()
                continue
            self.idle = True
            return

    def _group(self, stored: EventGroup) -> EventGroup | None:
        return self.convert(stored)

    def convert(self, stored: EventGroup) -> EventGroup | None:
        """A stored group as the replica's (None for a restart marker, whose
        Format_description becomes :attr:`fd`)."""
        if stored.gtid is None:
            head = next(stored.raw_events(), None)
            if head is not None and head[4] == FORMAT_DESCRIPTION_EVENT:  # restart marker
                event = decode_event(head)
                assert isinstance(event, FormatDescriptionEvent)
                self.fd = event
            return None
        stored.data()  # out-of-band data read here, where a torn page is retried
        stored.fd = self.fd
        return stored


class ArchiveSource:
    """Groups from an `.ibb` archive directory (see :class:`ArchiveReader`)."""

    def __init__(self, directory: str, start: ConnectState, *, follow: bool = False) -> None:
        if not os.path.isdir(directory):
            raise OptionError(f"{directory}: not a directory")
        self.reader = ArchiveReader(archive_pages(directory), start, follow=follow)

    @property
    def idle(self) -> bool:
        """Everything written so far has been read."""
        return self.reader.idle

    def groups(self) -> Iterator[EventGroup]:
        """Groups after the start position."""
        return self.reader.groups()

    def close(self) -> None:
        """Stop following."""
        self.reader.close()


# --------------------------------------------------------------------------- files


class FileSource:
    """Groups of binlog files given by name, in the order given: legacy files or `.ibb` files."""

    def __init__(self, paths: list[str]) -> None:
        if not paths:
            raise OptionError("no binlog files given")
        self.paths = paths
        self.idle = False
        self._closed = False

    def close(self) -> None:
        """Stop after the current group."""
        self._closed = True

    def groups(self) -> Iterator[EventGroup]:
        """Every group of the files in order."""
        kinds = {_sniff(path) for path in self.paths}
        if kinds == {"ibb"}:
            numbers = {}
            for path in self.paths:
                number = _ibb_number(path)
                numbers[number] = path
            reader = ArchiveReader(archive_pages(os.path.dirname(self.paths[0]) or ".", numbers), None)
            for group in reader.groups():
                if self._closed:
                    return
                yield group
        elif kinds == {"legacy"}:
            for path in self.paths:
                yield from self._legacy(path)
                if self._closed:
                    return
        else:
            raise OptionError("mixing legacy and .ibb binlog files in one source is not supported")
        self.idle = True

    def _legacy(self, path: str) -> Iterator[EventGroup]:
        name = os.path.basename(path)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as data:
                decoder = EventStreamDecoder()
                assembler = GroupAssembler()
                fd: FormatDescriptionEvent | None = None
                try:
                    for event in iter_legacy_events(data, decoder=decoder):
                        code = event.type_code
                        if code == START_ENCRYPTION_EVENT:
                            raise encrypted_error(event.position or 0)
                        if code in CONTROL_EVENTS:
                            if code == FORMAT_DESCRIPTION_EVENT:
                                assert isinstance(event, FormatDescriptionEvent)
                                fd = event
                            continue
                        start, end = event.position or 0, event.end_position or 0
                        raw = bytes(data[start:end])
                        if decoder.checksum_alg != CHECKSUM_OFF:
                            raw = reframe(raw[:-4])  # the CRC footer dropped, the length fixed
                        group = assembler.feed(event, raw, fd, name, end)
                        if group is not None:
                            yield group
                            if self._closed:
                                return
                except DecodeError as err:
                    raise err.located(path) from None


def _sniff(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as err:
        raise OptionError(f"cannot read {path}: {err.strerror}") from None
    kind = file_kind(magic)
    if kind in ("legacy", "ibb"):
        return kind
    raise OptionError(f"{path}: not a binlog file (neither legacy nor .ibb magic)")


def _ibb_number(path: str) -> int:
    number = ibb_file_no(path)
    if number is not None:
        return number
    with open(path, "rb") as handle:
        header = decode_header_page(handle.read(PAGE_SIZE))
    if header is None:
        raise OptionError(f"{path}: empty .ibb file")
    return header.file_no


# --------------------------------------------------------------------------- choosing


def is_primary_url(spec: str) -> bool:
    """True for ``mariadb://`` / ``mysql://`` URLs."""
    return spec.startswith(("mariadb://", "mysql://"))


def open_source(
    specs: list[str],
    start: ConnectState,
    *,
    follow: bool = True,
    client_options: dict[str, Any] | None = None,
    connection: dict[str, Any] | None = None,
) -> GroupSource:
    """The source named by ``specs``: one primary URL, one archive directory, or binlog files
    (``client_options`` are a primary's :class:`BinlogClient`'s, ``connection`` overrides
    :class:`ConnectionOptions` of its URL: ``max_allowed_packet``, ``read_timeout``)."""
    if not specs:
        raise OptionError("--from needs a primary URL, an archive directory or binlog files")
    if is_primary_url(specs[0]):
        if len(specs) > 1:
            raise OptionError("only one primary can be a source")
        options = ConnectionOptions.from_url(specs[0], **(connection or {}))
        client = BinlogClient(options, start=start, blocking=follow, **(client_options or {}))
        return PrimarySource(client)
    if len(specs) == 1 and os.path.isdir(specs[0]):
        return ArchiveSource(specs[0], start, follow=follow)
    for spec in specs:
        if os.path.isdir(spec):
            raise OptionError(f"{spec}: a directory must be the only source")
    return FileSource(specs)
