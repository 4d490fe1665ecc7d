"""The binlog files of a directory, in the order the server lists them (SHOW BINARY LOGS).

Legacy directories: the names in the ``*.index`` file when there is one, else every
file that starts with the binlog magic, by name.  `.ibb` directories: every
``binlog-NNNNNN.ibb`` up to the last one with a header (pre-allocated empty files
after it are not logs yet), with its size on disk; an engine directory (with its redo
log) as ``mariabinlog engine files`` shows it: as the next open will recover it (a
killed writer leaves files that recovery cuts or deletes).  ``mariabinlog files DIR`` prints this list; ``dump DIR`` and
``events DIR`` read the files in this order.
"""

from __future__ import annotations

import os


def binary_logs(directory: str) -> list[tuple[str, int]]:
    """SHOW BINARY LOGS for ``directory``: (name, size) of each binlog file, in order."""
    from ..engine.files import binlog_kind, binlog_name, ibb_file_no  # the engine package is slow to import
    from ..engine.redo import REDO_NAME

    names = sorted(os.listdir(directory))
    if REDO_NAME in names:  # an engine directory: its files as the next open will recover them
        from ..engine.view import view

        return [(binlog_name(n), size) for n, size in view(directory).files]
    ibb = sorted((n for n in names if ibb_file_no(n) is not None), key=ibb_file_no)  # type: ignore[arg-type,return-value]
    if ibb:
        written = [n for n in ibb if binlog_kind(os.path.join(directory, n)) == "ibb"]
        if written:
            last = ibb.index(written[-1])
            ibb = ibb[: last + 1]
        else:
            ibb = []
        return [(n, os.path.getsize(os.path.join(directory, n))) for n in ibb]
    listed = _index_names(directory, names)
    if listed is None:
        listed = [n for n in names if binlog_kind(os.path.join(directory, n)) == "legacy"]
    return [(n, os.path.getsize(os.path.join(directory, n))) for n in listed]


def _index_names(directory: str, names: list[str]) -> list[str] | None:
    """The binlog names of the directory's ``*.index`` file (as the server keeps it), if any."""
    for name in names:
        if name.endswith(".index"):
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                entries = [line.strip() for line in f if line.strip()]
            return [
                os.path.basename(e) for e in entries if os.path.isfile(os.path.join(directory, os.path.basename(e)))
            ]
    return None
