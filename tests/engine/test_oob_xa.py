"""Out-of-band event groups (forests of perfect binary trees) and XA prepare/complete records."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from engine_helpers import SMALL, fake_event, gtid_groups, query, query_texts, run_child

from mariabinlog.codec.ibb.page import PAGE_SIZE, RecordType, decode_header_page
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.codec.ibb.records import CommitRecord, XaPrepare, Xid
from mariabinlog.engine import Engine
from mariabinlog.engine.check import check_directory
from mariabinlog.engine.engine import RESET_REFUSED
from mariabinlog.engine.files import IbbDirectory
from mariabinlog.engine.files import binlog_name
from mariabinlog.errors import EngineError


def records(directory: Path) -> list:
    with IbbDirectory(str(directory)) as source:
        return list(RecordReader(source, 0))


def header(directory: Path, file_no: int):
    with open(directory / binlog_name(file_no), "rb") as f:
        return decode_header_page(f.read(PAGE_SIZE))


def test_group_above_spill_size_is_a_forest_referenced_by_its_commit(open_engine, engine_dir: Path) -> None:
    engine = open_engine(max_binlog_size=1 << 20, spill_size=20_000, oob_piece_size=5_000)
    events = [fake_event(3_000 + n, n) for n in range(40)]  # ~180 KB -> 37 nodes
    info = engine.commit(b"".join(events))
    engine.close()
    commit = next(r for r in records(engine_dir) if r.type == RecordType.COMMIT and r.offset == info.offset)
    decoded = CommitRecord.decode(commit.payload)
    (forest,) = decoded.forests
    assert forest.num_nodes == -(-sum(map(len, events)) // 5_000)
    assert decoded.data[4] == 0xA2 and len(decoded.data) < 100  # only the GTID event stays in the commit
    assert gtid_groups(engine_dir)[0][1] == events
    assert check_directory(str(engine_dir)).ok


def test_rolled_back_oob_data_is_garbage_that_readers_skip(open_engine, engine_dir: Path) -> None:
    engine = open_engine(spill_size=10_000, oob_piece_size=4_000)
    trx = engine.begin()
    for n in range(10):
        trx.write(fake_event(5_000, n))
    assert trx.spilled and engine.status().active_oob == 1
    engine.commit(query(b"between", 100))
    trx.rollback()
    assert engine.status().active_oob == 0
    engine.commit(query(b"after", 100))
    engine.close()
    oob = [r for r in records(engine_dir) if r.type == RecordType.OOB_DATA]
    assert len(oob) >= 10
    assert [query_texts(e)[0].rstrip(b".") for _, e in gtid_groups(engine_dir)] == [b"between", b"after"]
    assert check_directory(str(engine_dir)).ok


def test_interleaved_transactions_and_header_oob_reference(open_engine, engine_dir: Path) -> None:
    engine = open_engine(spill_size=8_000, oob_piece_size=4_000)
    big = engine.begin()
    big.write(fake_event(9_000, 1))  # spills: first OOB node in the current file
    first_file = engine.status().file_no
    others = []
    while engine.status().file_no < first_file + 3:
        others.append(engine.commit(query(b"o%d" % len(others), 3_000)))
        big.write(fake_event(2_000, len(others) % 256))
    info = engine.commit(trx=big)
    later = engine.status().file_no
    while engine.status().file_no == later:
        engine.commit(query(b"tail", 3_000))
    engine.close()
    for file_no in range(first_file + 1, later + 1):
        assert header(engine_dir, file_no).oob_ref_file_no == first_file
    assert header(engine_dir, later + 1).oob_ref_file_no == later + 1
    groups = gtid_groups(engine_dir)
    big_group = next(events for gtid, events in groups if gtid.seq == info.gtid.seq)
    assert big_group[0] == fake_event(9_000, 1) and len(big_group) == 1 + len(others)
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()


def test_xa_prepare_commit_and_rollback(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    xid = Xid(1, b"gtrid-1", b"bq")
    trx = engine.begin()
    trx.write(query(b"insert 1", 100))
    trx.write(query(b"COMMIT"))
    trx.prepare(xid)
    assert [p.xid for p in engine.pending_xa()] == [xid]
    with pytest.raises(EngineError, match=RESET_REFUSED):
        engine.reset()
    engine.commit(query(b"other", 100))
    assert len(engine.reader().poll()) == 1  # the prepared transaction is not visible
    rolled = Xid(1, b"gtrid-2")
    trx2 = engine.begin()
    trx2.write(query(b"never", 100))
    trx2.prepare(rolled)
    engine.xa_rollback(rolled)
    info = engine.xa_commit(xid)
    assert engine.pending_xa() == []
    engine.close()
    groups = gtid_groups(engine_dir)
    assert [query_texts(e) for _, e in groups] == [[b"other" + b"." * 95], [b"insert 1" + b"." * 92, b"COMMIT"]]
    assert groups[-1][0] == info.gtid
    kinds = [r.type for r in records(engine_dir) if r.type in (RecordType.XA_PREPARE, RecordType.XA_COMPLETE)]
    assert kinds == [RecordType.XA_PREPARE, RecordType.XA_PREPARE, RecordType.XA_COMPLETE, RecordType.XA_COMPLETE]
    prepare = next(r for r in records(engine_dir) if r.type == RecordType.XA_PREPARE)
    assert XaPrepare.decode(prepare.payload).oob is not None  # the prepared events went out-of-band
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()


def test_pending_xa_survives_a_crash_and_is_reported(engine_dir: Path) -> None:
    run_child(
        engine_dir,
        """
        from mariabinlog.codec.ibb.records import Xid
        engine = Engine.open(engine_dir, **SMALL)
        engine.commit(query(b"before", 100))
        trx = engine.begin()
        for n in range(30):
            trx.write(fake_event(2_000, n))
        trx.prepare(Xid(7, b"pending"))
        done = engine.begin()
        done.write(query(b"done", 10))
        done.prepare(Xid(7, b"resolved"))
        engine.xa_commit(Xid(7, b"resolved"))
        while engine.status().file_no < 3:              # later files keep the XA reference
            engine.commit(query(b"filler", 3000))
        os._exit(0)
        """,
    )
    engine = Engine.open(engine_dir, restart_marker=False, **SMALL)
    pending = engine.pending_xa()
    assert [p.xid for p in pending] == [Xid(7, b"pending")]
    assert pending[0].oob is not None and pending[0].oob.num_nodes > 1
    assert header(engine_dir, 3).xa_ref_file_no == pending[0].file_no
    assert header(engine_dir, 3).oob_ref_file_no == pending[0].oob.first_file_no == 0
    with pytest.raises(EngineError, match=RESET_REFUSED):
        engine.reset()
    info = engine.xa_commit(Xid(7, b"pending"))
    engine.close()
    groups = gtid_groups(engine_dir)
    assert groups[-1][0] == info.gtid
    assert groups[-1][1] == [fake_event(2_000, n) for n in range(30)]
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert report.pending_xa == []


def test_transaction_larger_than_a_file_survives_a_crash(engine_dir: Path) -> None:
    run_child(
        engine_dir,
        """
        engine = Engine.open(engine_dir, **SMALL)
        trx = engine.begin()
        for n in range(50):
            trx.write(fake_event(10_000, n))             # 500 KB through 64 KB files
        engine.commit(trx=trx)
        os._exit(0)
        """,
    )
    engine = Engine.open(engine_dir, restart_marker=False, **SMALL)
    engine.close()
    assert gtid_groups(engine_dir)[0][1] == [fake_event(10_000, n) for n in range(50)]
    assert len(os.listdir(engine_dir)) > 8
    assert check_directory(str(engine_dir)).ok
