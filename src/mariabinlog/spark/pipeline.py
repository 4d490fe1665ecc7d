"""``mariabinlog pipeline SOURCE --out DIR``: binlogs to CDC tables, latest-state tables and a report.

The job, on Spark (``local[*]`` by default, any cluster with ``--master``):

1. ``DIR/cdc``: the change stream, one row per changed row (the ``rows`` view: GTID, commit
   time, operation, key columns, before/after images as maps), as Parquet partitioned by
   ``database`` and ``table``, written by the tasks that read the binlogs (:mod:`.cdc`).
   With ``--format delta`` every table is a Delta table: the tasks write the Parquet files
   in parallel and the driver commits them as the table's first Delta version with delta-rs
   (``deltalake``, which the project installs), as ``CONVERT TO DELTA`` does, so a machine
   without Maven access gets Delta tables too (read back by Spark's Delta source where the
   session has one).
2. ``DIR/state/<database>.<table>``: the table as the binlogs leave it, per source table.  With a
   primary key (from the table map, or the schema history for a NO_LOG/MINIMAL binlog: see
   the source's ``schemaHistory`` option), the changes of each key are folded in binlog order (an update's
   after image is merged onto the row, so MINIMAL images work when the key does not change);
   without one, identical rows are counted in binlog order (+1 insert, -1 delete, never below 0; update = both) and the rows
   left over are kept.  A table the schema history knows at the binlogs' end has its columns
   in that shape and typed as the typed ``rows`` view types them (see :mod:`.tables`);
   rows logged under an older shape follow the history's column identities (a renamed column
   keeps its values, a dropped one is gone, an added one holds its constant default or
   NULL), rows from before a DROP/CREATE or TRUNCATE are gone, and a table dropped at the
   end has no state table.  A table the history does not know (no DDL in the binlogs, no
   starting schema) keeps text columns named as the binlog names them (``@N`` without names).
3. ``DIR/changes/<database>.<table>``: each table's changes typed as its state (``before`` /
   ``after`` structs), in binlog order (see :mod:`.tables`).  A row the job cannot carry to
   its typed tables (its images do not fit the shape the schema history has at its place
   in the binlog, or the history lost track of its table) is never dropped unsaid: it stays
   in the CDC table, the report lists it (table, GTID, why), the tables it belongs to are
   not written and the job fails (:class:`~mariabinlog.errors.UncarriedRowsError`), unless
   ``--skip-uncarried-rows`` asks for the tables without such rows.
4. ``DIR/report``: ``events_over_time.png`` (events per GTID domain and row changes per table
   over time) and ``summary.md`` / ``summary.csv`` (per domain and per table counts, and the
   changes logged as SQL statements, which no table holds, with the advice to log rows).

``DIR/schema-history.json`` is the schema history all of it was named and typed by (the
one given, or the one the driver built from the binlogs' DDL), worked out once for the job.

Without SOURCE the job first writes the bundled sample (:mod:`mariabinlog.tools.sample`, made with the project's
own engine) to ``DIR/sample-binlogs`` and runs on that.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import datetime
import importlib.util
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError, UncarriedRowsError
from ..schema.history import SCHEMA_HISTORY_FILE
from .cdc import write_cdc
from .options import ScanOptions
from .read import NO_HISTORY
from .source import MariabinlogDataSource, rows_history, source_paths
from .tables import write_tables

FORMATS = ("parquet", "delta", "iceberg")
#: Formats whose tables a mirror keeps current (commits, MERGE, positions in commit metadata).
MIRRORED = ("delta", "iceberg")


@dataclass
class PipelineResult:
    """What the job wrote: paths, tables and the summary lines."""

    cdc: str
    states: dict[str, str] = field(default_factory=dict)
    #: Typed change tables by table name (``DIR/changes/<db>.<table>``).
    changes: dict[str, str] = field(default_factory=dict)
    chart: str = ""
    summary: str = ""
    rows: int = 0
    events: int = 0
    #: Changes logged as SQL statements (binlog_format=STATEMENT/MIXED), which no table holds.
    statements: int = 0
    #: The schema history the rows were named and typed by (``DIR/schema-history.json``).
    history: str = ""
    #: CDC rows left out of the typed tables (``--skip-uncarried-rows``): (``db.table``,
    #: GTID, why, how many).
    uncarried: list[tuple[str, str | None, str, int]] = field(default_factory=list)
    #: Where a mirror's tables are applied through (None: not a mirror, or a first run only).
    position: dict[str, Any] | None = None


def add_pipeline_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``pipeline``."""
    parser = subparsers.add_parser(
        "pipeline",
        help="binlogs -> CDC tables, latest-state tables and a report, with Spark",
        description="Read binlogs with Spark; write CDC tables, latest-state tables and a report.",
    )
    parser.add_argument("source", nargs="?", help="binlog file, directory or glob (default: the bundled sample)")
    parser.add_argument("--out", help="output directory")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    parser.add_argument("--format", choices=FORMATS, default="parquet",
                        help="table format (delta: Delta tables committed by delta-rs; iceberg: Iceberg tables "
                             "through pyiceberg); with delta or iceberg, a directory SOURCE makes OUT a mirror that "
                             "later runs (and --follow) bring up to date")
    parser.add_argument("--follow", action="store_true",
                        help="keep the tables current as the directory grows (Structured Streaming; delta or "
                             "iceberg); stop with Ctrl-C or SIGTERM")
    parser.add_argument("--full-refresh", action="store_true",
                        help="rebuild a mirror's tables from the whole SOURCE instead of going on from their position")
    parser.add_argument("--catalog", metavar="URI|NAME",
                        help="iceberg: the catalog (a SQLAlchemy URI, a REST catalog's http(s) URL, or a pyiceberg "
                             "catalog name; default: SQLite in OUT/catalog.db)")
    parser.add_argument("--trigger", default="1s", metavar="DURATION",
                        help="--follow: time between micro-batches (default: 1s)")
    parser.add_argument("--compact-every", default="15 minutes", metavar="DURATION",
                        help="--follow: compact the small files of micro-batches this often (default: 15 minutes)")
    parser.add_argument("--retention", default="1 day", metavar="DURATION",
                        help="--follow: when compacting, delete the files of table versions older than this "
                             "(default: 1 day)")
    parser.add_argument("--progress-json", metavar="FILE",
                        help="where a mirror writes a JSON line per micro-batch (default: OUT/_mirror/progress.jsonl; "
                             "- for stdout)")
    parser.add_argument("--status", metavar="OUT", help="print each table's position and lag of the mirror OUT; no job runs")
    parser.add_argument("--json", action="store_true", help="--status: as JSON")
    parser.add_argument("--bucket", default="auto",
                        help="time bucket of the report: 'N second|minute|hour|day|week' or auto (default: "
                             "picked from the data's span, one second to 30 days)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a mariabinlog read option, e.g. startPosition=0-1-100 (repeatable)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable)")
    parser.add_argument("--skip-uncarried-rows", action="store_true",
                        help="write the state and change tables without the rows that cannot be carried to them "
                             "(they stay in the CDC table and the report lists them) instead of failing")
    parser.set_defaults(handler=_handle)


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, eq, text = value.partition("=")
        if not eq or not key:
            raise OptionError(f"{what} {value!r} is not KEY=VALUE")
        out[key] = text
    return out


def _handle(args: argparse.Namespace) -> int:
    from .mirror.job import Settings, parse_duration, status, status_text

    if args.status:
        report = status(args.status)
        print(json.dumps(report, indent=1, default=str) if args.json else status_text(report))
        return 0
    if not args.out:
        raise OptionError("pipeline needs --out OUT (or --status OUT)")
    settings = Settings(follow=args.follow, trigger_seconds=parse_duration("--trigger", args.trigger),
                        compact_every=parse_duration("--compact-every", args.compact_every),
                        retention=parse_duration("--retention", args.retention), progress_json=args.progress_json)
    result = run_pipeline(
        args.source,
        args.out,
        master=args.master,
        table_format=args.format,
        bucket=args.bucket,
        read_options=_pairs(args.option, "--option"),
        spark_conf=_pairs(args.conf, "--conf"),
        skip_uncarried=args.skip_uncarried_rows,
        full_refresh=args.full_refresh,
        catalog=args.catalog,
        settings=settings,
    )
    print(result.summary)
    print(f"CDC table: {result.cdc}")
    for name, path in sorted(result.states.items()):
        print(f"state of {name}: {path}")
    if result.chart:
        print(f"chart: {result.chart}")
    return 0


def _session(master: str, table_format: str, conf: dict[str, str]) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName("mariabinlog-pipeline")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Python workers start slowly on a busy machine (a mirror's primary, archiver and job
        # share two cores): Spark's default of 15 s to connect back would fail the stream.
        .config("spark.python.authenticate.socketTimeout", "120s")
    )
    if table_format == "delta" and importlib.util.find_spec("delta") is not None:
        builder = builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension").config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _check_format(table_format: str) -> None:
    if table_format not in FORMATS:
        raise OptionError(f"--format must be one of {', '.join(FORMATS)}")
    needs = {"delta": ("deltalake", "deltalake"), "iceberg": ("pyiceberg", "'pyiceberg[sql-sqlite]'")}.get(table_format)
    if needs is not None and importlib.util.find_spec(needs[0]) is None:
        raise OptionError(f"--format {table_format} needs {needs[0]} (pip install {needs[1]})")


def run_pipeline(
    source: str | None,
    out: str,
    *,
    master: str = "local[*]",
    table_format: str = "parquet",
    bucket: str = "auto",
    read_options: dict[str, str] | None = None,
    spark_conf: dict[str, str] | None = None,
    spark: Any = None,
    skip_uncarried: bool = False,
    full_refresh: bool = False,
    catalog: str | None = None,
    settings: Any = None,
) -> PipelineResult:
    """Run the job (module docstring); ``spark`` reuses a session instead of starting one;
    ``skip_uncarried``: ``--skip-uncarried-rows``.

    With ``table_format`` delta or iceberg and a directory to read, ``out`` is a mirror
    (:mod:`.mirror.job`): the first run (or ``full_refresh``) is this job, bounded at the
    directory's end and committed with that position; later runs apply only what is new, and
    ``settings.follow`` keeps applying it as the directory grows."""
    from .mirror.job import Settings, is_directory

    _check_format(table_format)
    settings = settings if settings is not None else Settings()
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if source is None:
        from ..tools.sample import write_sample

        source = os.path.join(out, "sample-binlogs")
        if not os.path.isdir(source) or not any(n.endswith(".ibb") for n in os.listdir(source)):
            write_sample(source)
    mirrored = table_format in MIRRORED and is_directory(source)
    if settings.follow and not mirrored:
        raise OptionError("--follow keeps Delta or Iceberg tables of a binlog directory current: give a directory "
                          "and --format delta or --format iceberg")
    if table_format == "parquet" and (full_refresh or catalog):
        raise OptionError("--full-refresh and --catalog are for mirrors (--format delta or iceberg)")
    session = LazySession(spark, master, table_format, spark_conf or {})
    try:
        if mirrored:
            return _mirror(session, source, out, table_format, bucket, read_options or {}, full_refresh, catalog,
                           settings, skip_uncarried)
        full = None
        if table_format in MIRRORED:
            from .mirror.job import FullRun, open_lake

            lake = open_lake(out, table_format, catalog)
            lake.clear()
            full = FullRun(lake, source, read_options or {}, None)
        return _run(session(), source, out, table_format, bucket, read_options or {}, full, skip_uncarried)
    finally:
        session.stop()


class LazySession:
    """The job's Spark session, started (and given the mariabinlog source) the first time a
    step asks for it: a mirror's incremental run of a small increment is applied on the
    driver and needs no JVM, whose start-up would be most of such a run's cost."""

    def __init__(self, spark: Any, master: str, table_format: str, conf: dict[str, str]) -> None:
        self._spark = spark
        self._own = spark is None
        self._registered = False
        self._settings = (master, table_format, conf)

    def __call__(self) -> Any:
        """The session, started now if no step has needed it yet."""
        if self._spark is None:
            self._spark = _session(*self._settings)
        if not self._registered:
            from .source import register

            register(self._spark)
            self._registered = True
        return self._spark

    def stop(self) -> None:
        """Stop the session if this job started it."""
        if self._own and self._spark is not None:
            self._spark.stop()


def _mirror(session: LazySession, source: str, out: str, table_format: str, bucket: str, options: dict[str, str],
            full_refresh: bool, catalog: str | None, settings: Any, skip_uncarried: bool = False) -> PipelineResult:
    """A mirror's run: the first (or a full refresh), then with ``--follow`` the stream; a later
    run only the stream, over what is new."""
    from .mirror.job import locked

    with locked(out):
        return _mirror_locked(session, source, out, table_format, bucket, options, full_refresh, catalog, settings,
                              skip_uncarried)


def _mirror_locked(session: LazySession, source: str, out: str, table_format: str, bucket: str, options: dict[str, str],
                   full_refresh: bool, catalog: str | None, settings: Any,
                   skip_uncarried: bool = False) -> PipelineResult:
    from .mirror.job import FullRun, directory_end, follow, prepare, start_ledger

    lake, ledger = prepare(out, source, table_format, catalog, options, full_refresh)
    result = None
    if ledger is None:
        end = directory_end(source, options)
        result = _run(session(), source, out, table_format, bucket, options, FullRun(lake, source, options, end),
                      skip_uncarried)
        ledger = start_ledger(out, source, table_format, catalog, options, end)
        result.position = end
        if not settings.follow:
            return result
    done = follow(session, out, ledger, lake, settings)
    if result is None:
        result = PipelineResult(cdc=os.path.join(out, "cdc"), history=os.path.join(out, SCHEMA_HISTORY_FILE))
        result.summary, result.rows = done.summary, done.rows
    result.position = done.position
    for kind, paths in (("state", result.states), ("changes", result.changes)):
        for table in lake.tables():
            if table.kind == kind:
                paths[table.name] = table.location
    return result


def _reader(spark: Any, options: dict[str, str], view: str) -> Any:
    reader = spark.read.format("mariabinlog").option("view", view)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def _read(spark: Any, path: str, table_format: str, schema: Any) -> Any:
    """The CDC table the job wrote, with its known ``schema`` (no inference job), before it is
    committed: its Parquet files (Iceberg's hold ``database`` and ``table`` themselves)."""
    if table_format == "iceberg":
        return spark.read.schema(schema).option("recursiveFileLookup", "true").parquet(path)
    return spark.read.schema(schema).parquet(path)


#: Time buckets the report picks from (seconds, label): the smallest that cuts the data's span
#: into at most :data:`MAX_BUCKETS` buckets.
BUCKETS = (
    (1, "1 second"), (5, "5 seconds"), (15, "15 seconds"), (60, "1 minute"), (300, "5 minutes"),
    (900, "15 minutes"), (3600, "1 hour"), (6 * 3600, "6 hours"), (86400, "1 day"), (7 * 86400, "1 week"),
    (30 * 86400, "30 days"),
)
MAX_BUCKETS = 80
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}


def bucket_seconds(bucket: str, first: int | None, last: int | None) -> tuple[int, str]:
    """(seconds, label) of the report's time bucket: ``auto`` picks it from the span
    ``first``..``last`` (epoch seconds), else ``bucket`` is ``N unit`` (second to week)."""
    if bucket == "auto":
        span = 0 if first is None or last is None else last - first
        for seconds, label in BUCKETS:
            if span < seconds * MAX_BUCKETS:
                return seconds, label
        return BUCKETS[-1]
    count, _, unit = bucket.strip().partition(" ")
    seconds = _UNITS.get(unit.strip().lower().rstrip("s"))
    if not count.isdigit() or int(count) < 1 or seconds is None:
        raise OptionError(f"--bucket {bucket!r} is not 'auto' or 'N second|minute|hour|day|week'")
    return int(count) * seconds, bucket.strip()


def _run(spark: Any, source: str, out: str, table_format: str, bucket: str,
         options: dict[str, str], full: Any = None, skip_uncarried: bool = False) -> PipelineResult:
    """The job in a fixed number of Spark jobs whatever the number of tables: the CDC table
    (one pass over the binlogs, :mod:`.cdc`), then at the same time one job whose tasks write
    every latest-state and typed change table (:mod:`.tables`) and the report's: the events
    view once (narrowed and cached) for the span, the time buckets and the statement count,
    and one aggregate of the CDC table for the changes per table over time."""
    # List the CDC table's partitions without a job per read.
    with _conf(spark, "spark.sql.sources.parallelPartitionDiscovery.threshold", str(1 << 30)):
        return _jobs(spark, source, out, table_format, bucket, options, full, skip_uncarried)


@contextlib.contextmanager
def _conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` in the session for the block, then as it was."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _jobs(spark: Any, source: str, out: str, table_format: str, bucket: str,
          options: dict[str, str], full: Any = None,
          skip_uncarried: bool = False) -> PipelineResult:
    """The jobs of :func:`_run`; ``full`` (a :class:`~.mirror.job.FullRun`) bounds the read and
    commits the tables (delta, iceberg)."""
    from pyspark.util import inheritable_thread_target

    result = PipelineResult(cdc=os.path.join(out, "cdc"))
    # The schema history the rows are named and typed by, worked out once (one pass over the
    # files when no saved one is given) and kept beside the tables; the CDC read takes it.
    scan = ScanOptions.parse(options, MariabinlogDataSource.defaults)
    history = rows_history(source_paths({**options, "path": source}), scan)[0]
    if full is not None:
        history = full.history(history)
    result.history = os.path.join(out, SCHEMA_HISTORY_FILE)
    history.save(result.history)
    read_options = dict(options)
    if scan.schema_history != NO_HISTORY:
        read_options = {k: v for k, v in options.items() if k.lower() != "schemahistory"}
        read_options["schemaHistory"] = result.history
    rows = MariabinlogDataSource({**read_options, "path": source, "view": "rows"})
    rows_schema = rows.schema()
    reader = rows.reader(rows_schema)
    files = write_cdc(spark, reader if full is None else full.reader(reader), result.cdc,
                      keep_partition_columns=table_format == "iceberg")
    cdc = _read(spark, result.cdc, table_format, rows_schema)
    # The state and change tables (a task per table unit: few when the binlogs change few
    # tables) run while the events view and the report's aggregates take the cores they leave.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mariabinlog-tables") as pool:
        tables_job = pool.submit(inheritable_thread_target(spark)(write_tables), spark, files, result.cdc, out, history)
        buckets, seconds, label, by_table = _report_jobs(spark, source, options, bucket, cdc, result)
        result.states, result.changes, uncarried = tables_job.result()
    result.uncarried = sorted((*key, n) for key, n in uncarried.items())
    if result.uncarried and not skip_uncarried:
        _unwrite({name for name, *_ in result.uncarried}, result)
    tables = _table_counts(by_table)
    if full is not None:
        full.commit(result.cdc, files, result.states, result.changes, rows_schema)
    report = os.path.join(out, "report")
    os.makedirs(report, exist_ok=True)
    result.chart = os.path.join(report, "events_over_time.png")
    _chart(buckets, rows_by_table=by_table, path=result.chart, seconds=seconds, label=label)
    result.summary = _summary(buckets, tables, report, result.statements, result.uncarried)
    result.events = sum(b["events"] for b in buckets)
    result.rows = sum(t["insert"] + t["update"] + t["delete"] for t in tables)
    if result.uncarried and not skip_uncarried:
        raise UncarriedRowsError(_uncarried_message(result.uncarried, out), result.uncarried)
    return result


def _unwrite(names: set[str], result: PipelineResult) -> None:
    """Remove the state and change tables of ``names``: without the rows that could not be
    carried to them they would be wrong."""
    import shutil

    for paths in (result.states, result.changes):
        for name in names:
            path = paths.pop(name, None)
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)


#: Uncarried rows named one by one in the error (the report lists them all).
_NAMED = 10


def _uncarried_message(rows: list[tuple[str, str | None, str, int]], out: str) -> str:
    """The error of a job with rows it could not carry: which, why, and what to do."""
    total = sum(n for *_, n in rows)
    tables = sorted({name for name, *_ in rows})
    lines = [f"{total} CDC row(s) of {', '.join(tables)} cannot be carried to their typed state and change "
             f"tables; they are in {os.path.join(out, 'cdc')}, the tables of {', '.join(tables)} were not written:"]
    lines += [f"  {name} GTID {gtid or 'none'}: {n} row(s): {why}" for name, gtid, why, n in rows[:_NAMED]]
    if len(rows) > _NAMED:
        lines.append(f"  ... {len(rows) - _NAMED} more in {os.path.join(out, 'report', 'uncarried.csv')}")
    lines.append("Give the schema history these rows were logged under (--option schemaHistory=FILE, see "
                 "docs/schema-history.md), or pass --skip-uncarried-rows to write the tables without them.")
    return "\n".join(lines)


def _report_jobs(spark: Any, source: str, options: dict[str, str], bucket: str, cdc: Any,
                 result: PipelineResult) -> tuple[list[Any], int, str, list[Any]]:
    """The report's numbers: events per time bucket (and the statement count, into
    ``result``) from the events view read once, narrowed and kept, and the CDC table's
    changes per table and bucket; returns (buckets, bucket seconds, bucket label, by table)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    events = _events_kept(_reader(spark, options, "events").load(source)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        span = events.agg(F.min("second").alias("first"), F.max("second").alias("last")).first()
        seconds, label = bucket_seconds(bucket, span["first"], span["last"])

        def bucketed(column: Any) -> Any:
            return F.timestamp_seconds(F.floor(column / seconds) * seconds).alias("bucket")

        buckets = (
            events.groupBy(bucketed(F.col("second")), "domain_id", "database", "table", "event_type")
            .agg(F.count("*").alias("events"), F.countDistinct("gtid").alias("groups"))
            .collect()
        )
        result.statements = statement_changes(events)
    finally:
        events.unpersist()
    by_table = cdc.groupBy(bucketed(F.unix_seconds("timestamp")), "database", "table").agg(
        F.count("*").alias("count"),
        *[F.sum((F.col("op") == op).cast("long")).alias(op) for op in ("insert", "update", "delete")],
    ).collect()
    return buckets, seconds, label, by_table


def _table_counts(by_table: list[Any]) -> list[dict[str, Any]]:
    """Inserts, updates and deletes per table, from its counts per time bucket."""
    totals: dict[tuple[str, str], dict[str, Any]] = {}
    for row in by_table:
        entry = totals.setdefault((row["database"], row["table"]), {
            "database": row["database"], "table": row["table"], "insert": 0, "update": 0, "delete": 0})
        for op in ("insert", "update", "delete"):
            entry[op] += row[op]
    return [totals[key] for key in sorted(totals)]


#: Query events of a transaction that are its frame, not a change.
_FRAME_QUERIES = ("BEGIN", "COMMIT", "ROLLBACK", "XA START", "XA END", "XA PREPARE", "XA COMMIT", "XA ROLLBACK")


def _events_kept(events: Any) -> Any:
    """What the report needs of each event: its second, domain, table and type, its group,
    and whether it is a statement of a transaction (``statement``) or ends one (``ends``)."""
    from pyspark.sql import functions as F

    text = F.upper(F.trim(F.col("query")))
    framed = text.isin(*_FRAME_QUERIES) | text.startswith("SAVEPOINT") | text.startswith("ROLLBACK TO")
    query = F.col("event_type").isin("Query", "Query_compressed")
    return events.select(
        F.unix_seconds("timestamp").alias("second"), "domain_id", "database", "table", "event_type", "gtid",
        F.coalesce(query & ~framed, F.lit(False)).alias("statement"),
        F.coalesce((F.col("event_type") == "Xid") | (text == "COMMIT"), F.lit(False)).alias("ends"),
    )


def statement_changes(events: Any) -> int:
    """How many changes the binlogs hold as SQL statements (``binlog_format=STATEMENT`` or
    ``MIXED``) rather than rows: the Query events of a transaction (a group that an Xid or a
    ``COMMIT`` ends) other than its frame (``events`` as :func:`_events_kept` gives them).
    DDL is logged as a group of its own that neither ends, so it is not counted."""
    from pyspark.sql import functions as F

    groups = events.filter(F.col("gtid").isNotNull()).groupBy("gtid").agg(
        F.sum(F.col("statement").cast("long")).alias("statements"), F.max("ends").alias("ends"))
    total = groups.filter("ends").agg(F.sum("statements").alias("n")).first()
    return int(total["n"] or 0)


def _chart(buckets: list[Any], *, rows_by_table: list[Any], path: str, seconds: int, label: str) -> None:
    """Two stacked panels over the data's span, in buckets of ``seconds``: events per GTID
    domain (stacked bars) and row changes of the busiest tables (lines; the rest summed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("the report chart needs matplotlib (pip install matplotlib)") from None
    per_domain: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    for b in buckets:
        if b["bucket"] is not None:
            name = "no GTID" if b["domain_id"] is None else f"domain {b['domain_id']}"
            per_domain[name][b["bucket"]] += b["events"]
    per_table: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows_by_table:
        if r["bucket"] is not None:
            per_table[f"{r['database']}.{r['table']}"][r["bucket"]] += r["count"]
    shown = sorted(per_table, key=lambda t: -sum(per_table[t].values()))[:TOP_TABLES]
    rest = [t for t in per_table if t not in shown]
    if rest:
        other: dict[Any, int] = defaultdict(int)
        for t in rest:
            for x, n in per_table.pop(t).items():
                other[x] += n
        per_table[f"{len(rest)} other tables"] = other
    times = sorted({x for series in (*per_domain.values(), *per_table.values()) for x in series})
    width = datetime.timedelta(seconds=seconds)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    base: dict[Any, int] = defaultdict(int)
    for name, series in sorted(per_domain.items()):
        xs = sorted(series)
        top.bar(xs, [series[x] for x in xs], width=width * 0.9, bottom=[base[x] for x in xs], align="edge",
                label=name)
        for x in xs:
            base[x] += series[x]
    top.set_title(f"Binlog events per GTID domain, per {label}")
    top.set_ylabel("events")
    if per_domain:
        top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    # Every bucket of the span, so a quiet bucket draws as 0 rather than a line across it.
    steps = [] if not times else [times[0] + k * width for k in range(int((times[-1] - times[0]) / width) + 1)]
    if len(steps) > 20 * MAX_BUCKETS:
        steps = times
    peak, low = 0, None
    for name, series in per_table.items():
        ys = [series.get(x, 0) for x in steps]
        peak = max(peak, *ys)
        nonzero = [y for y in ys if y]
        if nonzero:
            low = min(nonzero) if low is None else min(low, *nonzero)
        edges = [*steps, steps[-1] + width]  # the last bucket drawn to its end, as the bars are
        bottom.step(edges, [*ys, ys[-1]], where="post", label=name)
    bottom.set_title(f"Row changes per table, per {label}")
    bottom.set_ylabel("rows")
    if low and peak / low > 100:  # many orders of magnitude apart: a log scale keeps small tables visible
        bottom.set_yscale("symlog", linthresh=1)
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("time (UTC)")
    if per_table:
        bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    if times:
        bottom.set_xlim(times[0] - width / 2, times[-1] + width * 1.5)
    locator = mdates.AutoDateLocator()
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


#: Tables drawn one by one in the chart (the busiest); the others are one line.
TOP_TABLES = 8


def _summary(buckets: list[Any], tables: list[Any], report: str, statements: int = 0,
             uncarried: Sequence[tuple[str, str | None, str, int]] = ()) -> str:
    """Per-domain and per-table tables as Markdown (returned and in summary.md) and CSV, the
    count of statement-logged changes with the advice to log rows, and the rows that could
    not be carried to the typed tables (table, GTID, why)."""
    domains: dict[Any, dict[str, Any]] = {}
    for b in buckets:
        entry = domains.setdefault(b["domain_id"], {"events": 0, "groups": 0, "first": None, "last": None})
        entry["events"] += b["events"]
        if b["event_type"] == "Gtid":
            entry["groups"] += b["events"]
        if b["bucket"] is not None:
            entry["first"] = b["bucket"] if entry["first"] is None else min(entry["first"], b["bucket"])
            entry["last"] = b["bucket"] if entry["last"] is None else max(entry["last"], b["bucket"])
    counts = {f"{t['database']}.{t['table']}": t for t in tables}
    lines = ["| domain | event groups | events | first bucket | last bucket |", "|---|---:|---:|---|---|"]
    rows_csv = [["kind", "name", "groups_or_inserts", "events_or_updates", "deletes"]]
    for domain in sorted(domains, key=lambda d: (d is None, d or 0)):
        e = domains[domain]
        name = "none" if domain is None else str(domain)
        lines.append(f"| {name} | {e['groups']} | {e['events']} | {e['first']} | {e['last']} |")
        rows_csv.append(["domain", name, e["groups"], e["events"], ""])
    lines += ["", "| table | inserts | updates | deletes |", "|---|---:|---:|---:|"]
    for name in sorted(counts):
        t = counts[name]
        lines.append(f"| {name} | {t['insert']} | {t['update']} | {t['delete']} |")
        rows_csv.append(["table", name, t["insert"], t["update"], t["delete"]])
    if statements:
        lines += ["", f"{statements} change(s) were logged as SQL statements (binlog_format=STATEMENT or MIXED): "
                  "they are in no CDC or state table. Set binlog_format=ROW on the server to capture them."]
        rows_csv.append(["statements", "", statements, "", ""])
    if uncarried:
        lines += ["", f"{sum(n for *_, n in uncarried)} row(s) could not be carried to their typed state and change "
                  "tables (they are in the CDC table):", "", "| table | GTID | rows | why |", "|---|---|---:|---|"]
        lines += [f"| {name} | {gtid or 'none'} | {n} | {why} |" for name, gtid, why, n in uncarried]
        with open(os.path.join(report, "uncarried.csv"), "w", newline="") as handle:
            csv.writer(handle).writerows([["table", "gtid", "rows", "why"],
                                          *([name, gtid or "", n, why] for name, gtid, why, n in uncarried)])
    text = "\n".join(lines)
    with open(os.path.join(report, "summary.md"), "w") as handle:
        handle.write(text + "\n")
    with open(os.path.join(report, "summary.csv"), "w", newline="") as handle:
        csv.writer(handle).writerows(rows_csv)
    return text
