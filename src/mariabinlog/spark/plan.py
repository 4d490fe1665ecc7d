"""Cutting binlog files into input splits and packing them into partitions, as Spark's file
sources do (anchors §3.4), plus the GTID seek that drops byte ranges no group of which can pass.

* Split size: ``min(maxPartitionBytes, max(openCostInBytes, totalBytes / minPartitions))`` where
  every file counts ``size + openCostInBytes`` (``FilePartition.maxSplitBytes``).
* `.ibb` files are cut at page boundaries (a multiple of 16 KiB, at least one page).  A split
  owns the event groups whose COMMIT record *starts* inside it; the reader starts at the split's
  first page skipping continuation chunks and finishes the last record it owns across pages and
  files, so no group is read twice or lost.
* Legacy files are cut at multiples of the split size too; a split owns the event groups whose
  GTID event starts inside it (the reader enters the file at the first event header at or after
  the split's start and finishes the last group it owns past its end).
* Splits are packed in file order into partitions, a partition closing when the next split would
  take it past the split size; each split adds ``openCostInBytes`` (``getFilePartitions``).
* GTID seek: the GTID states at page starts (`.ibb`) or file starts (legacy Gtid_list) bound the
  seq_nos written before and after that point; ranges that only hold groups the filter rejects
  are dropped or clipped (:meth:`ScanFilter.none_before` / ``none_after``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..codec.gtid import BinlogState
from ..codec.ibb import PAGE_SIZE
from ..engine.files import BinlogFile
from .files import ibb_data_end, ibb_state_points, legacy_start_state
from .options import ScanOptions


@dataclass(frozen=True)
class Split:
    """Byte range ``[start, end)`` of one file; the groups starting inside it belong to it.

    ``directory`` is the `.ibb` stream the file belongs to (records continue into, and OOB
    references point to, files of that directory).
    """

    kind: str
    path: str
    directory: str
    file_no: int
    start: int
    end: int

    @property
    def length(self) -> int:
        """Bytes covered."""
        return self.end - self.start


def max_split_bytes(files: Sequence[BinlogFile], options: ScanOptions) -> int:
    """Spark's ``maxSplitBytes`` for these files."""
    total = sum(f.size + options.open_cost_bytes for f in files)
    per_core = total // max(options.min_partitions, 1)
    return max(1, min(options.max_partition_bytes, max(options.open_cost_bytes, per_core)))


def split_files(files: Sequence[BinlogFile], split_bytes: int) -> list[Split]:
    """Files cut at multiples of ``split_bytes`` rounded down to whole 16 KiB pages (at least
    one page): page-aligned for `.ibb`, at byte offsets for legacy files."""
    splits = []
    page_split = max(PAGE_SIZE, split_bytes - split_bytes % PAGE_SIZE)
    for f in files:
        if f.kind == "legacy":
            start = 0
            while True:
                end = min(f.size, start + page_split)
                splits.append(Split("legacy", f.path, f.directory, f.file_no, start, end))
                if end >= f.size:
                    break
                start = end
            continue
        start = PAGE_SIZE
        while start < f.size:
            end = min(f.size, (start // page_split + 1) * page_split)
            splits.append(Split("ibb", f.path, f.directory, f.file_no, start, end))
            start = end
    return splits


def pack(splits: Sequence[Split], split_bytes: int, open_cost: int) -> list[list[Split]]:
    """Greedy packing in order, as ``FilePartition.getFilePartitions``."""
    partitions: list[list[Split]] = []
    current: list[Split] = []
    size = 0
    for split in splits:
        if current and size + split.length > split_bytes:
            partitions.append(current)
            current, size = [], 0
        current.append(split)
        size += split.length + open_cost
    if current:
        partitions.append(current)
    return partitions


def seek(files: Sequence[BinlogFile], splits: list[Split], options: ScanOptions) -> list[Split]:
    """Drop or clip splits whose every group the GTID filter rejects (see the module docstring)."""
    flt = options.filter
    if not options.gtid_seek or not flt.by_gtid:
        return splits
    points: dict[str, list[tuple[int, BinlogState]]] = {}
    ordered: dict[tuple[str, str], list[BinlogFile]] = {}
    for f in files:
        ordered.setdefault((f.directory, f.kind), []).append(f)
    for (_, kind), stream in ordered.items():
        for i, f in enumerate(stream):
            if kind == "ibb":
                marks = list(ibb_state_points(f, options.listing.storage))
            else:
                state = legacy_start_state(f.path, options.listing.storage)
                marks = [] if state is None else [(0, state)]
            following = stream[i + 1] if i + 1 < len(stream) else None
            if following is not None and following.file_no == f.file_no + 1:
                # The next file's first state is this file's final state.
                if kind == "ibb":
                    end_state = next(iter(ibb_state_points(following, options.listing.storage)), None)
                    end_state = None if end_state is None else (f.size, end_state[1])
                else:
                    start = legacy_start_state(following.path, options.listing.storage)
                    end_state = None if start is None else (f.size, start)
                if end_state is not None:
                    marks.append(end_state)
            points[f.path] = marks
    out = []
    for split in splits:
        start, end = split.start, split.end
        for offset, state in points.get(split.path, ()):
            # Seq_nos grow: a later point that nothing before passes covers this range too.
            if offset > start and flt.none_before(state):
                start = min(offset, end)
            if offset < end and flt.none_after(state):
                end = max(offset, start)
        if start >= end:
            continue
        if split.kind == "legacy":
            start, end = split.start, split.end  # legacy points sit at file ends: keep the cut
        out.append(dataclasses.replace(split, start=start, end=end))
    return out


def plan(files: Sequence[BinlogFile], options: ScanOptions) -> list[list[Split]]:
    """Splits packed into partitions for a batch read of ``files``; an `.ibb` file counts and is
    cut only up to its written pages (:func:`~.files.ibb_data_end`)."""
    storage = options.listing.storage
    files = [dataclasses.replace(f, size=ibb_data_end(f, storage)) if f.kind == "ibb" else f for f in files]
    split_bytes = max_split_bytes(files, options)
    splits = seek(files, split_files(files, split_bytes), options)
    return pack(splits, split_bytes, options.open_cost_bytes)
