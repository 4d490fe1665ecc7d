"""The unit of work batch and streaming reads share: an input partition of splits, read into
Arrow batches of the schema Spark expects.

Both :mod:`.source` (batch) and :mod:`.stream` (micro-batches) hand Spark
:class:`BinlogPartition` s and read them with :func:`read_partition`; this module sits below
both so neither imports the other's internals.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..errors import DecodeError
from .options import ScanOptions
from .plan import Split
from .read import read_splits

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BinlogPartition(InputPartition):
    """One Spark input partition: splits read in order by one task."""

    index: int
    splits: tuple[Split, ...]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` (what it checks the first batch against)."""
    return to_arrow_schema(schema, timezone="UTC")


def read_partition(partition: InputPartition, options: ScanOptions, schema: StructType,
                   history: str | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches of ``partition`` (a :class:`BinlogPartition`) in the view ``options`` name;
    ``history`` is the JSON text of the schema history typing the rows view (the driver's).

    Damaged data fails the task naming file and offset; with ``ignoreCorruptFiles`` the rest
    of that file is skipped and logged (batches before the damage stay), and with
    ``ignoreMissingFiles`` a file deleted since planning is skipped and logged.
    """
    splits = partition.splits if isinstance(partition, BinlogPartition) else ()
    target = arrow_schema(schema)
    listing = options.listing
    if not (listing.ignore_corrupt or listing.ignore_missing):
        yield from read_splits(splits, options, target, history=history)
        return
    damaged: set[str] = set()
    for split in splits:
        if split.path in damaged:
            continue
        try:
            yield from read_splits([split], options, target, history=history)
        except DecodeError as err:
            if not listing.ignore_corrupt:
                raise
            damaged.add(split.path)
            log.warning("ignoreCorruptFiles: skipped the rest of %s after: %s", split.path, err)
        except FileNotFoundError:
            if not listing.ignore_missing:
                raise
            log.warning("ignoreMissingFiles: %s is gone; skipped", split.path)
