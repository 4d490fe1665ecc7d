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
    sizing (defaults: the session's ``spark.sql.files.*`` and default parallelism, taken by
    :func:`register`, or when the DataFrame is created through :func:`reader`).  ``verifyChecksum`` (default true), ``batchRows`` (default 32768).

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
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from pyspark.sql import DataFrameReader, SparkSession
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
from pyspark.sql.streaming import DataStreamReader
from pyspark.sql.types import StructType

from ..codec.events import TableMapEvent
from ..engine.files import BinlogFile
from ..errors import MariabinlogError, OptionError
from ..schema import SchemaHistory
from .fs import Listing, discover
from .options import ScanOptions
from .partition import BinlogPartition, read_partition
from .plan import plan
from .read import NO_HISTORY, history_source, history_text, loaded_history, scan_schema
from .schema import SCHEMAS, rows_schema, typed_row_struct
from .stream import BinlogStreamReader

if TYPE_CHECKING:  # Spark Connect's readers are classes of their own
    from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader
    from pyspark.sql.connect.streaming.readwriter import DataStreamReader as ConnectStreamReader

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


def find_table_map(files: Sequence[BinlogFile], table: tuple[str, str], history: SchemaHistory | None = None,
                   listing: Listing | None = None) -> TableMapEvent:
    """The last Table_map of ``db.table`` in ``files``, typed by ``history`` (built from the
    files' DDL when None): its shape types the rows view of one table."""
    return known_table_map(scan_schema(files, history, table, listing)[1], table)


def known_table_map(table_map: TableMapEvent | None, table: tuple[str, str]) -> TableMapEvent:
    """``table_map``, or the error saying the table was never mapped."""
    if table_map is not None:
        return table_map
    raise OptionError(f"table {table[0]}.{table[1]} has no Table_map event in the binlogs; its columns are unknown")


def rows_history(paths: Sequence[str], options: ScanOptions) -> tuple[SchemaHistory, TableMapEvent | None]:
    """The schema history the rows view of ``paths`` is named and typed by (the saved one the
    options or an archive give, else built from the files' DDL; empty for
    ``schemaHistory=none``), as of the binlogs' end, and with option ``table`` its last typed
    Table_map."""
    saved = history_source(paths, options)
    history = loaded_history(history_text(saved, options.listing.storage), saved) if saved is not None else None
    if options.schema_history == NO_HISTORY:
        history = SchemaHistory(source=NO_HISTORY)
    return scan_schema(discover(paths, options.listing), history, options.table, options.listing)


class MariabinlogDataSource(DataSource):
    """Binlog events as DataFrames (see the module docstring)."""

    #: Option defaults taken from the session by :func:`register`.
    defaults: ClassVar[dict[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        return "mariabinlog"

    def _options(self) -> ScanOptions:
        return ScanOptions.parse(self.options, self.defaults)

    def _rows_history(self) -> tuple[str, TableMapEvent | None]:
        """The rows view's schema history as JSON text (for the executors) and, with option
        ``table``, that table's last typed Table_map; worked out once per source object."""
        cached: tuple[str, TableMapEvent | None] | None = getattr(self, "_history_cache", None)
        if cached is None:
            options = self._options()
            history, table_map = rows_history(source_paths(self.options), options)
            if options.table is not None:
                known_table_map(table_map, options.table)
            cached = self._history_cache = (json.dumps(history.to_json(), ensure_ascii=False), table_map)
        return cached

    def _executor_history(self, options: ScanOptions) -> str | None:
        """The schema history the executors type the rows view by (None: not the rows view,
        or ``schemaHistory=none``)."""
        if options.view != "rows" or options.schema_history == NO_HISTORY:
            return None
        return self._rows_history()[0]

    def schema(self) -> StructType:
        options = self._options()
        if options.view == "rows" and options.table is not None:
            table_map = self._rows_history()[1]
            assert table_map is not None
            return rows_schema(typed_row_struct(table_map)[0])
        return SCHEMAS[options.view]

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self._options()
        return BinlogReader(source_paths(self.options), options, schema, self._executor_history(options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BinlogStreamReader(stream_path(self.options), self._options(), schema, dict(self.options))


class BinlogReader(DataSourceReader):
    """Batch reader: plans splits on the driver, reads them into Arrow batches on executors."""

    def __init__(self, paths: list[str], options: ScanOptions, schema: StructType, history: str | None = None) -> None:
        self.paths = paths
        self.options = options
        self.schema = schema
        self.history = history  # JSON text of the rows view's schema history

    def partitions(self) -> list[InputPartition]:
        parts = plan(discover(self.paths, self.options.listing), self.options)
        return [BinlogPartition(i, tuple(splits)) for i, splits in enumerate(parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options, self.schema, self.history)


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
        options = self._options()
        return PushdownBinlogReader(source_paths(self.options), options, schema, self._executor_history(options))


def session_defaults(spark: SparkSession) -> dict[str, str]:
    """Split-sizing settings of the session now (``spark.sql.files.maxPartitionBytes`` and
    ``openCostInBytes``, the default parallelism), as option values."""
    defaults = {
        "maxPartitionBytes": spark.conf.get("spark.sql.files.maxPartitionBytes", "128m") or "128m",
        "openCostInBytes": spark.conf.get("spark.sql.files.openCostInBytes", "4m") or "4m",
    }
    try:
        defaults["minPartitions"] = str(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        defaults["minPartitions"] = spark.conf.get("spark.default.parallelism", "2") or "2"
    return defaults


def reader(spark: SparkSession) -> DataFrameReader | ConnectReader:
    """``spark.read.format("mariabinlog")`` with the session's split settings as they are now.

    A Python data source sees no session setting when a query is planned (docs/spark.md,
    "Split settings"), so :func:`register` can only take them once; this reader passes the
    current ones as options when the DataFrame is created.  Options set on it afterwards win.
    """
    return spark.read.format("mariabinlog").options(**session_defaults(spark))


def stream_reader(spark: SparkSession) -> DataStreamReader | ConnectStreamReader:
    """``spark.readStream.format("mariabinlog")`` with the current split settings (see :func:`reader`)."""
    return spark.readStream.format("mariabinlog").options(**session_defaults(spark))


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

    With ``check`` (the default) it first runs :func:`check_executors`.  The session's split
    settings (``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``) are taken now, as
    the defaults of ``spark.read.format("mariabinlog")``: a Python data source sees no session
    setting while a query is planned.  After changing them, read through :func:`reader` (which
    takes them when the DataFrame is created) or call this again; after changing
    ``spark.sql.python.filterPushdown.enabled``, call this again.  Options given to a read
    always win.
    """
    if check:
        check_executors(spark)
    pushdown = (spark.conf.get(PUSHDOWN_CONF, "false") or "false").strip().lower() == "true"
    base = PushdownDataSource if pushdown else MariabinlogDataSource
    attrs: dict[str, Any] = {"defaults": session_defaults(spark), "__doc__": base.__doc__}
    source = type("RegisteredMariabinlogSource", (base,), attrs)
    spark.dataSource.register(source)
    return source
