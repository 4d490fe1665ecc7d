"""Fixtures for the engine tests (helpers live in ``engine_helpers``, importable from here on)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_helpers import SMALL

from mariabinlog.engine import Engine


@pytest.fixture
def engine_dir(tmp_path: Path) -> Path:
    """An empty directory for one engine."""
    path = tmp_path / "binlog"
    path.mkdir()
    return path


@pytest.fixture
def open_engine(engine_dir: Path) -> Iterator[object]:
    """``open_engine(**options)``: opens engines in ``engine_dir`` (small files) and closes them at the end."""
    engines: list[Engine] = []

    def opener(directory: Path | None = None, **options: object) -> Engine:
        settings = dict(SMALL)
        settings.update(options)
        engine = Engine.open(directory or engine_dir, **settings)  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield opener
    for engine in engines:
        engine.close()
