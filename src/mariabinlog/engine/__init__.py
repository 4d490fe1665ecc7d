"""Crash-safe, page-based binlog storage engine writing MariaDB-compatible `.ibb` files.

The handlerton methods of the binlog-in-engine design (seed 002) map to:

* ``binlog_init`` -> :meth:`Engine.open` (creates, or recovers after a crash);
* ``binlog_write_direct[_ordered]`` -> :meth:`Engine.commit` (GTID event first, commit order);
* ``binlog_oob_data[_ordered]`` / ``binlog_oob_reset`` -> :meth:`Engine.begin`,
  :meth:`Transaction.write`, :meth:`Transaction.rollback`;
* ``binlog_group_commit_ordered`` -> :meth:`Engine.group_commit`;
* XA -> :meth:`Transaction.prepare`, :meth:`Engine.xa_commit`, :meth:`Engine.xa_rollback`,
  :meth:`Engine.pending_xa`;
* ``get_binlog_reader`` -> :meth:`Engine.reader` (:class:`EngineReader`);
* ``binlog_status`` / ``get_binlog_file_list`` / ``get_filename`` -> :meth:`Engine.status`,
  :meth:`Engine.files_list`, :meth:`Engine.filename`;
* ``binlog_flush`` / ``binlog_purge`` / ``reset_binlogs`` / ``binlog_get_init_state`` ->
  :meth:`Engine.flush`, :meth:`Engine.purge`, :meth:`Engine.reset`, :meth:`Engine.initial_state`;
* backup -> :meth:`Engine.backup`, :func:`mariabinlog.engine.backup.backup_from_outside` and
  :func:`mariabinlog.engine.backup.prepare`.

Module map (rooms named after the design's concepts; docs/engine-crash-safety.md):
:mod:`.engine` (writer, group commit, durable offset, checkpoints), :mod:`.transaction`
(running groups and their OOB forest), the rooms the engine holds (:mod:`.xa`, :mod:`.purge`,
:mod:`.backup`, :mod:`.batch`, :mod:`.gtids`; their interfaces :mod:`.host`), :mod:`.redo` (redo log),
:mod:`.fifo` (page FIFO, flush and pre-allocation threads), :mod:`.storage` (file I/O),
:mod:`.files` (file naming and discovery), :mod:`.recovery`, :mod:`.view` (look-only view),
:mod:`.reader`, :mod:`.source` (durable-clipped page source), :mod:`.check`
(offline verifier), :mod:`.cli`, :mod:`.config`, :mod:`.dirlock` (one engine per directory).  The GTID state record and the GTID seek are
the codec's (:mod:`mariabinlog.codec.ibb.state`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as type checkers see them (redundant aliases: re-exports)
    from .backup import BackupInfo as BackupInfo
    from .backup import prepare as prepare
    from .check import CheckReport as CheckReport
    from .check import check_directory as check_directory
    from .config import EngineConfig as EngineConfig
    from .engine import Engine as Engine
    from .reader import EngineReader as EngineReader
    from .transaction import BinlogListEntry as BinlogListEntry
    from .transaction import CommitInfo as CommitInfo
    from .transaction import EngineStatus as EngineStatus
    from .transaction import PendingXa as PendingXa
    from .transaction import Transaction as Transaction

#: The package's names and their modules, imported on first use (PEP 562): a reader that
#: needs only :mod:`.files` (a Spark worker, a planning process) does not load the writer.
_EXPORTS = {
    "BackupInfo": "backup",
    "prepare": "backup",
    "CheckReport": "check",
    "check_directory": "check",
    "EngineConfig": "config",
    "BinlogListEntry": "transaction",
    "Engine": "engine",
    "EngineStatus": "transaction",
    "CommitInfo": "transaction",
    "PendingXa": "transaction",
    "Transaction": "transaction",
    "EngineReader": "reader",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
