"""Schema history: table schemas as of every position of a binlog stream, built from its DDL.

Layer: beside :mod:`mariabinlog.engine`; imports only :mod:`mariabinlog.errors`
and :mod:`mariabinlog.codec`.  See ``docs/schema-history.md``.
"""

from .agree import Resolution, history_metadata, resolve
from .ddl import Catalog
from .history import DdlRecord, SchemaHistory
from .model import Column, Table
from .tracker import SchemaTracker, typed_map_at

__all__ = [
    "Catalog",
    "Column",
    "DdlRecord",
    "Resolution",
    "SchemaHistory",
    "SchemaTracker",
    "Table",
    "history_metadata",
    "resolve",
    "typed_map_at",
]
