"""The source on a real Spark standalone cluster and over Spark Connect, on loopback.

The harness starts a master and two one-core workers from the pyspark package
(``spark-class org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``), each with
its own work directory, and stops them by pid.  A driver process (``--master spark://...``)
reads corpus binlogs and an `.ibb` set with OOB and file-crossing groups in batch and as a
stream; the tasks report their working directories, which prove they ran in the workers'
executors.  The corpus file and the `.ibb` set are also read from a loopback S3 server on the
cluster, and split settings changed after ``register()`` apply through ``reader()``.  The
pipeline (``run_pipeline(..., spark=session)``) runs on the cluster too; its jobs are tagged,
and the Spark event log shows every one of their tasks ran in a worker's executor.  The same
jobs run over Spark Connect (``start-connect-server.sh`` of pyspark,
``SparkSession.builder.remote``), the server's executors on the same cluster.  Results equal
the local session's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.spark.pipeline import run_pipeline

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SPARK_HOME = Path(__import__("pyspark").__file__).parent

#: What the driver process runs: batch read, executor directories, a stream, split settings, the
#: pipeline; prints JSON.
DRIVER = r'''
import json, os, sys
from pyspark.sql import SparkSession
from mariabinlog.spark import register
from mariabinlog.spark.pipeline import run_pipeline

target, legacy, ibb, out, remote, remote_ibb, remote_options = sys.argv[1:8]
builder = SparkSession.builder.config("spark.sql.session.timeZone", "UTC")
if target.startswith("sc://"):
    spark = builder.remote(target).getOrCreate()
else:
    os.makedirs(out + "/events", exist_ok=True)
    spark = (builder.master(target).config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
             .config("spark.cores.max", "2").config("spark.pyspark.python", sys.executable)
             .config("spark.sql.shuffle.partitions", "4").config("spark.eventLog.enabled", "true")
             .config("spark.eventLog.compress", "false")
             .config("spark.eventLog.dir", out + "/events").getOrCreate())
register(spark)
def read():
    return spark.read.format("mariabinlog").option("maxPartitionBytes", "16k").option("openCostInBytes", "0")
events = read().load(legacy)
rows = sorted([r.position, r.event_index, r.gtid or ""] for r in events.select("position", "event_index", "gtid").collect())
groups = sorted(r.gtid for r in read().option("view", "groups").load(ibb).select("gtid").collect())
remote_rows = sorted([r.position, r.event_index, r.gtid or ""] for r in read().options(**json.loads(remote_options))
                     .load(remote).select("position", "event_index", "gtid").collect())
remote_groups = sorted(r.gtid for r in read().options(**json.loads(remote_options)).option("view", "groups")
                       .load(remote_ibb).select("gtid").collect())
from pyspark.sql.functions import udf
where = udf(lambda _: os.getcwd(), "string")
dirs = sorted({r[0] for r in events.select(where("position")).collect()})
stream = (spark.readStream.format("mariabinlog").option("view", "groups").load(ibb).select("gtid").writeStream
          .format("parquet").option("path", out + "/data").option("checkpointLocation", out + "/cp")
          .trigger(availableNow=True).start())
stream.awaitTermination(300)
streamed = sorted(r.gtid for r in spark.read.parquet(out + "/data").collect())
from mariabinlog.spark import reader
from pyspark.sql.functions import spark_partition_id
def used_partitions(df):
    return df.select(spark_partition_id()).distinct().count()
spark.conf.set("spark.sql.files.openCostInBytes", "0")  # changed after register(): reader() takes them
spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
split_settings = [used_partitions(reader(spark).load(ibb))]
spark.conf.set("spark.sql.files.maxPartitionBytes", "1g")
split_settings.append(used_partitions(reader(spark).option("minPartitions", "1").load(ibb)))
spark.conf.unset("spark.sql.files.maxPartitionBytes")
spark.conf.unset("spark.sql.files.openCostInBytes")
spark.addTag("mariabinlog-pipeline")  # marks the pipeline's jobs in the event log
result = run_pipeline(ibb, out + "/pipeline", spark=spark)
spark.removeTag("mariabinlog-pipeline")
pipeline = {"rows": result.rows, "events": result.events, "cdc": spark.read.parquet(result.cdc).count(),
            "states": {name: spark.read.parquet(path).count() for name, path in sorted(result.states.items())}}
print("RESULT " + json.dumps({"rows": rows, "groups": groups, "dirs": dirs, "streamed": streamed,
                              "remote_rows": remote_rows, "remote_groups": remote_groups, "pipeline": pipeline, "split_settings": split_settings}))
spark.stop()
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None, f"process exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"port {port} never opened: {log.read_text()[-3000:]}"
            time.sleep(0.5)


def _env() -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    env.pop("SPARK_CONF_DIR", None)
    return env


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Path]]]:
    """(master URL, the two workers' work dirs) of a standalone cluster on loopback."""
    base = tmp_path_factory.mktemp("cluster")
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = _free_port()
    procs = [_start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                     str(port), "--webui-port", str(_free_port())], base / "master.log")]
    try:
        _wait_port(port, procs[0], base / "master.log")
        dirs = []
        for i in range(2):
            work = base / f"worker{i}"
            work.mkdir()
            dirs.append(work)
            procs.append(_start([spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                                 "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--work-dir", str(work),
                                 "--webui-port", str(_free_port())], base / f"worker{i}.log"))
        deadline = time.monotonic() + 120
        while sum("Successfully registered with master" in (base / f"worker{i}.log").read_text()
                  for i in range(2)) < 2:
            assert time.monotonic() < deadline, (base / "worker0.log").read_text()[-3000:]
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}", dirs
    finally:
        _stop(procs)


def _drive(target: str, legacy: str, ibb: str, out: Path, s3: Any) -> dict[str, Any]:
    """Run :data:`DRIVER` against ``target``; the remote reads are the S3 copies of ``legacy`` and
    of the `.ibb` set (OOB and file-crossing groups)."""
    script = out.parent / f"driver-{out.name}.py"
    script.write_text(DRIVER)
    remote = f"s3://{s3.bucket}/legacy/{Path(legacy).name}"
    done = subprocess.run([sys.executable, str(script), target, legacy, ibb, str(out), remote,
                           f"s3://{s3.bucket}/ibb", json.dumps(s3.options)], env=_env(),
                          capture_output=True, text=True, timeout=420)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"driver failed: {done.stdout[-2000:]}{done.stderr[-4000:]}"
    return dict(json.loads(lines[-1][len("RESULT "):]))


def _expected(spark: Any, legacy: str, ibb: str) -> tuple[list[list[Any]], list[str]]:
    rows = sorted([r.position, r.event_index, r.gtid or ""] for r in spark.read.format("mariabinlog").load(legacy)
                  .select("position", "event_index", "gtid").collect())
    groups = sorted(r.gtid for r in spark.read.format("mariabinlog").option("view", "groups").load(ibb)
                    .select("gtid").collect())
    return rows, groups


@pytest.fixture(scope="module")
def local_pipeline(spark: Any, stress_ibb: tuple[Path, list[str]], tmp_path_factory: pytest.TempPathFactory
                   ) -> dict[str, Any]:
    """What the pipeline makes of the stress `.ibb` set on the local session, as the driver reports it."""
    result = run_pipeline(str(stress_ibb[0]), str(tmp_path_factory.mktemp("local-pipeline")), spark=spark)
    return {"rows": result.rows, "events": result.events, "cdc": spark.read.parquet(result.cdc).count(),
            "states": {name: spark.read.parquet(path).count() for name, path in sorted(result.states.items())}}


def pipeline_task_executors(events: Path) -> list[str]:
    """Executor ids of the tasks of the jobs tagged ``mariabinlog-pipeline`` in the Spark event
    logs under ``events`` ("driver" for a task the driver ran itself, as in local mode)."""
    stages: set[int] = set()
    executors = []
    logs = sorted(p for p in events.rglob("*") if p.is_file() and not p.name.startswith((".", "appstatus")))
    assert logs, f"no Spark event log in {events}"
    for log in logs:
        with open(log) as lines:
            for line in lines:
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerJobStart" and any(
                        "mariabinlog-pipeline" in str(v) for v in (event.get("Properties") or {}).values()):
                    stages.update(event["Stage IDs"])
                elif kind == "SparkListenerTaskEnd" and event["Stage ID"] in stages:
                    executors.append(event["Task Info"]["Executor ID"])
    return executors


def _check_pipeline(got: dict[str, Any], expected: dict[str, Any], events: Path) -> None:
    """The pipeline's output equals the local session's, and every one of its tasks ran in an
    executor that a worker started (a standalone cluster has no other kind); split settings
    changed after ``register()`` took effect through ``reader()``."""
    assert got["pipeline"] == expected and expected["rows"] > 1000 and len(expected["states"]) >= 3
    many, one = got["split_settings"]  # tasks with data after changing spark.sql.files.* (reader())
    assert many > 10 and one == 1, got["split_settings"]
    executors = pipeline_task_executors(events)
    assert len(executors) > 10 and "driver" not in executors, executors


def test_standalone_cluster_runs_partitions_in_worker_executors(
        spark: Any, cluster: tuple[str, list[Path]], corpus_dir: Path, stress_ibb: tuple[Path, list[str]],
        s3_data: Any, local_pipeline: dict[str, Any], tmp_path: Path) -> None:
    master, work_dirs = cluster
    legacy, ibb = str(corpus_dir / "binlogs" / "w02_types_full"), str(stress_ibb[0])
    got = _drive(master, legacy, ibb, tmp_path / "standalone", s3_data)
    rows, groups = _expected(spark, legacy, ibb)
    assert got["rows"] == rows and len(rows) > 100
    assert got["remote_rows"] == rows
    assert got["groups"] == groups == sorted(stress_ibb[1]) == got["remote_groups"]
    assert got["streamed"] == groups
    assert got["dirs"] and all(any(d.startswith(str(w) + os.sep) for w in work_dirs) for d in got["dirs"]), got["dirs"]
    _check_pipeline(got, local_pipeline, tmp_path / "standalone" / "events")


def test_spark_connect_reads_like_a_local_session(
        spark: Any, cluster: tuple[str, list[Path]], corpus_dir: Path, stress_ibb: tuple[Path, list[str]],
        s3_data: Any, local_pipeline: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same jobs over Spark Connect, the server's executors on the standalone cluster."""
    master, work_dirs = cluster
    port = _free_port()
    log = tmp_path / "connect.log"
    events = tmp_path / "connect" / "events"
    events.mkdir(parents=True)
    monkeypatch.setenv("SPARK_LOG_DIR", str(tmp_path))
    monkeypatch.setenv("SPARK_PID_DIR", str(tmp_path))
    server = _start([str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--master", master,
                     "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
                     "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m",
                     "--conf", "spark.cores.max=2", "--conf", "spark.sql.session.timeZone=UTC",
                     "--conf", "spark.sql.shuffle.partitions=4",
                     "--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.compress=false",
                     "--conf", f"spark.eventLog.dir={events}"], log)
    try:
        _wait_port(port, server, log, 180)
        legacy, ibb = str(corpus_dir / "binlogs" / "w02_types_full"), str(stress_ibb[0])
        got = _drive(f"sc://127.0.0.1:{port}", legacy, ibb, tmp_path / "connect", s3_data)
    finally:
        _stop([server])
    rows, groups = _expected(spark, legacy, ibb)
    assert got["rows"] == rows == got["remote_rows"] and got["groups"] == groups == got["remote_groups"]
    assert got["streamed"] == groups
    assert got["dirs"] and all(any(d.startswith(str(w) + os.sep) for w in work_dirs) for d in got["dirs"]), got["dirs"]
    _check_pipeline(got, local_pipeline, events)
