"""ARCHITECTURE.md stays the map of the code: every source file named, nothing named that is gone.

The file map (the ``## File map`` section) names each ``.py``, ``.pyi``, ``.c`` and ``.h`` file under
``src/mariabinlog`` by its path in a table row of its room; anywhere in the document a
backticked file path must exist.  Files stay under 1,000 lines (one concept per module).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mariabinlog"
MAP = ROOT / "ARCHITECTURE.md"
SOURCE_SUFFIXES = (".py", ".pyi", ".c", ".h")
MAX_LINES = 1000


def source_files(src: Path) -> set[str]:
    """Every source file under ``src``, as a path relative to it."""
    return {p.relative_to(src).as_posix() for p in src.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()}


def file_map(text: str) -> list[str]:
    """The files the ``## File map`` section names, one per table row (first cell), in order."""
    section = text.split("\n## File map", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)


def named_paths(text: str) -> set[str]:
    """Every backticked token of the document that is a source file's name or path."""
    tokens = re.findall(r"`([^`\s]+)`", text)
    return {t for t in tokens if re.fullmatch(r"[\w./-]*\w\.(py|pyi|c|h)", t)}


def unknown_paths(text: str, src: Path, root: Path) -> list[str]:
    """Named paths that exist neither under ``src`` nor under ``root``; a bare file name must be
    the name of one of ``src``'s files."""
    files = source_files(src)
    names = {Path(f).name for f in files}
    bad = []
    for token in sorted(named_paths(text)):
        if "/" not in token:
            if token not in names:
                bad.append(token)
        elif token not in files and not (root / token).is_file():
            bad.append(token)
    return bad


def test_every_source_file_is_on_the_map() -> None:
    """A module added without its row on the map fails here, naming it."""
    text = MAP.read_text(encoding="utf-8")
    mapped = file_map(text)
    files = source_files(SRC)
    assert len(files) > 100, "the scan sees the real tree"
    missing = sorted(files - set(mapped))
    assert not missing, "source files missing from ARCHITECTURE.md's file map:\n" + "\n".join(
        f"    {f}" for f in missing
    )
    twice = sorted({f for f in mapped if mapped.count(f) > 1})
    assert not twice, f"named twice in the file map: {twice}"


def test_the_map_names_no_file_that_does_not_exist() -> None:
    """A module moved or removed leaves no stale path behind in ARCHITECTURE.md."""
    text = MAP.read_text(encoding="utf-8")
    gone = sorted(set(file_map(text)) - source_files(SRC))
    assert not gone, f"the file map names files that do not exist: {gone}"
    bad = unknown_paths(text, SRC, ROOT)
    assert not bad, f"ARCHITECTURE.md names files that do not exist: {bad}"


def test_no_python_file_over_1000_lines() -> None:
    """One concept per module: a file past 1,000 lines is split along its seams."""
    long = {
        p.relative_to(SRC).as_posix(): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"Python files over {MAX_LINES} lines: {long}"


def test_the_checks_fail_on_a_missing_and_a_stale_file(tmp_path: Path) -> None:
    """The checker itself: a file absent from the map and a path to nothing are both reported."""
    src = tmp_path / "src" / "mariabinlog"
    (src / "codec" / "ibb").mkdir(parents=True)
    for name in ("__init__.py", "codec/__init__.py", "codec/ibb/page.py", "codec/ibb/reader.py"):
        (src / name).write_text("")
    text = (
        "# map\n\n## File map\n\n| file | owns |\n| --- | --- |\n"
        "| `__init__.py` | root |\n| `codec/__init__.py` | x |\n| `codec/ibb/page.py` | pages |\n"
        "| `codec/ibb_page.py` | stale |\n\n## One home per concept\n\nsee `codec/ibb/reader.py`, `reader.py`, `gone.py`\n"
    )
    assert sorted(source_files(src) - set(file_map(text))) == ["codec/ibb/reader.py"]
    assert sorted(set(file_map(text)) - source_files(src)) == ["codec/ibb_page.py"]
    assert unknown_paths(text, src, tmp_path) == ["codec/ibb_page.py", "gone.py"]
