"""The live mirror job: ``mariabinlog pipeline SOURCE --out OUT --format delta|iceberg [--follow]``.

A mirror is an output directory whose tables follow one binlog directory (an archive that
``mariabinlog archive --stop-never`` keeps growing, or a server's binlog directory):

1. The first run (or ``--full-refresh``) is the batch pipeline, bounded at the directory's end
   as it is when the run starts (a stream offset, :mod:`.position`): its Spark tasks write the
   tables' Parquet files in parallel, and each table's first commit names that position.  The
   run leaves a ledger, ``OUT/_mirror/mirror.json`` (source, format, catalog, position).
2. Later runs go on from there with a Spark Structured Streaming query over the directory (the
   ``mariabinlog`` streaming source, rows view, checkpoint ``OUT/_mirror/checkpoint``):
   ``--follow`` keeps it running, one micro-batch per trigger; without it the query reads what
   is new (``Trigger.AvailableNow``) and stops, so a run costs what is new.  Each micro-batch is
   applied by :class:`.apply.Mirror` on the driver: CDC rows appended, typed change rows
   appended, state MERGEd by key, tables created, dropped, renamed and evolved as the schema
   history says, each table's commit carrying the batch's end position.

Exactly once: Spark records each micro-batch's offsets in the checkpoint before running it and
marks it done after; a batch cut short by a kill is run again with the same offsets, and the
position in each table's last commit says whether that table already holds it.

Operations: a progress line per micro-batch on stderr and a JSON line in
``OUT/_mirror/progress.jsonl`` (or ``--progress-json``), with the lag behind the directory's
newest event group in GTIDs and seconds; ``--status OUT`` prints each table's position and lag;
a table whose changes cannot be applied stops the job with the table, GTIDs and reason.
Compaction (``--compact-every``) and vacuum (``--retention``) run between micro-batches.

Test-only fault hook: with ``MARIABINLOG_MIRROR_KILL_AFTER_COMMITS=N`` in its environment the
job SIGKILLs itself right after its N-th table commit (between that commit and the micro-batch's
checkpoint), the kill the exactly-once tests need at that exact point.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import pyarrow as pa

from ...codec.events import ANNOTATE_ROWS_EVENT, QUERY_COMPRESSED_EVENT, QUERY_EVENT, ROWS_KIND, TABLE_MAP_EVENT
from ...errors import MirrorError, OptionError
from ...schema import SchemaHistory
from ...schema.history import SCHEMA_HISTORY_FILE
from ..fs import discover, is_remote, local_path
from ..options import ScanOptions
from ..partition import arrow_schema
from ..read import NO_HISTORY, SplitReader, history_source
from ..schema import ROWS_SCHEMA
from ..stream import BinlogStreamReader
from .apply import Applied, Mirror
from .lake import Lake, LakeTable
from .position import Offset, gtids_behind, version

log = logging.getLogger(__name__)

MIRROR_DIR = "_mirror"
LEDGER = "mirror.json"
CHECKPOINT = "checkpoint"
PROGRESS = "progress.jsonl"
#: Environment variable of the test-only fault hook (module docstring).
KILL_AFTER_COMMITS = "MARIABINLOG_MIRROR_KILL_AFTER_COMMITS"
#: Event groups a micro-batch holds at most unless ``--option maxGroupsPerTrigger`` says.
MAX_GROUPS = 20000


@dataclass
class Ledger:
    """What a mirror's output directory says about itself (``OUT/_mirror/mirror.json``)."""

    source: str
    format: str
    catalog: str | None
    position: Offset
    #: Where the schema history comes from: "source" (the option or the archive's own file),
    #: "own" (``OUT/schema-history.json``, which the job extends) or "none".
    history: str
    options: dict[str, str] = field(default_factory=dict)
    #: Commit time of the newest group applied (epoch seconds).
    newest: float | None = None
    updated: float = 0.0
    compacted: float = 0.0

    def save(self, out: str) -> None:
        """Write atomically."""
        self.updated = time.time()
        path = os.path.join(out, MIRROR_DIR, LEDGER)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as handle:
            json.dump(asdict(self), handle, indent=1)
        os.replace(path + ".tmp", path)

    @classmethod
    def load(cls, out: str) -> Ledger | None:
        """The ledger of ``out`` (None: not a mirror)."""
        path = os.path.join(out, MIRROR_DIR, LEDGER)
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            return cls(**json.load(handle))


def open_lake(out: str, table_format: str, catalog: str | None) -> Lake:
    """The tables of a mirror in ``table_format``."""
    if table_format == "delta":
        from .delta import DeltaLake

        return DeltaLake(out)
    if table_format == "iceberg":
        from .iceberg import IcebergLake

        return IcebergLake(out, catalog)
    raise OptionError(f"a mirror is kept as Delta or Iceberg tables, not {table_format!r}")


def parse_duration(what: str, value: str) -> float:
    """Seconds of ``"90"``, ``"500ms"``, ``"2 s"``, ``"15 minutes"``, ``"1 hour"``, ``"7 days"``."""
    units = {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
             "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
    number = value.strip().rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = value.strip()[len(number):].strip().lower()
    unit = unit[:-1] if unit.endswith("s") and unit not in ("ms", "s") else unit
    try:
        seconds = float(number) * units[unit or "s"]
    except (ValueError, KeyError):
        raise OptionError(f"{what} {value!r} is not a duration such as 500ms, 2s, 15 minutes or 7 days") from None
    if seconds < 0:
        raise OptionError(f"{what} {value!r} is negative")
    return seconds


def stream_reader(source: str, options: dict[str, str]) -> BinlogStreamReader:
    """The streaming source's reader of ``source`` on the driver (positions, DDL scans)."""
    scan = ScanOptions.parse({**options, "path": source, "view": "rows"})
    return BinlogStreamReader(source, scan, ROWS_SCHEMA, {**options, "path": source})


def directory_end(source: str, options: dict[str, str]) -> Offset:
    """The offset after the last complete event group of the directory now."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    reader = stream_reader(source, options)
    return reader.latestOffset(reader.initialOffset(), ReadAllAvailable())


def extend_history(history: SchemaHistory, source: str, options: dict[str, str], start: Offset, end: Offset
                   ) -> bool:
    """Feed ``history`` the DDL of the groups between two offsets (the job's own history of a
    directory that keeps none); returns whether it changed.  Statements of GTIDs it holds
    already (a micro-batch run again) are not applied twice."""
    reader = stream_reader(source, options)
    everything = ScanOptions(gtid_seek=False, verify_checksum=False, listing=reader.options.listing)
    skip = frozenset(ROWS_KIND) | {TABLE_MAP_EVENT, ANNOTATE_ROWS_EVENT}
    before = len(history.records)
    for partition in reader.partitions(start, end):
        for split in partition.splits:  # type: ignore[attr-defined]
            for item in SplitReader(split, everything, skip=skip):
                if item.event.type_code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
                    history.observe_query(item.event, file=os.path.basename(split.path), pos=item.position,  # type: ignore[arg-type]
                                          gtid=None if item.group is None else item.group.gtid)
    return len(history.records) != before


def newest_group(source: str, options: dict[str, str], after: Offset, known: Offset | None = None
                 ) -> tuple[Offset, float | None]:
    """(offset after the directory's last complete group, that group's commit time) as of now,
    scanning on from ``after``, or from ``known`` (an earlier answer) where that is later: the
    directory only grows, so a job behind it does not scan what it has not read twice; the
    time is None when nothing is newer than ``after``."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from ..plan import Split

    reader = stream_reader(source, options)
    start = known if known is not None and version(known) > version(after) else after
    latest = reader.latestOffset(start if start.get("file") else reader.initialOffset(), ReadAllAvailable())
    if version(latest) <= version(after):
        return latest, None
    # The last group's GTID event: read the split that ends at the latest offset.
    window = 1 << 16
    files = {os.path.basename(f.path): f for f in discover([reader.directory], reader.options.listing)}
    found = files.get(latest["file"])
    if found is None:
        return latest, None
    low = 16384 if found.kind == "ibb" else 4
    skip = frozenset(ROWS_KIND) | {TABLE_MAP_EVENT, ANNOTATE_ROWS_EVENT}
    everything = ScanOptions(gtid_seek=False, verify_checksum=False, listing=reader.options.listing)
    end = int(latest["offset"])
    start = max(low, end - window)
    while True:
        if found.kind == "ibb":
            start -= start % 16384
        newest = None
        for item in SplitReader(Split(found.kind, found.path, found.directory, found.file_no, start, end), everything,
                                skip=skip):
            if item.group is not None:
                newest = item.group.timestamp
        if newest is not None or start <= low:
            return latest, None if newest is None else float(newest)
        start = max(low, start - window * 8)


class MirrorProgress:
    """Progress of a running mirror: a line per micro-batch on stderr and a JSON line each."""

    def __init__(self, out: str, json_path: str | None, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.json_path = json_path if json_path is not None else os.path.join(out, MIRROR_DIR, PROGRESS)

    def report(self, batch: int, applied: Applied, end: Offset, behind: int, seconds: float | None) -> dict[str, Any]:
        """Report one micro-batch; returns the JSON record."""
        record = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "batch": batch, "rows": applied.rows, "tables": applied.tables, "commits": applied.commits,
            "apply_seconds": round(applied.seconds, 3), "position": end, "behind_gtids": behind,
            "behind_seconds": None if seconds is None else round(seconds, 3), "events": applied.events,
        }
        lag = f"{behind} GTIDs" + ("" if seconds is None else f", {seconds:.1f} s")
        changed = ", ".join(f"{name} {n}" for name, n in sorted(applied.tables.items())) or "no row changes"
        self.stream.write(f"mirror: batch {batch}: {changed}; {applied.commits} commits in {applied.seconds:.2f} s; "
                          f"at {end.get('gtid_state') or '-'} ({end.get('file')}:{end.get('offset')}); "
                          f"behind: {lag}\n")
        for event in applied.events:
            self.stream.write(f"mirror: batch {batch}: {event}\n")
        self.stream.flush()
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        if self.json_path == "-":
            sys.stdout.write(line)
            sys.stdout.flush()
        else:
            os.makedirs(os.path.dirname(os.path.abspath(self.json_path)), exist_ok=True)
            with open(self.json_path, "a") as handle:
                handle.write(line)
        return record


@dataclass
class Settings:
    """How the streaming part of a mirror runs."""

    follow: bool = False
    trigger_seconds: float = 1.0
    compact_every: float = 900.0
    retention: float = 86400.0
    progress_json: str | None = None
    #: What is new up to this many bytes is read on the driver: without ``follow`` with no
    #: Spark at all; a micro-batch of the streaming query that small is read there instead of
    #: through a Spark job (whose planning and Python workers are most of a small batch's time).
    local_bytes: int = 128 << 20


def _commit_hook() -> Any:
    """The test-only fault hook (module docstring), or a no-op."""
    limit = os.environ.get(KILL_AFTER_COMMITS)
    if not limit:
        return None
    count = [0]

    def hook(table: LakeTable) -> None:
        count[0] += 1
        if count[0] >= int(limit):
            log.warning("%s=%s: killing the job after committing %s", KILL_AFTER_COMMITS, limit, table)
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class MirrorStream:
    """The Structured Streaming query of a mirror and its micro-batch function; ``spark`` gives
    the session when the query starts (a catch-up on the driver starts none)."""

    def __init__(self, spark: Callable[[], Any], out: str, ledger: Ledger, lake: Lake, settings: Settings) -> None:
        self.spark = spark
        self.out = out
        self.ledger = ledger
        self.lake = lake
        self.settings = settings
        self.mirror = Mirror(lake, on_commit=_commit_hook())
        self.progress = MirrorProgress(out, settings.progress_json)
        self.checkpoint = os.path.join(out, MIRROR_DIR, CHECKPOINT)
        self.failure: BaseException | None = None
        self.applied: list[dict[str, Any]] = []
        self.touched: set[tuple[str, str]] = set()
        self._own: SchemaHistory | None = None
        self._reader: BinlogStreamReader | None = None
        self._latest: Offset | None = None  # the directory's end when last seen (for the lag)

    def options(self) -> dict[str, str]:
        """The stream's read options: the user's, the ledger's position to start from, the
        job's own history when it keeps one, a bound on a micro-batch."""
        options = dict(self.ledger.options)
        options["startingOffset"] = json.dumps(self.ledger.position)
        if self.ledger.history == "own":
            options["schemaHistory"] = os.path.join(self.out, SCHEMA_HISTORY_FILE)
        if not any(k.lower() == "maxgroupspertrigger" for k in options):
            options["maxGroupsPerTrigger"] = str(MAX_GROUPS)
        return options

    def _offsets(self, batch: int) -> tuple[Offset, Offset]:
        """(start, end) of a micro-batch, from the checkpoint Spark wrote before running it."""
        def read(number: int) -> Offset | None:
            path = os.path.join(self.checkpoint, "offsets", str(number))
            if not os.path.exists(path):
                return None
            with open(path) as handle:
                lines = handle.read().splitlines()
            return json.loads(lines[2])

        end = read(batch)
        if end is None:
            raise MirrorError(f"micro-batch {batch} has no offsets in the checkpoint {self.checkpoint}")
        start = read(batch - 1) if batch > 0 else None
        return (start if start is not None else self.ledger.position), end

    def _history(self, start: Offset, end: Offset) -> dict[str, Any] | None:
        """The schema history's JSON for a micro-batch (the job's own extended first)."""
        options = self.ledger.options
        if self.ledger.history == "none":
            return None
        if self.ledger.history == "own":  # kept loaded: only this job writes it
            path = os.path.join(self.out, SCHEMA_HISTORY_FILE)
            if self._own is None:
                self._own = SchemaHistory.load(path)
            if extend_history(self._own, self.ledger.source, options, start, end):
                self._own.save(path)
            return self._own.to_json()
        scan = ScanOptions.parse({**options, "path": self.ledger.source, "view": "rows"})
        saved = history_source([self.ledger.source], scan)
        if saved is None:
            return None
        with open(local_path(saved), encoding="utf-8") as handle:
            return json.load(handle)

    def batch(self, frame: Any, batch: int) -> None:
        """The micro-batch function (``foreachBatch``)."""
        try:
            start, end = self._offsets(batch)
            if not end.get("file"):
                return
            history = self._history(start, end)
            small = bytes_after(self.ledger.source, self.ledger.options, start, end) <= self.settings.local_bytes
            self._apply(batch, self._read_here(start, end) if small else frame.toArrow(), end, history)
        except BaseException as error:
            self.failure = error
            raise

    def _apply(self, batch: int, rows: Any, end: Offset, history: dict[str, Any] | None) -> None:
        """Apply one stretch, then report it, maintain the tables and move the ledger on."""
        applied = self.mirror.apply(rows, end, history)
        self.ledger.position = end
        if applied.newest is not None:
            self.ledger.newest = applied.newest
        self.touched.update((kind, name) for name in applied.tables for kind in ("state", "changes"))
        latest, newest = newest_group(self.ledger.source, self.ledger.options, end, self._latest)
        self._latest = latest
        behind = gtids_behind(end, latest)
        seconds = 0.0 if behind == 0 else (
            None if newest is None or self.ledger.newest is None else max(0.0, newest - self.ledger.newest))
        self.applied.append(self.progress.report(batch, applied, end, behind, seconds))
        if self.settings.follow:
            self._maintain()
        self.ledger.save(self.out)

    def catch_up(self) -> None:
        """What is new, applied on the driver without Spark, in stretches as micro-batches
        would take them: an incremental run of a small increment costs no JVM and no
        streaming query.  The Spark checkpoint, behind the tables now, is dropped: a later
        ``--follow`` starts a new one at the ledger's position."""
        from pyspark.sql.streaming.datasource import ReadMaxRows

        reader = self._driver_reader()
        limit = int(self.options()["maxGroupsPerTrigger"])
        start, batch = self.ledger.position, 0
        while True:
            end = reader.latestOffset(start, ReadMaxRows(limit))
            if version(end) <= version(start):
                break
            history = self._history(start, end)
            self._apply(batch, self._read_here(start, end), end, history)
            start, batch = end, batch + 1
        shutil.rmtree(self.checkpoint, ignore_errors=True)

    def _driver_reader(self) -> BinlogStreamReader:
        """The streaming source's reader on the driver, made once."""
        if self._reader is None:
            self._reader = stream_reader(self.ledger.source, self.options())
        return self._reader

    def _read_here(self, start: Offset, end: Offset) -> pa.Table:
        """The rows view of a stretch read on the driver, as the query's partitions give it."""
        reader = self._driver_reader()
        batches = [b for p in reader.partitions(start, end) for b in reader.read(p)]
        return pa.Table.from_batches(batches) if batches else arrow_schema(reader.schema).empty_table()

    def _maintain(self) -> None:
        """Compaction and vacuum on the schedule set."""
        now = time.time()
        if not self.ledger.compacted:
            self.ledger.compacted = now
            return
        if now - self.ledger.compacted < self.settings.compact_every:
            return
        for table in [*self.lake.tables(), *([self.lake.cdc()] if self.lake.cdc() is not None else [])]:
            assert table is not None
            if table.kind == "cdc" or (table.kind, table.name) in self.touched:
                table.compact()
            table.vacuum(self.settings.retention)
        self.touched.clear()
        self.ledger.compacted = now
        self.progress.stream.write(f"mirror: compacted and vacuumed (retention {self.settings.retention:g} s)\n")

    def run(self) -> None:
        """Run the query: until stopped with ``--follow``, else until what is new is applied."""
        reader = self.spark().readStream.format("mariabinlog").option("view", "rows")
        for key, value in self.options().items():
            reader = reader.option(key, value)
        writer = (reader.load(self.ledger.source).writeStream.foreachBatch(self.batch)
                  .option("checkpointLocation", self.checkpoint))
        if self.settings.follow:
            writer = writer.trigger(processingTime=f"{int(self.settings.trigger_seconds * 1000)} milliseconds")
        else:
            writer = writer.trigger(availableNow=True)
        query = writer.start()
        stop = threading.Event()
        previous = {}
        if self.settings.follow and threading.current_thread() is threading.main_thread():
            def on_signal(signum: int, frame: Any) -> None:
                stop.set()

            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, on_signal)
        try:
            while not stop.is_set() and query.isActive:
                query.awaitTermination(0.5)
        except Exception as error:
            if self.failure is not None:
                raise self.failure from None
            raise MirrorError(f"the mirror's streaming query failed: {error}") from error
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if query.isActive:
                query.stop()
        if self.failure is not None:
            raise self.failure
        exception = query.exception()
        if exception is not None:
            raise MirrorError(f"the mirror's streaming query failed: {exception}")


def history_mode(source: str, options: dict[str, str]) -> str:
    """Where a mirror's schema history comes from (see :class:`Ledger`)."""
    scan = ScanOptions.parse({**options, "path": source, "view": "rows"})
    if scan.schema_history == NO_HISTORY:
        return "none"
    return "source" if history_source([source], scan) is not None else "own"


def is_directory(source: str) -> bool:
    """Whether ``source`` is a directory a mirror can follow (local)."""
    return not is_remote(source) and os.path.isdir(local_path(source))


def describe_offset(offset: Offset) -> str:
    """An offset for people: GTID state and file position."""
    return f"{offset.get('gtid_state') or 'no GTIDs'} ({offset.get('file') or '-'}:{offset.get('offset')})"


# ------------------------------------------------------------------------------------------------
# The first run: the batch pipeline, bounded and committed with its position


class FullRun:
    """What makes the batch pipeline's run the start of a mirror (or, for a file or a glob,
    just tables of a format with commits): the schema history and the read cut at the
    directory's end as the run starts, and the Parquet files it writes committed as the first
    version of each table with that position."""

    def __init__(self, lake: Lake, source: str, options: dict[str, str], end: Offset | None) -> None:
        self.lake = lake
        self.source = source
        self.options = options
        self.end = end

    def history(self, history: SchemaHistory) -> SchemaHistory:
        """The history as it was at the end read (the whole of it for a file or glob)."""
        from ..read import loaded_history
        from .position import history_until

        if self.end is None:
            return history
        return loaded_history(history_until(history.to_json(), self.end)[0])

    def reader(self, reader: Any) -> Any:
        """``reader`` (the rows view's batch reader) reading up to the end only: the stream's
        byte ranges, whole event groups, what a micro-batch from the first file would read."""
        if self.end is None:
            return reader
        stream = BinlogStreamReader(self.source, reader.options, reader.schema, {**self.options, "path": self.source})
        return _Bounded(reader, stream.partitions(stream.initialOffset(), self.end))

    def commit(self, cdc: str, cdc_files: list[str], states: dict[str, str], changes: dict[str, str],
               rows_schema: Any) -> None:
        """Commit the files the run wrote, each table's first commit naming the end."""
        import pyarrow.parquet as pq

        from ..partition import arrow_schema
        from .lake import CDC, Marker

        partitioned = ("database", "table")
        self.lake.commit_files(CDC, CDC, cdc, arrow_schema(rows_schema), cdc_files, Marker(self.end, self.end, CDC),
                               partitioned)
        for kind, paths in (("state", states), ("changes", changes)):
            for name, path in sorted(paths.items()):
                files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".parquet"))
                schema = pq.read_schema(files[0])
                self.lake.commit_files(kind, name, path, schema, files, Marker(self.end, self.end, name))


class _Bounded:
    """A batch reader whose partitions are given (see :meth:`FullRun.reader`)."""

    def __init__(self, reader: Any, partitions: list[Any]) -> None:
        self._reader = reader
        self._partitions = partitions
        self.schema = reader.schema

    def partitions(self) -> list[Any]:
        """The stream's partitions up to the end."""
        return self._partitions

    def read(self, partition: Any) -> Any:
        """As the batch reader reads."""
        return self._reader.read(partition)


@dataclass
class MirrorResult:
    """What a mirror run did after its first run (or without one)."""

    position: Offset
    batches: int = 0
    rows: int = 0
    tables: dict[str, int] = field(default_factory=dict)
    summary: str = ""


def prepare(out: str, source: str, table_format: str, catalog: str | None, options: dict[str, str],
            full_refresh: bool) -> tuple[Lake, Ledger | None]:
    """The lake of ``out`` and its ledger (None: a first run or a full refresh is due, and what
    an earlier mirror left is cleared)."""
    ledger = Ledger.load(out)
    if ledger is not None and not full_refresh:
        if os.path.abspath(local_path(ledger.source)) != os.path.abspath(local_path(source)):
            raise MirrorError(f"{out} mirrors {ledger.source}, not {source}: give another --out, or --full-refresh")
        if ledger.format != table_format or ledger.catalog != catalog:
            raise MirrorError(f"{out} holds {ledger.format} tables (catalog {ledger.catalog or 'its own'}), not "
                              f"{table_format} (catalog {catalog or 'its own'}): use --full-refresh to rebuild")
        if ledger.options != options:
            log.warning("%s: read options %s differ from the first run's %s; the first run's stay", out, options,
                        ledger.options)
    lake = open_lake(out, table_format, catalog)
    if ledger is None or full_refresh:
        for name in (CHECKPOINT, LEDGER, PROGRESS):
            path = os.path.join(out, MIRROR_DIR, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.unlink(path)
        lake.clear()
        return lake, None
    return lake, ledger


def start_ledger(out: str, source: str, table_format: str, catalog: str | None, options: dict[str, str],
                 end: Offset) -> Ledger:
    """The ledger a first run leaves."""
    ledger = Ledger(source=os.path.abspath(local_path(source)), format=table_format, catalog=catalog, position=end,
                    history=history_mode(source, options), options=dict(options))
    ledger.save(out)
    return ledger


@contextlib.contextmanager
def locked(out: str) -> Iterator[None]:
    """Hold ``OUT/_mirror/lock`` for a run: one job writes a mirror at a time (a kill lets go)."""
    path = os.path.join(out, MIRROR_DIR, "lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise MirrorError(f"{out} is being written by another mariabinlog pipeline (pid "
                              f"{handle.read().strip() or '?'}); one job per mirror") from None
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def bytes_after(source: str, options: dict[str, str], position: Offset, end: Offset | None = None) -> int:
    """Bytes of the directory's files from ``position`` on, up to ``end`` (default: the
    files' ends): what a run, or a micro-batch, reads at most."""
    reader = stream_reader(source, options)
    files = discover([reader.directory], reader.options.listing)
    at, stop = version(position), None if end is None else version(end)
    total = 0
    for f in files:
        start = f.file_no << 32
        finish = start + f.size if stop is None else min(start + f.size, stop)
        total += max(0, finish - max(start, at))
    return total


def follow(spark: Callable[[], Any], out: str, ledger: Ledger, lake: Lake, settings: Settings) -> MirrorResult:
    """Bring the mirror up to date: with ``--follow`` the streaming query (see
    :class:`MirrorStream`), which runs until stopped; else what is new, by the same query
    (``Trigger.AvailableNow``) or, for up to ``settings.local_bytes`` of it, on the driver
    without Spark."""
    stream = MirrorStream(spark, out, ledger, lake, settings)
    if not settings.follow and bytes_after(ledger.source, ledger.options, ledger.position) <= settings.local_bytes:
        stream.catch_up()
    else:
        stream.run()
    result = MirrorResult(position=stream.ledger.position, batches=len(stream.applied))
    for record in stream.applied:
        result.rows += record["rows"]
        for name, count in record["tables"].items():
            result.tables[name] = result.tables.get(name, 0) + count
    lines = ["| table | row changes applied |", "|---|---:|"]
    lines += [f"| {name} | {count} |" for name, count in sorted(result.tables.items())]
    lines.append(f"{result.batches} micro-batch(es), {result.rows} row changes; position "
                 f"{describe_offset(result.position)}")
    result.summary = "\n".join(lines)
    return result


# ------------------------------------------------------------------------------------------------
# --status


def status(out: str) -> dict[str, Any]:
    """Each table's position and lag, and the mirror's (what ``pipeline --status OUT`` prints)."""
    ledger = Ledger.load(out)
    if ledger is None:
        raise MirrorError(f"{out} is not a mirror (no {MIRROR_DIR}/{LEDGER}): run `mariabinlog pipeline SOURCE "
                          f"--out {out} --format delta|iceberg` on a directory first")
    lake = open_lake(out, ledger.format, ledger.catalog)
    latest, newest = (ledger.position, None)
    if os.path.isdir(local_path(ledger.source)):
        latest, newest = newest_group(ledger.source, ledger.options, ledger.position)
    behind = gtids_behind(ledger.position, latest)
    seconds = 0.0 if behind == 0 else (None if newest is None or ledger.newest is None else newest - ledger.newest)
    tables = []
    cdc = lake.cdc()
    for table in [*([cdc] if cdc is not None else []), *lake.tables()]:
        marker = table.marker()
        applied = marker.applied if marker is not None else None
        at = applied if applied is not None and version(applied) > version(ledger.position) else ledger.position
        tables.append({"table": table.name, "kind": table.kind, "rows": table.count(),
                       "position": at, "behind_gtids": gtids_behind(at, latest),
                       "behind_seconds": seconds if at is ledger.position else None})
    return {"out": out, "source": ledger.source, "format": ledger.format, "where": lake.describe(),
            "position": ledger.position, "updated": ledger.updated, "latest": latest, "behind_gtids": behind,
            "behind_seconds": seconds, "tables": tables}


def status_text(report: dict[str, Any]) -> str:
    """:func:`status` for people."""
    updated = datetime.datetime.fromtimestamp(report["updated"], datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    seconds = report["behind_seconds"]
    lag = f"{report['behind_gtids']} GTIDs" + ("" if seconds is None else f", {seconds:.1f} s")
    lines = [f"mirror of {report['source']}: {report['where']}",
             f"applied through {describe_offset(report['position'])}, updated {updated}",
             f"newest in the source: {describe_offset(report['latest'])}; behind: {lag}", "",
             "| table | kind | rows | applied through | GTIDs behind | seconds behind |",
             "|---|---|---:|---|---:|---:|"]
    for t in report["tables"]:
        behind = "" if t["behind_seconds"] is None else f"{t['behind_seconds']:.1f}"
        lines.append(f"| {t['table']} | {t['kind']} | {t['rows']} | {t['position'].get('gtid_state') or '-'} | "
                     f"{t['behind_gtids']} | {behind} |")
    return "\n".join(lines)
