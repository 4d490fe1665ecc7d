"""``mariabinlog pipeline SOURCE --out DIR``: binlogs to CDC tables, latest-state tables and a report.

The job, on Spark (``local[*]`` by default, any cluster with ``--master``):

1. ``DIR/cdc``: the change stream, one row per changed row (the ``rows`` view: GTID, commit
   time, operation, key columns, before/after images as maps), as Parquet partitioned by
   ``database`` and ``table``.  With ``--format delta`` every table is a Delta table: written
   by Spark's own Delta source when the session has Delta Lake (``delta-spark`` and its jars),
   otherwise Spark writes the Parquet files in parallel and the driver commits them as the
   table's first Delta version with delta-rs (``deltalake``, which the project installs), as
   ``CONVERT TO DELTA`` does, so a machine without Maven access still gets Delta tables.
2. ``DIR/state/<database>.<table>``: the table as the binlogs leave it, per source table.  With a
   primary key (from the table map, or the schema history for a NO_LOG/MINIMAL binlog: see
   the source's ``schemaHistory`` option), the changes of each key are folded in binlog order (an update's
   after image is merged onto the row, so MINIMAL images work when the key does not change);
   without one, identical rows are counted (+1 insert, -1 delete, update = both) and the rows
   left over are kept.  A table the schema history knows at the binlogs' end has its columns
   in that shape and typed as the typed ``rows`` view types them (see :func:`write_states`);
   rows logged under an older shape follow the history's column identities (a renamed column
   keeps its values, a dropped one is gone, an added one holds its constant default or
   NULL), rows from before a DROP/CREATE or TRUNCATE are gone, and a table dropped at the
   end has no state table.  A table the history does not know (no DDL in the binlogs, no
   starting schema) keeps text columns named as the binlog names them (``@N`` without names).
3. ``DIR/changes/<database>.<table>``: each table's changes typed as its state (``before`` /
   ``after`` structs), in binlog order (see :func:`write_changes`).
4. ``DIR/report``: ``events_over_time.png`` (events per GTID domain and row changes per table
   over time) and ``summary.md`` / ``summary.csv`` (per domain and per table counts, and the
   changes logged as SQL statements, which no table holds, with the advice to log rows).

Without SOURCE the job first writes the bundled sample (:mod:`mariabinlog.tools.sample`, made with the project's
own engine) to ``DIR/sample-binlogs`` and runs on that.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import importlib.util
import json
import os
import shutil
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError
from ..schema import SchemaHistory, Table
from .options import ScanOptions
from .read import loaded_history
from .source import MariabinlogDataSource, rows_history, source_paths

FORMATS = ("parquet", "delta")


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


def add_pipeline_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``pipeline``."""
    parser = subparsers.add_parser(
        "pipeline",
        help="binlogs -> CDC tables, latest-state tables and a report, with Spark",
        description="Read binlogs with Spark; write CDC tables, latest-state tables and a report.",
    )
    parser.add_argument("source", nargs="?", help="binlog file, directory or glob (default: the bundled sample)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    parser.add_argument("--format", choices=FORMATS, default="parquet",
                        help="table format (delta: by delta-spark, or committed by delta-rs when Spark has no Delta Lake)")
    parser.add_argument("--bucket", default="auto",
                        help="time bucket of the report: 'N second|minute|hour|day|week' or auto (default: "
                             "picked from the data's span, one second to 30 days)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a mariabinlog read option, e.g. startPosition=0-1-100 (repeatable)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable)")
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
    result = run_pipeline(
        args.source,
        args.out,
        master=args.master,
        table_format=args.format,
        bucket=args.bucket,
        read_options=_pairs(args.option, "--option"),
        spark_conf=_pairs(args.conf, "--conf"),
    )
    print(result.summary)
    print(f"CDC table: {result.cdc}")
    for name, path in sorted(result.states.items()):
        print(f"state of {name}: {path}")
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
    if table_format == "delta" and importlib.util.find_spec("deltalake") is None:
        raise OptionError("--format delta needs deltalake (pip install deltalake)")


def _spark_has_delta(spark: Any) -> bool:
    """Whether the session can write Delta itself (Delta Lake's extension and classes loaded)."""
    if "DeltaSparkSessionExtension" not in (spark.conf.get("spark.sql.extensions", "") or ""):
        return False
    try:
        spark.sparkContext._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")
    except Exception:  # noqa: BLE001 - py4j reports a missing class as a generic error
        return False
    return True


def _commit_delta(path: str, partition_by: Sequence[str]) -> None:
    """Make the Parquet files Spark wrote under ``path`` version 0 of a Delta table (delta-rs)."""
    from deltalake import Field, Schema, convert_to_deltalake

    partitions = Schema([Field(name, "string", nullable=True) for name in partition_by]) if partition_by else None
    convert_to_deltalake(path, partition_by=partitions, partition_strategy="hive" if partitions else None)


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
) -> PipelineResult:
    """Run the job (module docstring); ``spark`` reuses a session instead of starting one."""
    _check_format(table_format)
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if source is None:
        from ..tools.sample import write_sample

        source = os.path.join(out, "sample-binlogs")
        if not os.path.isdir(source) or not any(n.endswith(".ibb") for n in os.listdir(source)):
            write_sample(source)
    own = spark is None
    if own:
        spark = _session(master, table_format, spark_conf or {})
    try:
        from .source import register

        register(spark)
        return _run(spark, source, out, table_format, bucket, read_options or {})
    finally:
        if own:
            spark.stop()


def _reader(spark: Any, options: dict[str, str], view: str) -> Any:
    reader = spark.read.format("mariabinlog").option("view", view)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def _write(df: Any, path: str, table_format: str, partition_by: Sequence[str] = ()) -> None:
    """Write ``df`` as a table at ``path`` (see the module docstring for Delta without delta-spark)."""
    native = table_format != "delta" or _spark_has_delta(df.sparkSession)
    writer = df.write.mode("overwrite").format(table_format if native else "parquet")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(path)
    if not native:
        _commit_delta(path, partition_by)


def _read(spark: Any, path: str, table_format: str, schema: Any) -> Any:
    """A table :func:`_write` wrote, with its known ``schema`` (no inference job; a Delta table
    committed by delta-rs is read as its Parquet)."""
    native = table_format != "delta" or _spark_has_delta(spark)
    if native and table_format == "delta":
        return spark.read.format("delta").load(path)
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
         options: dict[str, str]) -> PipelineResult:
    """The job in a fixed number of Spark jobs whatever the number of tables: write the CDC
    table (one pass over the binlogs), one aggregate of it per table, the events view once
    (per second, cached) for the span and the buckets, one job for the changes over time and
    one that folds and writes every latest-state table, one that writes every typed change
    table."""
    listing = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(listing, None)
    spark.conf.set(listing, str(1 << 30))  # list the CDC table's partitions without a job per read
    try:
        return _jobs(spark, source, out, table_format, bucket, options)
    finally:
        if before is None:
            spark.conf.unset(listing)
        else:
            spark.conf.set(listing, before)


def _jobs(spark: Any, source: str, out: str, table_format: str, bucket: str,
          options: dict[str, str]) -> PipelineResult:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    result = PipelineResult(cdc=os.path.join(out, "cdc"))
    rows = _reader(spark, options, "rows").load(source)
    _write(rows, result.cdc, table_format, ("database", "table"))
    cdc = _read(spark, result.cdc, table_format, rows.schema)
    names = F.map_keys(F.coalesce("after", "before"))  # keeps the table's column order
    tables = cdc.groupBy("database", "table").agg(
        F.max_by(names, F.size(names)).alias("columns"),
        *[F.sum((F.col("op") == op).cast("long")).alias(op) for op in ("insert", "update", "delete")],
    ).collect()
    events = _reader(spark, options, "events").load(source)
    per_second = (
        events.groupBy(F.unix_seconds("timestamp").alias("second"), "domain_id", "database", "table", "event_type")
        .agg(F.count("*").alias("events"), F.countDistinct("gtid").alias("groups"))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    try:
        span = per_second.agg(F.min("second").alias("first"), F.max("second").alias("last")).first()
        seconds, label = bucket_seconds(bucket, span["first"], span["last"])

        def bucketed(column: Any) -> Any:
            return F.timestamp_seconds(F.floor(column / seconds) * seconds).alias("bucket")

        # A group's events share its GTID event's time, so per-second distinct GTIDs add up.
        buckets = (
            per_second.groupBy(bucketed(F.col("second")), "domain_id", "database", "table", "event_type")
            .agg(F.sum("events").alias("events"), F.sum("groups").alias("groups"))
            .collect()
        )
    finally:
        per_second.unpersist()
    by_table = cdc.groupBy(bucketed(F.unix_seconds("timestamp")), "database", "table").count().collect()
    result.statements = statement_changes(events)
    scan = ScanOptions.parse(options, MariabinlogDataSource.defaults)
    history = rows_history(source_paths({**options, "path": source}), scan)[0]
    layouts = state_layouts(history, {(t["database"], t["table"]): list(t["columns"] or []) for t in tables})
    current = carried_to_current(cdc, json.dumps(history.to_json(), ensure_ascii=False))
    result.states = write_states(current, os.path.join(out, "state"), layouts, table_format)
    result.changes = write_changes(current, os.path.join(out, "changes"), layouts, table_format)
    report = os.path.join(out, "report")
    os.makedirs(report, exist_ok=True)
    result.chart = os.path.join(report, "events_over_time.png")
    _chart(buckets, rows_by_table=by_table, path=result.chart, seconds=seconds, label=label)
    result.summary = _summary(buckets, tables, report, result.statements)
    result.events = sum(b["events"] for b in buckets)
    result.rows = sum(t["insert"] + t["update"] + t["delete"] for t in tables)
    return result


#: Query events of a transaction that are its frame, not a change.
_FRAME_QUERIES = ("BEGIN", "COMMIT", "ROLLBACK", "XA START", "XA END", "XA PREPARE", "XA COMMIT", "XA ROLLBACK")


def statement_changes(events: Any) -> int:
    """How many changes the binlogs hold as SQL statements (``binlog_format=STATEMENT`` or
    ``MIXED``) rather than rows: the Query events of a transaction (a group that an Xid or a
    ``COMMIT`` ends) other than its frame.  DDL is logged as a group of its own that neither
    ends, so it is not counted."""
    from pyspark.sql import functions as F

    text = F.upper(F.trim(F.col("query")))
    grouped = events.filter(F.col("gtid").isNotNull())
    queries = grouped.filter(F.col("event_type").isin("Query", "Query_compressed"))
    transactions = grouped.filter((F.col("event_type") == "Xid") | (text == "COMMIT")).select("gtid")
    framed = text.isin(*_FRAME_QUERIES) | text.startswith("SAVEPOINT") | text.startswith("ROLLBACK TO")
    return int(queries.filter(~framed).join(transactions.distinct(), "gtid", "left_semi").count())


def table_states(changes: Any) -> Any:
    """``(database, table, image)``: the rows every table of ``changes`` (CDC rows) holds at the
    end, images as maps of text.  A table whose rows name key columns folds each key's changes
    in binlog order (an update's after image is merged onto the row, so MINIMAL images work
    when the key does not change; an update that moves the key deletes the old one); a table
    without keys counts identical rows (+1 insert, -1 delete, update = both)."""
    from pyspark.sql import functions as F

    keyed = F.coalesce(F.size("key_columns"), F.lit(0)) > 0
    return _fold_by_key(changes.filter(keyed)).unionByName(_count_rows(changes.filter(~keyed)))


def latest_state(changes: Any) -> Any:
    """The rows one table holds after ``changes`` (CDC rows of that table), columns as text in
    the table's column order."""
    from pyspark.sql import functions as F

    names = F.map_keys(F.coalesce("after", "before"))
    widest = changes.agg(F.max_by(names, F.size(names)).alias("names")).first()
    columns = list(widest["names"]) if widest is not None and widest["names"] is not None else []
    return table_states(changes).select(*[F.col("image").getItem(c).alias(c) for c in columns])


_ORDER = ["file_no", "position", "event_index", "row_index"]


def _fold_by_key(changes: Any) -> Any:
    from pyspark.sql import functions as F

    def key_of(image: str) -> Any:
        return F.to_json(F.transform("key_columns", lambda k: F.col(image)[k]))

    def key_after() -> Any:
        return F.to_json(F.transform("key_columns", lambda k: F.coalesce(F.col("after")[k], F.col("before")[k])))

    base = [F.col("database"), F.col("table")] + [F.col(c) for c in _ORDER]
    image_type = changes.schema["after"].dataType
    null_image = F.lit(None).cast(image_type)
    inserts = changes.filter("op = 'insert'").select(*base, F.lit(1).alias("sub"), key_of("after").alias("key"),
                                                     F.col("after").alias("image"))
    deletes = changes.filter("op = 'delete'").select(*base, F.lit(1).alias("sub"), key_of("before").alias("key"),
                                                     null_image.alias("image"))
    updates = changes.filter("op = 'update'")
    moved_from = updates.filter(key_of("before") != key_after()).select(
        *base, F.lit(0).alias("sub"), key_of("before").alias("key"), null_image.alias("image"))
    updated = updates.select(*base, F.lit(1).alias("sub"), key_after().alias("key"), F.col("after").alias("image"))
    steps = inserts.unionByName(deletes).unionByName(moved_from).unionByName(updated)
    by_order = F.struct(*_ORDER, "sub").alias("at")
    folded = steps.groupBy("database", "table", "key").agg(
        F.array_sort(
            F.collect_list(F.struct(by_order, "image")),
            lambda left, right: F.when(left["at"] < right["at"], -1).when(left["at"] > right["at"], 1).otherwise(0),
        ).alias("steps")
    ).select(
        "database",
        "table",
        F.aggregate(
            "steps",
            null_image,
            lambda acc, x: F.when(x["image"].isNull(), null_image)
            .when(acc.isNull(), x["image"])
            .otherwise(F.map_concat(
                F.map_filter(acc, lambda k, v: ~F.array_contains(F.map_keys(x["image"]), k)), x["image"])),
        ).alias("image"),
    )
    return folded.filter(F.col("image").isNotNull())


def _count_rows(changes: Any) -> Any:
    from pyspark.sql import functions as F

    plus = changes.filter("op != 'delete'").select("database", "table", F.to_json("after").alias("row"),
                                                   F.lit(1).alias("n"))
    minus = changes.filter("op != 'insert'").select("database", "table", F.to_json("before").alias("row"),
                                                    F.lit(-1).alias("n"))
    counted = plus.unionByName(minus).groupBy("database", "table", "row").agg(F.sum("n").alias("n")).filter("n > 0")
    image_type = changes.schema["after"].dataType
    return counted.select("database", "table",
                          F.explode(F.array_repeat(F.from_json("row", image_type), F.col("n").cast("int")))
                          .alias("image"))


#: A state table's columns: (name, Spark type), from the schema history, or text (``StringType``)
#: for a table it does not know.
Layout = list[tuple[str, Any]]


def state_layouts(history: SchemaHistory, seen: dict[tuple[str, str], list[str]]) -> dict[str, Layout]:
    """The state tables to write, by ``db.table``, from the tables ``seen`` in the CDC rows
    (with their widest column list): a table the history knows becomes the tables its
    incarnations are at the end (the same one, renamed, or none when dropped), with the
    columns and types of that shape; a table it never knew keeps the text columns seen."""
    from pyspark.sql.types import StringType

    from .schema import history_column_type

    current = history.current_incarnations()
    layouts: dict[str, Layout] = {}
    for (database, name), columns in seen.items():
        known = history.incarnations(database, name)
        if not known:
            layouts[f"{database}.{name}"] = [(column, StringType()) for column in columns]
        for incarnation in known:
            table = current.get(incarnation)
            if table is not None:
                layouts[f"{table.database}.{table.name}"] = [(c.name, history_column_type(c)) for c in table.columns]
    return layouts


_CARRIED = ["database", "table", "op", "key_columns", "before", "after", "gtid", "timestamp", *_ORDER]


def carried_to_current(cdc: Any, history: str) -> Any:
    """CDC rows carried to the shape the schema history (JSON text) gives their table at the
    end: one narrow ``mapInArrow`` step (no job of its own).  A row logged under an older shape
    is renamed by column identity (renamed columns keep their values, dropped ones go, added
    ones get their constant default or NULL) and moved to its table's current name; a row of
    an incarnation that no longer exists (dropped, recreated, truncated) is dropped; a row of
    a table the history does not know at that point passes unchanged (text columns), unless
    its name now holds a table the history knows, created after the row: then it is gone
    with the table it belonged to."""
    from pyspark.sql.types import StructType

    schema = StructType([cdc.schema[c] for c in _CARRIED])
    placed = cdc.select(*_CARRIED, "source_file")
    return placed.mapInArrow(_carrier(history), schema)


#: How rows logged under one table version reach the current shape: (current table, old
#: column name -> current name, columns added since with their defaults); None: gone.
Carry = tuple[Table, dict[str, str], list[tuple[str, str | None]]] | None


def _carry_of(then: Table, current: dict[int, Table]) -> Carry:
    now = current.get(then.incarnation)
    if now is None:
        return None
    names = {c.ident: c.name for c in now.columns}
    had = {c.ident for c in then.columns}
    renamed = {c.name: names[c.ident] for c in then.columns if c.ident in names}
    return now, renamed, [(c.name, c.default) for c in now.columns if c.ident not in had]


def _carry(row: dict[str, Any], carry: Carry) -> dict[str, Any] | None:
    """One CDC row as :func:`carried_to_current` gives it (None: the row is gone)."""
    if carry is None:
        return None
    now, renamed, added = carry

    def image(values: list[tuple[str, str | None]] | None) -> list[tuple[str, str | None]] | None:
        """The image in the current column order (so rows counted without a key compare
        equal whatever shape logged them); columns missing from a MINIMAL image stay missing."""
        if values is None:
            return None
        named = dict(added)
        named.update((renamed[k], v) for k, v in values if k in renamed)
        return [(c.name, named[c.name]) for c in now.columns if c.name in named]

    return {**row, "database": now.database, "table": now.name, "before": image(row["before"]),
            "after": image(row["after"]), "key_columns": list(now.primary_key)}


def _carrier(history_json: str) -> Any:
    """The ``mapInArrow`` function of :func:`carried_to_current`: rows of tables the history
    never knew, and rows logged under their table's current version, pass as Arrow data (only
    their key columns set); rows of older versions are carried row by row, the carry worked
    out once per version."""

    def carry(batches: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        history = loaded_history(history_json)
        current = history.current_incarnations()
        carries: dict[int, Carry] = {}
        for batch in batches:
            names = pc.binary_join_element_wise(batch.column("database"), batch.column("table"), "\0")
            schema = pa.schema([batch.schema.field(c) for c in _CARRIED])
            for name in pc.unique(names).to_pylist():
                rows = batch.filter(pc.equal(names, name))
                database, _, table = name.partition("\0")
                if not history.incarnations(database, table):
                    yield rows.select(_CARRIED)
                    continue
                for then, kept in _by_version(rows, history, database, table):
                    if then is None:  # rows of a table since recreated: gone
                        continue
                    if then is current.get(then.incarnation) or then.unknown is not None:
                        keys = pa.array([list(then.primary_key)] * kept.num_rows, schema.field("key_columns").type)
                        kept = kept.select(_CARRIED)
                        if then.unknown is None:
                            kept = kept.set_column(_CARRIED.index("key_columns"), "key_columns", keys)
                        yield kept
                        continue
                    if id(then) not in carries:
                        carries[id(then)] = _carry_of(then, current)
                    carried = [_carry(row, carries[id(then)]) for row in kept.select(_CARRIED).to_pylist()]
                    yield pa.RecordBatch.from_pylist([r for r in carried if r is not None], schema=schema)

    return carry


def _by_version(rows: Any, history: SchemaHistory, database: str, table: str) -> Any:
    """``rows`` (of one table name) split by the table version each was logged under:
    (version, rows) pairs; a row of a shape the history does not know is kept as logged (an
    unknown version), unless the name now holds a table the history knows, created after
    the row (version None: gone with the table it belonged to)."""
    import pyarrow as pa

    end = history.table(database, table)
    recreated = end is not None and end.unknown is None
    unknown = Table(database, table, (), unknown="not in the schema history")
    bases: dict[str, str] = {}
    groups: dict[int, tuple[Table | None, list[int]]] = {}
    files = rows.column("source_file").to_pylist()
    for index, (file, pos, gtid) in enumerate(zip(files, rows.column("position").to_pylist(),
                                                  rows.column("gtid").to_pylist())):
        base = bases.get(file)
        if base is None:
            base = bases[file] = os.path.basename(file or "")
        then = history.table_for_event(database, table, base, pos, gtid)
        if then is None or then.unknown is not None:
            then = None if recreated else unknown
        groups.setdefault(id(then), (then, []))[1].append(index)
    for then, indexes in groups.values():
        yield then, rows.take(pa.array(indexes, pa.int64()))


def write_states(cdc: Any, directory: str, layouts: dict[str, Layout], table_format: str) -> dict[str, str]:
    """Fold and write every table's latest state in one Spark job: ``directory/<db>.<table>``
    with the table's columns (``layouts``); returns the paths by table name.

    The CDC rows keep one schema for every table (maps of text: one pass, partitioned by
    table), so the types are given here, where each table's rows are written by a pyarrow
    writer of its own: a typed layout's map text is read back into the Spark type the typed
    ``rows`` view has for the column (:func:`~.schema.text_reader`, the inverse of the view's
    rendering), so no job per table is needed.  A text layout writes the text as it is."""
    states = table_states(cdc).repartition("database", "table")
    return _write_tables(states, directory, layouts, table_format, _state_table, _state_schema)


def write_changes(cdc: Any, directory: str, layouts: dict[str, Layout], table_format: str) -> dict[str, str]:
    """Write every table's changes, typed, in one Spark job: ``directory/<db>.<table>`` with
    the GTID, commit time, position, operation and ``before``/``after`` as structs of the
    table's columns typed as in :func:`write_states`, in binlog order.  ``cdc`` is carried to
    the current shapes (:func:`carried_to_current`), so these are the changes of the tables
    the binlogs leave, in their last shape; the CDC table keeps every change as logged."""
    ordered = cdc.repartition("database", "table").sortWithinPartitions("database", "table", *_ORDER)
    return _write_tables(ordered, directory, layouts, table_format, _change_table, _change_schema)


#: The columns of a typed change table besides its images, as the carried CDC rows have them.
_CHANGE_COLUMNS = ["gtid", "timestamp", *_ORDER, "op"]


def _write_tables(df: Any, directory: str, layouts: dict[str, Layout], table_format: str,
                  build: Any, schema_of: Any) -> dict[str, str]:
    """Write ``df`` (rows of many tables, each table in one partition) as a table per
    ``layouts`` entry in one job: ``build(rows, layout, schema)`` gives a table's Arrow data,
    ``schema_of(layout)`` its schema (an empty table has it too); returns the paths."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    df.mapInArrow(_table_writer(layouts, directory, build, schema_of), "tables long").collect()
    paths = {}
    for name, layout in layouts.items():
        path = paths[name] = os.path.join(directory, name)
        if not os.path.isdir(path) or not os.listdir(path):  # no rows: an empty table
            os.makedirs(path, exist_ok=True)
            import pyarrow.parquet as pq

            pq.write_table(schema_of(layout).empty_table(), os.path.join(path, "part-empty.parquet"))
        if table_format == "delta":
            _commit_delta(path, ())
    return paths


def _state_schema(layout: Layout) -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema([pa.field(name, to_arrow_type(kind, timezone="UTC")) for name, kind in layout])


def _change_schema(layout: Layout) -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from .schema import ROWS_SCHEMA

    image = pa.struct(list(_state_schema(layout)))
    fixed = to_arrow_schema(ROWS_SCHEMA, timezone="UTC")
    return pa.schema([fixed.field(c) for c in _CHANGE_COLUMNS] + [pa.field("before", image), pa.field("after", image)])


def _image_columns(rows: Any, layout: Layout) -> list[Any]:
    """The columns of images (maps of text) as the layout types them (text stays as it is)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.types import StringType

    from .schema import text_reader

    columns = []
    for (name, kind), field in zip(layout, _state_schema(layout)):
        text = pc.map_lookup(rows, name, "first")
        if isinstance(kind, StringType):
            columns.append(text)
            continue
        read = text_reader(kind)
        columns.append(pa.array([None if v is None else read(v) for v in text.to_pylist()], type=field.type))
    return columns


def _state_table(rows: Any, layout: Layout, schema: Any) -> Any:
    import pyarrow as pa

    return pa.table(_image_columns(rows.column("image"), layout), schema=schema)


def _change_table(rows: Any, layout: Layout, schema: Any) -> Any:
    import pyarrow as pa

    def image(name: str) -> Any:
        maps = rows.column(name)
        return pa.StructArray.from_arrays(_image_columns(maps, layout), fields=list(schema.field(name).type),
                                          mask=maps.is_null())

    fixed = [rows.column(c).cast(schema.field(c).type) for c in _CHANGE_COLUMNS]
    return pa.table([*fixed, image("before"), image("after")], schema=schema)


def _table_writer(layouts: dict[str, Layout], directory: str, build: Any, schema_of: Any) -> Any:
    """The ``mapInArrow`` function that writes one task's tables: a Parquet file per table."""

    def write(batches: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        part = TaskContext.get().partitionId()
        writers: dict[str, Any] = {}
        try:
            for batch in batches:
                names = pc.binary_join_element_wise(batch.column("database"), batch.column("table"), ".")
                for name in pc.unique(names).to_pylist():
                    layout = layouts.get(name)
                    if layout is None:
                        continue  # a table the schema history has dropped by the end
                    schema = schema_of(layout)
                    table = build(batch.filter(pc.equal(names, name)), layout, schema)
                    writer = writers.get(name)
                    if writer is None:
                        os.makedirs(os.path.join(directory, name), exist_ok=True)
                        path = os.path.join(directory, name, f"part-{part:05d}.parquet")
                        writer = writers[name] = pq.ParquetWriter(path, schema)
                    writer.write_table(table)
        finally:
            for writer in writers.values():
                writer.close()
        yield pa.RecordBatch.from_pydict({"tables": [len(writers)]})

    return write


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


def _summary(buckets: list[Any], tables: list[Any], report: str, statements: int = 0) -> str:
    """Per-domain and per-table tables as Markdown (returned and in summary.md) and CSV, and
    the count of statement-logged changes with the advice to log rows."""
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
    text = "\n".join(lines)
    with open(os.path.join(report, "summary.md"), "w") as handle:
        handle.write(text + "\n")
    with open(os.path.join(report, "summary.csv"), "w", newline="") as handle:
        csv.writer(handle).writerows(rows_csv)
    return text
