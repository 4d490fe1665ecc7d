"""Shared fixtures: real MariaDB servers, the corpus in ``tests/corpus``, and the markers' checks.

Missing corpus data fails the test that needs it (``bash scripts/make-corpus.sh`` makes it).
A missing dependency (MariaDB programs, pyspark or Java) skips the
tests that need it with the reason shown, except under ``CI=true``, where it
fails them: CI must never pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import settings

from corpus_data import CORPUS, CorpusMissing, corpus_path
from mariadb_server import MariaDBServerFactory, missing_programs

REPO_ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")

# CI explores the same examples on every run (a fixed seed), so a submission's result does not
# depend on the draw; local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason`` locally; fail under CI."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: missing dependencies fail, they are not skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def mariadb_server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServerFactory]:
    """Session-wide factory of real MariaDB servers: ``server = mariadb_server_factory("--log-bin")``."""
    missing = missing_programs()
    if missing:
        unavailable(f"MariaDB programs not found: {', '.join(missing)} (run scripts/setup.sh)")
    factory = MariaDBServerFactory(tmp_path_factory.mktemp("mariadb"))
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """``tests/corpus``: real binlogs with golden outputs; fails (never skips) when it is missing."""
    try:
        corpus_path("manifest.tsv")
    except CorpusMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    return CORPUS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A corpus file missing while a test runs fails it naming the file and the command that makes it."""
    try:
        return (yield)
    except FileNotFoundError as error:
        if error.filename and Path(error.filename).resolve().is_relative_to(CORPUS):
            raise CorpusMissing(str(error.filename)) from error
        raise


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a MariaDB server ``mariadb``, so ``-m 'not mariadb'`` works."""
    for item in items:
        if "mariadb_server_factory" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.mariadb)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Check what the ``mariadb`` and ``spark`` markers promise before the test runs."""
    if item.get_closest_marker("mariadb") is not None:
        missing = missing_programs()
        if missing:
            unavailable(f"MariaDB programs not found: {', '.join(missing)} (run scripts/setup.sh)")
    if item.get_closest_marker("spark") is not None:
        if importlib.util.find_spec("pyspark") is None:
            unavailable("pyspark is not installed (run scripts/setup.sh)")
        java_home = os.environ.get("JAVA_HOME")
        if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").is_file()):
            unavailable("java not found: Spark needs a JDK (run scripts/setup.sh)")


FLOOR_FILE = REPO_ROOT / "tests" / "collect-floor.txt"


def _whole_suite(config: pytest.Config) -> bool:
    """True when pytest runs the whole suite: no path, ``-k`` or ``-m`` narrows it."""
    narrowed = config.getoption("keyword") or config.getoption("markexpr")
    paths = [Path(a.split("::")[0]).resolve() for a in config.args]
    return not narrowed and all(p == REPO_ROOT / "tests" or p == REPO_ROOT for p in paths)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The whole suite must not shrink below ``tests/collect-floor.txt``: a collection that silently
    lost tests (missing data, an import that fails) fails the run instead of passing smaller."""
    if not _whole_suite(session.config) or session.config.getoption("collectonly"):
        return
    floor = int(FLOOR_FILE.read_text().strip())
    if len(session.items) < floor:
        raise pytest.UsageError(
            f"only {len(session.items)} tests collected, fewer than the floor of {floor} in {FLOOR_FILE.name}:"
            " a test file failed to import or lost its data (see above); raise the floor only when tests grow"
        )
