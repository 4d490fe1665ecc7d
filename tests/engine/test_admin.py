"""FLUSH BINARY LOGS, PURGE, RESET MASTER, SHOW BINARY LOGS / MASTER STATUS, GTID seek."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from engine_helpers import fake_event, gtid_groups, query, query_texts

from mariabinlog.codec.gtid import ConnectState, Gtid
from mariabinlog.codec.ibb.page import PAGE_SIZE, RecordType
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.codec.ibb.records import Xid
from mariabinlog.engine.check import check_directory
from mariabinlog.engine.purge import LOG_IN_USE
from mariabinlog.engine.files import IbbDirectory
from mariabinlog.engine.files import binlog_name
from mariabinlog.errors import EngineError, LogInUseError


def fill_files(engine, count: int, size: int = 3_000, domain: int = 0) -> None:
    """Commit until ``count`` more files have been started."""
    target = engine.status().file_no + count
    n = 0
    while engine.status().file_no < target:
        engine.commit(query(b"f%d" % n, size), domain_id=domain)
        n += 1


def test_flush_pads_truncates_and_continues_in_the_next_file(open_engine, engine_dir: Path) -> None:
    engine = open_engine(max_binlog_size=1 << 20)
    engine.commit(query(b"one", 500))
    engine.flush()
    assert engine.status().file_no == 1
    engine.commit(query(b"two", 500))
    engine.close()
    assert os.path.getsize(engine_dir / binlog_name(0)) == 2 * PAGE_SIZE  # header + one data page
    with IbbDirectory(str(engine_dir)) as source:
        kinds = [(r.type, r.file_no) for r in RecordReader(source, 0)]
    assert (RecordType.DUMMY, 0) in kinds
    assert [query_texts(e)[0].rstrip(b".") for _, e in gtid_groups(engine_dir)] == [b"one", b"two"]
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()


def test_flush_cut_survives_a_late_preallocation(open_engine, engine_dir: Path) -> None:
    """The pre-allocation thread may reach file N only after the writer created, wrote and
    FLUSHed (cut) it; it must then leave N cut, or the empty tail before file N+1 breaks the
    binlog (§5.2: "page K is empty but a later file follows"; found by the crash soak)."""
    engine = open_engine()
    files = engine.files
    gate, late = threading.Event(), threading.Event()
    original = files.preallocate

    def held(file_no: int, pages: int) -> bool:
        gate.wait(10)
        created = original(file_no, pages)
        if file_no == 2:
            late.set()
        return created

    files.preallocate = held  # the thread is held before it looks at file 2
    fill_files(engine, 1)  # entering file 1 asks for file 2 in advance
    fill_files(engine, 1)  # the writer reaches file 2 first and the flush thread creates it
    engine.commit(query(b"short", 100))
    engine.flush()
    kept = os.path.getsize(engine_dir / binlog_name(2))
    assert kept < 64 * 1024
    gate.set()
    assert late.wait(10)
    assert os.path.getsize(engine_dir / binlog_name(2)) == kept
    engine.commit(query(b"after", 100))
    engine.close()
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()


def test_flush_delete_domain_id_rules(open_engine) -> None:
    engine = open_engine()
    engine.commit(query(b"d1"), domain_id=1)
    assert engine.flush([5]) == ["The gtid domain being deleted ('5') is not in the current binlog state"]
    with pytest.raises(EngineError, match=r"binlog files may contain gtids from the domain \('1'\)"):
        engine.flush([1])
    engine.commit(query(b"d2"), domain_id=2)
    engine.flush()
    engine.purge(engine.status().file_no)  # now domain 1 is only in the initial state
    assert str(engine.initial_state()) == "1-1-1,2-1-1"
    assert engine.flush([1]) == []
    assert str(engine.gtid_state()) == "2-1-1"
    engine.close()


def test_purge_to_and_show_binary_logs(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    fill_files(engine, 4)
    names = [f.name for f in engine.files_list()]
    assert names == [binlog_name(n) for n in range(5)]
    assert all(f.size == 64 * 1024 for f in engine.files_list())
    with pytest.raises(EngineError, match="Target log not found"):
        engine.purge("binlog-000099.ibb")
    assert engine.purge("binlog-000002.ibb") == [0, 1]
    assert [f.file_no for f in engine.files_list()] == [2, 3, 4]
    assert engine.initial_state() == engine_state_at_file(engine_dir, 2)
    status = engine.status()
    assert status.file_no == 4 and status.gtid_binlog_pos == str(engine.gtid_state())
    engine.close()
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()


def engine_state_at_file(directory: Path, file_no: int):
    from mariabinlog.codec.gtid import BinlogState
    from mariabinlog.codec.ibb.state import read_state_record
    from mariabinlog.engine.source import disk_source
    from mariabinlog.engine.storage import BinlogFiles

    files = BinlogFiles(str(directory))
    try:
        record = read_state_record(disk_source(files), file_no, 1)
        return BinlogState.from_list(Gtid(*g) for g in record.gtids)
    finally:
        files.close()


def test_purge_never_removes_a_file_an_active_reader_is_on(open_engine) -> None:
    engine = open_engine()
    fill_files(engine, 2)
    reader = engine.reader((1, PAGE_SIZE))
    reader.poll()  # reads to the end: now on the active file
    fill_files(engine, 2)
    slow = engine.reader((2, PAGE_SIZE))
    with pytest.raises(LogInUseError, match=LOG_IN_USE) as info:
        engine.purge(engine.status().file_no)
    assert info.value.purged == [0, 1]
    slow.close()
    reader.poll()
    assert engine.purge(engine.status().file_no) == [2, 3]


def test_purge_respects_oob_references_of_retained_files(open_engine) -> None:
    engine = open_engine(spill_size=8_000, oob_piece_size=4_000)
    fill_files(engine, 1)
    trx = engine.begin()
    trx.write(fake_event(9_000, 7))  # OOB data in file 1
    oob_file = engine.status().file_no
    fill_files(engine, 2)
    with pytest.raises(LogInUseError, match=LOG_IN_USE):
        engine.purge(engine.status().file_no)  # a running transaction holds file 1
    assert engine.files_list()[0].file_no == oob_file
    info = engine.commit(trx=trx)
    fill_files(engine, 1)
    # committed now, but retained files begun while it ran still name file 1 in their header:
    # a reader of its commit record needs file 1
    with pytest.raises(LogInUseError, match=LOG_IN_USE) as refused:
        engine.purge(oob_file + 1)
    assert refused.value.purged == []
    assert engine.files_list()[0].file_no == oob_file
    # once the files with the commit and those headers go too, file 1 may go
    assert engine.purge(engine.status().file_no) == list(range(oob_file, engine.status().file_no))
    assert info.file_no < engine.status().file_no


def test_purge_respects_pending_xa(open_engine) -> None:
    engine = open_engine()
    trx = engine.begin()
    trx.write(query(b"xa", 100))
    trx.prepare(Xid(1, b"p"))
    fill_files(engine, 2)
    with pytest.raises(LogInUseError, match=LOG_IN_USE):
        engine.purge(binlog_name(1))
    engine.xa_commit(Xid(1, b"p"))
    # the XA commit record references the prepared transaction's OOB data in file 0,
    # and the files begun while it was pending say so in their headers
    with pytest.raises(LogInUseError, match=LOG_IN_USE):
        engine.purge(binlog_name(1))
    fill_files(engine, 1)
    assert engine.purge(engine.status().file_no) == list(range(engine.status().file_no))


def test_automatic_purge_by_size_and_age_and_replica_count(open_engine) -> None:
    engine = open_engine(max_total_size=4 * 64 * 1024, slave_connections_needed_for_purge=1)
    fill_files(engine, 6)
    time.sleep(0.2)
    assert len(engine.files_list()) == 7  # no replica connected: automatic purge waits
    reader = engine.reader()
    reader.poll()
    fill_files(engine, 1)
    deadline = time.monotonic() + 5
    while len(engine.files_list()) > 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(engine.files_list()) <= 4
    reader.close()
    engine.close()
    aged = open_engine(expire_seconds=0.5)
    fill_files(aged, 2)
    time.sleep(0.7)
    fill_files(aged, 1)
    deadline = time.monotonic() + 5
    while aged.files_list()[0].file_no < aged.status().file_no - 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert aged.files_list()[0].file_no >= aged.status().file_no - 1


def test_close_while_an_automatic_purge_starts(open_engine) -> None:
    """close() must not hold the admin lock while it waits for the background thread, which
    may be about to take that lock for an automatic purge (a deadlock seen in CI)."""
    engine = open_engine(max_total_size=4 * 64 * 1024)
    fill_files(engine, 2)
    started = threading.Event()
    purge = engine._purge.auto

    def slow_purge(explicit: bool = False) -> list[int]:
        started.set()
        time.sleep(0.3)  # close() begins meanwhile
        return purge(explicit)

    engine._purge.auto = slow_purge  # type: ignore[method-assign]
    engine._purge.due = True
    engine._wake.set()
    assert started.wait(5)
    closer = threading.Thread(target=engine.close, daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive() and engine.closed


def test_reset_master(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    fill_files(engine, 3)
    reader = engine.reader()
    engine.reset()
    assert [f.name for f in engine.files_list()] == [binlog_name(0)]
    assert str(engine.gtid_state()) == ""
    with pytest.raises(EngineError, match="reset"):
        reader.poll()
    info = engine.commit(query(b"fresh", 10))
    assert info.gtid == Gtid(0, 1, 1) and info.file_no == 0
    engine.close()
    assert [g for g, _ in gtid_groups(engine_dir)] == [Gtid(0, 1, 1)]
    assert check_directory(str(engine_dir)).ok
    trx = open_engine(restart_marker=False).begin()
    trx.write(fake_event(20_000, 1))
    trx.write(fake_event(20_000, 2))
    with pytest.raises(EngineError, match="active transaction"):
        trx.engine.reset()


def test_gtid_seek_binary_searches_state_records(open_engine) -> None:
    engine = open_engine(max_binlog_size=1 << 20, state_interval=32768)
    for n in range(1, 901):
        engine.commit(query(b"s%d" % n, 700), domain_id=n % 2, gtid=None)
    state = engine.gtid_state()
    for target, searched in (("0-1-200,1-1-200", True), ("1-1-301,0-1-300", True), ("0-1-450,1-1-1", False)):
        start = ConnectState.parse(target)
        reader = engine.reader(start)
        first = reader._records.position
        groups = reader.poll()
        seqs = [(g.record.file_no, g.record.offset) for g in groups]
        assert seqs == sorted(seqs)
        got = {gtid for gtid in (engine_gtid(g) for g in groups)}
        expected = {g for g in all_gtids(engine) if not covered(g, start)}
        assert got == expected
        # the binary search starts late unless an early state is already past the target
        assert (first[1] >= 4 * PAGE_SIZE) == searched
    assert engine.reader("0-1-450,1-1-450").poll() == []
    # a position lacking a domain the binlog has: only page 1 (empty state) is "before" it
    assert engine.reader("0-1-200")._records.position == (0, PAGE_SIZE)
    assert state.last(0) == Gtid(0, 1, 450)


def engine_gtid(group):
    from mariabinlog.codec.ibb.state import commit_gtid

    return commit_gtid(group.record.payload)


def all_gtids(engine):
    return {engine_gtid(g) for g in engine.reader().poll()}


def covered(gtid: Gtid, start: ConnectState) -> bool:
    return gtid.domain in start and gtid.seq <= start[gtid.domain].seq


def test_gtid_seek_after_purge_reports_missing_position(open_engine) -> None:
    engine = open_engine()
    fill_files(engine, 3)
    engine.purge(engine.status().file_no)
    with pytest.raises(EngineError, match="have been purged"):
        engine.reader("0-1-1")
