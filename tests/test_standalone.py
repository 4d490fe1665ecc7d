"""The repository stands alone: nothing it tracks reaches for a folder beside it or a path of the
machine it was written on, so a fresh clone with nothing beside it has all it needs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: A path to the reading room beside the repository, or an absolute path into the writers' machine.
OUTSIDE = re.compile(r'\.\./+shared\b|"shared"\s*/\s*"corpus"|/\s*"shared"|(?:^|[^A-Za-z0-9_.-])/wor[k]/')
SCOPES = ("src", "tests", "scripts", "bench", ".ci", "docs", "README.md", "ARCHITECTURE.md", "pyproject.toml")


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SCOPES],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.split(b"\0")
    return [REPO / n.decode() for n in names if n]


def test_nothing_reaches_outside_the_repository() -> None:
    hits = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary corpus files, or a file deleted in the working tree
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not hits, "these lines reach outside the repository:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_must() -> None:
    beside = "sha" + "red"  # spelled in two pieces so that this file does not match itself
    assert OUTSIDE.search(f'CORPUS = ROOT.parent / "{beside}" / "corpus"')
    assert OUTSIDE.search(f"see ../{beside}/spec/events.md")
    assert OUTSIDE.search("cd /wor" + "k/main && ls")
    assert not OUTSIDE.search("shared_memory = 1; /home/user/work/x")
