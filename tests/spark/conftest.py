"""Fixtures of the Spark tests: one small local Spark session per test run and `.ibb` inputs.

The session is ``local[2]`` with the UI off and two shuffle partitions, shared by every test
(starting Spark costs about ten seconds).  Its Python workers run this interpreter.  The
``mariabinlog`` source is registered on it; tests that change the pushdown setting register
again and restore it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

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
        # A Python worker that starts slowly on a busy machine (a streaming source's runner
        # imports pyspark, pyarrow and mariabinlog) is not a failure: 15 s is Spark's default.
        .config("spark.python.authenticate.socketTimeout", "120s")
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


# -- an S3-compatible server on loopback (moto's server mode) --------------------------------------

BUCKET = "binlogs"


class S3Data(NamedTuple):
    """The loopback S3 server's data-source options, its bucket and an upload function."""

    options: dict[str, str]
    bucket: str
    put: Callable[[Path, str], None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on loopback (stopped by pid); yields the data-source options for it."""
    server = Path(sys.executable).parent / "moto_server"
    assert server.exists(), "moto's server is missing: run `bash scripts/setup.sh` (installs requirements/test.txt)"
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, f"moto did not start: {log.read_text()}"
                time.sleep(0.2)
        yield {
            "fs.s3.endpoint": f"http://127.0.0.1:{port}",
            "fs.s3.region": "us-east-1",
            "fs.s3.accessKey": "testing",
            "fs.s3.secretKey": "testing",
        }
    finally:
        proc.terminate()
        proc.wait(20)


def s3_filesystem(options: dict[str, str]) -> Any:
    """A pyarrow client of the loopback S3 server (creates buckets)."""
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(endpoint_override=options["fs.s3.endpoint"].split("//")[1], scheme="http",
                             region="us-east-1", access_key="testing", secret_key="testing", allow_bucket_creation=True)


def upload(options: dict[str, str], local: Path, key: str) -> None:
    """Put ``local``'s bytes at ``key`` of the test bucket."""
    fs = s3_filesystem(options)
    with fs.open_output_stream(f"{BUCKET}/{key}") as out:
        out.write(local.read_bytes())


@pytest.fixture(scope="session")
def s3_data(s3_server: dict[str, str], corpus_dir: Path, stress_ibb: tuple[Path, list[str]]) -> S3Data:
    """The bucket filled: ``legacy/<workload>/mysql-bin.*`` and ``ibb/binlog-*.ibb``."""
    fs = s3_filesystem(s3_server)
    fs.create_dir(BUCKET)
    for path in sorted(corpus_dir.glob("binlogs/*/mysql-bin.*")):
        upload(s3_server, path, f"legacy/{path.parent.name}/{path.name}")
    for path in sorted(stress_ibb[0].glob("binlog-*.ibb")):
        upload(s3_server, path, f"ibb/{path.name}")
    return S3Data(s3_server, BUCKET, lambda local, key: upload(s3_server, local, key))


