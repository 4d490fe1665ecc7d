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
   primary key in the table map, the changes of each key are folded in binlog order (an update's
   after image is merged onto the row, so MINIMAL images work when the key does not change);
   without one, identical rows are counted (+1 insert, -1 delete, update = both) and the rows
   left over are kept.  Columns are the table's columns, as text.
3. ``DIR/report``: ``events_over_time.png`` (events per GTID domain and row changes per table
   over time) and ``summary.md`` / ``summary.csv`` (per domain and per table counts).

Without SOURCE the job first writes the bundled sample (:mod:`mariabinlog.tools.sample`, made with the project's
own engine) to ``DIR/sample-binlogs`` and runs on that.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OptionError

FORMATS = ("parquet", "delta")


@dataclass
class PipelineResult:
    """What the job wrote: paths, tables and the summary lines."""

    cdc: str
    states: dict[str, str] = field(default_factory=dict)
    chart: str = ""
    summary: str = ""
    rows: int = 0
    events: int = 0


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
    parser.add_argument("--bucket", default="5 minutes", help="time bucket of the report (default: 5 minutes)")
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
    if table_format == "delta":
        if importlib.util.find_spec("delta") is None and importlib.util.find_spec("deltalake") is None:
            raise OptionError(
                "--format delta needs delta-spark (pip install delta-spark) or deltalake (pip install deltalake)"
            )


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
    bucket: str = "5 minutes",
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


def _read(spark: Any, path: str, table_format: str) -> Any:
    """A table :func:`_write` wrote (a Delta table committed by delta-rs is read as its Parquet)."""
    native = table_format != "delta" or _spark_has_delta(spark)
    return spark.read.format(table_format if native else "parquet").load(path)


def _run(spark: Any, source: str, out: str, table_format: str, bucket: str,
         options: dict[str, str]) -> PipelineResult:
    from pyspark.sql import functions as F

    result = PipelineResult(cdc=os.path.join(out, "cdc"))
    rows = _reader(spark, options, "rows").load(source)
    _write(rows, result.cdc, table_format, ("database", "table"))
    cdc = _read(spark, result.cdc, table_format)
    tables = sorted((r[0], r[1]) for r in cdc.select("database", "table").distinct().collect())
    for database, table in tables:
        name = f"{database}.{table}"
        path = os.path.join(out, "state", name)
        state = latest_state(cdc.filter((F.col("database") == database) & (F.col("table") == table)))
        _write(state, path, table_format)
        result.states[name] = path
    events = _reader(spark, options, "events").load(source)
    buckets = (
        events.withColumn("bucket", F.window("timestamp", bucket).start)
        .groupBy("bucket", "domain_id", "database", "table", "event_type")
        .agg(F.count("*").alias("events"), F.countDistinct("gtid").alias("groups"))
        .collect()
    )
    changes = cdc.groupBy("database", "table", "op").count().collect()
    report = os.path.join(out, "report")
    os.makedirs(report, exist_ok=True)
    result.chart = os.path.join(report, "events_over_time.png")
    _chart(buckets, rows_by_table=_row_buckets(cdc, bucket), path=result.chart)
    result.summary = _summary(buckets, changes, report)
    result.events = sum(b["events"] for b in buckets)
    result.rows = sum(c["count"] for c in changes)
    return result


def latest_state(changes: Any) -> Any:
    """The rows a table holds after ``changes`` (one table of the CDC table), columns as text."""
    from pyspark.sql import functions as F

    order = ["file_no", "position", "event_index", "row_index"]
    keys_row = changes.filter(F.col("key_columns").isNotNull()).select("key_columns").limit(1).collect()
    keys = list(keys_row[0][0]) if keys_row else []
    names = F.map_keys(F.coalesce("after", "before"))  # keeps the table's column order
    widest = changes.agg(F.max_by(names, F.size(names)).alias("names")).first()
    columns = list(widest["names"]) if widest is not None and widest["names"] is not None else []
    if keys:
        state = _fold_by_key(changes, keys, order)
    else:
        state = _count_rows(changes, order)
    return state.select(*[F.col("image").getItem(c).alias(c) for c in columns])


def _fold_by_key(changes: Any, keys: list[str], order: list[str]) -> Any:
    """Fold each key's changes in binlog order; an update that moves the key deletes the old one."""
    from pyspark.sql import functions as F

    def key_of(image: str) -> Any:
        return F.to_json(F.struct(*[F.col(image).getItem(k).alias(k) for k in keys]))

    def key_after() -> Any:
        return F.to_json(F.struct(*[F.coalesce(F.col("after").getItem(k), F.col("before").getItem(k)).alias(k)
                                    for k in keys]))

    base = [F.col(c) for c in order]
    image_type = changes.schema["after"].dataType
    null_image = F.lit(None).cast(image_type)
    inserts = changes.filter("op = 'insert'").select(*base, F.lit(1).alias("sub"), key_of("after").alias("key"),
                                                     F.col("after").alias("image"))
    deletes = changes.filter("op = 'delete'").select(*base, F.lit(1).alias("sub"), key_of("before").alias("key"),
                                                     null_image.alias("image"))
    updates = changes.filter("op = 'update'")
    moved_from = updates.filter(key_of("before") != key_after()).select(
        *base, F.lit(0).alias("sub"), key_of("before").alias("key"), null_image.alias("image"))
    updated = updates.select(*base, F.lit(1).alias("sub"), key_after().alias("key"),
                             F.col("after").alias("image"))
    steps = inserts.unionByName(deletes).unionByName(moved_from).unionByName(updated)
    by_order = F.struct(*order, "sub").alias("at")
    folded = steps.groupBy("key").agg(
        F.array_sort(
            F.collect_list(F.struct(by_order, "image")),
            lambda left, right: F.when(left["at"] < right["at"], -1).when(left["at"] > right["at"], 1).otherwise(0),
        ).alias("steps")
    ).select(
        F.aggregate(
            "steps",
            null_image,
            lambda acc, x: F.when(x["image"].isNull(), null_image)
            .when(acc.isNull(), x["image"])
            .otherwise(F.map_concat(
                F.map_filter(acc, lambda k, v: ~F.array_contains(F.map_keys(x["image"]), k)), x["image"])),
        ).alias("image")
    )
    return folded.filter(F.col("image").isNotNull())


def _count_rows(changes: Any, order: list[str]) -> Any:
    """Rows without a key: +1 per insert image, -1 per delete image, updates both."""
    from pyspark.sql import functions as F

    plus = changes.filter("op != 'delete'").select(F.to_json("after").alias("row"), F.lit(1).alias("n"))
    minus = changes.filter("op != 'insert'").select(F.to_json("before").alias("row"), F.lit(-1).alias("n"))
    counted = plus.unionByName(minus).groupBy("row").agg(F.sum("n").alias("n")).filter("n > 0")
    image_type = changes.schema["after"].dataType
    return counted.select(F.explode(F.array_repeat(F.from_json("row", image_type), F.col("n").cast("int")))
                          .alias("image"))


def _row_buckets(cdc: Any, bucket: str) -> list[Any]:
    from pyspark.sql import functions as F

    return (
        cdc.withColumn("bucket", F.window("timestamp", bucket).start)
        .groupBy("bucket", "database", "table")
        .count()
        .collect()
    )


def _chart(buckets: list[Any], *, rows_by_table: list[Any], path: str) -> None:
    """Two stacked panels: events per domain over time, row changes per table over time."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("the report chart needs matplotlib (pip install matplotlib)") from None
    per_domain: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    for b in buckets:
        if b["bucket"] is not None:
            label = "no GTID" if b["domain_id"] is None else f"domain {b['domain_id']}"
            per_domain[label][b["bucket"]] += b["events"]
    per_table: dict[str, dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows_by_table:
        per_table[f"{r['database']}.{r['table']}"][r["bucket"]] += r["count"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for label, series in sorted(per_domain.items()):
        xs = sorted(series)
        top.plot(xs, [series[x] for x in xs], marker=".", label=label)
    top.set_title("Binlog events per GTID domain")
    top.set_ylabel("events")
    top.legend(loc="upper right", fontsize="small")
    for label, series in sorted(per_table.items()):
        xs = sorted(series)
        bottom.plot(xs, [series[x] for x in xs], marker=".", label=label)
    bottom.set_title("Row changes per table")
    bottom.set_ylabel("rows (log scale)")
    bottom.set_yscale("symlog")
    bottom.set_xlabel("time (UTC)")
    bottom.legend(loc="upper right", fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _summary(buckets: list[Any], changes: list[Any], report: str) -> str:
    """Per-domain and per-table tables as Markdown (returned and in summary.md) and CSV."""
    domains: dict[Any, dict[str, Any]] = {}
    for b in buckets:
        entry = domains.setdefault(b["domain_id"], {"events": 0, "groups": 0, "first": None, "last": None})
        entry["events"] += b["events"]
        if b["event_type"] == "Gtid":
            entry["groups"] += b["events"]
        if b["bucket"] is not None:
            entry["first"] = b["bucket"] if entry["first"] is None else min(entry["first"], b["bucket"])
            entry["last"] = b["bucket"] if entry["last"] is None else max(entry["last"], b["bucket"])
    tables: dict[str, dict[str, int]] = defaultdict(lambda: {"insert": 0, "update": 0, "delete": 0})
    for c in changes:
        tables[f"{c['database']}.{c['table']}"][c["op"]] += c["count"]
    lines = ["| domain | event groups | events | first bucket | last bucket |", "|---|---:|---:|---|---|"]
    rows_csv = [["kind", "name", "groups_or_inserts", "events_or_updates", "deletes"]]
    for domain in sorted(domains, key=lambda d: (d is None, d or 0)):
        e = domains[domain]
        name = "none" if domain is None else str(domain)
        lines.append(f"| {name} | {e['groups']} | {e['events']} | {e['first']} | {e['last']} |")
        rows_csv.append(["domain", name, e["groups"], e["events"], ""])
    lines += ["", "| table | inserts | updates | deletes |", "|---|---:|---:|---:|"]
    for name in sorted(tables):
        t = tables[name]
        lines.append(f"| {name} | {t['insert']} | {t['update']} | {t['delete']} |")
        rows_csv.append(["table", name, t["insert"], t["update"], t["delete"]])
    text = "\n".join(lines)
    with open(os.path.join(report, "summary.md"), "w") as handle:
        handle.write(text + "\n")
    with open(os.path.join(report, "summary.csv"), "w", newline="") as handle:
        csv.writer(handle).writerows(rows_csv)
    return text
