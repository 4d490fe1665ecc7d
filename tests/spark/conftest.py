"""Fixtures of the Spark tests: one small local Spark session per test run and `.ibb` inputs.

The session is ``local[2]`` with the UI off and two shuffle partitions, shared by every test
(starting Spark costs about ten seconds).  Its Python workers run this interpreter.  The
``mariabinlog`` source is registered on it; tests that change the pushdown setting register
again and restore it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.engine import Engine
from mariabinlog.tools.sample import SampleBuilder, SampleInfo, commit_group, write_sample


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared local Spark session with ``mariabinlog`` registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from mariabinlog.spark import register

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("mariabinlog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()


#: Engine settings of the stress input: 4-page files, states every 2 pages, spill past 3000 bytes.
STRESS_ENGINE = {
    "max_binlog_size": 4 * 16384,
    "state_interval": 2 * 16384,
    "spill_size": 3000,
    "oob_piece_size": 1100,
    "durability": 0,
    "redo_capacity": 1 << 20,
}


def write_stress_ibb(directory: Path) -> list[str]:
    """`.ibb` files written by the engine, full of hard cases; returns the GTIDs in commit order.

    Four-page files (so groups cross files), GTID states every two pages, small groups, groups
    written out-of-band whose nodes lie in earlier files than their COMMIT record, OOB groups
    whose nodes interleave with other groups' commits, and a FLUSH BINARY LOGS in the middle.
    """
    engine = Engine.open(str(directory), server_id=1, **STRESS_ENGINE)
    builder = SampleBuilder(seed=3)
    order: list[str] = []
    try:
        for table in builder.tables:
            order.append(str(commit_group(engine, builder.ddl(table))))
        for i in range(300):
            domain = (0, 1, 2, 0)[i % 4]
            size = 120 if i % 9 == 4 else builder.rnd.randint(1, 5)
            order.append(str(commit_group(engine, builder.transaction(domain, domain + 1, size))))
            builder.tick(builder.rnd.randint(1, 30))
            if i % 25 == 10:
                # A big transaction of domain 3 is written out-of-band while others commit.
                big = builder.bulk_load(3, 9, 400)
                rest = b"".join(big[1:])
                trx = engine.begin()
                trx.write(rest[: len(rest) // 2])
                for _ in range(3):
                    order.append(str(commit_group(engine, builder.transaction(0, 1, 2))))
                trx.write(rest[len(rest) // 2 :])
                order.append(str(commit_group(engine, big, trx)))
            if i == 150:
                engine.flush()
    finally:
        engine.close()
    return order


@pytest.fixture(scope="session")
def stress_ibb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """(directory, GTIDs in commit order) of :func:`write_stress_ibb`."""
    directory = tmp_path_factory.mktemp("stress-ibb")
    return directory, write_stress_ibb(directory)


@pytest.fixture(scope="session")
def sample_ibb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SampleInfo]:
    """(directory, what was written) of the bundled sample."""
    directory = tmp_path_factory.mktemp("sample-ibb")
    return directory, write_sample(str(directory))
