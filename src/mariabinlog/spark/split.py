"""The events a split owns, in order (executor side): :class:`SplitReader` over a legacy file's
byte range or an `.ibb` split's records, each event with its place and its group.

Legacy files are read by the codec's one fast event path where the reader allows it (whole
groups cut by :class:`~mariabinlog.codec.framing.Scanner`, only the wanted events decoded),
event by event otherwise; `.ibb` splits record by record, read on past a page a live writer
is rewriting.  The views (:mod:`.read`) turn the items into Arrow batches.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from typing import Any, NamedTuple

from ..codec.events import (
    CHECKSUM_CRC32,
    CHECKSUM_OFF,
    FL_GROUP_COMMIT_ID,
    GTID_EVENT,
    HEADER_LEN,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    Event,
    GtidEvent,
    QueryEvent,
    RowsBody,
    decode_event,
    event_type,
    gtid_commit_id,
    read_header,
    rows_body,
)
from ..codec.events.header import reframe
from ..codec.events.stream import EventStreamDecoder
from ..codec.framing import SCAN_END, SCAN_MORE, scanner_for
from ..codec.groups import CONTROL_EVENTS, GroupBoundary
from ..codec.ibb import EventGroup, PageSource, RecordReader, RecordType
from ..errors import DecodeError, TruncatedError
from .files import legacy_entry, skipped_length
from .fs import ByteWindow, open_pages
from .options import ScanOptions
from .plan import Split

log = logging.getLogger(__name__)

#: Times a split is read on past a page that reads as unwritten or torn inside it (a live
#: writer's page rewrite) before that page counts as damage.
_REREADS = 4

class Group(NamedTuple):
    """The event group an event belongs to: its GTID, commit id, GTID-event time and flags,
    and where the group starts (COMMIT record for `.ibb`, GTID event for legacy)."""

    domain: int
    server: int
    seq: int
    commit_id: int | None
    timestamp: int
    flags: int
    file_no: int
    position: int

    @property
    def gtid(self) -> str:
        """``domain-server-seq``."""
        return f"{self.domain}-{self.server}-{self.seq}"


def group_of(event: GtidEvent, file_no: int, position: int) -> Group:
    """The :class:`Group` a GTID event starts."""
    commit_id = event.commit_id if event.flags2 & FL_GROUP_COMMIT_ID else None
    return Group(
        event.domain_id, event.server_id, event.seq_no, commit_id, event.timestamp, event.flags2, file_no, position
    )


class Item(NamedTuple):
    """One event of a split: where, which one of the group, the event (a rows event's
    :class:`RowsBody` only, where the reader was asked for ``rows_bodies``), its v4 bytes
    without checksum footer (only when asked for), its group and its length as stored."""

    position: int
    index: int
    event: Event | RowsBody
    raw: bytes | None
    group: Group | None
    length: int


class SplitReader:
    """The events a split owns, in order; ``decoder`` holds the table maps of the current group.

    ``skip``: event types neither decoded nor yielded (none may start or end a group);
    ``quiet``: event types a reader does not want yielded.  With ``quiet`` set, whole groups of
    a legacy file are cut by the codec's one fast path (:class:`~mariabinlog.codec.framing.Scanner`:
    framing, CRC32, groups in compiled code) and only their wanted events are decoded; what the
    scanner does not take (control events, damage, anything outside a group, a group it stops
    inside) is read event by event, as without ``quiet``.  ``rows_bodies`` (with ``quiet``): in
    the groups the scanner cuts, a rows event comes as its :class:`RowsBody` (the rows and
    nothing else) and a Table_map is not yielded but made current in ``decoder``, one event
    per map body (:meth:`~EventStreamDecoder.shared_table_map`): all a reader of rows wants."""

    def __init__(self, split: Split, options: ScanOptions, *, raw: bool = False,
                 skip: frozenset[int] = frozenset(), quiet: frozenset[int] = frozenset(),
                 rows_bodies: bool = False) -> None:
        self.split = split
        self.options = options
        self.raw = raw
        self.skip = skip
        self.quiet = quiet
        self.rows_bodies = rows_bodies
        # `.ibb` events carry no checksum; a legacy file's Format_description sets its own.
        self.decoder = EventStreamDecoder(checksum_alg=CHECKSUM_OFF, verify_checksum=options.verify_checksum)

    def __iter__(self) -> Iterator[Item]:
        if self.split.kind == "legacy":
            return self._legacy()
        return self._ibb()

    def _damaged(self, err: DecodeError) -> None:
        """Fail on damaged data, or with ``ignoreCorruptFiles`` log it and end the split there
        (what was read before the damage is kept)."""
        if not self.options.listing.ignore_corrupt:
            raise err
        log.warning("ignoreCorruptFiles: skipped the rest of %s after: %s", self.split.path, err)

    def _keep_outside(self, event: Event) -> bool:
        flt = self.options.filter
        return not flt.by_gtid and flt.accepts_time(event.timestamp)

    # -- legacy ------------------------------------------------------------------------------

    def _legacy(self) -> Iterator[Item]:
        split, flt = self.split, self.options.filter
        data = ByteWindow(split.path, self.options.listing.storage)
        dec = self.decoder
        group: Group | None = None
        keep = False
        boundary = GroupBoundary()
        entered = split.start <= 4  # a split inside the file starts at its first group
        scanner: Any = None
        scanned_ctx: Any = None
        try:
            # The Format_description first (read for its checksum setting), then from the entry.
            pending, entry = legacy_entry(data, max(split.start, 4), split.end, dec)
            pos = 4
            while pos < data.size:
                if pending is not None:
                    event, pending, next_pos = pending, None, entry
                else:
                    if self.quiet and group is None and entered and not self.raw and pos < split.end:
                        if scanned_ctx is not dec.ctx:
                            scanned_ctx = dec.ctx
                            scanner = _scanner_for(dec)
                        if scanner is not None:
                            pos, done = yield from self._scan(data, pos, scanner)
                            if done or pos >= data.size:
                                return
                    hop = skipped_length(data, pos, self.skip)
                    if hop:
                        pos += hop
                        continue
                    event = data.decode(dec, pos)
                    next_pos = event.end_position  # type: ignore[assignment]
                code = event.type_code
                length = event.end_position - pos  # type: ignore[operator]
                if pos >= split.end and (group is None or code == GTID_EVENT or code in CONTROL_EVENTS):
                    break  # the next split owns what starts here; a group in progress is finished
                if pos < split.start:
                    pos = next_pos
                    continue  # the Format_description read for its checksum setting
                if code == GTID_EVENT or code in CONTROL_EVENTS:
                    entered = True
                elif not entered:
                    pos = next_pos
                    continue  # the tail of a group that started in the previous split
                if code == GTID_EVENT:
                    assert isinstance(event, GtidEvent)
                    group = group_of(event, split.file_no, pos)
                    keep = flt.accepts(group.domain, group.server, group.seq, group.timestamp)
                    boundary.start(event.flags2)
                    if keep and code not in self.quiet:
                        yield Item(pos, 0, event, self._legacy_raw(data, pos, length), group, length)
                    pos = next_pos
                    continue
                if code in CONTROL_EVENTS:
                    group = None
                    boundary.cut()
                if group is None:
                    if self._keep_outside(event) and code not in self.quiet:
                        yield Item(pos, 0, event, self._legacy_raw(data, pos, length), None, length)
                    pos = next_pos
                    continue
                if keep and code not in self.quiet:
                    yield Item(pos, 0, event, self._legacy_raw(data, pos, length), group, length)
                if boundary.end_after(code, event.query if isinstance(event, QueryEvent) else None):
                    group = None
                pos = next_pos
        except DecodeError as err:
            if isinstance(err, TruncatedError) and err.offset is not None and err.offset >= split.end:
                return  # the event after the split's end is still being written (a live stream)
            self._damaged(err.located(split.path))
        finally:
            data.close()

    def _scan(self, data: ByteWindow, pos: int, scanner: Any) -> Generator[Item, None, tuple[int, bool]]:
        """Whole groups from ``pos`` by the scanner, their wanted events decoded and yielded group
        by group (a reader resolves each group's rows against its own table maps); returns
        ``(where the event-by-event reading goes on, whether the split is done)``.  A group the
        scanner stops inside (damage, a control event, the end of the data), or one whose event
        does not decode, is left whole to the event-by-event reading, which reports it."""
        split, flt, dec = self.split, self.options.filter, self.decoder
        footer = 4 if dec.checksum_alg == CHECKSUM_CRC32 else 0
        unwanted = self.skip | self.quiet
        bodies = self.rows_bodies
        start = pos  # where the group being scanned starts
        while True:
            buf, base = data.span(pos, _SCAN_BYTES)
            at = pos - base
            found, stop_at, why = scanner.scan_events(buf, at, min(len(buf), at + _SCAN_BYTES))
            for scanned in found:
                if start >= split.end:
                    scanner.discard()
                    return start, True  # the next split owns what starts here
                data_, offsets, domain, server, seq, flags2, timestamp, _ = scanned
                count = len(offsets) - 1
                size = offsets[-1] + count * footer
                if flt.accepts(domain, server, seq, timestamp):
                    ctx = dec.ctx
                    items: list[Item] = []
                    try:
                        commit_id = gtid_commit_id(data_, HEADER_LEN, offsets[1], flags2)
                        group = Group(domain, server, seq, commit_id, timestamp, flags2, split.file_no, start)
                        for i in range(count):
                            a, b = offsets[i], offsets[i + 1]
                            code = event_type(data_, a)
                            if code in unwanted:
                                continue
                            if bodies:
                                if code == TABLE_MAP_EVENT:
                                    dec.shared_table_map(data_, a, b)
                                    continue
                                if code in ROWS_KIND:
                                    at = start + a + i * footer
                                    body = rows_body(data_, a, b, ctx, code, at)
                                    items.append(Item(at, 0, body, None, group, b - a + footer))
                                    continue
                            event = decode_event(data_, a, b, ctx)
                            event.position = start + a + i * footer
                            event.end_position = event.position + b - a + footer
                            dec.observe(event)
                            items.append(Item(event.position, 0, event, None, group, b - a + footer))
                    except DecodeError:
                        scanner.discard()
                        return start, False  # read again event by event: the error there names it
                    yield from items
                start += size
            data.consumed(base + stop_at - pos)
            pos = base + stop_at
            if (why == SCAN_MORE or why == SCAN_END) and stop_at > at and pos < data.size:
                if not scanner.open or pos - start <= _SCAN_GROUP_BYTES:
                    continue  # the next stretch of the file
            if scanner.open:
                scanner.discard()
            return start, False

    def _legacy_raw(self, data: Any, pos: int, length: int) -> bytes | None:
        """The event without its CRC footer, length field adjusted (as `.ibb` stores events)."""
        if not self.raw:
            return None
        footer = 4 if self.decoder.checksum_alg == CHECKSUM_CRC32 else 0
        return reframe(data[pos : pos + length - footer])

    # -- .ibb --------------------------------------------------------------------------------

    def _ibb(self) -> Iterator[Item]:
        """The split's event groups.  A page inside the split that reads as unwritten or torn may
        be one a live writer is rewriting at that moment (it rewrites its last, partly filled page
        as records are appended, and a read racing that write sees a page whose CRC fails): the
        split is read on from the last whole record after a short pause, and only a page that
        stays so is damage."""
        split = self.split
        start = split.start
        done: tuple[int, int] = (-1, 0)  # (offset of the group being yielded, items of it yielded)
        for attempt in range(_REREADS + 1):
            source = open_pages(split.directory, {split.file_no: split.path}, self.options.listing.storage)
            following = (split.file_no, start)  # where the next record starts
            try:
                reader = RecordReader(source, split.file_no, start, skip_partial=True)
                for record in reader:
                    if not record.nested:
                        if record.file_no != split.file_no or record.offset >= split.end:
                            break
                        if record.type == RecordType.COMMIT and record.offset >= split.start:
                            # A group cut by a reread goes on after the items already yielded.
                            skip = done[1] if done[0] == record.offset else 0
                            items = self._ibb_group(reader.group(record), record.offset, source)
                            for count, item in enumerate(items, 1):
                                if count > skip:
                                    done = (record.offset, count)
                                    yield item
                    following = reader.position
                return
            except DecodeError as err:
                inside = following[0] == split.file_no and following[1] < split.end
                if isinstance(err, TruncatedError) and not inside:
                    return  # the record after the split's end is still being written (a live stream)
                if attempt == _REREADS:
                    self._damaged(err)
                    return
                log.info("%s: reading on from offset %d after %s", split.path, following[1], err)
                start = following[1]
                time.sleep(0.05 * (attempt + 1))
            finally:
                source.close()

    def _ibb_group(self, group_data: EventGroup, offset: int, source: PageSource) -> Iterator[Item]:
        split, dec, flt = self.split, self.decoder, self.options.filter
        name = source.name(split.file_no)
        raws = group_data.raw_events()
        group: Group | None = None
        bodies = self.rows_bodies
        try:
            for index, raw in enumerate(raws):
                if self.skip or bodies:
                    code = read_header(raw)[1]
                    if code in self.skip:
                        continue
                    if bodies and group is not None:
                        if code == TABLE_MAP_EVENT:
                            dec.shared_table_map(raw, 0, len(raw))
                            continue
                        if code in ROWS_KIND:
                            yield Item(offset, index, rows_body(raw, 0, len(raw), dec.ctx, code, offset), None, group,
                                       len(raw))
                            continue
                event = dec.decode(raw, 0)
                if index == 0 and event.type_code == GTID_EVENT:
                    assert isinstance(event, GtidEvent)
                    group = group_of(event, split.file_no, offset)
                    if not flt.accepts(group.domain, group.server, group.seq, group.timestamp):
                        return
                elif group is None and not self._keep_outside(event):
                    continue
                if event.type_code not in self.quiet:
                    yield Item(offset, index, event, raw if self.raw else None, group, len(raw))
        except DecodeError as err:
            raise err.located(name, offset) from None


#: Bytes of a legacy file one scan looks at (the scanner keeps a group open across scans).
_SCAN_BYTES = 4 << 20
#: A group the scanner holds open past this many bytes (it copies them) is read event by
#: event instead: memory stays bounded by the event, not the transaction.
_SCAN_GROUP_BYTES = 16 << 20


def _scanner_for(decoder: EventStreamDecoder) -> Any:
    """The codec's group scanner for the events after ``decoder``'s Format_description (None
    before one, or for a format the scanner does not take)."""
    if decoder.description is None:
        return None
    return scanner_for(decoder.ctx, checksum=decoder.checksum_alg == CHECKSUM_CRC32, verify=decoder.verify_checksum)
