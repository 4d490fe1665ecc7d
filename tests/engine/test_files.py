"""Mapped binlog files keep a long read's RSS bounded (engine/files.py)."""

from __future__ import annotations

import os
from pathlib import Path

from mariabinlog.codec.ibb import PAGE_SIZE
from mariabinlog.engine.files import RELEASE_BYTES, IbbDirectory, MappedFile, binlog_name


def _rss_file() -> int:
    """Bytes of mapped file pages resident in this process (``RssFile`` of /proc/self/status)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("/proc/self/status has no RssFile line")


def _write(path: Path, size: int) -> bytes:
    """A file of ``size`` bytes whose every 16 KiB page starts with its number; returns a page."""
    with open(path, "wb") as out:
        for page_no in range(size // PAGE_SIZE):
            out.write(page_no.to_bytes(8, "little") + bytes(PAGE_SIZE - 8))
    return (0).to_bytes(8, "little") + bytes(PAGE_SIZE - 8)


def test_reading_a_file_three_times_the_release_size_keeps_rss_under_it(tmp_path: Path) -> None:
    size = 3 * RELEASE_BYTES
    first = _write(tmp_path / binlog_name(1), size)
    with IbbDirectory(str(tmp_path)) as source:
        kept = source.page(1, 0)  # a view handed out before the releases
        assert kept is not None
        base, peak = _rss_file(), 0
        for page_no in range(size // PAGE_SIZE):
            page = source.page(1, page_no)
            assert page is not None and int.from_bytes(page[:8], "little") == page_no
            peak = max(peak, _rss_file() - base)
        assert peak < RELEASE_BYTES + (8 << 20), f"{peak >> 20} MiB of mapped pages resident after {size >> 20} MiB read"
        assert bytes(kept) == first  # a released page faults back in with the same bytes
        assert source.page(1, size // PAGE_SIZE) is None


def test_mapped_file_releases_after_the_release_size_and_views_stay_valid(tmp_path: Path) -> None:
    path = tmp_path / "data"
    _write(path, 4 * PAGE_SIZE)
    mapped = MappedFile(str(path))
    try:
        view = mapped.view[PAGE_SIZE : PAGE_SIZE + 8]
        assert not mapped.note(RELEASE_BYTES - 1)
        assert mapped.note(1) and mapped.read == 0
        assert int.from_bytes(view, "little") == 1
        view.release()
    finally:
        mapped.close()
    empty = tmp_path / "empty"
    empty.touch()
    nothing = MappedFile(str(empty))
    assert nothing.size == 0 and len(nothing.view) == 0
    nothing.release()
    nothing.close()
    assert os.path.getsize(path) == 4 * PAGE_SIZE


def test_binlog_order_is_the_index_else_kind_and_number() -> None:
    """MariaDB's order: the .index's names in its order; else .ibb then legacy files by number
    (a seven-digit sequence number comes after six digits, unlike a name sort)."""
    from mariabinlog.engine.files import BinlogFile, binlog_order, binlog_streams, index_names

    files = [BinlogFile("/d", "legacy", n, f"/d/mysql-bin.{n:06d}", 1) for n in (1000000, 999999, 2)]
    assert [f.file_no for f in binlog_order(files)] == [2, 999999, 1000000]
    names = index_names("./mysql-bin.999999\n\n./mysql-bin.000002\n./mysql-bin.000404\n")
    assert [f.file_no for f in binlog_order(files, names)] == [999999, 2]
    other = BinlogFile("/c", "ibb", 1, "/c/binlog-000001.ibb", 1)
    assert [f.directory for f in binlog_streams([*files, other], {"/d": names})] == ["/c", "/d", "/d"]
