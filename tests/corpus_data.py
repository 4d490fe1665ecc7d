"""Where tests find the recorded corpus (``tests/corpus``), and how they fail when it is missing.

The corpus is committed; ``bash scripts/make-corpus.sh`` remakes it from a real MariaDB
server and the real ``mariadb-binlog``.  A missing file or an empty listing raises
:class:`CorpusMissing` naming what is missing and that command, so a test without its data
fails (at collection when it parametrizes over the corpus), never skips.
"""

from __future__ import annotations

from pathlib import Path

#: The corpus folder, inside the repository.
CORPUS: Path = Path(__file__).resolve().parent / "corpus"

#: The command that makes the corpus.
MAKE_COMMAND = "bash scripts/make-corpus.sh"


class CorpusMissing(FileNotFoundError):
    """Part of the corpus a test needs is not there."""

    def __init__(self, what: str) -> None:
        super().__init__(f"test corpus missing: {what} (make it with: {MAKE_COMMAND})")


def corpus_path(relative: str) -> Path:
    """``tests/corpus/<relative>``, which must exist."""
    path = CORPUS / relative
    if not path.exists():
        raise CorpusMissing(str(path))
    return path


def corpus_glob(pattern: str) -> list[Path]:
    """The sorted corpus paths matching ``pattern``; at least one must exist."""
    found = sorted(CORPUS.glob(pattern))
    if not found:
        raise CorpusMissing(f"no {CORPUS / pattern}")
    return found
