"""The live mirror: Delta or Iceberg tables that follow a growing binlog directory.

``mariabinlog pipeline DIR --out OUT --format delta|iceberg [--follow]`` (docs/mirror.md).
Modules: :mod:`.job` (the first run, the Structured Streaming query, the ledger, progress,
``--status``), :mod:`.apply` (one stretch of the stream applied with the batch pipeline's
semantics), :mod:`.position` (positions and the schema history cut at one), :mod:`.lake` (what
the mirror asks of a table), :mod:`.delta` (delta-rs) and :mod:`.iceberg` (pyiceberg).
"""
