"""One engine per directory: an exclusive ``flock`` on the directory, held while an engine has it open.

Why: two writers on one directory would interleave redo records and pages; the lock refuses the
second ``Engine.open`` (another process, or this one), and ``engine backup`` asks :func:`in_use`
to know when it must copy from outside.  Look-only commands (``engine/view.py``) never take it.
"""

from __future__ import annotations

import fcntl
import os

from ..errors import EngineError


def lock_directory(directory: str) -> int:
    """Take the directory's lock; returns the descriptor that holds it (close it to let go)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise EngineError(f"{directory}: the binlog directory is in use by another engine") from None
    return fd


def in_use(directory: str | os.PathLike[str]) -> bool:
    """True while another engine (another process, or this one) has ``directory`` open."""
    fd = os.open(os.fspath(directory), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
