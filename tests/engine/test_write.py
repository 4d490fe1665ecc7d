"""Writer, page FIFO, flush thread, pre-allocation, state records and durable readers."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest
from engine_helpers import (
    SMALL,
    fake_event,
    gtid_groups,
    query,
    query_texts,
    read_groups,
)

from mariabinlog.codec.events import (
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_STANDALONE,
    FL_TRANSACTIONAL,
    GtidEvent,
)
from mariabinlog.codec.groups import EventGroup
from mariabinlog.codec.gtid import Gtid
from mariabinlog.codec.ibb.page import PAGE_SIZE, decode_header_page
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.engine import Engine
from mariabinlog.engine.source import disk_source
from mariabinlog.engine.storage import BinlogFiles
from mariabinlog.engine.check import check_directory
from mariabinlog.engine.files import binlog_name
from mariabinlog.errors import EngineError


def test_groups_read_back_byte_exact_by_the_codec(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    rnd = random.Random(5)
    written = []
    for n in range(400):
        events = [query(b"q%d-%d" % (n, i), rnd.randrange(20, 3000)) for i in range(rnd.randrange(1, 4))]
        info = engine.commit(b"".join(events))
        assert info.gtid == Gtid(0, 1, n + 1)
        written.append(events)
    status = engine.status()
    engine.close()
    groups = gtid_groups(engine_dir)
    assert [g for g, _ in groups] == [Gtid(0, 1, n + 1) for n in range(400)]
    assert [events for _, events in groups] == written
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert report.state_records > 20
    assert report.end == (status.file_no, status.offset)
    # the first group of every restart is the Format_description restart marker
    assert read_groups(engine_dir)[0][0] is None


def test_files_are_preallocated_to_max_binlog_size(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    for n in range(60):
        engine.commit(query(b"x", 2000))
    file_no = engine.status().file_no
    assert file_no >= 2
    deadline = time.monotonic() + 5
    while not (engine_dir / binlog_name(file_no + 1)).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    for number in range(file_no + 2):
        assert os.path.getsize(engine_dir / binlog_name(number)) == SMALL["max_binlog_size"]
    # the pre-allocated next file is empty until the writer starts it: its header is all zero
    with open(engine_dir / binlog_name(file_no + 1), "rb") as f:
        assert decode_header_page(f.read(PAGE_SIZE)) is None
    headers = []
    for number in range(file_no + 1):
        with open(engine_dir / binlog_name(number), "rb") as f:
            headers.append(decode_header_page(f.read(PAGE_SIZE)))
    assert [h.file_no for h in headers] == list(range(file_no + 1))
    assert all(h.page_count == 4 and h.gtid_state_interval == 2 for h in headers)
    assert [h.start_lsn for h in headers] == sorted(h.start_lsn for h in headers)
    assert all(h.oob_ref_file_no == h.file_no and h.xa_ref_file_no == 2**64 - 1 for h in headers)


def test_clean_restart_continues_in_the_same_file(open_engine, engine_dir: Path) -> None:
    engine = open_engine()
    for n in range(10):
        engine.commit(query(b"a%d" % n, 100), domain_id=1)
    engine.commit(query(b"b", 100), gtid=Gtid(2, 7, 100))
    before = engine.status()
    engine.close()
    engine = open_engine(restart_marker=False)
    after = engine.status()
    assert (after.file_no, after.offset) == (before.file_no, before.offset)
    assert str(engine.gtid_state()) == "1-1-10,2-7-100"
    assert engine.commit(query(b"c", 10), domain_id=1).gtid == Gtid(1, 1, 11)
    assert engine.commit(query(b"d", 10), domain_id=2).gtid == Gtid(2, 1, 101)
    engine.close()
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert str(report.state) == "1-1-11,2-1-101,2-7-100" or report.state == engine.gtid_state()


def test_reader_gets_only_durable_data_and_its_wait_flushes_the_log(open_engine) -> None:
    engine = open_engine(durability=0, flush_interval=3600)
    reader = engine.reader()
    engine.group_commit()
    assert reader.poll() == []
    infos = [engine.commit(query(b"n%d" % n, 50)) for n in range(5)]
    assert engine.durable_position < engine.written_position
    assert reader.poll() == []  # written, but not durable yet: a replica must not see it
    started = time.monotonic()
    assert reader.wait(timeout=5)  # waiting at the durable end triggers the log flush
    assert time.monotonic() - started < 2
    groups = reader.poll()
    assert [g.record.offset for g in groups] == [i.offset for i in infos]
    assert engine.durable_position == engine.written_position
    # a non-durable reader sees written data at once
    loose = engine.reader(durable=False)
    engine.commit(query(b"late", 10), wait=False)
    assert len(loose.poll()) == 6


def test_reader_follows_the_writer_across_files_and_reads_from_the_fifo(open_engine) -> None:
    engine = open_engine(durability=2)
    received: list[bytes] = []
    done = threading.Event()

    def follow() -> None:
        reader = engine.reader()
        for group in reader.groups(timeout=2):
            received.append(query_texts(list(group.raw_events())[1:])[0])
            if len(received) == 300:
                break
        done.set()

    thread = threading.Thread(target=follow)
    thread.start()
    engine.fifo.pause()  # pages stay in memory: the reader must get them from the FIFO
    for n in range(40):
        engine.commit(query(b"p%d" % n, 300))
    engine.group_commit()
    time.sleep(0.2)
    assert len(received) == 40
    engine.fifo.resume()
    for n in range(40, 300):
        engine.commit(query(b"p%d" % n, 300))
    assert done.wait(10)
    thread.join()
    assert [int(t[1:].rstrip(b".")) for t in received] == list(range(300))


def test_large_transaction_spans_files_and_streams_back(open_engine, engine_dir: Path) -> None:
    engine = open_engine(max_binlog_size=256 * 1024)
    trx = engine.begin()
    events = [fake_event(50_000, n % 251) for n in range(40)]  # 2 MB > 8 files of 256 KiB
    for event in events:
        trx.write(event)
    info = engine.commit(trx=trx)
    small = engine.commit(query(b"after", 10))
    assert info.file_no > 4 and small.gtid.seq == 2
    engine.close()
    groups = gtid_groups(engine_dir)
    assert groups[0][1] == events
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert report.oob_nodes >= 2_000_000 // (256 * 1024)


def test_memory_stays_bounded_for_a_big_transaction(tmp_path: Path) -> None:
    """A 96 MB transaction in a child process: peak RSS grows by far less than the data."""
    script = tmp_path / "big.py"
    script.write_text(
        f"""
import resource, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / 'src')!r})
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.engine import Engine
from mariabinlog.engine.source import disk_source
from mariabinlog.engine.storage import BinlogFiles
engine = Engine.open({str(tmp_path / 'd')!r}, max_binlog_size=8 << 20, fifo_pages=256, durability=1)
chunk = bytes(19) + b"x" * (1 << 20)
import struct
event = struct.pack("<IBIIIH", 1, 0xFF, 1, len(chunk), 0, 0) + chunk[19:]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
trx = engine.begin()
for _ in range(96):
    trx.write(event)
engine.commit(trx=trx)
reader = engine.reader()
total = 0
for group in reader.groups(timeout=0):
    for piece in group.pieces():
        total += len(piece)
engine.close()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base, peak, total)
"""
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    base, peak, total = map(int, out.stdout.split())
    assert total > 96 << 20
    assert peak - base < 40 * 1024, f"peak RSS grew by {(peak - base) // 1024} MB"


def test_state_record_content_follows_the_first_byte_rule(open_engine, engine_dir: Path) -> None:
    engine = open_engine(max_binlog_size=256 * 1024)
    for n in range(300):
        engine.commit(query(b"d", 700 + n % 97), domain_id=n % 3, server_id=1 + n % 2)
    engine.close()
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert report.state_records >= 8
    reopened = Engine.open(engine_dir, restart_marker=False, **{**SMALL, "max_binlog_size": 256 * 1024})
    try:
        assert reopened.gtid_state() == report.state
    finally:
        reopened.close()


def test_page_left_with_two_bytes_is_filled_when_writing_resumes(open_engine, engine_dir: Path) -> None:
    """A page whose last chunk ends 2 bytes before the CRC is written out half-done by the
    shutdown checkpoint; after a restart the writer fills those bytes with 0xFF and moves on."""
    engine = open_engine(max_binlog_size=1 << 20)
    engine.commit(query(b"a", 100))
    file_no, offset = engine.written_position
    in_page = offset & (PAGE_SIZE - 1)
    gtid_len = len(Engine.gtid_event(Gtid(0, 1, 2)))
    want = (PAGE_SIZE - 4 - 2) - in_page - 3 - 1 - gtid_len  # event bytes so the record ends at 16378
    event = query(b"b", 1 + want - len(query(b"b", 1)))
    assert len(event) == want
    engine.commit(event)
    page_no = offset >> 14
    assert engine.written_position == (file_no, (page_no << 14) + PAGE_SIZE - 6)
    engine.close()
    assert check_directory(str(engine_dir)).ok
    engine = open_engine(max_binlog_size=1 << 20, restart_marker=False)
    engine.commit(query(b"c", 100))
    engine.close()
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    with open(engine_dir / binlog_name(file_no), "rb") as f:
        f.seek(page_no * PAGE_SIZE + PAGE_SIZE - 6)
        assert f.read(2) == b"\xff\xff"
    assert [query_texts(e)[0][:1] for _, e in gtid_groups(engine_dir)] == [b"a", b"b", b"c"]


def _start_lsns(directory: Path) -> list[int]:
    lsns = []
    for path in sorted(directory.glob("binlog-*.ibb")):
        with open(path, "rb") as f:
            header = decode_header_page(f.read(PAGE_SIZE))
        if header is not None:
            lsns.append(header.start_lsn)
    return lsns


def test_no_append_begins_two_files_at_one_start_lsn(open_engine, engine_dir: Path) -> None:
    """MariaDB keeps a mini-transaction smaller than one binlog file, so every file begins at a
    start LSN after the previous file's.  Two ways a single record used to span three 64 KiB
    files (49 KB of data each), beginning two at one LSN: the first OOB node of a group took
    all that was buffered up to the spill size plus the next large event (24 KB + 100 KB), and
    a spill size set larger than a file."""
    engine = open_engine(spill_size=24 * 1024, oob_piece_size=8 * 1024)
    trx = engine.begin()
    first, large = fake_event(20_000, 1), fake_event(100_000, 2)
    trx.write(first)
    trx.write(large)
    spilled = engine.commit(trx=trx)
    engine.close()
    engine = open_engine(spill_size=1 << 20, oob_piece_size=1 << 20)
    events = [fake_event(40_000, n) for n in range(5)]  # 200 KB: under the spill size asked for
    whole = engine.commit(b"".join(events))
    engine.close()
    lsns = _start_lsns(engine_dir)
    assert len(lsns) >= 6 and all(a < b for a, b in zip(lsns, lsns[1:])), lsns
    for info in (spilled, whole):
        assert info.end_file_no - info.file_no <= 1, info
    assert [events for _, events in gtid_groups(engine_dir)] == [[first, large], events]
    report = check_directory(str(engine_dir))
    assert report.ok, report.summary()
    assert engine.spill_size < engine.config.record_room(0) < 3 * PAGE_SIZE


def test_oob_nodes_are_never_larger_than_a_piece(open_engine) -> None:
    engine = open_engine(spill_size=24 * 1024, oob_piece_size=8 * 1024)
    sizes: list[int] = []
    write_piece = engine.write_oob_piece
    engine.write_oob_piece = lambda trx, data: (sizes.append(len(data)), write_piece(trx, data))[1]
    trx = engine.begin()
    for size in (20_000, 100_000, 3_000, 9_000, 50):
        trx.write(fake_event(size, size % 251))
    engine.commit(trx=trx)
    assert max(sizes) == 8 * 1024 and sum(sizes) == 20_000 + 100_000 + 3_000 + 9_000 + 50
    oversized = engine.begin()
    oversized.write(fake_event(30_000, 3))  # spilled: a forest to add a node to
    with pytest.raises(EngineError, match="does not fit in one binlog file"):
        write_piece(oversized, bytes(3 * PAGE_SIZE))
    oversized.rollback()


def _stored(directory: Path) -> list[tuple[object, bytes]]:
    """(GTID, every event's bytes, the GTID event's included) of each group in ``directory``."""
    files = BinlogFiles(str(directory))
    try:
        return [(group.gtid, group.data()) for group in RecordReader(disk_source(files), files.list()[0]).event_groups()]
    finally:
        files.close()


def _received_groups(count: int, seed: int) -> list[EventGroup]:
    """Groups as an archiver receives them: their own GTIDs in two domains, some with a commit
    id or an XA xid in the GTID event, most small, some larger than the spill size."""
    rnd = random.Random(seed)
    groups = []
    for n in range(count):
        domain = n % 2
        fields: dict[str, object] = {}
        flags2 = FL_TRANSACTIONAL
        if n % 5 == 1:
            flags2 |= FL_GROUP_COMMIT_ID
            fields["commit_id"] = 1000 + n
        if n % 11 == 3:
            flags2 |= FL_COMPLETED_XA | FL_STANDALONE
            fields.update(xa_format_id=1, xa_gtrid=b"g%d" % n, xa_bqual=b"")
        head = GtidEvent(seq_no=n // 2 + 1, domain_id=domain, flags2=flags2, server_id=7, timestamp=1_700_000_000 + n,
                         **fields).encode()
        size = rnd.randrange(30_000, 90_000) if n % 13 == 5 else rnd.randrange(20, 3000)
        events = [query(b"g%d-%d" % (n, i), size // 2 + 1) for i in range(2)]
        groups.append(EventGroup(Gtid(domain, 7, n // 2 + 1), raw=[head, *events]))
    return groups


def test_commit_groups_stores_what_commit_stores(open_engine, tmp_path: Path) -> None:
    """An archiver's batches (:meth:`Engine.commit_groups`) leave the same groups, GTID events
    included, as committing the groups one by one, across file ends and out-of-band groups."""
    groups = _received_groups(240, 3)
    one_by_one = open_engine(tmp_path / "one", restart_marker=False)
    for group in groups:
        head = group.gtid_event
        one_by_one.commit(group.body(), gtid=group.gtid, flags2=head.flags2, timestamp=head.timestamp, wait=False,
                          gtid_fields=head.optional_fields())
    one_by_one.close()
    batched = open_engine(tmp_path / "batched", restart_marker=False)
    for start in range(0, len(groups), 37):
        batched.commit_groups(groups[start : start + 37])
    batched.group_commit()
    assert str(batched.gtid_state()) == "0-7-120,1-7-120"
    batched.close()
    stored = _stored(tmp_path / "batched")
    assert stored == _stored(tmp_path / "one")
    assert [gtid for gtid, _ in stored] == [g.gtid for g in groups]
    # each GTID event as the engine encodes its own: the original's fields, header flags 0
    assert all(data.startswith(group.raw[0]) for (_, data), group in zip(stored, groups, strict=True))
    assert len(list((tmp_path / "batched").glob("binlog-*.ibb"))) > 3
    report = check_directory(str(tmp_path / "batched"))
    assert report.ok, report.summary()


@pytest.mark.parametrize("interval", [0.2, 0.0])
def test_a_reader_of_the_files_sees_a_small_group_after_the_checkpoint_interval(
        open_engine, engine_dir: Path, interval: float) -> None:
    """A small group's page reaches its file at the next checkpoint, every
    ``checkpoint_interval`` s while the binlog grows: a reader of the files (a Spark stream
    over the directory, ``dump`` of a live archive) sees the group without waiting for the
    page to fill.  With 0, checkpoints come only when the redo log fills: it waits."""
    engine = open_engine(checkpoint_interval=interval, flush_interval=0.05)
    gtid = engine.commit(query(b"one small group", 100)).gtid
    deadline = time.monotonic() + (10.0 if interval else 1.5)
    while gtid not in [g for g, _ in gtid_groups(engine_dir)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (gtid in [g for g, _ in gtid_groups(engine_dir)]) == bool(interval)
