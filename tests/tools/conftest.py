"""Fixtures for running ``python -m mariabinlog`` as a separate process, as users do."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tool_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for ``python -m mariabinlog`` subprocesses.

    The checkers start the tool hundreds of times; compiled bytecode is cached
    (under a private prefix, never in the source tree) even where the
    environment sets PYTHONDONTWRITEBYTECODE, so each start costs ~50 ms, not ~200.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    env["TZ"] = "UTC"
    return env


@pytest.fixture(scope="session")
def tool_command() -> str:
    """The tool template for ``compare.py``: this interpreter running ``mariabinlog dump``."""
    return f"{sys.executable} -m mariabinlog dump {{options}} {{files}}"


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC while the test runs: header comment times are local time, and the
    corpus goldens were recorded with TZ=UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()
