"""Record the test corpus (``tests/corpus``) from a real MariaDB server and the real ``mariadb-binlog``.

Inputs, committed under ``tests/corpus/workloads/``: ``workloads.json`` (name, databases,
server options, description of each workload), ``sql/<workload>.sql`` (the statements;
``-- @new_connection`` starts a new client session, ``-- @pause N`` waits N real seconds) and
``cases.tsv`` (the ``mariadb-binlog`` option cases recorded per workload).

For each workload a fresh private ``mariadbd`` (``tests/mariadb_server.py``) runs under
libfaketime, so event times are the same on every run; the workload's SQL is fed to the
``mariadb`` client, the binlogs are closed by ``FLUSH BINARY LOGS`` and the script records:
the binlog files, ``SHOW BINLOG EVENTS`` per file, ``CHECKSUM TABLE ... EXTENDED`` and
``COUNT(*)`` per table, ``mariadb-dump`` of the final data, then the real tool's stdout,
stderr and exit code for every case, ``manifest.tsv`` and ``replay.tsv``.  Outputs larger than
64 KiB are gzipped (without a time stamp, so a rerun writes the same bytes).

Run through ``bash scripts/make-corpus.sh`` (``--only w01_basic_row`` remakes one workload).
"""

from __future__ import annotations

import argparse
import csv
import glob
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from mariadb_server import CORPUS_OPTIONS, MariaDBServer, program  # noqa: E402  (path set above)

#: The recording server's clock: starts at this instant and runs at 1/100 speed, so the
#: Format_description "created" time, event times and ``exec_time`` do not depend on when
#: the script runs.
FAKETIME = "@2024-01-01 00:00:00 x0.01"

#: Files larger than this are stored gzipped (tests read both forms).
GZIP_ABOVE = 64 * 1024

#: ``mariadb-dump`` options of the final-data dumps.
DUMP_OPTIONS = ("--skip-dump-date", "--order-by-primary", "--hex-blob", "--routines", "--triggers")


@dataclass(frozen=True)
class Workload:
    """One workload of ``workloads.json``."""

    name: str
    dbs: list[str]
    server: list[str]
    replay_options: str


def libfaketime() -> str:
    """Path of ``libfaketime.so.1``; exits with the package to install when it is missing."""
    for pattern in ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                    "/usr/local/lib/faketime/libfaketime.so.1"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    sys.exit("make_corpus: libfaketime.so.1 not found (apt-get install faketime libfaketime, or bash scripts/setup.sh)")


def write_output(path: Path, data: bytes) -> Path:
    """Write ``data`` at ``path``, or gzipped at ``path.gz`` when larger than :data:`GZIP_ABOVE`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if len(data) > GZIP_ABOVE:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(data)
    return path


def sessions(sql_text: str) -> list[list[tuple[str, float]]]:
    """Split a workload script into client sessions of (SQL chunk, pause after it) pairs."""
    result: list[list[tuple[str, float]]] = []
    chunk: list[str] = []
    for line in sql_text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped == "-- @new_connection":
            if result:
                result[-1].append(("".join(chunk), 0.0))
            result.append([])
            chunk = []
        elif stripped.startswith("-- @pause "):
            if not result:
                raise SystemExit("make_corpus: '-- @pause' before the first '-- @new_connection'")
            result[-1].append(("".join(chunk), float(stripped.split()[2])))
            chunk = []
        elif result:
            chunk.append(line)
    if result:
        result[-1].append(("".join(chunk), 0.0))
    return result


def run_session(server: MariaDBServer, parts: list[tuple[str, float]]) -> None:
    """Feed one session's SQL to one ``mariadb`` client, pausing where the script says."""
    client = subprocess.Popen(server.client_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert client.stdin is not None
    for text, pause in parts:
        client.stdin.write(text.encode("utf-8"))
        client.stdin.flush()
        if pause:
            time.sleep(pause)
    out, err = client.communicate(timeout=600)
    if client.returncode != 0:
        raise SystemExit(f"make_corpus: the workload's SQL failed: {err.decode('utf-8', 'replace')}")


def record_server(workload: Workload, sql_text: str, out: Path, scratch: Path) -> list[str]:
    """Run one workload on a fresh server; write binlogs, listings, checksums, dump; return file names."""
    env = {"LD_PRELOAD": libfaketime(), "FAKETIME": FAKETIME, "TZ": "UTC"}
    options = [*CORPUS_OPTIONS, "--log-bin", *workload.server]
    server = MariaDBServer(scratch / workload.name, options, env=env)
    try:
        server.start()
        for session in sessions(sql_text):
            run_session(server, session)
        server.flush_binlogs()
        files = server.binlog_files()[:-1]  # the active (last) file is not part of the corpus
        for path in files:
            text = server.sql(f"SHOW BINLOG EVENTS IN '{path.name}'", header=True)
            write_output(out / "events" / workload.name / f"{path.name}.tsv", text.encode("utf-8"))
        write_output(out / "checksums" / f"{workload.name}.tsv", checksums(server, workload).encode("utf-8"))
        dump = subprocess.run(
            [program("mariadb-dump"), "--no-defaults", f"--socket={server.socket}", f"--user={server.user}",
             *DUMP_OPTIONS, "--databases", *workload.dbs],
            capture_output=True, check=True, timeout=600,
        )
        write_output(out / "dumps" / f"{workload.name}.sql", dump.stdout)
        for path in files:
            target = out / "binlogs" / workload.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    finally:
        # Everything is recorded and the datadir is discarded: under the slowed clock a clean
        # shutdown takes a minute, so the server gets a few seconds before SIGKILL.
        server.stop(timeout=5)
    return [path.name for path in files]


def checksums(server: MariaDBServer, workload: Workload) -> str:
    """``table  checksum  rows`` (TSV with header) for every table and sequence of the workload's databases."""
    names = ", ".join(f"'{db}'" for db in workload.dbs)
    tables = [f"{schema}.{table}" for schema, table in server.rows(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA IN ({names}) AND TABLE_TYPE IN ('BASE TABLE', 'SEQUENCE') ORDER BY TABLE_SCHEMA, TABLE_NAME")]
    lines = ["table\tchecksum\trows"]
    if tables:
        sums = server.checksum_table(*tables)
        for table in tables:
            (count,) = server.rows(f"SELECT COUNT(*) FROM {table}")[0]
            lines.append(f"{table}\t{sums[table]}\t{count}")
    return "\n".join(lines) + "\n"


def record_case(out: Path, workload: str, case: str, files: list[str], options: str) -> dict[str, str]:
    """Run the real ``mariadb-binlog`` for one case; write its stdout and stderr; return the manifest row."""
    paths = [f"binlogs/{workload}/{name}" for name in files]
    result = subprocess.run(
        [program("mariadb-binlog"), "--no-defaults", *shlex.split(options), *paths],
        cwd=out, capture_output=True, env={**os.environ, "TZ": "UTC"}, timeout=600,
    )
    golden = write_output(out / "golden" / workload / f"{case}.out", result.stdout)
    stderr = write_output(out / "golden" / workload / f"{case}.err", result.stderr)
    return {
        "id": f"{workload}.{case}",
        "files": " ".join(paths),
        "options": options,
        "golden": golden.relative_to(out).as_posix(),
        "exit_code": str(result.returncode),
        "stderr": stderr.relative_to(out).as_posix(),
        "workload": workload,
    }


def write_tsv(path: Path, rows: list[dict[str, str]], columns: list[str]) -> None:
    """Tab-separated with a header row, LF line ends."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE)
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    """Remake the corpus: every workload, or those named with ``--only``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "tests" / "corpus", help="corpus folder")
    parser.add_argument("--inputs", type=Path, default=REPO_ROOT / "tests" / "corpus" / "workloads",
                        help="folder of workloads.json, cases.tsv and sql/")
    parser.add_argument("--only", action="append", default=[], help="remake only this workload (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="mariadb-binlog runs at a time")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    inputs: Path = args.inputs.resolve()
    workloads = [Workload(w["name"], w["dbs"], w["server"], w["replay_options"])
                 for w in json.loads((inputs / "workloads.json").read_text(encoding="utf-8"))]
    with (inputs / "cases.tsv").open(newline="", encoding="utf-8") as handle:
        cases = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    chosen = [w for w in workloads if not args.only or w.name in args.only]
    unknown = set(args.only) - {w.name for w in workloads}
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")

    scratch = Path(tempfile.mkdtemp(prefix="mbl-corpus-"))
    try:
        for workload in chosen:
            for folder in ("binlogs", "events", "golden"):
                shutil.rmtree(out / folder / workload.name, ignore_errors=True)
            for stale in [*out.glob(f"checksums/{workload.name}.tsv*"), *out.glob(f"dumps/{workload.name}.sql*")]:
                stale.unlink()
            started = time.monotonic()
            sql_text = (inputs / "sql" / f"{workload.name}.sql").read_text(encoding="utf-8")
            files = record_server(workload, sql_text, out, scratch / "servers")
            print(f"{workload.name}: {len(files)} binlog file(s) in {time.monotonic() - started:.1f} s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    # The manifest and replay table always describe every workload present on disk.
    todo = [row for row in cases if row["workload"] in {w.name for w in chosen}]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        fresh = list(pool.map(
            lambda row: record_case(out, row["workload"], row["case"], row["files"].split(), row["options"]), todo))
    columns = ["id", "files", "options", "golden", "exit_code", "stderr", "workload"]
    by_id: dict[str, dict[str, str]] = {}
    if (out / "manifest.tsv").is_file() and args.only:
        with (out / "manifest.tsv").open(newline="", encoding="utf-8") as handle:
            by_id = {row["id"]: row for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)}
    by_id.update({row["id"]: row for row in fresh})
    order = [f"{row['workload']}.{row['case']}" for row in cases]
    write_tsv(out / "manifest.tsv", [by_id[i] for i in order if i in by_id], columns)

    replay = []
    for workload in workloads:
        binlogs = sorted(p.relative_to(out).as_posix() for p in (out / "binlogs" / workload.name).glob("mysql-bin.*"))
        if not binlogs:
            continue
        (dump,) = [p.relative_to(out).as_posix() for p in out.glob(f"dumps/{workload.name}.sql*")]
        replay.append({"workload": workload.name, "files": " ".join(binlogs), "options": workload.replay_options,
                       "checksums": f"checksums/{workload.name}.tsv", "dump": dump})
    write_tsv(out / "replay.tsv", replay, ["workload", "files", "options", "checksums", "dump"])
    print(f"{len(fresh)} mariadb-binlog case(s) recorded under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
