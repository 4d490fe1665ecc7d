"""The unit of work batch and streaming reads share: an input partition of splits, read into
Arrow batches of the schema Spark expects.

Both :mod:`.source` (batch) and :mod:`.stream` (micro-batches) hand Spark
:class:`BinlogPartition` s and read them with :func:`read_partition`; this module sits below
both so neither imports the other's internals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from .options import ScanOptions
from .plan import Split
from .read import read_splits


@dataclass(frozen=True)
class BinlogPartition(InputPartition):
    """One Spark input partition: splits read in order by one task."""

    index: int
    splits: tuple[Split, ...]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what it checks the first batch against)."""
    return to_arrow_schema(schema, timezone="UTC")


def read_partition(partition: InputPartition, options: ScanOptions, schema: StructType) -> Iterator[pa.RecordBatch]:
    """Record batches of ``partition`` (a :class:`BinlogPartition`) in the view ``options`` name."""
    splits = partition.splits if isinstance(partition, BinlogPartition) else ()
    return read_splits(splits, options, arrow_schema(schema))
