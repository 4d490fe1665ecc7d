"""`.ibb` files in ``mariabinlog dump``: the files named on the command line, read as one stream.

An `.ibb` record may start in one file and end in the next, so the files named together are
one stream of event groups: :class:`IbbStream` keeps the reader, the Format_description and
the group that belongs to the next file from one named file to the next, and checks that the
files are named in order with none missing between them.  Events carry no file offsets:
``# at`` shows the start position (4 by default) and ``end_log_pos`` the stored 0, as the C
tool does.  Filtering and printing are the :class:`~.dumper.Dumper`'s, reached through the
small :class:`DumpLoop` interface.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any, Protocol

from ...codec.events import CHECKSUM_OFF, DEFAULT_CONTEXT, FORMAT_DESCRIPTION_EVENT, DecodeContext, event_length
from ...errors import DecodeError
from ..printer import base as PB
from ..printer import printer as P
from ..printer.base import options_written
from .options import DRAIN_STEP, ERROR_STOP, OK_CONTINUE, OK_STOP


class DumpLoop(Protocol):
    """What the `.ibb` reading needs of the dump's reader loop."""

    printer: Any
    progress: Any
    files: list[str]
    start_position: int
    stop_position: int | None
    stop_reached: bool

    def error(self, message: str) -> None: ...

    def process(self, ev: P.EventView, name: str) -> int: ...

    simple: bool

    def accept_gtid(self, domain: int, server: int, seq: int) -> bool: ...


class IbbStream:
    """The `.ibb` reading state carried from one named file to the next."""

    __slots__ = ("ctx", "fd", "file_no", "groups", "loop", "named_file_no", "pending", "source")

    def __init__(self, loop: DumpLoop) -> None:
        self.loop = loop
        #: The page source over the files' directory, made with the first file that has a header.
        self.source: Any = None
        #: The header file number of the last file named on the command line.
        self.named_file_no: int | None = None
        self.fd: bytes | None = None
        self.groups: Any = None
        self.pending: Any = None
        self.file_no: int | None = None
        self.ctx: DecodeContext = DEFAULT_CONTEXT

    def _print_group(self, raws: Iterator[bytes], at: int) -> list[bytes] | bool | None:
        """The group whose events ``raws`` yields, through the printer's compiled groups: None
        when it printed it all, False when the GTID check stopped the reading, else the events
        taken from ``raws`` that it did not print (the event-by-event path prints them and the
        rest).  Groups over DRAIN_STEP bytes, or with an event whose length field is not its
        size, are not tried."""
        loop = self.loop
        taken: list[bytes] = []
        size = 0
        for raw in raws:
            taken.append(raw)
            size += len(raw)
            if size > DRAIN_STEP or len(raw) < 19 or event_length(raw, 0) != len(raw):
                return taken
        data = b"".join(taken)
        p = loop.printer
        p.ctx = self.ctx
        # soft=1: one group at most, the one at offset 0
        reached, stopped = p.print_groups(data, 0, len(data), 1, False, loop.accept_gtid, at)
        if stopped:
            return False
        if reached == len(data):
            return None
        # What follows the group's Xid (or the whole group, when it was not printed).
        rest, offset = [], 0
        for raw in taken:
            if offset >= reached:
                rest.append(raw)
            offset += len(raw)
        return rest

    def close(self) -> None:
        """Close the files the page source opened."""
        if self.source is not None:
            self.source.close()

    def dump_file(self, name: str, data: Any, first: bool, last: bool) -> int:
        """An `.ibb` file: its event groups, continuing the stream of the previous file.

        The reader goes on into the next file to finish a record that starts
        here, and stops before a group that starts in a file not named next.
        """
        from ...codec.ibb import PAGE_SIZE, RecordReader, decode_header_page
        from ...engine.files import binlog_name, ibb_file_no
        from ...engine.view import open_pages

        loop = self.loop
        if self.source is None:
            named = {ibb_file_no(f): f for f in loop.files if ibb_file_no(f) is not None}
            # an engine directory a crash left is read as the next open will recover it
            self.source = open_pages(os.path.dirname(os.path.abspath(name)), named, strict=True)  # type: ignore[arg-type]
        if self.source.recovered:
            number = ibb_file_no(name)
            recovered = self.source.page(number, 0) if number is not None else None
            data = recovered if recovered is not None else bytes(PAGE_SIZE)  # deleted by recovery
        try:
            header = decode_header_page(data[:PAGE_SIZE])
        except DecodeError as exc:
            loop.error(
                f"{exc.reason}: '{name}' (offset {exc.offset or 0}{'; ' + exc.expected if exc.expected else ''})"
            )
            return ERROR_STOP
        if header is None:  # an empty pre-allocated file: nothing written yet
            return OK_CONTINUE
        file_no = header.file_no
        previous = self.named_file_no
        if previous is not None and file_no != previous + 1:
            skipped = range(previous + 1, file_no)
            if file_no <= previous or any(n in self.source.paths for n in skipped):
                reason = (
                    f"out of order: file number {file_no} named after file number {previous} "
                    f"('{self.source.name(previous)}'); name the files in ascending order"
                )
            else:
                missing = ", ".join(binlog_name(n) for n in skipped)
                reason = (
                    f"not the next file: {missing} missing between file number {previous} "
                    f"('{self.source.name(previous)}') and file number {file_no}"
                )
            loop.error(_ibb_error(DecodeError(reason, offset=0, file=name), name))
            return ERROR_STOP
        self.named_file_no = file_no
        self.source.paths[file_no] = name
        if (
            self.groups is None
            or self.file_no is None
            or not (
                self.file_no == file_no
                or (self.pending is not None and self.pending.record.file_no == file_no)
            )
        ):
            start = (
                loop.start_position
                if first and loop.start_position > PAGE_SIZE
                else PAGE_SIZE
            )
            self.groups = RecordReader(
                self.source, file_no, start, skip_partial=True
            ).event_groups()
            self.pending = None
        self.file_no = file_no
        p = loop.printer
        p.fallback_fd = self.fd or _default_fd()
        stop = loop.stop_position if last else None
        position = loop.start_position if first else 4
        record_positions = p.record_positions
        progress = loop.progress
        checkpoint = 0
        while True:
            group = self.pending
            self.pending = None
            if group is None:
                try:
                    group = next(self.groups, None)
                except DecodeError as exc:
                    loop.error(_ibb_error(exc, name))
                    return ERROR_STOP
                if group is None:
                    return OK_CONTINUE
            if group.record.file_no != file_no:
                self.pending = group
                return OK_CONTINUE
            if stop is not None and group.record.offset >= stop:
                loop.stop_reached = True
                return OK_STOP
            try:
                raws = group.raw_events()
                if loop.simple:
                    # A whole small group in one call of the printer's compiled path (the text
                    # printer's: the other sinks print nothing there); else event by event.
                    taken = self._print_group(raws, position if not record_positions else group.record.offset)
                    if taken is None:
                        raws = iter(())
                    elif taken is False:
                        return ERROR_STOP
                    else:
                        raws = itertools.chain(taken, raws)
                for raw in raws:
                    if len(raw) < 19 or event_length(raw, 0) != len(raw):
                        raise DecodeError(
                            "event length does not match its data",
                            offset=group.record.offset,
                            expected=f"{len(raw)} bytes",
                            file=self.source.name(group.record.file_no),
                        )
                    if record_positions:
                        ev = PB.view_at(raw, 0, group.record.offset, 0, self.ctx)
                        ev.log_pos = group.record.end_offset
                    else:
                        ev = PB.view_at(raw, 0, position, 0, self.ctx)
                    if ev.type_code == FORMAT_DESCRIPTION_EVENT:
                        self.fd = bytes(raw)
                        p.fallback_fd = self.fd
                        fde = ev.decoded()
                        self.ctx = fde.context()
                        ev.ctx = self.ctx
                        p.ctx = self.ctx
                        p.checksum_alg = CHECKSUM_OFF
                        p.options_written = options_written(fde.server_version)
                    else:
                        p.ctx = self.ctx
                    retval = loop.process(ev, name)
                    if retval != OK_CONTINUE:
                        return retval
            except DecodeError as exc:
                loop.error(_ibb_error(exc, name))
                return ERROR_STOP
            if len(p.out) > 2048 or group.record.end_offset >= checkpoint:
                checkpoint = group.record.end_offset + DRAIN_STEP
                p.drain()
                if progress is not None:
                    progress.update(group.record.end_offset)


def _ibb_error(exc: DecodeError, name: str) -> str:
    if exc.file is None:
        exc = exc.located(name)
    text = f"Could not read binlog: {exc}"
    try:
        size = os.path.getsize(exc.file) if exc.file is not None else None
    except OSError:
        size = None
    if size is not None and exc.offset is not None and exc.offset >= size:
        text += f" ('{exc.file}' has only {size} bytes: truncated?)"
    return text


def _default_fd() -> bytes:
    """A Format_description for `.ibb` streams that have none (binlog v4, checksum OFF)."""
    from ...codec.events import FormatDescriptionEvent

    return FormatDescriptionEvent(
        server_version="12.3.0-MariaDB-log", timestamp=0, server_id=0
    ).encode()
