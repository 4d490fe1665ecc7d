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
from dataclasses import dataclass
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
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..codec.events import TableMapEvent
from ..errors import OptionError
from ..engine.files import BinlogFile, discover_binlogs
from .options import ScanOptions
from .plan import Split, plan
from ..schema import SchemaHistory
from .read import NO_HISTORY, history_source, read_splits, scan_schema
from .schema import SCHEMAS, rows_schema, typed_row_struct

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


@dataclass(frozen=True)
class BinlogPartition(InputPartition):
    """One Spark input partition: splits read in order by one task."""

    index: int
    splits: tuple[Split, ...]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what it checks the first batch against)."""
    return to_arrow_schema(schema, timezone="UTC")


def source_path(options: Mapping[str, str]) -> str:
    """The ``path`` given to ``load()``."""
    path = options.get("path")
    if not path:
        if options.get("paths"):
            raise OptionError("the mariabinlog source reads one path (a file, a directory or a glob), not a list")
        raise OptionError("the mariabinlog source needs a path: spark.read.format('mariabinlog').load(PATH)")
    return path


def find_table_map(files: Sequence[BinlogFile], table: tuple[str, str],
                   history: SchemaHistory | None = None) -> TableMapEvent:
    """The last Table_map of ``db.table`` in ``files``, typed by ``history`` (built from the
    files' DDL when None): its shape types the rows view of one table."""
    return known_table_map(scan_schema(files, history, table)[1], table)


def known_table_map(table_map: TableMapEvent | None, table: tuple[str, str]) -> TableMapEvent:
    """``table_map``, or the error saying the table was never mapped."""
    if table_map is not None:
        return table_map
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

    def _rows_history(self) -> tuple[str, TableMapEvent | None]:
        """The rows view's schema history as JSON text (for the executors) and, with option
        ``table``, that table's last typed Table_map; worked out once per source object."""
        cached: tuple[str, TableMapEvent | None] | None = getattr(self, "_history_cache", None)
        if cached is None:
            options, path = self._options(), source_path(self.options)
            saved = history_source(path, options)
            history = SchemaHistory.load(saved) if saved is not None else None
            if options.schema_history == NO_HISTORY:
                history = SchemaHistory(source=NO_HISTORY)
            files = discover_binlogs(path)
            history, table_map = scan_schema(files, history, options.table)
            if options.table is not None:
                known_table_map(table_map, options.table)
            cached = self._history_cache = (json.dumps(history.to_json(), ensure_ascii=False), table_map)
        return cached

    def schema(self) -> StructType:
        options = self._options()
        if options.view == "rows" and options.table is not None:
            table_map = self._rows_history()[1]
            assert table_map is not None
            return rows_schema(typed_row_struct(table_map)[0])
        return SCHEMAS[options.view]

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self._options()
        history = self._rows_history()[0] if options.view == "rows" and options.schema_history != NO_HISTORY else None
        return BinlogReader(source_path(self.options), options, schema, history)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .stream import BinlogStreamReader

        return BinlogStreamReader(source_path(self.options), self._options(), schema, dict(self.options))


class BinlogReader(DataSourceReader):
    """Batch reader: plans splits on the driver, reads them into Arrow batches on executors."""

    def __init__(self, path: str, options: ScanOptions, schema: StructType, history: str | None = None) -> None:
        self.path = path
        self.options = options
        self.schema = schema
        self.history = history  # JSON text of the rows view's schema history

    def partitions(self) -> list[InputPartition]:
        parts = plan(discover_binlogs(self.path), self.options)
        return [BinlogPartition(i, tuple(splits)) for i, splits in enumerate(parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        splits = partition.splits if isinstance(partition, BinlogPartition) else ()
        return read_splits(splits, self.options, arrow_schema(self.schema), history=self.history)


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
        history = self._rows_history()[0] if options.view == "rows" and options.schema_history != NO_HISTORY else None
        return PushdownBinlogReader(source_path(self.options), options, schema, history)


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


def register(spark: SparkSession) -> type[DataSource]:
    """Register the ``mariabinlog`` format with ``spark``; returns the registered class.

    Call it again after changing ``spark.sql.python.filterPushdown.enabled`` or the
    ``spark.sql.files.*`` split settings.
    """
    pushdown = (spark.conf.get(PUSHDOWN_CONF, "false") or "false").strip().lower() == "true"
    base = PushdownDataSource if pushdown else MariabinlogDataSource
    attrs: dict[str, Any] = {"defaults": session_defaults(spark), "__doc__": base.__doc__}
    source = type("RegisteredMariabinlogSource", (base,), attrs)
    spark.dataSource.register(source)
    return source
