"""Streaming reads of a growing binlog directory: ``spark.readStream.format("mariabinlog")``.

The source follows one directory (e.g. the one an archiver or the engine writes): `.ibb`
files as one stream across ``binlog-NNNNNN.ibb``, or legacy files in name order across Rotate
events.  Offsets are GTID states with the byte position that ends them::

    {"stream": "ibb", "file": "binlog-000003.ibb", "offset": 81920, "gtid_state": "0-1-17,1-2-9"}

``gtid_state`` is the binlog state after every event group before ``file``/``offset`` (what a
replica at that point would have); the position always sits at an event-group boundary, so a
micro-batch holds whole groups.  ``latestOffset`` scans forward from the previous end to the
last complete group (a torn or half-written tail page or event is left for the next trigger),
``partitions`` cuts the range like a batch read (page-aligned `.ibb` splits, legacy byte ranges)
and the executors read it with the batch reader.  Restarting from a checkpoint replays the
same ranges: with an idempotent sink (Spark's file sinks) the output is exactly once.

A query without a checkpoint starts at the first file, or at option ``startingOffset`` (an offset
of this form: where an earlier batch read of the directory ended).

Read limits: ``maxGroupsPerTrigger`` (option) or Spark's ``ReadMaxRows`` bound the event groups
per micro-batch; ``ReadMaxBytes`` bounds bytes.  ``Trigger.AvailableNow`` stops at the end seen
when the query starts.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ..codec.events import GTID_EVENT, GtidEvent, QueryEvent
from ..codec.groups import CONTROL_EVENTS, GroupBoundary
from ..codec.gtid import BinlogState, Gtid, GtidList
from ..codec.ibb import PAGE_SIZE, RecordReader, RecordType
from ..codec.ibb.state import commit_gtid
from ..codec.events.stream import EventStreamDecoder
from ..engine.files import BinlogFile
from ..errors import DecodeError, OptionError, TruncatedError
from .files import legacy_events
from .fs import ByteWindow, Listing, Storage, discover, is_file, is_remote, local_path, open_pages, read_range
from .options import ScanOptions
from .plan import Split, pack
from .partition import BinlogPartition, read_partition
from .read import history_source, history_text

Offset = dict[str, Any]


def _files(directory: str, listing: Listing) -> list[BinlogFile]:
    """The binlog files of the followed directory; none yet while it does not exist (a stream
    may start before the archiver that fills it)."""
    if is_file(directory, listing.storage):
        raise OptionError(f"a mariabinlog stream reads a directory; {directory!r} is a file")
    try:
        files = discover([directory], dataclasses.replace(listing, ignore_missing=True))
    except OptionError:
        return []
    kinds = {f.kind for f in files}
    if len(kinds) > 1:
        raise OptionError(f"{directory!r} holds both legacy and .ibb binlogs; a stream follows one kind")
    return files


def _starting_offset(text: str | None) -> Offset | None:
    """Option ``startingOffset``: where a query without a checkpoint starts (an offset as the
    stream writes them, e.g. the end of what a batch run already read), instead of the first file."""
    if text is None:
        return None
    try:
        offset = json.loads(text)
    except ValueError:
        offset = None
    if not isinstance(offset, dict) or offset.get("stream") not in ("ibb", "legacy") or not isinstance(
            offset.get("file"), str) or not isinstance(offset.get("offset"), int):
        raise OptionError(f"option startingOffset: {text!r} is not a stream offset such as "
                          '{"stream": "ibb", "file": "binlog-000003.ibb", "offset": 81920, "gtid_state": "0-1-17"}')
    return {"stream": offset["stream"], "file": offset["file"], "offset": offset["offset"],
            "gtid_state": str(offset.get("gtid_state", ""))}


def _position(offset: Offset, files: list[BinlogFile]) -> tuple[int, int]:
    """(index of the offset's file in ``files``, byte offset); a purged file is an error."""
    for i, f in enumerate(files):
        if os.path.basename(f.path) == offset["file"]:
            return i, int(offset["offset"])
    raise OptionError(f"binlog file {offset['file']} of the stream offset is gone (purged?)")


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of whole event groups from a growing directory (module docstring)."""

    def __init__(self, path: str, options: ScanOptions, schema: StructType, raw_options: dict[str, str]) -> None:
        self.directory = path if is_remote(path) else local_path(path)
        self.options = options
        self.schema = schema
        limit = {k.lower(): v for k, v in raw_options.items()}.get("maxgroupspertrigger")
        if limit is not None and (not limit.strip().isdigit() or int(limit) < 1):
            raise OptionError(f"option maxGroupsPerTrigger: {limit!r} is not a positive number")
        self.max_groups = None if limit is None else int(limit)
        self.starting = _starting_offset({k.lower(): v for k, v in raw_options.items()}.get("startingoffset"))
        self._target: Offset | None = None

    # -- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> Offset:
        if self.starting is not None:
            return self.starting
        files = _files(self.directory, self.options.listing)
        if not files:
            return {"stream": "", "file": "", "offset": 0, "gtid_state": ""}
        first = files[0]
        start = PAGE_SIZE if first.kind == "ibb" else 4
        return {"stream": first.kind, "file": os.path.basename(first.path), "offset": start, "gtid_state": ""}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_groups is None else ReadMaxRows(self.max_groups)

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        if not start.get("stream"):
            start = self.initialOffset()
            if not start["stream"]:
                return start
        groups = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        end = self._scan(start, groups, max_bytes)
        target = self._target
        if target is not None and target.get("stream") and self._key(end) > self._key(target):
            return target if self._key(target) >= self._key(start) else start
        return end

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._scan(self.initialOffset(), None, None) if self._target is None else self._target

    def reportLatestOffset(self) -> Offset | None:
        return None

    def _key(self, offset: Offset) -> tuple[str, int]:
        return offset["file"], int(offset["offset"])

    def _scan(self, start: Offset, groups: int | None, max_bytes: int | None) -> Offset:
        """The offset after the last complete event group from ``start`` (within the limits)."""
        files = _files(self.directory, self.options.listing)
        if start["stream"] == "ibb":
            return _scan_ibb(self.directory, files, start, groups, max_bytes, self.options.listing.storage)
        return _scan_legacy(files, start, groups, max_bytes, self.options.listing.storage)

    # -- planning and reading ------------------------------------------------------------------

    def partitions(self, start: Offset, end: Offset) -> list[InputPartition]:
        if not end.get("stream") or self._key(start) == self._key(end):
            return []
        if not start.get("stream"):
            start = {**end, "file": self.initialOffset()["file"], "offset": self.initialOffset()["offset"]}
        files = _files(self.directory, self.options.listing)
        first, begin = _position(start, files)
        last, finish = _position(end, files)
        splits: list[Split] = []
        size = self.options.max_partition_bytes
        page_split = max(PAGE_SIZE, size - size % PAGE_SIZE)
        for i in range(first, last + 1):
            f = files[i]
            lo = begin if i == first else (PAGE_SIZE if f.kind == "ibb" else 4)
            hi = finish if i == last else f.size
            if f.kind == "legacy":
                if lo < hi:
                    splits.append(Split("legacy", f.path, f.directory, f.file_no, lo, hi))
                continue
            while lo < hi:
                cut = min(hi, (lo // page_split + 1) * page_split)
                splits.append(Split("ibb", f.path, f.directory, f.file_no, lo, cut))
                lo = cut
        packed = pack(splits, size, self.options.open_cost_bytes)
        return [BinlogPartition(i, tuple(p)) for i, p in enumerate(packed)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows, typed by the saved schema history the batch read uses (option
        ``schemaHistory``, else an archive's ``schema-history.json``), read afresh for every
        micro-batch: archive appends the DDL it archives to it."""
        saved = history_source([self.directory], self.options) if self.options.view == "rows" else None
        history = None if saved is None else history_text(saved, self.options.listing.storage)
        return read_partition(partition, self.options, self.schema, history)

    def commit(self, end: Offset) -> None:
        """Nothing to release: the files stay where they are."""


def _state_text(state: BinlogState) -> str:
    return str(state.to_list())


def _state_from(text: str) -> BinlogState:
    return BinlogState.from_list(GtidList.parse(text)) if text else BinlogState()


def _tail_error(err: DecodeError, files: list[BinlogFile], storage: Storage) -> bool:
    """Whether ``err`` is a write in progress, to be read at a later trigger: an incomplete
    record or event (its missing pieces may belong in any later file: an OOB transaction spans
    many), or a torn page after which the newest files hold nothing yet."""
    if isinstance(err, TruncatedError):
        return True
    newest = {f.path: f for f in files[-2:]}
    where = err.file
    if where is not None and not is_remote(where):
        where = local_path(where)
    if where is None or where not in newest or err.offset is None or newest[where].kind != "ibb":
        return False
    following = (err.offset // PAGE_SIZE + 1) * PAGE_SIZE
    rest = read_range(where, following, PAGE_SIZE, storage)
    return not rest.strip(b"\0")


def _scan_ibb(directory: str, files: list[BinlogFile], start: Offset, groups: int | None,
              max_bytes: int | None, storage: Storage) -> Offset:
    index, offset = _position(start, files)
    state = _state_from(start["gtid_state"])
    by_no = {f.file_no: f for f in files}
    source = open_pages(directory, {f.file_no: f.path for f in files}, storage)
    reader = RecordReader(source, files[index].file_no, offset)
    end = (files[index].file_no, offset)
    seen = 0
    begin = files[index].file_no, offset
    try:
        for record in reader:
            if record.nested:
                continue
            if record.type == RecordType.COMMIT:
                gtid = commit_gtid(record.payload)
                if gtid is not None:
                    state.update(gtid)
                seen += 1
            end = reader.position
            if groups is not None and seen >= groups:
                break
            if max_bytes is not None and _distance(begin, end, by_no) >= max_bytes:
                break
    except DecodeError as err:
        if not _tail_error(err, files, storage):
            raise
    finally:
        source.close()
    file_no, pos = end
    name = os.path.basename(by_no[file_no].path) if file_no in by_no else f"binlog-{file_no:06d}.ibb"
    return {"stream": "ibb", "file": name, "offset": pos, "gtid_state": _state_text(state)}


def _distance(begin: tuple[int, int], end: tuple[int, int], files: dict[int, BinlogFile]) -> int:
    if begin[0] == end[0]:
        return end[1] - begin[1]
    between = sum(files[n].size for n in range(begin[0] + 1, end[0]) if n in files)
    return files[begin[0]].size - begin[1] + between + end[1]


def _scan_legacy(files: list[BinlogFile], start: Offset, groups: int | None, max_bytes: int | None,
                 storage: Storage) -> Offset:
    index, offset = _position(start, files)
    state = _state_from(start["gtid_state"])
    name, end = os.path.basename(files[index].path), offset
    seen = before = 0  # groups taken; bytes of the files finished before this one
    while True:
        f = files[index]
        data = ByteWindow(f.path, storage)
        complete = True
        try:
            pending: Gtid | None = None
            boundary = GroupBoundary()
            for event in legacy_events(data, max(offset, 4), data.size, EventStreamDecoder(verify_checksum=False)):
                pos, stop = event.position, event.end_position
                assert pos is not None and stop is not None
                if pos < offset:
                    continue  # the Format_description, read for its checksum setting
                code = event.type_code
                if code == GTID_EVENT:
                    assert isinstance(event, GtidEvent)
                    pending = Gtid(event.domain_id, event.server_id, event.seq_no)
                    boundary.start(event.flags2)
                    continue
                if pending is not None and code not in CONTROL_EVENTS:
                    if not boundary.end_after(code, event.query if isinstance(event, QueryEvent) else None):
                        continue
                    state.update(pending)
                    seen += 1
                pending = None
                boundary.cut()
                name, end = os.path.basename(f.path), stop
                if (groups is not None and seen >= groups) or (max_bytes is not None
                                                               and before + stop - offset >= max_bytes):
                    return {"stream": "legacy", "file": name, "offset": end, "gtid_state": _state_text(state)}
        except DecodeError as err:
            if not _tail_error(err, files, storage):
                raise
            complete = False
        finally:
            data.close()
        # A file is finished once a later one exists (the server rotates before creating it).
        if not complete or index + 1 >= len(files) or end < f.size:
            break
        before += end - offset
        index, offset = index + 1, 4
        name, end = os.path.basename(files[index].path), 4
    return {"stream": "legacy", "file": name, "offset": end, "gtid_state": _state_text(state)}
