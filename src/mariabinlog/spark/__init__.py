"""MariaDB binlogs as Spark DataFrames, through PySpark's Python Data Source API.

    from mariabinlog.spark import register
    register(spark)
    events = spark.read.format("mariabinlog").load("/var/lib/mysql/binlogs")
    rows = spark.read.format("mariabinlog").option("view", "rows").load(path)
    stream = spark.readStream.format("mariabinlog").load(archive_dir)

Every byte is decoded by :mod:`mariabinlog.codec`; this package plans splits, applies filters
and builds Arrow batches.  Modules: :mod:`.source` (batch source and :func:`register`),
:mod:`.stream` (streaming reader), :mod:`.plan` (splits), :mod:`.read` (split reading),
:mod:`.schema` (views), :mod:`.options`, :mod:`.files`, :mod:`.replay` (per-domain replay),
:mod:`.pipeline` (the `mariabinlog pipeline` job), :mod:`.mirror` (the live mirror of a directory
as Delta or Iceberg tables).
"""

from __future__ import annotations

from .source import MariabinlogDataSource, reader, register, stream_reader

__all__ = ["MariabinlogDataSource", "reader", "register", "stream_reader"]
