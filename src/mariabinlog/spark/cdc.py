"""The pipeline's CDC table, written in one Spark job by the tasks that read the binlogs.

The CDC table is the ``rows`` view as Parquet partitioned by ``database`` and ``table``.
Spark's own partitioned write takes the view's Arrow batches apart into JVM rows and
encodes them again (maps included); on the 1 GB bench binlog that cost more than reading
it.  Here each task reads its input partition with the source's own reader
(:func:`~.partition.read_partition`: same splits, options, checksums and
``ignoreCorruptFiles``) and hands the Arrow batches straight to pyarrow's Parquet writer, a
file per table it meets, laid out as Spark lays out partitioned output
(``database=X/table=Y``, values escaped as Spark escapes them) and in binlog order (what
the table writers of :mod:`.tables` read chunk by chunk).

A task writes under a hidden temporary directory, which Spark's readers skip, and renames
its files into place when it has read its whole partition; the names are fixed by the
partition's number, so a retried task replaces what a failed attempt renamed.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition

from .partition import arrow_schema
from .source import BinlogReader

#: Rows of one table gathered before they go to its file as a row group, and bytes held in
#: all of a task's tables together before every table's rows go.
GROUP_ROWS = 1 << 17
HELD_BYTES = 128 << 20

#: Characters Spark escapes as ``%XX`` in a partition directory's value (with the control
#: characters); it reads any ``%XX`` back.
_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))
#: The directory value Spark gives a null or empty partition value.
_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def escape(value: str | None) -> str:
    """A partition value as Spark writes it in a directory name."""
    if not value:
        return _DEFAULT_PARTITION
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def partition_of(path: str, root: str) -> tuple[str, str] | None:
    """(database, table) of a CDC file from its ``database=.../table=...`` directories (the
    inverse of :func:`escape`, which only escapes ASCII)."""
    parts = os.path.relpath(path, root).split(os.sep)
    values = dict(p.split("=", 1) for p in parts[:-1] if "=" in p)
    if "database" not in values or "table" not in values:
        return None
    return urllib.parse.unquote(values["database"]), urllib.parse.unquote(values["table"])


def by_table(batch: Any) -> Iterator[tuple[tuple[str, str], Any]]:
    """The rows of a rows-view batch by (database, table), each table's in the batch's order
    (the batch itself when it holds one table)."""
    import pyarrow.compute as pc

    names = pc.binary_join_element_wise(pc.fill_null(batch.column("database"), ""),
                                        pc.fill_null(batch.column("table"), ""), "\0")
    unique = pc.unique(names).to_pylist()
    for name in unique:
        database, _, table = name.partition("\0")
        yield (database, table), batch if len(unique) == 1 else batch.filter(pc.equal(names, name))


def write_cdc(spark: Any, reader: BinlogReader, root: str, *, keep_partition_columns: bool = False) -> list[str]:
    """Write the rows ``reader`` reads as the CDC table at ``root`` (replacing it) in one Spark
    job, a task per input partition; returns the files written.  ``keep_partition_columns``
    writes ``database`` and ``table`` into the files too (Iceberg takes partition values from
    the data, not from directory names)."""
    partitions = reader.partitions()
    if os.path.isdir(root):
        shutil.rmtree(root)
    os.makedirs(root)
    files: list[str] = []
    if partitions:
        task = _task(reader, partitions, root, keep_partition_columns)
        rows = spark.range(0, len(partitions), 1, len(partitions)).mapInArrow(task, "file string").collect()
        files = sorted(r[0] for r in rows)
    for name in os.listdir(root):
        if name.startswith(".attempt-"):  # what failed attempts left
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    return files


def _task(reader: BinlogReader, partitions: Sequence[InputPartition], root: str, keep: bool
          ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: the batch's ids are the partitions it writes; it yields the
    files written."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            for index in batch.column("id").to_pylist():
                written = write_partition(reader, partitions[index], index, root, keep)
                yield pa.RecordBatch.from_pydict({"file": written}, schema=pa.schema([("file", pa.string())]))

    return run


def write_partition(reader: BinlogReader, partition: InputPartition, index: int, root: str,
                    keep_partition_columns: bool = False) -> list[str]:
    """Read one input partition and write its rows, a file per table under ``root``; returns
    the files."""
    attempt = os.path.join(root, f".attempt-{index:05d}-{uuid.uuid4().hex}")
    sink = _Sink(arrow_schema(reader.schema), attempt, keep_partition_columns)
    try:
        for batch in reader.read(partition):
            sink.add(batch)
        temporary = sink.close()
        final = []
        for (database, table), path in temporary.items():
            directory = os.path.join(root, f"database={escape(database)}", f"table={escape(table)}")
            os.makedirs(directory, exist_ok=True)
            target = os.path.join(directory, f"part-{index:05d}.snappy.parquet")
            os.replace(path, target)
            final.append(target)
        return final
    finally:
        shutil.rmtree(attempt, ignore_errors=True)


class _Sink:
    """A task's open files, one per table, fed rows-view batches in binlog order; each table's
    rows are gathered into row groups of :data:`GROUP_ROWS`, all of them written out when the
    task holds :data:`HELD_BYTES`."""

    def __init__(self, schema: Any, directory: str, keep_partition_columns: bool = False) -> None:
        import pyarrow as pa

        self.directory = directory
        self.columns = [f.name for f in schema if keep_partition_columns or f.name not in ("database", "table")]
        self.schema = pa.schema([schema.field(c) for c in self.columns])
        self.writers: dict[tuple[str, str], Any] = {}
        self.paths: dict[tuple[str, str], str] = {}
        self.pending: dict[tuple[str, str], list[Any]] = {}
        self.held = 0

    def add(self, batch: Any) -> None:
        """One batch of the rows view."""
        for key, rows in by_table(batch):
            self._add(key, rows)

    def _add(self, key: tuple[str, str], batch: Any) -> None:
        pending = self.pending.setdefault(key, [])
        pending.append(batch.select(self.columns))
        self.held += pending[-1].nbytes
        if sum(b.num_rows for b in pending) >= GROUP_ROWS:
            self._write(key)
        if self.held >= HELD_BYTES:
            for other in list(self.pending):
                self._write(other)

    def _write(self, key: tuple[str, str]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        batches = self.pending.pop(key, [])
        if not batches:
            return
        self.held -= sum(b.nbytes for b in batches)
        writer = self.writers.get(key)
        if writer is None:
            os.makedirs(self.directory, exist_ok=True)
            path = self.paths[key] = os.path.join(self.directory, f"{len(self.paths)}.parquet")
            writer = self.writers[key] = pq.ParquetWriter(path, self.schema, compression="snappy")
        writer.write_table(pa.Table.from_batches(batches, schema=self.schema))

    def close(self) -> dict[tuple[str, str], str]:
        """Write what is held and close every file; returns the files by (database, table)."""
        for key in list(self.pending):
            self._write(key)
        for writer in self.writers.values():
            writer.close()
        return self.paths
