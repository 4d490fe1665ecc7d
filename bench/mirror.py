"""The live mirror's goals (issue 28), measured: latency, a sustained OLTP rate, incremental runs.

* ``latency``: a private MariaDB primary, ``mariabinlog archive --stop-never`` and ``mariabinlog
  pipeline ARCHIVE --out OUT --format F --follow`` (its default trigger) all on this machine; a
  client commits one row every half second (PyMySQL, autocommit) and a reader polls the state
  table with the format's own library (``deltalake`` / ``pyiceberg``) every 100 ms: the time
  from COMMIT returning to the row being visible, p50, p90 and max.  Goal: p50 <= 5 s, max <= 15 s.
* ``sustain``: the same set-up under an OLTP workload at full speed (``--clients`` clients over
  as many GTID domains, transactions of 1-3 changes of a ~100-byte row: inserts, updates by a
  secondary key, a delete now and then, the shape of the OLTP benchmark): the primary's rate,
  the rate the job applies GTIDs at, its largest lag (from its own progress lines) and how long
  it takes to catch up once the clients stop.  Goal: the job keeps up with ``archive``.
* ``incremental``: ``bench/workload.py``'s ROW binlog (``--bytes``) cut at a group boundary
  after 99 % of its bytes: a first run of the pipeline on it (the full run), then the last 1 %
  appended and a second run (incremental, ``Trigger.AvailableNow`` from the first run's end),
  and a third with nothing new (the fixed cost).  Each is the ``mariabinlog pipeline`` command,
  start-up included.  Goal: incremental <= 10 % of the full run.

Each line says the machine's load average: the figures are the machine's as much as ours.

    python bench/mirror.py [--format delta,iceberg] [--only latency,sustain,incremental]
                           [--seconds 60] [--clients 4] [--bytes 200M]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "src"))
sys.path.insert(0, str(REPO_ROOT / "bench"))
sys.path.insert(0, str(REPO_ROOT / "tests"))

from mariadb_server import MariaDBServer  # noqa: E402  (found through the paths set above)

PRIMARY_OPTIONS = ("--log-bin", "--binlog-format=ROW", "--server-id=1", "--default-time-zone=+00:00",
                   "--character-set-server=utf8mb4", "--innodb-flush-log-at-trx-commit=0", "--sync-binlog=0",
                   "--innodb-buffer-pool-size=256M", "--max-connections=64")


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


class Live:
    """A primary, its archiver and a ``pipeline --follow`` job, under ``root``."""

    def __init__(self, root: Path, table_format: str, schema_sql: str) -> None:
        self.root = root
        self.format = table_format
        self.server = MariaDBServer(root / "primary", PRIMARY_OPTIONS)
        self.server.start()
        self.server.sql("CREATE USER 'arch'@'%' IDENTIFIED BY 'arch'; GRANT REPLICATION SLAVE, REPLICATION CLIENT,"
                        " BINLOG MONITOR ON *.* TO 'arch'@'%'")
        self.server.pipe(schema_sql)
        self.archive, self.out = root / "archive", root / "out"
        self.archiver = subprocess.Popen(
            [sys.executable, "-m", "mariabinlog", "archive", "--from",
             f"mariadb://arch:arch@127.0.0.1:{self.server.port}", "--dir", str(self.archive), "--stop-never",
             "--heartbeat", "0.5", "--quiet"], stderr=subprocess.DEVNULL)
        _wait(lambda: (self.archive / "schema-history.json").exists(), 120, "the archive")
        self.log = open(root / "job.log", "wb")
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        self.job = subprocess.Popen(
            [sys.executable, "-m", "mariabinlog", "pipeline", str(self.archive), "--out", str(self.out), "--format",
             table_format, "--follow", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=2"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        _wait(lambda: (self.out / "_mirror" / "mirror.json").exists(), 900, "the job's first run")

    def connect(self) -> Any:
        import pymysql

        return pymysql.connect(**self.server.connect_kwargs(), autocommit=True)

    def position(self) -> dict[str, Any]:
        return json.loads((self.out / "_mirror" / "mirror.json").read_text())["position"]

    def progress(self) -> list[dict[str, Any]]:
        path = self.out / "_mirror" / "progress.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def caught_up(self) -> bool:
        want = self.server.rows("SELECT @@gtid_binlog_pos")[0][0]
        have = {}
        for gtid in (self.position().get("gtid_state") or "").split(","):
            if gtid:
                domain, _, seq = gtid.split("-")
                have[domain] = max(have.get(domain, 0), int(seq))
        return all(have.get(g.split("-")[0], 0) >= int(g.split("-")[2]) for g in want.split(",") if g)

    def close(self) -> None:
        for proc in (self.job, self.archiver):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (self.job, self.archiver):
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.log.close()
        self.server.stop()


def _wait(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


class StateReader:
    """The ids of a mirror's state table, read with the format's own library."""

    def __init__(self, out: Path, table_format: str, database: str, table: str) -> None:
        self.out, self.format, self.database, self.table = out, table_format, database, table
        self.handle: Any = None

    def ids(self) -> set[int]:
        if self.format == "delta":
            from deltalake import DeltaTable

            path = self.out / "state" / f"{self.database}.{self.table}"
            if self.handle is None:
                if not (path / "_delta_log").is_dir():
                    return set()
                self.handle = DeltaTable(str(path))
            else:
                self.handle.update_incremental()
            return set(self.handle.to_pyarrow_table(columns=["id"]).column("id").to_pylist())
        from pyiceberg.catalog.sql import SqlCatalog

        if self.handle is None:
            catalog = SqlCatalog("mariabinlog", uri=f"sqlite:///{self.out}/catalog.db", warehouse=f"file://{self.out}")
            if not catalog.table_exists((self.database, self.table)):
                return set()
            self.handle = catalog.load_table((self.database, self.table))
        else:
            self.handle.refresh()
        return set(self.handle.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist())


def latency(table_format: str, seconds: float, root: Path) -> dict[str, Any]:
    """Commit-to-visible times of single-row commits (module docstring)."""
    live = Live(root, table_format, "CREATE DATABASE pings; CREATE TABLE pings.ping (id INT PRIMARY KEY,"
                                    " at DATETIME(6) NOT NULL);")
    try:
        reader = StateReader(live.out, table_format, "pings", "ping")
        connection = live.connect()
        committed: dict[int, float] = {}
        seen: dict[int, float] = {}
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                try:
                    visible = reader.ids()
                except Exception:  # a commit in progress: read again
                    visible = set()
                now = time.time()
                for key in visible:
                    seen.setdefault(key, now)
                stop.wait(0.1)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        with connection.cursor() as cursor:  # warm-up: the first micro-batch creates the table
            cursor.execute("INSERT INTO pings.ping VALUES (0, NOW(6))")
        _wait(lambda: 0 in seen, 600, "the first row")
        started, n = time.monotonic(), 1
        while time.monotonic() - started < seconds:
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO pings.ping VALUES (%s, NOW(6))", (n,))
            committed[n] = time.time()
            n += 1
            time.sleep(0.5)
        _wait(lambda: all(k in seen for k in committed), 120, "the last rows")
        stop.set()
        poller.join()
        waits = sorted(seen[k] - committed[k] for k in committed)
        return {"rows": len(waits), "p50": statistics.median(waits), "p90": waits[int(len(waits) * 0.9) - 1],
                "max": waits[-1], "load": os.getloadavg()[0]}
    finally:
        live.close()


OLTP_SCHEMA = """
CREATE DATABASE oltp;
CREATE TABLE oltp.accounts (id BIGINT PRIMARY KEY, owner INT NOT NULL, balance DECIMAL(12,2) NOT NULL,
  note VARCHAR(60) NOT NULL, updated DATETIME(6) NOT NULL, KEY (owner));
"""


def _oltp_client(live: Live, number: int, clients: int, stop: threading.Event, counts: list[int]) -> None:
    """Transactions of 1-3 changes of a ~100-byte row in GTID domain ``number``."""
    connection = live.connect()
    rnd = random.Random(number)
    next_id = number
    with connection.cursor() as cursor:
        cursor.execute(f"SET SESSION gtid_domain_id = {number}")
        while not stop.is_set():
            cursor.execute("BEGIN")
            for _ in range(rnd.randint(1, 3)):
                pick = rnd.random()
                if pick < 0.5 or next_id < clients * 20:
                    cursor.execute("INSERT INTO oltp.accounts VALUES (%s, %s, %s, %s, NOW(6))",
                                   (next_id, rnd.randrange(1000), rnd.randint(0, 10**6) / 100, "x" * 40))
                    next_id += clients
                elif pick < 0.95:
                    cursor.execute("UPDATE oltp.accounts SET balance = balance + 1, updated = NOW(6) WHERE owner = %s"
                                   " LIMIT 1", (rnd.randrange(1000),))
                else:
                    cursor.execute("DELETE FROM oltp.accounts WHERE id = %s",
                                   (number + clients * rnd.randrange(max(1, next_id // clients)),))
            cursor.execute("COMMIT")
            counts[number] += 1
    connection.close()


def sustain(table_format: str, seconds: float, clients: int, root: Path) -> dict[str, Any]:
    """The job under a full-speed OLTP workload (module docstring)."""
    live = Live(root, table_format, OLTP_SCHEMA)
    try:
        stop = threading.Event()
        counts = [0] * clients
        threads = [threading.Thread(target=_oltp_client, args=(live, i, clients, stop, counts), daemon=True)
                   for i in range(clients)]
        before = len(live.progress())
        started = time.monotonic()
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        stopped = time.monotonic()
        _wait(live.caught_up, 1800, "the job to catch up")
        catch_up = time.monotonic() - stopped
        records = live.progress()[before:]
        applied = sum(sum(r["tables"].values()) for r in records)
        lag = max((r["behind_gtids"] for r in records), default=0)
        lag_s = max((r["behind_seconds"] or 0 for r in records), default=0)
        total = sum(counts)
        return {"transactions": total, "primary_tps": total / elapsed, "job_gtids_per_s": total / (elapsed + catch_up),
                "row_changes": applied, "batches": len(records), "max_lag_gtids": lag, "max_lag_s": lag_s,
                "catch_up_s": catch_up, "load": os.getloadavg()[0]}
    finally:
        live.close()


def _run(args: list[str], log: Path) -> float:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    started = time.monotonic()
    with open(log, "ab") as handle:
        subprocess.run([sys.executable, "-m", "mariabinlog", "pipeline", *args], check=True, stdout=handle,
                       stderr=subprocess.STDOUT, env=env)
    return time.monotonic() - started


def incremental(table_format: str, size: int, root: Path) -> dict[str, Any]:
    """A full run on 99 % of the bench binlog, then runs with the last 1 % and with nothing new."""
    from pyspark.sql.streaming.datasource import ReadMaxBytes

    import workload
    from mariabinlog.spark.mirror.job import stream_reader

    binlog = workload.make_binlog(size)[0]
    source, out, log = root / "binlogs", root / "out", root / "runs.log"
    source.mkdir()
    whole = binlog.stat().st_size
    shutil.copyfile(binlog, source / binlog.name)
    reader = stream_reader(str(source), {})
    cut = reader.latestOffset(reader.initialOffset(), ReadMaxBytes(int(whole * 0.99)))
    with open(source / binlog.name, "r+b") as handle:
        handle.truncate(int(cut["offset"]))
    common = [str(source), "--out", str(out), "--format", table_format, "--master", "local[2]",
              "--conf", "spark.ui.enabled=false"]
    full = _run(common, log)
    with open(binlog, "rb") as original, open(source / binlog.name, "ab") as handle:
        original.seek(int(cut["offset"]))
        shutil.copyfileobj(original, handle)
    again = _run(common, log)
    nothing = _run(common, log)
    return {"bytes": whole, "new_bytes": whole - int(cut["offset"]), "full_s": full, "incremental_s": again,
            "nothing_new_s": nothing, "ratio": again / full, "load": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", default="delta,iceberg", help="table formats (default: delta,iceberg)")
    parser.add_argument("--only", default="latency,sustain,incremental", help="modes to run")
    parser.add_argument("--seconds", type=float, default=60, help="length of the latency and sustain runs")
    parser.add_argument("--clients", type=int, default=4, help="sustain: clients (and GTID domains)")
    parser.add_argument("--bytes", default="200M", help="incremental: size of the bench binlog")
    parser.add_argument("--keep", action="store_true", help="keep the working directories")
    args = parser.parse_args(argv)
    import workload

    print(f"machine: {os.cpu_count()} CPUs, {_load()} at the start", flush=True)
    for table_format in filter(None, args.format.split(",")):
        for mode in filter(None, args.only.split(",")):
            root = Path(tempfile.mkdtemp(prefix=f"mirror-{mode}-{table_format}-"))
            try:
                if mode == "latency":
                    r = latency(table_format, args.seconds, root)
                    print(f"{table_format:8} latency    {r['rows']} rows: p50 {r['p50']:.2f} s, p90 {r['p90']:.2f} s, "
                          f"max {r['max']:.2f} s (goal p50 <= 5, max <= 15); load {r['load']:.1f}", flush=True)
                elif mode == "sustain":
                    r = sustain(table_format, args.seconds, args.clients, root)
                    print(f"{table_format:8} sustain    primary {r['primary_tps']:.0f} trx/s ({r['transactions']} trx, "
                          f"{args.clients} clients); job {r['job_gtids_per_s']:.0f} GTIDs/s over the run and its "
                          f"catch-up, {r['row_changes']} row changes in {r['batches']} batches; largest lag "
                          f"{r['max_lag_gtids']} GTIDs / {r['max_lag_s']:.1f} s; caught up {r['catch_up_s']:.1f} s "
                          f"after the clients stopped; load {r['load']:.1f}", flush=True)
                elif mode == "incremental":
                    r = incremental(table_format, workload.parse_size(args.bytes), root)
                    print(f"{table_format:8} incremental {r['bytes'] / 1e6:.0f} MB binlog: full run {r['full_s']:.1f} s, "
                          f"+{r['new_bytes'] / 1e6:.1f} MB run {r['incremental_s']:.1f} s ({100 * r['ratio']:.1f} % "
                          f"of the full run; goal <= 10 %), nothing new {r['nothing_new_s']:.1f} s; load "
                          f"{r['load']:.1f}", flush=True)
                else:
                    parser.error(f"unknown mode {mode!r}")
            finally:
                if args.keep:
                    print(f"  kept {root}", flush=True)
                else:
                    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
