"""The ``mariabinlog`` PySpark data source (Python Data Source API, Spark 4).

Name
    ``mariabinlog``: ``spark.read.format("mariabinlog").load(PATH)`` after
    :func:`mariabinlog.spark.register`.  ``PATH`` is a binlog file, a directory or a glob; legacy
    files and `.ibb` files are recognised by their magic.

Options (all optional)
    ``view``: ``events`` (default), ``rows`` or ``groups`` (see :mod:`.schema`).
    ``table``: ``db.table``; with ``view=rows`` only that table's rows, with typed columns.
    ``startPosition``/``stopPosition``: GTID lists; ``doDomainIds``/``ignoreDomainIds``,
    ``doServerIds``/``ignoreServerIds``; ``startDatetime``/``stopDatetime`` (see :mod:`.options`).
    ``gtidSeek`` (default true): use `.ibb` GTID state records and legacy Gtid_list events to
    skip byte ranges.  ``maxPartitionBytes``, ``openCostInBytes``, ``minPartitions``: split
    sizing (defaults: the session's ``spark.sql.files.*`` and default parallelism, captured by
    :func:`register`).  ``verifyChecksum`` (default true), ``batchRows`` (default 8192).

Partitioning
    `.ibb` files are split at page boundaries into splits sized like Spark's file sources;
    legacy files one split per file; splits are packed into partitions (:mod:`.plan`).

Filter pushdown
    With ``spark.sql.python.filterPushdown.enabled=true`` set *before* :func:`register`, the
    reader takes ``domain_id``/``gtid_server_id`` equality and ``IN`` filters and ``seq_no``
    comparisons to prune, and leaves every filter for Spark to apply as well.  Spark refuses a
    reader with ``pushFilters`` while that setting is off, so :func:`register` picks the class
    that fits the session.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from ..codec.events import TableMapEvent
from ..errors import MariabinlogError, OptionError
from ..engine.files import BinlogFile
from .fs import discover
from .options import ScanOptions
from .partition import BinlogPartition, read_partition
from .plan import Split, plan
from .read import SplitReader
from .stream import BinlogStreamReader
from .schema import SCHEMAS, rows_schema, typed_row_struct

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def source_paths(options: Mapping[str, str]) -> list[str]:
    """The paths given to ``load(path)`` or ``load([paths])``: files, directories, globs, URIs."""
    lower = {k.lower(): v for k, v in options.items()}
    paths = [lower["path"]] if lower.get("path") else []
    if lower.get("paths"):
        try:
            listed = json.loads(lower["paths"])
        except ValueError:
            raise OptionError(f"option paths: {lower['paths']!r} is not a JSON list of paths") from None
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise OptionError(f"option paths: {lower['paths']!r} is not a JSON list of paths")
        paths += listed
    if not paths:
        raise OptionError("the mariabinlog source needs a path: spark.read.format('mariabinlog').load(PATH)")
    return paths


def stream_path(options: Mapping[str, str]) -> str:
    """The one directory (or URI prefix) a stream follows."""
    paths = source_paths(options)
    if len(paths) != 1:
        raise OptionError("a mariabinlog stream follows one directory, not a list of paths")
    return paths[0]


def find_table_map(files: Sequence[BinlogFile], table: tuple[str, str],
                   options: ScanOptions | None = None) -> TableMapEvent:
    """The first Table_map of ``db.table`` in ``files`` (to type the rows view of one table)."""
    everything = ScanOptions(gtid_seek=False, listing=options.listing if options else ScanOptions().listing)
    for f in files:
        split = Split(f.kind, f.path, f.directory, f.file_no, 0, f.size)
        for item in SplitReader(split, everything):
            event = item.event
            if isinstance(event, TableMapEvent) and (event.schema, event.table) == table:
                return event
    raise OptionError(f"table {table[0]}.{table[1]} has no Table_map event in the binlogs; its columns are unknown")


class MariabinlogDataSource(DataSource):
    """Binlog events as DataFrames (see the module docstring)."""

    #: Option defaults taken from the session by :func:`register`.
    defaults: ClassVar[dict[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        return "mariabinlog"

    def _options(self) -> ScanOptions:
        return ScanOptions.parse(self.options, self.defaults)

    def schema(self) -> StructType:
        options = self._options()
        if options.view == "rows" and options.table is not None:
            table_map = find_table_map(discover(source_paths(self.options), options.listing), options.table, options)
            return rows_schema(typed_row_struct(table_map)[0])
        return SCHEMAS[options.view]

    def reader(self, schema: StructType) -> DataSourceReader:
        return BinlogReader(source_paths(self.options), self._options(), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BinlogStreamReader(stream_path(self.options), self._options(), schema, dict(self.options))


class BinlogReader(DataSourceReader):
    """Batch reader: plans splits on the driver, reads them into Arrow batches on executors."""

    def __init__(self, paths: list[str], options: ScanOptions, schema: StructType) -> None:
        self.paths = paths
        self.options = options
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        parts = plan(discover(self.paths, self.options.listing), self.options)
        return [BinlogPartition(i, tuple(splits)) for i, splits in enumerate(parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options, self.schema)


_SEQ_FILTERS = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)


def _int_values(flt: Filter) -> list[int] | None:
    values = flt.value if isinstance(flt, In) else (flt.value,)  # type: ignore[attr-defined]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return list(values)


def narrow(options: ScanOptions, filters: Iterable[Filter]) -> ScanOptions:
    """``options`` with the prunable parts of pushed filters added (AND semantics)."""
    flt = options.filter
    for f in filters:
        column = f.attribute[0] if len(f.attribute) == 1 else None
        if column in ("domain_id", "gtid_server_id") and isinstance(f, (EqualTo, In)):
            values = _int_values(f)
            if values is not None:
                key = "only_domains" if column == "domain_id" else "only_servers"
                flt = flt.narrowed(**{key: values})
        elif column == "seq_no" and isinstance(f, _SEQ_FILTERS):
            values = _int_values(f)
            if values is None:
                continue
            value = values[0]
            if isinstance(f, (EqualTo, GreaterThan, GreaterThanOrEqual)):
                flt = flt.narrowed(seq_min=value + 1 if isinstance(f, GreaterThan) else value)
            if isinstance(f, (EqualTo, LessThan, LessThanOrEqual)):
                flt = flt.narrowed(seq_max=value - 1 if isinstance(f, LessThan) else value)
    return dataclasses.replace(options, filter=flt)


class PushdownBinlogReader(BinlogReader):
    """:class:`BinlogReader` that prunes with pushed filters (needs ``PUSHDOWN_CONF``)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        self.options = narrow(self.options, filters)
        return filters


class PushdownDataSource(MariabinlogDataSource):
    """The source registered when the session allows filter pushdown."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return PushdownBinlogReader(source_paths(self.options), self._options(), schema)


def session_defaults(spark: SparkSession) -> dict[str, str]:
    """Split-sizing defaults from the session, as Spark's own file sources take them."""
    defaults = {
        "maxPartitionBytes": spark.conf.get("spark.sql.files.maxPartitionBytes", "128m") or "128m",
        "openCostInBytes": spark.conf.get("spark.sql.files.openCostInBytes", "4m") or "4m",
    }
    try:
        defaults["minPartitions"] = str(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        defaults["minPartitions"] = spark.conf.get("spark.default.parallelism", "2") or "2"
    return defaults


def check_executors(spark: SparkSession) -> None:
    """Fail with a clear message when the Python of ``spark``'s executors cannot import
    mariabinlog (the task would otherwise die in the data source with a pickling error).

    One tiny task runs a probe defined here (pickled by value, so it needs nothing of ours).
    """
    from pyspark.sql.functions import udf

    def probe(_):  # type: ignore[no-untyped-def]  # no hints: pyspark would read them as a pandas UDF
        import importlib.util
        import sys

        found = importlib.util.find_spec("mariabinlog") is not None
        return ("" if found else "missing:") + sys.executable

    try:
        answer = spark.range(1).select(udf(probe, "string")("id")).first()[0]
    except Exception as err:  # a worker that cannot even start Python
        raise MariabinlogError(f"the Spark executors could not run Python to check for mariabinlog: {err}") from None
    if answer.startswith("missing:"):
        raise MariabinlogError(
            f"the Spark executors' Python ({answer[len('missing:'):]}) cannot import mariabinlog: install it in "
            "the executors' environment or ship it (a wheel with --py-files / spark.archives); see "
            "docs/spark-cluster.md")


def register(spark: SparkSession, *, check: bool = True) -> type[DataSource]:
    """Register the ``mariabinlog`` format with ``spark``; returns the registered class.

    With ``check`` (the default) it first runs :func:`check_executors`.  Call it again after
    changing ``spark.sql.python.filterPushdown.enabled`` or the ``spark.sql.files.*`` split
    settings (a Python data source's planning sees no session settings; options given to a
    read always win).
    """
    if check:
        check_executors(spark)
    pushdown = (spark.conf.get(PUSHDOWN_CONF, "false") or "false").strip().lower() == "true"
    base = PushdownDataSource if pushdown else MariabinlogDataSource
    attrs: dict[str, Any] = {"defaults": session_defaults(spark), "__doc__": base.__doc__}
    source = type("RegisteredMariabinlogSource", (base,), attrs)
    spark.dataSource.register(source)
    return source
