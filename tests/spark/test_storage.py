"""Binlogs in object storage and Spark's file-source options.

An S3-compatible server (moto's server mode, pinned in requirements/test.txt) runs on loopback
and holds corpus legacy binlogs and an engine-written `.ibb` set with OOB and file-crossing
groups: DataFrames read from ``s3://`` (and ``s3a://``) equal the local ones for one, two and
many partitions, and a stream follows objects appended under a prefix exactly once across a
restart.  Locally: ``load([paths])``, ``pathGlobFilter``, ``recursiveFileLookup``,
``modifiedBefore``/``modifiedAfter``, ``ignoreMissingFiles`` and ``ignoreCorruptFiles``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

#: Columns compared between local and remote reads (the path columns differ by design).
COLUMNS = ("file_no", "position", "event_index", "gtid", "event_type", "event_length", "database", "query", "xid")


def _read(spark: Any, path: str | list[str], options: dict[str, str], view: str = "events") -> list[tuple[Any, ...]]:
    df = spark.read.format("mariabinlog").options(**options).option("view", view).load(path)
    columns = COLUMNS if view == "events" else ("gtid", "seq_no", "event_count", "events")
    return sorted((tuple(r) for r in df.select(*columns).collect()), key=repr)


LAYOUTS = {
    "one": {"maxPartitionBytes": "1g", "minPartitions": "1"},
    "two": {"maxPartitionBytes": "1g", "minPartitions": "2", "openCostInBytes": "0"},
    "many": {"maxPartitionBytes": "16k", "openCostInBytes": "0"},
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_s3_reads_equal_local_reads(spark: Any, s3_data: Any, corpus_dir: Path,
                                    stress_ibb: tuple[Path, list[str]], layout: str) -> None:
    options = {**s3_data.options, **LAYOUTS[layout]}
    legacy_local = _read(spark, str(corpus_dir / "binlogs/*/mysql-bin.*"), LAYOUTS[layout])
    assert len(legacy_local) > 1000
    assert _read(spark, f"s3://{s3_data.bucket}/legacy/*/mysql-bin.*", options) == legacy_local
    ibb_local = _read(spark, str(stress_ibb[0]), LAYOUTS[layout], "groups")
    assert len(ibb_local) == len(stress_ibb[1])
    assert _read(spark, f"s3a://{s3_data.bucket}/ibb", options, "groups") == ibb_local
    df = spark.read.format("mariabinlog").options(**options).load(f"s3://{s3_data.bucket}/ibb/")
    partitions = df.rdd.getNumPartitions()
    assert partitions == 1 if layout == "one" else partitions == 2 if layout == "two" else partitions > 2
    assert df.select("source_file").first()[0].startswith(f"s3://{s3_data.bucket}/ibb/binlog-")


def test_s3_reads_ranges_not_whole_objects(s3_data: Any, stress_ibb: tuple[Path, list[str]]) -> None:
    """A split of a remote file fetches the blocks it needs: the page source reads a few blocks."""
    from mariabinlog.spark.fs import BLOCK_BYTES, RemotePages, Storage, discover
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.plan import plan

    options = ScanOptions.parse({**s3_data.options, "maxPartitionBytes": "16k", "openCostInBytes": "0"})
    files = discover([f"s3://{s3_data.bucket}/ibb"], options.listing)
    local = discover([str(stress_ibb[0])], ScanOptions().listing)
    assert [(f.file_no, f.size) for f in files] == [(f.file_no, f.size) for f in local]
    splits = [s for part in plan(files, options) for s in part]
    assert len(splits) > len(files)
    pages = RemotePages(files[0].directory, {files[0].file_no: files[0].path}, Storage.parse(
        {k.lower(): v for k, v in s3_data.options.items()}))
    try:
        assert pages.page(files[0].file_no, 1) is not None
        assert len(pages._blocks) == 1 and all(len(b) <= BLOCK_BYTES for b in pages._blocks.values())
    finally:
        pages.close()


def test_s3_stream_follows_appended_objects_exactly_once(spark: Any, s3_data: Any, corpus_dir: Path,
                                                          tmp_path: Path) -> None:
    source = sorted((corpus_dir / "binlogs" / "w07_gtid_domains").glob("mysql-bin.*"))
    prefix = f"s3://{s3_data.bucket}/stream-{tmp_path.name}"
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> None:
        df = spark.readStream.format("mariabinlog").options(**s3_data.options).load(prefix)
        query = (df.filter("event_type = 'Gtid'").select("gtid", "position", "source_file").writeStream
                 .format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(240)

    s3_data.put(source[0], f"{prefix.split('/', 3)[3]}/{source[0].name}")
    run()
    first = len(spark.read.parquet(str(out)).collect())
    assert first > 0
    for path in source[1:]:
        s3_data.put(path, f"{prefix.split('/', 3)[3]}/{path.name}")
    run()
    gtids = [r.gtid for r in spark.read.parquet(str(out)).collect()]
    assert len(gtids) > first
    assert len(gtids) == len(set(gtids)) == 36  # w07's README: 36 transactions, three domains


# -- Spark's file-source options, on local files ------------------------------------------------


def test_load_list_glob_filter_and_recursive_lookup(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    a, b = corpus_dir / "binlogs" / "w07_gtid_domains", corpus_dir / "binlogs" / "w09_xa"
    both = _read(spark, [str(a), str(b)], {})
    assert both == sorted(_read(spark, str(a), {}) + _read(spark, str(b), {}), key=repr)
    nested = tmp_path / "nested"
    shutil.copytree(a, nested / "deep" / a.name)
    (nested / "notes.txt").write_text("not a binlog")
    with pytest.raises(Exception, match="no binlog files"):
        _read(spark, str(nested), {})
    assert _read(spark, str(nested), {"recursiveFileLookup": "true"}) == _read(spark, str(a), {})
    first = sorted(a.glob("mysql-bin.*"))[0]
    only_first = _read(spark, str(a), {"pathGlobFilter": f"*{first.name[-2:]}"})
    assert only_first == _read(spark, str(first), {})


def test_modified_filters_and_missing_files(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    files = sorted((corpus_dir / "binlogs" / "w07_gtid_domains").glob("mysql-bin.*"))
    for i, path in enumerate(files):
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (1_600_000_000 + i * 86400, 1_600_000_000 + i * 86400))
    newest = _read(spark, str(tmp_path), {"modifiedAfter": str(1_600_000_000 + (len(files) - 2) * 86400)})
    assert newest == _read(spark, str(tmp_path / files[-1].name), {})
    oldest = _read(spark, str(tmp_path), {"modifiedBefore": "2020-09-13T12:26:41"})  # epoch 1_600_000_001
    assert oldest == _read(spark, str(tmp_path / files[0].name), {})
    missing = str(tmp_path / "mysql-bin.999999")
    with pytest.raises(Exception, match="does not exist"):
        _read(spark, [str(tmp_path / files[0].name), missing], {})
    assert _read(spark, [str(tmp_path / files[0].name), missing], {"ignoreMissingFiles": "true"}) == oldest


def test_corrupt_file_fails_with_offset_or_is_skipped(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    source = max((corpus_dir / "binlogs").glob("*/mysql-bin.*"), key=lambda p: p.stat().st_size)
    data = bytearray(source.read_bytes())
    cut = len(data) // 2
    data[cut : cut + 64] = b"\xee" * 64
    broken = tmp_path / source.name
    broken.write_bytes(bytes(data))
    good = _read(spark, str(source), {})
    with pytest.raises(Exception, match=rf"{broken.name}.*offset \d+"):
        _read(spark, str(broken), {})
    kept = _read(spark, str(broken), {"ignoreCorruptFiles": "true", "maxPartitionBytes": "1g"})
    assert 0 < len(kept) < len(good)
    assert set(kept) <= set(good)
