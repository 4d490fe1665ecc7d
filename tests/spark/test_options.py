"""Options pushed into the reader: GTID start/stop, domain and server filters, time range, the
GTID seek over `.ibb` state records and legacy Gtid_list events, and Spark filter pushdown."""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

GTID_LINE = re.compile(rb"^#(?!Q>).*?\bGTID (\d+)-(\d+)-(\d+)\b", re.M)
OPTION_NAMES = {
    "--start-position": "startPosition",
    "--stop-position": "stopPosition",
    "--do-domain-ids": "doDomainIds",
    "--ignore-domain-ids": "ignoreDomainIds",
    "--do-server-ids": "doServerIds",
    "--ignore-server-ids": "ignoreServerIds",
    "--server-id": "doServerIds",
}


def golden_cases(corpus_dir: Path) -> list[tuple[str, list[str], dict[str, str], list[str]]]:
    """Manifest entries of the strict-order workloads whose options we support, with their GTIDs."""
    cases = []
    lines = (corpus_dir / "manifest.tsv").read_text().splitlines()[1:]
    for line in lines:
        entry, files, options, golden, exit_code, _, workload = line.split("\t")
        every = sorted(p.relative_to(corpus_dir).as_posix() for p in (corpus_dir / "binlogs" / workload).iterdir())
        if workload not in ("w01_basic_row", "w07_gtid_domains") or exit_code != "0" or files.split() != every:
            continue
        words = [w for w in shlex.split(options) if w not in ("-v", "--skip-gtid-strict-mode")]
        pairs = [w.split("=", 1) for w in words]
        if not pairs or any(len(p) != 2 or p[0] not in OPTION_NAMES or p[1].isdigit() for p in pairs):
            continue
        data = (corpus_dir / golden).read_bytes()
        if golden.endswith(".gz"):
            data = gzip.decompress(data)
        gtids = [b"-".join(m).decode() for m in GTID_LINE.findall(data)]
        cases.append((entry, files.split(), {OPTION_NAMES[k]: v for k, v in pairs}, gtids))
    return cases


def test_gtid_options_print_what_mariadb_binlog_prints(spark: Any, corpus_dir: Path) -> None:
    """Every supported golden entry through the reader's planning and reading; two through Spark."""
    cases = golden_cases(corpus_dir)
    assert len(cases) >= 20
    for entry, files, options, expected in cases:
        directory = str(corpus_dir / Path(files[0]).parent)
        assert [g for g in _read_gtids(directory, **options)] == expected, entry
    for entry, files, options, expected in (cases[0], cases[-1]):
        reader = spark.read.format("mariabinlog")
        for key, value in options.items():
            reader = reader.option(key, value)
        rows = reader.load(str(corpus_dir / Path(files[0]).parent)).filter("event_type = 'Gtid'")
        assert [r.gtid for r in rows.orderBy("source_file", "position").select("gtid").collect()] == expected, entry


def _python_filter(rows: list[Any], keep: Any) -> list[tuple[Any, ...]]:
    return sorted((r.file_no, r.position, r.event_index) for r in rows if r.gtid is not None and keep(r))


def test_filters_on_ibb_equal_python_filters(spark: Any, stress_ibb: tuple[Path, list[str]]) -> None:
    directory, _ = stress_ibb
    everything = spark.read.format("mariabinlog").load(str(directory)).collect()
    first_ts = min(r.timestamp for r in everything if r.gtid)
    ts = sorted({int(r.timestamp.timestamp()) for r in everything if r.gtid})
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    cases = {
        "start": ({"startPosition": "0-1-40,1-2-30"},
                  lambda r: not (r.domain_id == 0 and r.seq_no <= 40) and not (r.domain_id == 1 and r.seq_no <= 30)),
        "stop": ({"stopPosition": "0-1-20,3-9-5"},
                 lambda r: (r.domain_id == 0 and r.seq_no <= 20) or (r.domain_id == 3 and r.seq_no <= 5)),
        "range": ({"startPosition": "2-3-10", "stopPosition": "2-3-50"},
                  lambda r: r.domain_id == 2 and 10 < r.seq_no <= 50),
        "domains": ({"doDomainIds": "1,3"}, lambda r: r.domain_id in (1, 3)),
        "no-domain": ({"ignoreDomainIds": "0"}, lambda r: r.domain_id != 0),
        "servers": ({"doServerIds": "2"}, lambda r: r.gtid_server_id == 2),
        "no-server": ({"ignoreServerIds": "1,9"}, lambda r: r.gtid_server_id not in (1, 9)),
        "time": ({"startDatetime": str(lo), "stopDatetime": str(hi)},
                 lambda r: lo <= int(r.timestamp.timestamp()) < hi),
    }
    assert first_ts is not None
    for name, (options, keep) in cases.items():
        reader = spark.read.format("mariabinlog").option("maxPartitionBytes", "16k")
        for key, value in options.items():
            reader = reader.option(key, value)
        got = sorted((r.file_no, r.position, r.event_index) for r in reader.load(str(directory)).collect())
        expected = _python_filter(everything, keep)
        assert got == expected and expected, name


def _planned_bytes(path: str, **options: str) -> int:
    from mariabinlog.engine.files import discover_binlogs
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.plan import plan

    return sum(s.length for part in plan(discover_binlogs(path), ScanOptions.parse(options)) for s in part)


def _read_gtids(path: str, **options: str) -> list[str]:
    from mariabinlog.engine.files import discover_binlogs
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.plan import plan
    from mariabinlog.spark.read import read_splits
    from mariabinlog.spark.schema import GROUPS_SCHEMA
    from mariabinlog.spark.partition import arrow_schema

    parsed = ScanOptions.parse({"view": "groups", **options})
    out: list[str] = []
    for part in plan(discover_binlogs(path), parsed):
        for batch in read_splits(part, parsed, arrow_schema(GROUPS_SCHEMA)):
            out += batch.column("gtid").to_pylist()
    return out


def test_gtid_seek_skips_pages_and_files_without_changing_results(stress_ibb: tuple[Path, list[str]],
                                                                   corpus_dir: Path) -> None:
    directory, order = stress_ibb
    path = str(directory)
    last = {}
    for gtid in order:
        last[gtid.split("-")[0]] = gtid
    domains = sorted(last)
    # Start near the end of every domain: only the last pages are read.
    late = {d: order.index(last[d]) - 12 for d in domains}
    start = ",".join(next(g for g in order[late[d]:] if g.startswith(f"{d}-")) for d in domains)
    total = _planned_bytes(path, maxPartitionBytes="16k")
    sought = _planned_bytes(path, maxPartitionBytes="16k", startPosition=start)
    assert sought < total // 3
    assert _read_gtids(path, startPosition=start) == _read_gtids(path, startPosition=start, gtidSeek="false")
    # Stop early: the tail of the stream is not read.
    stop = ",".join(next(g for g in order if g.startswith(f"{d}-")) for d in domains)
    assert _planned_bytes(path, maxPartitionBytes="16k", stopPosition=stop) < total // 3
    assert _read_gtids(path, stopPosition=stop) == _read_gtids(path, stopPosition=stop, gtidSeek="false")
    # Legacy: whole files are skipped by their Gtid_list events.
    w07 = str(corpus_dir / "binlogs" / "w07_gtid_domains")
    assert _planned_bytes(w07, startPosition="0-1-13,1-1-11,2-3-10") < _planned_bytes(w07) // 2
    assert _read_gtids(w07, startPosition="0-1-9,1-1-8,2-3-8") == _read_gtids(
        w07, startPosition="0-1-9,1-1-8,2-3-8", gtidSeek="false")
    assert _planned_bytes(w07, stopPosition="0-1-2") < _planned_bytes(w07) // 2


def test_filter_pushdown_prunes_and_keeps_results(spark: Any, stress_ibb: tuple[Path, list[str]]) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In

    from mariabinlog.spark import register
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.source import PUSHDOWN_CONF, PushdownBinlogReader, rows_schema

    directory, order = stress_ibb
    path = str(directory)
    late = [g for g in order if g.startswith("1-")][-8]
    seq = int(late.split("-")[2])
    baseline = spark.read.format("mariabinlog").load(path).filter(f"domain_id = 1 AND seq_no > {seq}").collect()
    spark.conf.set(PUSHDOWN_CONF, "true")
    try:
        register(spark)
        df = spark.read.format("mariabinlog").option("maxPartitionBytes", "16k").load(path)
        pushed = df.filter(f"domain_id = 1 AND seq_no > {seq}").collect()
        assert sorted(pushed) == sorted(baseline) and len({r.gtid for r in pushed}) == 7
        assert df.filter("domain_id IN (0, 2) AND gtid_server_id = 3").count() == df.filter("domain_id = 2").count()
    finally:
        spark.conf.set(PUSHDOWN_CONF, "false")
        register(spark)
    reader = PushdownBinlogReader([path], ScanOptions.parse({"maxPartitionBytes": "16k"}), rows_schema())
    every = sum(s.length for p in reader.partitions() for s in p.splits)
    filters = [EqualTo(("domain_id",), 1), GreaterThan(("seq_no",), seq), In(("gtid_server_id",), (2, 5))]
    assert list(reader.pushFilters(filters)) == filters  # Spark re-checks them all
    assert sum(s.length for p in reader.partitions() for s in p.splits) < every // 3


def test_bad_options_fail_with_clear_messages(spark: Any, stress_ibb: tuple[Path, list[str]]) -> None:
    from mariabinlog.errors import OptionError
    from mariabinlog.spark.options import ScanOptions

    for options, text in [
        ({"view": "tables"}, "view"),
        ({"startPosition": "0-1"}, "startPosition"),
        ({"stopPosition": "0-1-5,0-2-6"}, "twice"),
        ({"doDomainIds": "1", "ignoreDomainIds": "2"}, "exclude"),
        ({"table": "t"}, "database.table"),
        ({"table": "a.t"}, "view=rows"),
        ({"maxPartitionBytes": "lots"}, "maxPartitionBytes"),
        ({"startDatetime": "yesterday"}, "startDatetime"),
        ({"colour": "red"}, "unknown"),
    ]:
        with pytest.raises(OptionError, match=text):
            ScanOptions.parse(options)
    with pytest.raises(Exception, match="no binlog files"):
        spark.read.format("mariabinlog").load(str(stress_ibb[0] / "nothing-*")).collect()


def test_split_settings_changed_after_register_apply_through_reader(spark: Any,
                                                                    stress_ibb: tuple[Path, list[str]]) -> None:
    """A Python data source sees no session setting while a query is planned, so
    ``spark.read.format`` keeps what :func:`register` took; :func:`reader` takes the settings
    when the DataFrame is created, per-read options win over both, and registering again
    takes the new settings too."""
    from mariabinlog.spark import reader, register

    directory = str(stress_ibb[0])

    def partitions(df: Any) -> int:
        return int(df.rdd.getNumPartitions())

    try:
        spark.conf.set("spark.sql.files.openCostInBytes", "0")
        spark.conf.set("spark.sql.files.maxPartitionBytes", "1g")
        whole = partitions(reader(spark).option("minPartitions", "1").load(directory))
        spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
        pages = partitions(reader(spark).load(directory))
        registered = partitions(spark.read.format("mariabinlog").load(directory))
        wins = partitions(reader(spark).option("maxPartitionBytes", "1g").option("minPartitions", "1").load(directory))
        register(spark, check=False)
        reregistered = partitions(spark.read.format("mariabinlog").load(directory))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
        register(spark, check=False)
    assert whole == wins == 1
    assert pages > 30 and reregistered == pages
    assert registered < pages  # the settings register() took when the session started (128m)
