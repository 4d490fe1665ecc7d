"""Small transactions at MariaDB's own speed: every command on an OLTP binlog, side by side, one run.

Makes (once, cached in ``bench/.cache/``) the binlog a busy OLTP primary writes: ``--domains``
GTID domains, ``--clients`` concurrent clients (client ``c`` writes in domain ``c % domains``,
its own rows of that domain's table), ``--groups`` small transactions of ``--rows`` row changes
(inserts, updates by a secondary key, a delete now and then) of rows about ``--row-bytes``
wide.  The clients are real ``mariadb`` clients fed pre-rendered SQL scripts, so the primary,
not the driver, sets the pace.  The primary's datadir is cached; each run starts a private
copy of it (``tests/mariadb_server.py``, never the Debian service) and private, empty target
servers (from a cached ``mariadb-install-db`` template) for everything that applies.

Then, in ONE run, with every result checked (every GTID once and in order per domain;
``CHECKSUM TABLE`` equal to the primary's), it times:

* floors (what the server itself needs): a raw socket read of the primary's dump stream (no
  decoding); the pre-rendered SQL applied by the same clients' scripts, one ``mariadb`` client
  each, in parallel, into an empty server;
* ``archive`` vs ``mariadb-binlog --read-from-remote-server --raw --to-last-log``;
* ``replicate --parallel N`` vs a native replica (``slave_parallel_threads=N``, optimistic and
  conservative) and vs ``mariadb-binlog FILES | mariadb``;
* a native replica (optimistic, N threads) fed by ``serve`` over the archive just written vs
  the same replica fed by the primary, both full catch-up and IO thread only;
* a bad network: ``archive``, ``replicate`` and the native replica through a proxy that cuts
  the primary's stream on 8 connections, then stalls it on 2, each time further in (ours with
  ``--net-timeout 2``, the replica with ``slave_net_timeout=2``), against the clean runs;
* ``dump`` plain, ``-v``, ``-vv --base64-output=decode-rows`` vs ``mariadb-binlog`` (outputs
  compared), ``--format=json`` and ``--format=debezium`` vs our ``-v`` text dump (their lines
  checked by a run of their own), each on one core (``taskset``), output to /dev/null;
* the Spark ``rows`` view (aggregate of every column) on ``local[1]`` vs Spark's own Parquet
  read of the same rows (``bench/spark.py``'s jobs);
* the peak RSS of each of our processes.

It prints one table: seconds, groups/s, the reference, the ratio and the ratio against the
issue's goal, and the machine's load.  A quick run: ``--groups 10000`` (about two minutes).

    python bench/oltp.py [--groups 500000] [--domains 4] [--clients 4] [--rows 1-3]
                         [--row-bytes 100] [--threads 4]
                         [--only floors,archive,replicate,serve,badnet,dump,spark]
                         [--repeat N]

One timing moves by a third with the machine's minute (one commit gave archive 1.36x and
1.97x its reference within the hour): ``--repeat 5`` times
``archive``, the IO-thread pair and the dumps five times each, each back to back with its
reference (the JSON and Debezium dumps with our ``-v`` dump of the same trial), and judges
the median of the five paired ratios.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import hashlib
import importlib.util
import json
import multiprocessing
import os
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "replication"))
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "src"))

import pymysql  # noqa: E402
from hostile_peers import Proxy  # noqa: E402
from mariadb_server import MariaDBServer, program  # noqa: E402

CACHE = REPO_ROOT / "bench" / ".cache"
#: Bump when the workload or the servers' options change, so stale caches are not reused.
WORKLOAD_VERSION = 1

#: Every server of the run (primary and targets) gets these: binlog on, ROW format, UTC,
#: utf8mb4, commits durable at the second (``innodb_flush_log_at_trx_commit=2``, no binlog
#: fsync) as a busy primary is often set up; the same for ours and the references.
COMMON_OPTIONS = (
    "--log-bin",
    "--binlog-format=ROW",
    "--default-time-zone=+00:00",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--innodb-flush-log-at-trx-commit=2",
    "--sync-binlog=0",
    "--innodb-buffer-pool-size=256M",
    "--innodb-log-file-size=128M",
    "--max-allowed-packet=64M",
    "--max-connections=200",
)
PRIMARY_OPTIONS = (*COMMON_OPTIONS, "--server-id=1")


def target_options(server_id: int, threads: int = 0, mode: str = "optimistic") -> tuple[str, ...]:
    """An empty target: its own server id; a native replica's parallel settings; replicated
    transactions binlogged too (``log_slave_updates``), as ours are."""
    return (
        *COMMON_OPTIONS,
        f"--server-id={server_id}",
        "--log-slave-updates",
        f"--slave-parallel-threads={threads}",
        f"--slave-parallel-mode={mode}",
    )


# ------------------------------------------------------------------------------- the workload


@dataclass(frozen=True)
class Shape:
    """The OLTP workload's parameters."""

    groups: int = 500_000
    domains: int = 4
    clients: int = 4
    rows_min: int = 1
    rows_max: int = 3
    row_bytes: int = 100

    @property
    def key(self) -> str:
        return (f"oltp-g{self.groups}-d{self.domains}-c{self.clients}-r{self.rows_min}_{self.rows_max}"
                f"-w{self.row_bytes}-v{WORKLOAD_VERSION}")

    def tables(self) -> list[str]:
        return [f"oltp.t{d}" for d in range(self.domains)]

    def schema(self) -> str:
        """The tables, one per domain (its clients own disjoint rows of it)."""
        text = "CREATE DATABASE oltp;\n"
        for table in self.tables():
            text += (f"CREATE TABLE {table} (id BIGINT NOT NULL PRIMARY KEY, k BIGINT NOT NULL,"
                     " c VARCHAR(255) NOT NULL, amount DECIMAL(12,2) NOT NULL, at DATETIME(6) NOT NULL,"
                     " KEY k (k)) ENGINE=InnoDB;\n")
        return text


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "


def client_script(shape: Shape, client: int) -> tuple[str, dict[str, int]]:
    """Client ``client``'s SQL: its domain, then its transactions of 1..N row changes each."""
    rng = random.Random(1009 * (client + 1))
    domain = client % shape.domains
    table = f"oltp.t{domain}"
    transactions = shape.groups // shape.clients + (1 if client < shape.groups % shape.clients else 0)
    text_len = max(1, shape.row_bytes - 40)  # id, k, amount, at and the row header make the rest
    live: list[int] = []
    made = 0
    counts = {"transactions": transactions, "inserts": 0, "updates": 0, "deletes": 0}
    out = [f"SET SESSION gtid_domain_id={domain};\n"]
    for trx in range(transactions):
        parts = ["BEGIN;"]
        for _ in range(rng.randint(shape.rows_min, shape.rows_max)):
            pick = rng.random()
            text = "".join(rng.choices(_LETTERS, k=text_len))
            if not live or pick < 0.5:
                row = made * shape.clients + client + 1
                made += 1
                live.append(row)
                parts.append(f"INSERT INTO {table} VALUES ({row},{row * 2 + 1},'{text}',{rng.randint(0, 99999)}.{trx % 100:02d},"
                             f"'2025-01-01 00:00:00'+INTERVAL {trx} SECOND);")
                counts["inserts"] += 1
            elif pick < 0.93:
                row = live[rng.randrange(len(live))]
                parts.append(f"UPDATE {table} SET c='{text}',amount=amount+1.25,at=at+INTERVAL 1 SECOND"
                             f" WHERE k={row * 2 + 1};")
                counts["updates"] += 1
            else:
                index = rng.randrange(len(live))
                live[index], live[-1] = live[-1], live[index]
                parts.append(f"DELETE FROM {table} WHERE id={live.pop()};")
                counts["deletes"] += 1
        parts.append("COMMIT;\n")
        out.append("".join(parts))
    return "".join(out), counts


def _progress(message: str) -> None:
    print(f"oltp: {message}", file=sys.stderr, flush=True)


def template_datadir() -> Path:
    """A fresh ``mariadb-install-db`` datadir, made once: empty servers start from a copy."""
    folder = CACHE / f"template-v{WORKLOAD_VERSION}"
    if (folder / "data" / "mysql").is_dir():
        return folder / "data"
    shutil.rmtree(folder, ignore_errors=True)
    MariaDBServer(folder, COMMON_OPTIONS).install()
    return folder / "data"


def make_workload(shape: Shape) -> Path:
    """The cached primary datadir, binlog copies, scripts and manifest of ``shape`` (made once)."""
    final = CACHE / shape.key
    if (final / "manifest.json").is_file():
        _progress(f"using cached workload {final}")
        return final
    staging = CACHE / f"{shape.key}.building"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "scripts").mkdir(parents=True)
    (staging / "schema.sql").write_text(shape.schema())
    totals = {"transactions": 0, "inserts": 0, "updates": 0, "deletes": 0}
    for client in range(shape.clients):
        text, counts = client_script(shape, client)
        (staging / "scripts" / f"client-{client}.sql").write_text(text)
        for name, value in counts.items():
            totals[name] += value
    server = MariaDBServer(staging / "primary", PRIMARY_OPTIONS)
    shutil.copytree(template_datadir(), server.datadir)
    try:
        server.start()
        server.pipe(shape.schema())
        _progress(f"writing {shape.groups} transactions with {shape.clients} clients ...")
        started = time.perf_counter()
        clients = [_feed(server, staging / "scripts" / f"client-{c}.sql") for c in range(shape.clients)]
        for proc in clients:
            if proc.wait() != 0:
                raise SystemExit(f"a workload client failed: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        seconds = time.perf_counter() - started
        server.flush_binlogs()
        files = server.binlog_files()[:-1]  # the file FLUSH opened holds no group
        gtid_pos = server.rows("SELECT @@gtid_binlog_pos")[0][0]
        version = server.rows("SELECT VERSION()")[0][0]
        checksums = server.checksum_table(*shape.tables())
    finally:
        server.stop()
    binlogs = staging / "binlogs"
    binlogs.mkdir()
    for path in files:
        shutil.copy2(path, binlogs / path.name)
    groups = sum(1 for _ in scan_gtids([binlogs / p.name for p in files]))
    manifest = {
        "shape": shape.__dict__, "server_version": version, "gtid_binlog_pos": gtid_pos,
        "files": [p.name for p in files], "bytes": sum((binlogs / p.name).stat().st_size for p in files),
        "groups": groups, "row_changes": totals["inserts"] + totals["updates"] + totals["deletes"],
        "write_seconds": round(seconds, 2), "write_tps": round(totals["transactions"] / seconds),
        "checksums": checksums, **totals,
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    _progress(f"workload ready: {manifest['groups']} groups, {manifest['bytes'] / 1e6:.1f} MB, written at"
              f" {manifest['write_tps']} transactions/s")
    return final


def _feed(server: MariaDBServer, script: Path) -> subprocess.Popen[bytes]:
    """A ``mariadb`` client running ``script`` on ``server``."""
    with script.open("rb") as handle:
        return subprocess.Popen(server.client_command(), stdin=handle, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)


def _packet(plans: list[list[bytes]]) -> tuple[bytes, int]:
    """Groups' statements as one multi-statement packet, and how many statements it holds."""
    return b";\n".join(b";\n".join(plan) for plan in plans), sum(map(len, plans))


def _send_statements(url: str, packets: list[tuple[bytes, int]], errors: Any) -> None:
    """A process sending ``packets`` in order on one connection set up as replicate's, reading
    every result."""
    from mariabinlog.replication.apply import PositionTable, TargetSession
    from mariabinlog.replication.net import ConnectionOptions

    try:
        conn = TargetSession(ConnectionOptions.from_url(url), PositionTable()).connect()
        for text, statements in packets:
            conn.query(text, statements=statements)
        conn.close()
    except Exception as err:  # reported to the parent, which fails the floor's check
        errors.put(f"{type(err).__name__}: {err}"[:500])
        sys.exit(1)


# ------------------------------------------------------------------------------- checks


_GTID_BODY = struct.Struct("<QI")


def scan_gtids(files: list[Path]) -> Any:
    """(domain, server, seq) of every GTID event of legacy binlog files, in order: a framing
    loop of its own (the checks must not trust the code they check)."""
    for path in files:
        data = path.read_bytes()
        pos = 4
        while pos + 19 <= len(data):
            code, server_id, length = data[pos + 4], *struct.unpack_from("<II", data, pos + 5)
            if code == 162:
                seq, domain = _GTID_BODY.unpack_from(data, pos + 19)
                yield domain, server_id, seq
            pos += length


def ibb_gtids(directory: Path) -> list[tuple[int, int, int]]:
    """The GTIDs of an `.ibb` directory's COMMIT records, in order (through our codec)."""
    from mariabinlog.codec.ibb import RecordReader, RecordType
    from mariabinlog.codec.ibb.state import commit_gtid
    from mariabinlog.engine.files import list_binlogs
    from mariabinlog.replication.sources import archive_pages

    pages = archive_pages(str(directory))
    files = list_binlogs(str(directory))
    out = []
    if files:
        for record in RecordReader(pages, files[0]):
            if record.type == RecordType.COMMIT and not record.nested:
                gtid = commit_gtid(record.payload)
                if gtid is not None:
                    out.append((gtid.domain, gtid.server, gtid.seq))
    pages.forget()
    return out


def gtids_ok(seen: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]) -> str:
    """'' when ``seen`` holds every expected GTID once and in order per domain, else why not."""
    if seen == expected:
        return ""
    by: dict[int, list[int]] = {}
    for domain, _, seq in seen:
        by.setdefault(domain, []).append(seq)
    want: dict[int, list[int]] = {}
    for domain, _, seq in expected:
        want.setdefault(domain, []).append(seq)
    for domain in sorted(set(by) | set(want)):
        if by.get(domain) != want.get(domain):
            got = by.get(domain, [])
            return f"domain {domain}: {len(got)} GTIDs, {len(want.get(domain, []))} expected"
    return ""  # the same GTIDs per domain in the same order; domains interleave differently


def parse_pos(text: str) -> dict[int, tuple[int, int]]:
    """``0-1-5,1-1-7`` -> {domain: (server, seq)}."""
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        domain, server, seq = (int(x) for x in part.split("-"))
        out[domain] = (server, seq)
    return out


# ------------------------------------------------------------------------------- running things


@dataclass
class Run:
    """One timed thing."""

    name: str
    seconds: float
    rss_mib: float | None = None
    check: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)
    #: Every timing of a ``--repeat`` run, in run order (``seconds`` is their median).
    samples: list[float] = field(default_factory=list)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["TZ"] = "UTC"
    return env


def ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "mariabinlog", *args]


#: ``--profile DIR``: our commands run under ``py-spy record``, one collapsed-stack file each.
PROFILE_DIR: Path | None = None


def profiled(command: list[str], name: str) -> list[str]:
    """``command`` under py-spy (``--profile``), its samples in ``PROFILE_DIR/name.txt``."""
    if PROFILE_DIR is None or command[:3] != [sys.executable, "-m", "mariabinlog"]:
        return command
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out = PROFILE_DIR / ("".join(c if c.isalnum() or c in "-." else "_" for c in name) + ".txt")
    return [spy, "record", "--format", "raw", "--rate", "200", "--nonblocking", "--output", str(out), "--", *command]


#: Runs a command and writes its own peak RSS (KiB) to a file.  Linux hands a forked child its
#: parent's peak RSS (the copied address space's high-water mark survives exec), so a command
#: started straight from this (large) process would report at least this process's size: it
#: is started from this small one instead, which forwards SIGTERM/SIGINT to it.
_RSS_WRAPPER = """
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda number, frame: os.kill(pid, number))
while True:
    try:
        _, status, usage = os.wait4(pid, 0)
        break
    except InterruptedError:
        pass
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def rss_wrapped(command: list[str], out: Path) -> list[str]:
    """``command`` started by :data:`_RSS_WRAPPER`, its peak RSS written to ``out``."""
    return [sys.executable, "-c", _RSS_WRAPPER, str(out), *command]


def read_rss(out: Path) -> float | None:
    """The peak RSS (MiB) a wrapped command left in ``out``."""
    try:
        return int(out.read_text()) / 1024
    except (OSError, ValueError):
        return None


def measure(command: list[str], *, stdout: Any = subprocess.DEVNULL, cpu: int | None = None,
            timeout: float = 3600, name: str = "") -> tuple[float, float, int, str]:
    """Run ``command`` (optionally pinned to one CPU): (wall s, peak RSS MiB, exit status, stderr tail).

    Under ``--profile`` our commands run under py-spy: their times then include its overhead."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []
    rss_file = Path(tempfile.mkstemp(prefix="oltp-rss-")[1])
    command = rss_wrapped(profiled(command, name), rss_file)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*pin, *command], stdout=stdout, stderr=err, env=_env())
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
            time.sleep(0.005)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-3000:].decode("utf-8", "replace")
    rss = read_rss(rss_file)
    rss_file.unlink()
    return wall, rss or 0.0, proc.returncode, tail


def digest(command: list[str]) -> tuple[int, str]:
    """Size and SHA-256 of a command's stdout."""
    h = hashlib.sha256()
    size = 0
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=_env())
    assert proc.stdout is not None
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
        h.update(chunk)
        size += len(chunk)
    proc.wait()
    return size, h.hexdigest()


class Bench:
    """One run over one cached workload."""

    def __init__(self, shape: Shape, folder: Path, threads: int, work: Path, repeat: int = 1) -> None:
        self.shape = shape
        self.repeat = repeat
        self.folder = folder
        self.manifest = json.loads((folder / "manifest.json").read_text())
        self.threads = threads
        self.work = work
        self.groups = self.manifest["groups"]
        self.binlogs = [folder / "binlogs" / name for name in self.manifest["files"]]
        self.expected = list(scan_gtids(self.binlogs))
        self.expected_pos = parse_pos(self.manifest["gtid_binlog_pos"])
        self.runs: dict[str, Run] = {}
        self.primary: MariaDBServer | None = None
        self.archive_dir = work / "archive"
        self._next_id = 10
        self._template = template_datadir()

    # -- servers ----------------------------------------------------------------------------

    def start_primary(self) -> MariaDBServer:
        server = MariaDBServer(self.work / "primary", PRIMARY_OPTIONS)
        shutil.copytree(self.folder / "primary" / "data", server.datadir)
        server.start()
        self.primary = server
        pos = parse_pos(server.rows("SELECT @@gtid_binlog_pos")[0][0])
        if pos != self.expected_pos:
            raise SystemExit(f"the primary's copy is at {pos}, the workload at {self.expected_pos}")
        return server

    def target(self, threads: int = 0, mode: str = "optimistic") -> MariaDBServer:
        """A fresh, empty server."""
        self._next_id += 1
        server = MariaDBServer(self.work / f"target-{self._next_id}", target_options(self._next_id, threads, mode))
        shutil.copytree(self._template, server.datadir)
        return server.start()

    def verify_target(self, server: MariaDBServer, *, binlogged: bool = True) -> str:
        """'' when ``server`` holds the primary's data and (``binlogged``) its binlog every
        GTID once and in order."""
        sums = server.checksum_table(*self.shape.tables())
        want = {k: int(v) if v is not None else None for k, v in self.manifest["checksums"].items()}
        if sums != want:
            return f"CHECKSUM TABLE differs: {sums} != {want}"
        if binlogged:
            server.flush_binlogs()
            # the primary's GTIDs (a target's own, e.g. making our position table, are not its)
            seen = [g for g in scan_gtids(server.binlog_files()) if g[1] == 1]
            why = gtids_ok(seen, self.expected)
            if why:
                return "target binlog: " + why
        return ""

    def record(self, run: Run) -> Run:
        """Keep ``run``; a repeat of a run already kept adds its timing to the samples (the
        seconds become their median, the check the first failure, the RSS the peak)."""
        before = self.runs.get(run.name)
        if before is not None:
            run.samples = [*before.samples, run.seconds]
            run.seconds = statistics.median(run.samples)
            run.check = before.check if before.check != "ok" else run.check
            run.rss_mib = max(before.rss_mib or 0.0, run.rss_mib or 0.0) or None
        else:
            run.samples = [run.seconds]
        self.runs[run.name] = run
        rss = f", peak RSS {run.rss_mib:.0f} MiB" if run.rss_mib else ""
        _progress(f"{run.name}: {run.seconds:.2f} s ({self.groups / run.seconds:,.0f} groups/s){rss}"
                  f"{'' if run.check == 'ok' else ' CHECK FAILED: ' + run.check}")
        return run

    def url(self, server: MariaDBServer | int) -> str:
        """The root URL of ``server`` (or of whatever listens on that port: a proxy)."""
        return f"mariadb://root@127.0.0.1:{server if isinstance(server, int) else server.port}"

    # -- floors -----------------------------------------------------------------------------

    def floor_stream(self) -> None:
        """Every byte of the dump stream from the primary, read raw (packets framed, nothing decoded)."""
        from mariabinlog.codec.wire.protocol import BINLOG_DUMP_NON_BLOCK, BinlogDump
        from mariabinlog.replication.net import Connection, ConnectionOptions

        assert self.primary is not None
        options = ConnectionOptions(port=self.primary.port, read_timeout=600)
        started = time.perf_counter()
        conn = Connection.open(options)
        conn.query("SET @master_binlog_checksum=@@global.binlog_checksum; SET @mariadb_slave_capability=4;"
                   " SET @slave_connect_state=''", statements=3)
        conn.start_dump(BinlogDump(4242, 4, BINLOG_DUMP_NON_BLOCK, b""))
        sock = conn.sock
        buf = bytearray()
        pos = 0
        packets = 0
        done = False
        while not done:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
            while pos + 4 <= len(buf):
                length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
                if pos + 4 + length > len(buf):
                    break
                if length < 9 and buf[pos + 4] == 0xFE:
                    done = True
                    break
                packets += 1
                pos += 4 + length
            del buf[:pos]
            pos = 0
        seconds = time.perf_counter() - started
        conn.sock.close()
        self.record(Run("floor: raw read of the dump stream", seconds, check="ok" if done else "no EOF",
                        extra={"packets": packets}))

    def floor_apply(self) -> None:
        """The clients' own SQL, one ``mariadb`` client per script, in parallel, into an empty server."""
        server = self.target()
        try:
            server.pipe(self.shape.schema())
            scripts = sorted((self.folder / "scripts").glob("client-*.sql"))
            started = time.perf_counter()
            procs = [_feed(server, script) for script in scripts]
            failed = [p for p in procs if p.wait() != 0]
            seconds = time.perf_counter() - started
            check = "a client failed" if failed else (
                server.checksum_table(*self.shape.tables()) == {
                    k: int(v) if v is not None else None for k, v in self.manifest["checksums"].items()}
                and "ok" or "CHECKSUM TABLE differs")
            self.record(Run(f"floor: the SQL by {len(scripts)} mariadb clients", seconds, check=check))
        finally:
            server.stop()

    def floor_our_statements(self) -> None:
        """What ``replicate`` sends, without its Python: the statements it makes of every plain
        group (:meth:`TargetSession.statements`), pre-rendered per domain in packets of
        ``BATCH_GROUPS`` groups as it sends them, sent by one process per domain, in parallel,
        into an empty server that has the tables and the position table.  The server's part of
        replicate.  Sent by our own connection, which counts the results: MariaDB answers a
        ``BINLOG`` statement inside a multi-statement packet without the "more results" flag
        (:meth:`ClientProtocol.await_more_results`), so the ``mariadb`` client, which trusts the
        flag, sends its next packet while results are still coming and both sides stall until
        ``net_write_timeout``."""
        from mariabinlog.replication.apply import BATCH_GROUPS, PositionTable, TargetSession
        from mariabinlog.replication.net import ConnectionOptions
        from mariabinlog.replication.sources import FileSource

        sessions: dict[int, TargetSession] = {}  # one per domain, as replicate's workers: each
        scripts: dict[int, list[tuple[bytes, int]]] = {}  # begins with the format description
        packets: dict[int, list[list[bytes]]] = {}
        for group in FileSource([str(p) for p in self.binlogs]).groups():
            domain = group.gtid.domain
            session = sessions.setdefault(domain, TargetSession(ConnectionOptions(), PositionTable()))
            statements = session.statements(group)
            if statements is None:
                if not group.standalone:
                    raise SystemExit(f"{group} is not a plain group: the floor has no statements for it")
                continue  # the tables: made beforehand
            packet = packets.setdefault(domain, [])
            packet.append(statements)
            if len(packet) == BATCH_GROUPS:
                scripts.setdefault(domain, []).append(_packet(packet))
                packets[domain] = []
        for domain, packet in packets.items():
            if packet:
                scripts.setdefault(domain, []).append(_packet(packet))
        server = self.target()
        try:
            server.pipe(self.shape.schema() + ";\n".join(PositionTable().create()) + ";\n")
            url = f"{self.url(server)}/?socket={server.socket}"
            context = multiprocessing.get_context("fork")
            errors = context.Queue()
            procs = [context.Process(target=_send_statements, args=(url, parts, errors)) for parts in scripts.values()]
            started = time.perf_counter()
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join()
            seconds = time.perf_counter() - started
            failed = [errors.get() for proc in procs if proc.exitcode != 0]
            why = f"a client failed: {failed[0]}" if failed else self.verify_target(server, binlogged=False)
            self.record(Run(f"floor: replicate's statements by {len(scripts)} connections", seconds,
                            check=why or "ok"))
        finally:
            server.stop()

    # -- archive ----------------------------------------------------------------------------

    def archive(self) -> None:
        """``--repeat`` times, the reference and ours alternately (the last archive stays for serve)."""
        for trial in range(self.repeat):
            if trial:
                shutil.rmtree(self.archive_dir)
            self._archive_once()
        self._archive_start_up()

    def _archive_start_up(self) -> None:
        """The fixed cost in ``archive``'s time: the command started at the primary's end
        (interpreter, imports, connect, dump request, caught up at once)."""
        assert self.primary is not None
        empty = self.work / "archive-of-nothing"
        end = self.primary.rows("SELECT @@gtid_binlog_pos")[0][0]
        wall, _, status, err = measure(ours("archive", "--from", self.url(self.primary), "--dir", str(empty),
                                            "--start-position", end, "--quiet"), name="archive-start-up")
        why = f"exit {status}: {err}" if status else ("" if not ibb_gtids(empty) else "copied groups")
        self.record(Run("floor: archive start-up (nothing to copy)", wall, check=why or "ok"))
        shutil.rmtree(empty, ignore_errors=True)

    def _archive_once(self) -> None:
        assert self.primary is not None
        real = program("mariadb-binlog")
        raw_dir = self.work / "raw"
        raw_dir.mkdir()
        first = self.primary.rows("SHOW BINARY LOGS")[0][0]
        wall, _, status, err = measure([real, "--no-defaults", "--read-from-remote-server", "--host=127.0.0.1",
                                        f"--port={self.primary.port}", "--user=root", "--raw", "--to-last-log",
                                        f"--result-file={raw_dir}/", first])
        seen = list(scan_gtids(sorted(raw_dir.iterdir())))
        why = f"exit {status}: {err}" if status else gtids_ok(seen, self.expected)
        self.record(Run("mariadb-binlog --read-from-remote-server --raw --to-last-log", wall, check=why or "ok"))
        shutil.rmtree(raw_dir)
        run = self._our_archive("archive", self.url(self.primary), self.archive_dir)
        run.extra = {"files": {p.name: p.stat().st_size for p in self.archive_dir.glob("binlog-*.ibb")}}
        self.record(run)

    def _our_archive(self, name: str, url: str, directory: Path, *options: str, profile: str = "archive") -> Run:
        """``archive`` of the primary at ``url`` into ``directory``, timed and checked (not recorded)."""
        wall, rss, status, err = measure(ours("archive", "--from", url, "--dir", str(directory), *options, "--quiet"),
                                         name=profile)
        why = f"exit {status}: {err}" if status else gtids_ok(ibb_gtids(directory), self.expected)
        return Run(name, wall, rss, why or "ok")

    # -- replicate --------------------------------------------------------------------------

    def replicate(self) -> None:
        assert self.primary is not None
        self.record(self._our_replicate(f"replicate --parallel {self.threads}", self.url(self.primary)))
        for mode in ("optimistic", "conservative"):
            self.native(f"native replica, {self.threads} threads, {mode}", self.primary.port, mode)
        target = self.target()
        try:
            real = program("mariadb-binlog")
            client = " ".join(target.client_command())
            files = " ".join(str(p) for p in self.binlogs)
            wall, _, status, err = measure(["bash", "-o", "pipefail", "-c",
                                            f"{real} --no-defaults {files} | {client}"])
            why = f"exit {status}: {err}" if status else self.verify_target(target)
            self.record(Run("mariadb-binlog FILES | mariadb", wall, check=why or "ok"))
        finally:
            target.stop()

    def _our_replicate(self, name: str, url: str, *options: str, profile: str = "replicate") -> Run:
        """``replicate --parallel N`` of the primary at ``url`` into a fresh target, timed and
        checked (not recorded)."""
        target = self.target()
        try:
            wall, rss, status, err = measure(ours("replicate", "--from", url, "--to", self.url(target), "--parallel",
                                                  str(self.threads), *options, "--quiet"), name=profile)
            why = f"exit {status}: {err}" if status else self.verify_target(target)
            return Run(name, wall, rss, why or "ok")
        finally:
            target.stop()

    def native(self, name: str, port: int, mode: str, *, io_only: bool = False, net_timeout: int = 0) -> Run:
        """A native replica of the server on ``port``: seconds from START SLAVE to caught up
        (``net_timeout``: its ``slave_net_timeout``, when not MariaDB's default)."""
        target = self.target(self.threads, mode)
        try:
            # The tables are made in domain 0 and written in every domain: a parallel replica
            # started empty would apply rows of another domain before their CREATE (MariaDB
            # orders domains independently), so it gets the tables first and starts after them.
            target.pipe("SET SESSION sql_log_bin=0;\n" + self.shape.schema())
            conn = pymysql.connect(**target.connect_kwargs(), autocommit=True)  # type: ignore[arg-type]
            with conn.cursor() as cur:
                cur.execute(f"SET GLOBAL gtid_slave_pos = '0-1-{1 + len(self.shape.tables())}'")
                if net_timeout:
                    cur.execute(f"SET GLOBAL slave_net_timeout = {net_timeout}")
                cur.execute(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={port}, MASTER_USER='root',"
                            " MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1")
                started = time.perf_counter()
                cur.execute("START SLAVE IO_THREAD" if io_only else "START SLAVE")
                why = self._wait_caught_up(cur, io_only)
                seconds = time.perf_counter() - started
                cur.execute("STOP SLAVE")
            conn.close()
            if not why and not io_only:
                why = self.verify_target(target, binlogged=False)  # its binlog lacks the schema's GTIDs
            return self.record(Run(name, seconds, check=why or "ok"))
        finally:
            target.stop()

    def _wait_caught_up(self, cur: Any, io_only: bool, timeout: float = 3600) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cur.execute("SHOW SLAVE STATUS")
            names = [d[0] for d in cur.description]
            status = dict(zip(names, cur.fetchone()))
            if status["Last_SQL_Errno"]:
                return f"replica error: {status['Last_SQL_Error']}"
            if status["Last_IO_Errno"] and status["Slave_IO_Running"] == "No":  # else it is reconnecting
                return f"replica error: {status['Last_IO_Error']}"
            if io_only:
                pos = parse_pos(status["Gtid_IO_Pos"])
            else:
                cur.execute("SELECT @@gtid_slave_pos")
                pos = parse_pos(cur.fetchone()[0])
            if pos == self.expected_pos:
                return ""
            time.sleep(0.01)
        return "timed out"

    # -- serve ------------------------------------------------------------------------------

    def serve(self) -> None:
        assert self.primary is not None
        if not self.archive_dir.is_dir():
            raise SystemExit("serve needs the archive of this run (--only archive,serve)")
        port_file = self.work / "serve.port"
        rss_file = self.work / "serve.rss"
        proc = subprocess.Popen(rss_wrapped(ours("serve", "--dir", str(self.archive_dir), "--port", "0", "--port-file",
                                                 str(port_file), "--account", "root:"), rss_file), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        spy = None
        if PROFILE_DIR is not None:  # attached, so that serve itself gets the SIGTERM that ends it
            command = profiled(ours(), "serve")
            deadline = time.monotonic() + 30
            while not port_file.is_file() and time.monotonic() < deadline:
                time.sleep(0.05)
            serve_pid = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
            spy = subprocess.Popen([*command[:command.index("--")], "--pid", str(serve_pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not port_file.is_file():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"serve did not start: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.05)
            port = int(port_file.read_text())
            mode = "optimistic"
            self.native(f"replica fed by serve, {self.threads} threads, {mode}", port, mode)
            for _ in range(self.repeat):
                self.native("replica IO thread fed by serve", port, mode, io_only=True)
                self.native("replica IO thread fed by the primary", self.primary.port, mode, io_only=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
            if spy is not None:
                spy.wait()
            self.runs["serve"] = Run("serve", 0.0, read_rss(rss_file))

    # -- a bad network ----------------------------------------------------------------------

    def bad_network(self) -> None:
        """``archive``, ``replicate`` and the native replica through a proxy that damages the
        primary's stream (``tests/replication/hostile_peers.py``): cut on 8 connections, then
        stalled on 2, each time further into the stream; ours with ``--net-timeout 2``, the
        native replica with ``slave_net_timeout=2``.  Every result checked as the clean runs."""
        for damage, times in BAD_NETWORK:
            suffix, timeout = f", stream {damage} {times} times", ("--net-timeout", "2")
            with self._damaging(damage, times) as proxy:
                directory = self.work / f"archive-{damage}"
                run = self._our_archive("archive" + suffix, self.url(proxy.address[1]), directory, *timeout,
                                        profile=f"archive-{damage}")
                shutil.rmtree(directory, ignore_errors=True)
                self.record(_reconnected(run, proxy, times))
            with self._damaging(damage, times) as proxy:
                run = self._our_replicate(f"replicate --parallel {self.threads}" + suffix, self.url(proxy.address[1]),
                                          *timeout, profile=f"replicate-{damage}")
                self.record(_reconnected(run, proxy, times))
            with self._damaging(damage, times) as proxy:
                self.native(f"native replica, {self.threads} threads, optimistic" + suffix, proxy.address[1],
                            "optimistic", net_timeout=2)

    @contextlib.contextmanager
    def _damaging(self, damage: str, times: int) -> Iterator[Proxy]:
        """A proxy in front of the primary that damages its stream on ``times`` connections,
        each time further in (a group is 3-4 event packets)."""
        assert self.primary is not None
        proxy = Proxy(self.primary.port, damage=damage, at=max(25, 3 * self.groups // (times + 1)), times=times,
                      moving=True)
        try:
            yield proxy
        finally:
            proxy.close()

    # -- dump -------------------------------------------------------------------------------

    def dump(self) -> None:
        """``--repeat`` times every dump and its reference, in turn (outputs compared once)."""
        for trial in range(self.repeat):
            self._dump_once(compare=not trial)

    def _dump_once(self, *, compare: bool) -> None:
        real = [program("mariadb-binlog"), "--no-defaults"]
        mine = ours("dump", "--no-defaults")
        files = [str(p) for p in self.binlogs]
        for label, options in (("plain", []), ("-v", ["-v"]), ("-vv", ["-vv", "--base64-output=decode-rows"])):
            same = not compare or digest([*real, *options, *files]) == digest([*mine, *options, *files])
            wall, _, status, err = measure([*real, *options, *files], cpu=0)
            self.record(Run(f"mariadb-binlog {label}", wall, check=f"exit {status}" if status else "ok"))
            wall, rss, status, err = measure([*mine, *options, *files], cpu=0, name=f"dump{label}")
            why = f"exit {status}: {err}" if status else ("" if same else "output differs from mariadb-binlog's")
            self.record(Run(f"dump {label}", wall, rss, why or "ok"))
        for fmt in ("json", "debezium"):
            # Timed to /dev/null as the text dumps are; the output is checked by a run of its own
            # (the first trial's), not timed (writing ~200 MB to a file is not the writer's cost).
            why = ""
            if compare:
                out = self.work / f"dump.{fmt}"
                with out.open("wb") as sink:
                    status = subprocess.run([*mine, f"--format={fmt}", *files], stdout=sink, env=_env()).returncode
                why = f"exit {status}" if status else self._check_json(out, fmt)
                out.unlink()
            wall, rss, status, err = measure([*mine, f"--format={fmt}", *files], cpu=0, name=f"dump-{fmt}")
            if status:
                why = f"exit {status}: {err}"
            self.record(Run(f"dump --format={fmt}", wall, rss, why or "ok"))

    def _check_json(self, path: Path, fmt: str) -> str:
        """Every GTID once and in order (json), every row change once (both)."""
        changes = 0
        gtids = []
        with path.open("rb") as handle:
            for line in handle:
                obj = json.loads(line)
                if fmt == "json":
                    if obj["type_code"] == 162:
                        gtids.append((obj["domain_id"], obj["server_id"], obj["seq_no"]))
                    changes += len(obj.get("rows", ()))
                elif (obj.get("value") or {}).get("op") in ("c", "u", "d"):
                    changes += 1
        if changes != self.manifest["row_changes"]:
            return f"{changes} row changes, {self.manifest['row_changes']} expected"
        return gtids_ok(gtids, self.expected) if fmt == "json" else ""

    # -- spark ------------------------------------------------------------------------------

    def spark(self) -> None:
        spec = importlib.util.spec_from_file_location("bench_spark", REPO_ROOT / "bench" / "spark.py")
        assert spec is not None and spec.loader is not None
        bench_spark = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench_spark)
        source = self.binlogs[0] if len(self.binlogs) == 1 else self.folder / "binlogs"
        copy = self.work / "rows.parquet"
        bench_spark._run_child("local[1]", source, copy, "rows-to-parquet", 1)
        scan = bench_spark._run_child("local[1]", source, self.work / "out", "rows-agg", 1)
        floor = bench_spark._run_child("local[1]", copy, self.work / "out", "rows-parquet", 1)
        want = self.manifest["row_changes"]
        check = "ok" if scan["rows"] == floor["rows"] == want else f"rows {scan['rows']}/{floor['rows']}, {want} expected"
        self.record(Run("Spark rows view scan, local[1]", scan["wall"], check=check))
        self.record(Run("Spark Parquet read of the same rows, local[1]", floor["wall"], check=check))


# ------------------------------------------------------------------------------- the table


#: The bad network's damages (``hostile_peers.DAMAGES``) and on how many connections each.
BAD_NETWORK = (("cut", 8), ("stall", 2))

#: (ours, reference, goal: at most this ratio (or at least, for "min"), what the goal says)
COMPARISONS = [
    ("archive", "mariadb-binlog --read-from-remote-server --raw --to-last-log", 1.5, "max"),
    ("archive", "floor: raw read of the dump stream", None, "max"),
    ("floor: archive start-up (nothing to copy)", "archive", None, "max"),
    ("replicate --parallel {t}", "native replica, {t} threads, optimistic", 1.0, "max"),
    ("replicate --parallel {t}", "native replica, {t} threads, conservative", 1.0, "max"),
    ("replicate --parallel {t}", "mariadb-binlog FILES | mariadb", 1.0, "max"),
    ("replicate --parallel {t}", "floor: the SQL by {c} mariadb clients", None, "max"),
    ("replicate --parallel {t}", "floor: replicate's statements by {d} connections", None, "max"),
    ("native replica, {t} threads, optimistic", "floor: replicate's statements by {d} connections", None, "max"),
    ("native replica, {t} threads, optimistic", "floor: the SQL by {c} mariadb clients", None, "max"),
    ("replica fed by serve, {t} threads, optimistic", "native replica, {t} threads, optimistic", 1 / 0.9, "max"),
    ("replica IO thread fed by serve", "replica IO thread fed by the primary", 1 / 0.9, "max"),
    ("dump plain", "mariadb-binlog plain", None, "max"),
    ("dump -v", "mariadb-binlog -v", 1.0, "max"),
    ("dump -vv", "mariadb-binlog -vv", None, "max"),
    ("dump --format=json", "dump -v", 1.5, "max"),
    ("dump --format=debezium", "dump -v", 1.5, "max"),
    ("Spark rows view scan, local[1]", "Spark Parquet read of the same rows, local[1]", 1.15, "max"),
    *((f"archive, stream {damage} {times} times", "archive", None, "max") for damage, times in BAD_NETWORK),
    *((f"replicate --parallel {{t}}, stream {damage} {times} times",
       f"native replica, {{t}} threads, optimistic, stream {damage} {times} times", None, "max")
      for damage, times in BAD_NETWORK),
]


def _reconnected(run: Run, proxy: Proxy, times: int) -> Run:
    """``run``, failed unless it went through ``times`` damaged connections and one clean one."""
    if run.check == "ok" and proxy.connections != times + 1:
        run.check = f"{proxy.connections} connections, not {times + 1}"
    return run


def paired_ratios(a: Run, b: Run) -> list[float]:
    """Ours over the reference, trial by trial where both were repeated alike (each pair ran
    back to back, so a slow minute of the machine weighs on both), else of the medians."""
    if len(a.samples) == len(b.samples) > 1:
        return [x / y for x, y in zip(a.samples, b.samples)]
    return [a.seconds / b.seconds]


def report(bench: Bench, args: argparse.Namespace, load: tuple[float, float]) -> None:
    m = bench.manifest
    runs = bench.runs
    print()
    print(f"OLTP binlog: {m['groups']:,} groups ({m['transactions']:,} transactions of {bench.shape.rows_min}-"
          f"{bench.shape.rows_max} row changes, {m['row_changes']:,} in all), {bench.shape.domains} domains,"
          f" {bench.shape.clients} clients, rows ~{bench.shape.row_bytes} B, {m['bytes'] / 1e6:.1f} MB;"
          f" MariaDB {m['server_version']} wrote it at {m['write_tps']:,} transactions/s")
    print(f"command: python bench/oltp.py {' '.join(args.argv)}".rstrip())
    print(f"machine: {os.cpu_count()} CPUs; load average {load[0]:.2f} at the start, {load[1]:.2f} at the end")
    print()
    print(f"| {'what':<62} | {'seconds':>8} | {'groups/s':>9} | {'peak RSS MiB':>12} | check |")
    print(f"|{'-' * 64}|{'-' * 10}:|{'-' * 11}:|{'-' * 14}:|-------|")
    for run in runs.values():
        rate = f"{m['groups'] / run.seconds:,.0f}" if run.seconds else ""
        seconds = f"{run.seconds:.2f}" if run.seconds else ""
        rss = f"{run.rss_mib:.0f}" if run.rss_mib else ""
        print(f"| {run.name:<62} | {seconds:>8} | {rate:>9} | {rss:>12} | {run.check} |")
    print()
    print(f"| {'ours':<48} | {'reference':<62} | {'ratio':>6} | {'goal':>6} | {'ratio/goal':>10} |")
    print(f"|{'-' * 50}|{'-' * 64}|{'-' * 7}:|{'-' * 7}:|{'-' * 11}:|")
    fill = {"t": bench.threads, "c": bench.shape.clients, "d": bench.shape.domains}
    spread: list[str] = []
    for mine, ref, goal, _ in COMPARISONS:
        a, b = runs.get(mine.format(**fill)), runs.get(ref.format(**fill))
        if a is None or b is None or not a.seconds or not b.seconds:
            continue
        ratios = paired_ratios(a, b)
        ratio = statistics.median(ratios)
        verdict = "" if goal is None else f"{ratio / goal:.2f}{' met' if ratio <= goal else ''}"
        print(f"| {a.name:<48} | {b.name:<62} | {ratio:>6.2f} | {'' if goal is None else f'{goal:.2f}':>6} |"
              f" {verdict:>10} |")
        if len(ratios) > 1:
            spread.append(f"{a.name} / {b.name}: {len(ratios)} trials, ratios "
                          + ", ".join(f"{r:.2f}" for r in ratios))
    if spread:
        print("\nrepeated (median ratio above; each trial's own ratio here):")
        for line in spread:
            print("  " + line)
    limits = [(name, run.rss_mib) for name, run in runs.items()
              if run.rss_mib and name.split()[0] in ("archive", "replicate", "serve")]
    if limits:
        print()
        print("peak RSS goal (archive, replicate, serve <= 200 MiB): " + ", ".join(
            f"{name} {rss:.0f} MiB{' met' if rss <= 200 else ''}" for name, rss in limits))
    failed = [run.name for run in runs.values() if run.check != "ok"]
    print(f"\nchecks: {'all passed' if not failed else 'FAILED: ' + ', '.join(failed)}")


SECTIONS = ("floors", "archive", "replicate", "serve", "badnet", "dump", "spark")


def _rows(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=500_000,
                        help="transactions (default 500000: our start-up, a floor in the table, stays near 5%%"
                             " of archive's time; at 100000 it is a fifth)")
    parser.add_argument("--domains", type=int, default=4, help="GTID domains (default 4)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients writing (default 4)")
    parser.add_argument("--rows", type=_rows, default=(1, 3), help="row changes per transaction, e.g. 1-3")
    parser.add_argument("--row-bytes", type=int, default=100, help="row width in bytes (default 100)")
    parser.add_argument("--threads", type=int, default=4, help="replica threads: ours and native (default 4)")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated of: {', '.join(SECTIONS)}")
    parser.add_argument("--keep", action="store_true", help="keep the run's work folder")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="time archive, the IO-thread pair and the dumps N times each, alternating with"
                             " their references; the table gives medians and the ratio's range (default 1)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="run our commands under py-spy, samples in DIR"
                        " (collapsed stacks; timings then include py-spy's overhead)")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if args.profile is not None:
        global PROFILE_DIR
        PROFILE_DIR = args.profile.resolve()
        PROFILE_DIR.mkdir(parents=True, exist_ok=True)
    # Our package as an installed wheel has it: bytecode compiled (also after an edit since setup).
    compileall.compile_dir(REPO_ROOT / "src", quiet=1)
    shape = Shape(args.groups, args.domains, args.clients, args.rows[0], args.rows[1], args.row_bytes)
    folder = make_workload(shape)
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="oltp-", dir=os.environ.get("TMPDIR", "/tmp")))
    bench = Bench(shape, folder, args.threads, work, args.repeat)
    try:
        if {"floors", "archive", "replicate", "serve", "badnet"} & set(only):
            bench.start_primary()
        if "floors" in only:
            bench.floor_stream()
            bench.floor_apply()
            bench.floor_our_statements()
        if "archive" in only or "serve" in only:
            bench.archive()
        if "replicate" in only:
            bench.replicate()
        if "serve" in only:
            bench.serve()
        if "badnet" in only:
            bench.bad_network()
        if "dump" in only:
            bench.dump()
        if "spark" in only:
            bench.spark()
    finally:
        if bench.primary is not None:
            bench.primary.stop()
        if args.keep:
            _progress(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(bench, args, (load_start, os.getloadavg()[0]))
    return 0 if all(run.check == "ok" for run in bench.runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
