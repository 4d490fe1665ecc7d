"""The binlog files of a directory, in the order the server lists them (SHOW BINARY LOGS).

The order is the engine's one rule (``engine.files.binlog_streams``): the names in the
``*.index`` file when there is one, else every file that starts with a binlog magic, `.ibb`
files then legacy files, by number (pre-allocated `.ibb` files nothing was written to
are not logs yet), with its size on disk; an engine directory (with its redo
log) as ``mariabinlog engine files`` shows it: as the next open will recover it (a
killed writer leaves files that recovery cuts or deletes).  ``mariabinlog files DIR`` prints this list; ``dump DIR`` and
``events DIR`` read the files in this order.
"""

from __future__ import annotations

import os


def binary_logs(directory: str) -> list[tuple[str, int]]:
    """SHOW BINARY LOGS for ``directory``: (name, size) of each binlog file, in order."""
    from ..engine.files import binlog_name, binlog_streams, describe_binlog, local_indexes  # the engine package is slow to import
    from ..engine.redo import REDO_NAME

    names = sorted(os.listdir(directory))
    if REDO_NAME in names:  # an engine directory: its files as the next open will recover them
        from ..engine.view import view

        return [(binlog_name(n), size) for n, size in view(directory).files]
    paths = [os.path.join(directory, n) for n in names]
    found = [f for f in (describe_binlog(p) for p in paths if os.path.isfile(p)) if f is not None]
    return [(os.path.basename(f.path), f.size) for f in binlog_streams(found, local_indexes(paths))]
