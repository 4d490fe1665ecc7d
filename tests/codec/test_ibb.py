"""The `.ibb` codec: header/data pages, record payloads, writer -> reader round trips, damage."""

from __future__ import annotations

import contextlib
import itertools
import random
import struct
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mariabinlog.codec.ibb import reader as ibb_reader
from mariabinlog.codec.checksum import crc32c
from mariabinlog.codec.ibb import (
    NO_FILE_REF,
    PAGE_DATA_END,
    PAGE_SIZE,
    CommitRecord,
    Dummy,
    GtidState,
    IbbHeader,
    OobData,
    OobForestBuilder,
    OobRef,
    PageWriter,
    Record,
    RecordReader,
    RecordSpan,
    RecordType,
    XaComplete,
    XaPrepare,
    Xid,
    check_page,
    chunk_at,
    decode_header_page,
    decode_record,
    iter_chunks,
    iter_events,
    seal_page,
    sniff_file,
)
from mariabinlog.codec.ibb.page import py_page_records
from mariabinlog.errors import ChecksumError, CorruptRecordError, DecodeError, MariabinlogError, TruncatedError

U64 = 2**64 - 1
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- helpers


class MemSource:
    """Dict-backed PageSource: file_no -> list of pages."""

    def __init__(self, files: dict[int, list[bytes]]) -> None:
        self.files = files

    def page(self, file_no: int, page_no: int) -> bytes | None:
        pages = self.files.get(file_no)
        if pages is None or page_no >= len(pages):
            return None
        return pages[page_no]

    def name(self, file_no: int) -> str:
        return f"binlog-{file_no:06d}.ibb"


def make_event(rnd: random.Random, size: int) -> bytes:
    """A fake v4 event (19-byte header, event_length at offset 9) of ``size`` bytes."""
    size = max(size, 19)
    return struct.pack("<IBIIIH", 1700000000, 2, 1, size, 0, 0) + rnd.randbytes(size - 19)


def split_into(data: bytes, rnd: random.Random, parts: int) -> list[bytes]:
    cuts = sorted(rnd.sample(range(1, len(data)), min(parts - 1, len(data) - 1))) if parts > 1 else []
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


class Workload:
    """Drives a PageWriter like the engine would and remembers what it wrote."""

    def __init__(self, pages_per_file: int = 8, interval: int = 2, state_size: int = 1) -> None:
        self.writer = PageWriter(pages_per_file=pages_per_file, state_payload=self._state, state_interval=interval)
        self.files: dict[int, dict[int, bytes]] = {}
        self.truncated: dict[int, int] = {}
        self.state_size = state_size
        self.seq = 0
        self.states: dict[tuple[int, int], bytes] = {}
        self.records: list[tuple[int, bytes, RecordSpan]] = []
        self.groups: list[tuple[RecordSpan, list[bytes]]] = []

    def _state(self, file_no: int, page_no: int) -> bytes:
        gtids = tuple((d, 1, self.seq + d) for d in range(self.state_size))
        payload = GtidState(gtids, file_no if page_no % 3 == 0 else None).encode()
        self.states[(file_no, page_no)] = payload
        return payload

    def record(self, record_type: int, payload: bytes) -> RecordSpan:
        span = self.writer.write_record(record_type, payload)
        self.records.append((record_type, payload, span))
        self._collect()
        return span

    def commit(
        self, events: list[bytes], rnd: random.Random, forests: tuple[tuple[OobRef, list[bytes]], ...] = ()
    ) -> RecordSpan:
        """Commit: forest data first (already written as OOB), then the commit record with the GTID event."""
        self.seq += 1
        data = events[0] if forests else b"".join(events)
        span = self.record(RecordType.COMMIT, CommitRecord(tuple(ref for ref, _ in forests), data).encode())
        expected = [data] + [piece for _, pieces in forests for piece in pieces]
        self.groups.append((span, expected))
        return span

    def oob_node(self, forest: OobForestBuilder, data: bytes) -> RecordSpan:
        span = self.record(RecordType.OOB_DATA, forest.next_node(data).encode())
        forest.added(span.file_no, span.offset)
        return span

    def flush(self) -> int:
        file_no = self.writer.position[0]
        pages = self.writer.flush_file()
        self.truncated[file_no] = pages
        self._collect()
        return pages

    def _collect(self) -> None:
        for page in self.writer.drain():
            self.files.setdefault(page.file_no, {})[page.page_no] = page.data

    def source(self) -> MemSource:
        files = {f: dict(pages) for f, pages in self.files.items()}
        partial = self.writer.partial_page()
        if partial is not None:
            files.setdefault(partial.file_no, {})[partial.page_no] = partial.data
        out: dict[int, list[bytes]] = {}
        for file_no, pages in files.items():
            count = self.truncated.get(file_no, self.writer.pages_per_file)
            out[file_no] = [pages.get(p, bytes(PAGE_SIZE)) for p in range(count)]
        return MemSource(out)


def key(record: Record) -> tuple:
    return record.type, record.payload, record.file_no, record.offset, record.end_file_no, record.end_offset


def check_round_trip(work: Workload) -> list[Record]:
    """Read everything back and compare with what was written."""
    source = work.source()
    records = list(RecordReader(source, 0))
    top = [r for r in records if r.type not in (RecordType.GTID_STATE, RecordType.DUMMY)]
    assert [(r.type, r.payload, RecordSpan(r.file_no, r.offset, r.end_file_no, r.end_offset)) for r in top] == [
        (t, p, s) for t, p, s in work.records
    ]
    for record in records:
        if record.type == RecordType.GTID_STATE:
            assert work.states[(record.file_no, record.offset // PAGE_SIZE)] == record.payload
            assert record.offset % PAGE_SIZE == 0
    groups = list(RecordReader(source, 0).event_groups())
    assert len(groups) == len(work.groups)
    for group, (span, pieces) in zip(groups, work.groups, strict=True):
        assert (group.record.file_no, group.record.offset) == (span.file_no, span.offset)
        assert group.data() == b"".join(pieces)
    for file_no, pages in source.files.items():
        if len(pages) > 2 and file_no in {f for f, _ in work.states}:
            first = next(iter_chunks(pages[1]))
            assert (
                first.offset == 0 and first.type_flags & 0x3F == RecordType.GTID_STATE and not first.type_flags & 0x80
            )
    return records


# --------------------------------------------------------------------------- header page


def test_header_round_trip_and_layout() -> None:
    header = IbbHeader(
        0, 4096, start_lsn=0x1122334455, gtid_state_interval=128, oob_ref_file_no=0, xa_ref_file_no=NO_FILE_REF
    )
    page = header.encode()
    assert len(page) == PAGE_SIZE
    assert page[:16] == bytes.fromhex("fe fe 0d 01 0e 00 00 00 01 00 00 00 00 00 00 00")
    assert page[16:32] == bytes(8) + bytes.fromhex("00 10 00 00 00 00 00 00")
    assert page[40:48] == bytes.fromhex("80 00 00 00 00 00 00 00")
    assert page[56:64] == b"\xff" * 8
    assert page[64:508] == bytes(444) and page[512:PAGE_DATA_END] == bytes(PAGE_DATA_END - 512)
    assert int.from_bytes(page[508:512], "little") == crc32c(page[:508])
    assert int.from_bytes(page[PAGE_DATA_END:], "little") == crc32c(page[:PAGE_DATA_END])
    assert decode_header_page(page) == header
    assert decode_header_page(page[:512]) == header


def test_sniff_file() -> None:
    assert sniff_file(IbbHeader(3, 8).encode()) == "ibb"
    assert sniff_file(bytes(PAGE_SIZE)) == "empty"
    assert sniff_file(b"\xfebin\x00") == "legacy"
    with pytest.raises(DecodeError, match="File is not a binary log file"):
        sniff_file(b"GIF89a")
    assert decode_header_page(bytes(PAGE_SIZE)) is None


def _patched(page: bytes, offset: int, value: bytes, *, fix_512: bool, fix_page: bool) -> bytes:
    buf = bytearray(page)
    buf[offset : offset + len(value)] = value
    if fix_512:
        buf[508:512] = crc32c(buf[:508]).to_bytes(4, "little")
    return seal_page(buf) if fix_page else bytes(buf)


@pytest.mark.parametrize(
    ("offset", "value", "fix_512", "error", "text", "where"),
    [
        (100, b"\x01", False, ChecksumError, "Cannot read first page of InnoDB binlog file", 508),
        (508, b"\x00\x00\x00\x00", False, ChecksumError, "Cannot read first page of InnoDB binlog file", 508),
        (8, b"\x02", True, DecodeError, "Unsupported version of InnoDB binlog file, cannot read", 8),
        (4, b"\x0d", True, DecodeError, "Invalid/unsupported page size in InnoDB binlog file, cannot read", 4),
        (0, b"\xfe\x62\x69\x6e", True, DecodeError, "legacy binlog", 0),
        (0, b"XXXX", True, DecodeError, "File is not a binary log file", 0),
    ],
)
def test_header_validation(offset: int, value: bytes, fix_512: bool, error: type, text: str, where: int) -> None:
    page = _patched(IbbHeader(0, 8).encode(), offset, value, fix_512=fix_512, fix_page=True)
    with pytest.raises(error, match=text) as info:
        decode_header_page(page)
    assert info.value.offset == where and info.value.expected


def test_header_checks_order_and_minor_version() -> None:
    page = IbbHeader(0, 8).encode()
    both = _patched(page, 4, b"\x0d\x00\x00\x00\x05", fix_512=True, fix_page=True)
    with pytest.raises(DecodeError, match="Unsupported version"):
        decode_header_page(both)
    minor = _patched(page, 12, b"\x07", fix_512=True, fix_page=True)
    assert decode_header_page(minor).version_minor == 7  # type: ignore[union-attr]
    tail = _patched(page, 4000, b"\x01", fix_512=False, fix_page=False)
    with pytest.raises(ChecksumError):
        decode_header_page(tail)
    assert decode_header_page(tail[:512]) is not None
    with pytest.raises(TruncatedError):
        decode_header_page(page[:300])


# --------------------------------------------------------------------------- data pages and chunks


def test_check_page() -> None:
    page = bytearray(PAGE_SIZE)
    page[0:8] = b"\x41\x05\x00hello"
    sealed = seal_page(page)
    assert check_page(sealed, 1) is True
    assert check_page(bytes(PAGE_SIZE), 1) is False
    flipped = bytearray(sealed)
    flipped[3] ^= 0x10
    with pytest.raises(ChecksumError, match="invalid CRC-32C") as info:
        check_page(flipped, 5)
    assert info.value.offset == PAGE_DATA_END
    wrong_algo = bytearray(sealed)
    import zlib

    wrong_algo[PAGE_DATA_END:] = zlib.crc32(sealed[:PAGE_DATA_END]).to_bytes(4, "little")
    with pytest.raises(ChecksumError):
        check_page(wrong_algo, 1)
    big_endian = sealed[:PAGE_DATA_END] + crc32c(sealed[:PAGE_DATA_END]).to_bytes(4, "big")
    with pytest.raises(ChecksumError):
        check_page(big_endian, 1)
    with pytest.raises(TruncatedError):
        check_page(sealed[:1000], 1)


def test_chunk_parsing_rules() -> None:
    page = bytearray(PAGE_SIZE)
    page[0:6] = b"\x01\x03\x00abc"
    page[6:9] = b"\xc1\x00\x00"
    page[9:11] = b"\xff\xff"
    chunks = list(iter_chunks(page))
    assert [(c.offset, c.type_flags, c.payload) for c in chunks] == [(0, 0x01, b"abc"), (6, 0xC1, b"")]
    assert chunk_at(page, 9) is None
    assert chunk_at(page, 11) == (0, 0)
    assert chunk_at(page, PAGE_SIZE - 7) is None
    page[16376:16380] = b"\x41\x01\x00z"
    assert chunk_at(page, 16376) == (0x41, 1)
    page[16376:16379] = b"\x41\x02\x00"
    with pytest.raises(CorruptRecordError, match="Invalid chunk length"):
        chunk_at(page, 16376)
    page[20:23] = b"\x80\x01\x00"
    with pytest.raises(CorruptRecordError, match="type 0"):
        chunk_at(page, 20)


# --------------------------------------------------------------------------- record payloads

u64 = st.integers(0, U64)
u32 = st.integers(0, 2**32 - 1)
oob_refs = st.builds(OobRef, st.integers(1, U64), u64, u64, u64, u64)
xids = st.builds(Xid, u32, st.binary(max_size=64), st.binary(max_size=64))


@given(st.lists(oob_refs, max_size=2).map(tuple), st.binary(max_size=200))
def test_commit_round_trip(forests: tuple[OobRef, ...], data: bytes) -> None:
    record = CommitRecord(forests, data)
    assert CommitRecord.decode(record.encode()) == record
    assert decode_record(RecordType.COMMIT, record.encode()) == record


def test_commit_header_forms() -> None:
    ref1, ref2 = OobRef(3, 0, 16384, 1, 20000), OobRef(1, 2, 16390, 2, 16390)
    assert CommitRecord((), b"G").encode() == b"\x00G"
    assert CommitRecord((ref1,), b"G").encode() == ref1.encode() + b"\x00G"
    assert CommitRecord((ref1, ref2), b"G").encode() == ref1.encode() + ref2.encode() + b"G"
    with pytest.raises(ValueError):
        CommitRecord((ref1, ref1, ref1), b"").encode()


@given(st.lists(st.tuples(u32, u32, u64), max_size=20).map(tuple), st.one_of(st.none(), st.integers(0, U64 - 1)))
def test_gtid_state_round_trip(gtids: tuple, xa_ref: int | None) -> None:
    state = GtidState(gtids, xa_ref)
    assert GtidState.decode(state.encode()) == state


def test_gtid_state_layout_and_limits() -> None:
    assert GtidState((), None).encode() == b"\x00\x00"
    assert GtidState(((0, 1, 5),), 3).encode() == bytes((1 << 3, 4 << 3, 0, 1 << 3, 5 << 3))
    with pytest.raises(ValueError):
        GtidState(((2**32, 1, 1),)).encode()
    for bad in (
        b"\x08\x00" + (b"\x07" + b"\x00" * 7 + b"\x01") + b"\x08\x08",
        b"\x08\x00\x08" + b"\x07" + b"\x00" * 7 + b"\x01\x08",
    ):
        with pytest.raises(CorruptRecordError, match="out of range"):
            GtidState.decode(bad)
    with pytest.raises(TruncatedError):
        GtidState.decode(b"\x10\x00\x08\x08\x08")


@given(u64, u64, u64, u64, u64, st.binary(max_size=100))
def test_oob_data_round_trip(index: int, lf: int, lo: int, rf: int, ro: int, data: bytes) -> None:
    node = OobData(index, lf, lo, rf, ro, data)
    assert OobData.decode(node.encode()) == node


@given(st.integers(0, 20000))
def test_dummy_round_trip(length: int) -> None:
    assert Dummy.decode(Dummy(length).encode()) == Dummy(length)


@given(xids, st.integers(0, 255), st.one_of(st.none(), oob_refs), st.integers(0, 255))
def test_xa_prepare_round_trip(xid: Xid, engines: int, oob: OobRef | None, flags: int) -> None:
    record = XaPrepare(xid, engines, oob, flags)
    assert XaPrepare.decode(record.encode()) == record


@given(xids, st.booleans())
def test_xa_complete_round_trip(xid: Xid, rollback: bool) -> None:
    record = XaComplete(xid, rollback)
    assert XaComplete.decode(record.encode()) == record


def test_xa_layouts() -> None:
    xid = Xid(1, b"trx1", b"br")
    assert XaComplete(xid, True).encode() == b"\x01" + b"\x01\x00\x00\x00" + b"\x04\x02" + b"trx1br"
    assert XaPrepare(xid, 2).encode() == b"\x2a\x02" + b"\x01\x00\x00\x00" + b"\x04\x02" + b"trx1br"
    ref = OobRef(2, 0, 16384, 0, 16500)
    assert XaPrepare(xid, 2, ref).encode().endswith(ref.encode())
    with pytest.raises(CorruptRecordError):
        XaComplete.decode(b"\x00\x01\x00\x00\x00\x41\x00" + b"x" * 65)
    with pytest.raises(TruncatedError):
        XaComplete.decode(b"\x00\x01\x00\x00\x00\x04\x00ab")
    with pytest.raises(DecodeError, match="unknown"):
        decode_record(9, b"")


# --------------------------------------------------------------------------- event splitting


@given(st.lists(st.integers(19, 300), max_size=12), st.integers(1, 8), st.integers(0, 2**32))
def test_iter_events_across_pieces(sizes: list[int], parts: int, seed: int) -> None:
    rnd = random.Random(seed)
    events = [make_event(rnd, size) for size in sizes]
    stream = b"".join(events)
    pieces = split_into(stream, rnd, parts) if stream else []
    assert list(iter_events(pieces)) == events
    if stream:
        with pytest.raises(TruncatedError):
            list(iter_events([stream[:-1]]))


def test_iter_events_rejects_short_length() -> None:
    bad = struct.pack("<IBIIIH", 0, 2, 1, 5, 0, 0)
    with pytest.raises(CorruptRecordError, match="shorter than the event header") as info:
        list(iter_events([bad]))
    assert info.value.offset == 9


# --------------------------------------------------------------------------- OOB forest


SPEC_13 = {
    0: (None, None),
    1: (None, 0),
    2: (0, 1),
    3: (None, 2),
    4: (None, 3),
    5: (3, 4),
    6: (2, 5),
    7: (None, 6),
    8: (None, 7),
    9: (7, 8),
    10: (None, 9),
    11: (None, 10),
    12: (10, 11),
}


def test_spec_forest_of_13_nodes() -> None:
    work = Workload(pages_per_file=64)
    rnd = random.Random(13)
    forest = OobForestBuilder()
    where: dict[tuple[int, int], int] = {}
    pieces = [f"node{i:02d}|".encode() + rnd.randbytes(rnd.choice((10, 9000))) for i in range(13)]
    for i, piece in enumerate(pieces):
        span = work.oob_node(forest, piece)
        where[(span.file_no, span.offset)] = i
        if i % 4 == 1:
            work.commit([make_event(rnd, 40)], rnd)
    ref = forest.ref
    assert ref is not None and ref.num_nodes == 13 and where[(ref.first_file_no, ref.first_offset)] == 0
    assert where[ref.last] == 12
    records = list(RecordReader(work.source(), 0))
    for record in records:
        if record.type == RecordType.OOB_DATA:
            node = OobData.decode(record.payload)
            left = where.get((node.left_file_no, node.left_offset))
            right = where.get((node.right_file_no, node.right_offset))
            assert (left, right) == SPEC_13[node.node_index]
    work.commit([make_event(rnd, 30)], rnd, ((ref, pieces),))
    group = list(RecordReader(work.source(), 0).event_groups())[-1]
    assert list(group.pieces()) == [group.commit.data, *pieces]


def test_forest_builder_links_without_writer() -> None:
    forest = OobForestBuilder()
    assert forest.ref is None
    links = []
    for i in range(7):
        node = forest.next_node(b"x")
        links.append((node.node_index, node.left_offset, node.right_offset))
        forest.added(1, 100 * (i + 1))
    assert links == [(0, 0, 0), (1, 0, 100), (2, 100, 200), (3, 0, 300), (4, 0, 400), (5, 400, 500), (6, 300, 600)]
    assert forest.ref == OobRef(7, 1, 100, 1, 700)


# --------------------------------------------------------------------------- writer -> reader

ops = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.integers(1, 3), st.integers(19, 30000)),
        st.tuples(st.just("oob"), st.integers(1, 12), st.integers(100, 20000), st.integers(0, 3)),
        st.tuples(st.just("dual"), st.integers(1, 4), st.integers(1, 4), st.integers(100, 9000)),
        st.tuples(st.just("xa"), st.integers(0, 4), st.booleans()),
        st.tuples(st.just("flush")),
        st.tuples(st.just("state"), st.integers(1, 4)),
    ),
    max_size=10,
)


def run_ops(work: Workload, operations: Iterable[tuple], rnd: random.Random) -> None:
    for op in operations:
        kind = op[0]
        if kind == "commit":
            work.commit([make_event(rnd, rnd.randint(19, op[2])) for _ in range(op[1])], rnd)
        elif kind in ("oob", "dual", "xa"):
            trees = []
            counts = (op[1], op[2]) if kind == "dual" else (max(op[1], 1),)
            size = op[3] if kind == "dual" else (op[2] if kind == "oob" else 3000)
            for count in counts:
                events = [make_event(rnd, 60)] + [make_event(rnd, rnd.randint(19, size)) for _ in range(count)]
                forest = OobForestBuilder()
                pieces = split_into(b"".join(events[1:]), rnd, count)
                for piece in pieces:
                    work.oob_node(forest, piece)
                    if kind == "oob" and op[3] and rnd.random() < 0.5:
                        work.commit([make_event(rnd, 50)], rnd)
                assert forest.ref is not None
                trees.append((forest.ref, pieces, events[0]))
            if kind == "xa":
                xid = Xid(1, rnd.randbytes(op[1] * 5), b"q")
                if op[1]:
                    work.record(RecordType.XA_PREPARE, XaPrepare(xid, 1, trees[0][0]).encode())
                if op[2]:
                    work.record(RecordType.XA_COMPLETE, XaComplete(xid, False).encode())
            work.commit([trees[0][2]], rnd, tuple((ref, pieces) for ref, pieces, _ in trees))
        elif kind == "flush":
            work.flush()
        else:
            work.state_size = op[1] * 700


@FAST
@given(ops, st.integers(0, 2**32), st.sampled_from([(6, 2), (8, 4), (12, 0)]))
def test_writer_reader_round_trip(operations: list[tuple], seed: int, geometry: tuple[int, int]) -> None:
    rnd = random.Random(seed)
    work = Workload(pages_per_file=geometry[0], interval=geometry[1])
    run_ops(work, operations, rnd)
    work.commit([make_event(rnd, 100)], rnd)
    records = check_round_trip(work)
    for group, (_, pieces) in zip(RecordReader(work.source(), 0).event_groups(), work.groups, strict=True):
        assert b"".join(group.raw_events()) == b"".join(pieces)
    assert all(r.type != RecordType.DUMMY or r.offset % PAGE_SIZE for r in records)


PAGE_RECORDS = {"python": py_page_records}
if ibb_reader._fast is not None:
    PAGE_RECORDS["c"] = ibb_reader._fast.page_records


@pytest.mark.parametrize("name", sorted(PAGE_RECORDS))
@FAST
@given(ops, st.integers(0, 2**32))
def test_page_records_twins_and_the_chunk_by_chunk_path_agree(name: str, operations: list[tuple], seed: int) -> None:
    """A page's one-chunk records in one call (the small-commit path of the reader) are those
    the chunk-by-chunk path reads, on written pages and on damaged ones."""
    page_records = PAGE_RECORDS[name]
    rnd = random.Random(seed)
    work = Workload(pages_per_file=8, interval=2)
    run_ops(work, operations, rnd)
    for _ in range(30):
        work.commit([make_event(rnd, rnd.randrange(40, 300))], rnd)
    source = work.source()
    pages = [page for file_pages in source.files.values() for page in file_pages[1:]]
    for page in pages:
        damaged = bytearray(page)
        damaged[rnd.randrange(PAGE_SIZE)] = rnd.randrange(256)
        for data in (page, bytes(damaged)):
            for offset in (0, rnd.randrange(PAGE_SIZE), PAGE_SIZE - 8, PAGE_SIZE - 7):
                found = page_records(data, offset)
                assert found == py_page_records(data, offset)
                records, stop = found
                at = offset
                for record_type, payload, start, end in records:
                    header = chunk_at(data, at)
                    assert header is not None and start == at and header[0] & 0x3F == record_type
                    assert header[0] & 0xC0 == 0x40 and end == at + 3 + header[1] == at + 3 + len(payload)
                    at = end
                assert stop == at
    with pytest.raises(ValueError):
        page_records(bytes(100), 0)
    fast = list(RecordReader(source, 0))
    original = ibb_reader.page_records
    ibb_reader.page_records = lambda page, offset: ([], offset)
    try:
        slow = list(RecordReader(source, 0))
    finally:
        ibb_reader.page_records = original
    assert [key(r) + (r.nested,) for r in fast] == [key(r) + (r.nested,) for r in slow]


def test_large_oob_transaction_across_files_with_interleaved_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ibb_reader, "MAX_OOB_DEPTH", 24)  # the walk keeps one spine per tree: sum of heights
    rnd = random.Random(7)
    work = Workload(pages_per_file=16, interval=4)
    events = [make_event(rnd, 80)] + [make_event(rnd, rnd.randint(19, 4000)) for _ in range(900)]
    pieces = split_into(b"".join(events[1:]), rnd, 350)
    big, other = OobForestBuilder(), OobForestBuilder()
    other_pieces = []
    for i, piece in enumerate(pieces):
        work.oob_node(big, piece)
        if i % 7 == 3:
            work.commit([make_event(rnd, 200), make_event(rnd, 30)], rnd)
        if i % 11 == 5:
            other_piece = make_event(rnd, 300)
            other_pieces.append(other_piece)
            work.oob_node(other, other_piece)
    assert big.ref is not None and other.ref is not None
    work.commit([events[0]], rnd, ((big.ref, pieces),))
    work.commit([make_event(rnd, 60)], rnd, ((other.ref, other_pieces),))
    assert work.writer.position[0] >= 3 and big.ref.first_file_no == 0
    check_round_trip(work)
    group = next(g for g in RecordReader(work.source(), 0).event_groups() if g.commit.forests)
    assert list(group.raw_events()) == events


def test_two_forests_dual_cache() -> None:
    rnd = random.Random(2)
    work = Workload(pages_per_file=10, interval=2)
    first, second = OobForestBuilder(), OobForestBuilder()
    a = [rnd.randbytes(3000) for _ in range(5)]
    b = [rnd.randbytes(5000) for _ in range(3)]
    for x, y in zip(a, b + [b""] * 2, strict=True):
        work.oob_node(first, x)
        if y:
            work.oob_node(second, y)
    assert first.ref and second.ref
    work.commit([b"GTID"], rnd, ((first.ref, a), (second.ref, b)))
    records = check_round_trip(work)
    commit = next(r for r in records if r.type == RecordType.COMMIT).decode()
    assert isinstance(commit, CommitRecord) and commit.forests == (first.ref, second.ref)


def test_xa_prepare_and_complete_records() -> None:
    rnd = random.Random(3)
    work = Workload()
    forest = OobForestBuilder()
    pieces = [rnd.randbytes(700) for _ in range(4)]
    for piece in pieces:
        work.oob_node(forest, piece)
    xid = Xid(1, b"gtrid-1", b"bq")
    assert forest.ref
    work.record(RecordType.XA_PREPARE, XaPrepare(xid, 1, forest.ref).encode())
    work.commit([make_event(rnd, 40)], rnd)
    work.record(RecordType.XA_COMPLETE, XaComplete(xid).encode())
    work.commit([b"G"], rnd, ((forest.ref, pieces),))
    records = check_round_trip(work)
    decoded = [r.decode() for r in records if r.type in (RecordType.XA_PREPARE, RecordType.XA_COMPLETE)]
    assert decoded == [XaPrepare(xid, 1, forest.ref), XaComplete(xid, False)]


@pytest.mark.parametrize("end_offset", [16375, 16376, 16377, 16378, 16379, 16380])
def test_page_end_edges_and_flush(end_offset: int) -> None:
    work = Workload(pages_per_file=6, interval=0)
    rnd = random.Random(0)
    work.commit([b"a"], rnd)
    in_page = work.writer.position[1] - PAGE_SIZE
    span = work.commit([b"b" * (end_offset - in_page - 4)], rnd)
    assert span.end_offset == (PAGE_SIZE * 2 if end_offset == 16380 else PAGE_SIZE + end_offset)
    pages = work.flush()
    assert pages == 2
    last_page = work.files[0][pages - 1]
    tail = list(iter_chunks(last_page))[-1]
    if end_offset <= 16376:
        assert tail.type_flags == 0x44 and tail.offset == end_offset
        assert tail.payload == b"\xff" * (PAGE_DATA_END - end_offset - 3)
    elif end_offset < 16380:
        assert last_page[end_offset:PAGE_DATA_END] == b"\xff" * (PAGE_DATA_END - end_offset)
    work.commit([b"after flush"], rnd)
    assert work.records[-1][2].file_no == 1
    check_round_trip(work)


def test_one_byte_first_chunk() -> None:
    work = Workload(pages_per_file=6, interval=0)
    work.commit([b"a"], random.Random(0))
    in_page = work.writer.position[1] - PAGE_SIZE
    work.commit([b"x" * (16376 - in_page - 4)], random.Random(0))
    span = work.record(RecordType.OOB_DATA, OobData(0, 0, 0, 0, 0, b"y" * 100).encode())
    assert span.offset == PAGE_SIZE + 16376
    assert next(iter_chunks(work.source().files[0][1], 16376)).payload == b"\x00"
    check_round_trip(work)


def test_state_records_nested_and_room_rule() -> None:
    work = Workload(pages_per_file=6, interval=2, state_size=4000)
    rnd = random.Random(5)
    for _ in range(12):
        work.commit([make_event(rnd, 15000)], rnd)
    records = check_round_trip(work)
    states = [r for r in records if r.type == RecordType.GTID_STATE]
    assert any(r.nested and r.offset == PAGE_SIZE and r.end_offset > 2 * PAGE_SIZE for r in states)
    assert {(r.file_no, r.offset // PAGE_SIZE) for r in states} <= {(f, p) for f in range(10) for p in (1, 2, 3)}
    for pages in work.source().files.values():
        if len(pages) > 4:
            first = next(iter_chunks(pages[4]))
            assert first.type_flags & 0x3F != RecordType.GTID_STATE


def test_header_interval_quirk_bytes_value() -> None:
    work = Workload(pages_per_file=8, interval=2097152)
    rnd = random.Random(1)
    for _ in range(10):
        work.commit([make_event(rnd, 9000)], rnd)
    records = check_round_trip(work)
    assert {r.offset for r in records if r.type == RecordType.GTID_STATE} == {PAGE_SIZE}


def test_skip_partial_from_every_page_start() -> None:
    rnd = random.Random(11)
    work = Workload(pages_per_file=7, interval=2, state_size=2)
    run_ops(
        work, [("commit", 2, 30000), ("oob", 6, 12000, 2), ("flush",), ("dual", 2, 2, 9000), ("commit", 3, 25000)], rnd
    )
    source = work.source()
    full = list(RecordReader(source, 0))
    for file_no, pages in source.files.items():
        for page_no in range(len(pages)):
            start = (file_no, page_no * PAGE_SIZE)
            got = [key(r) for r in RecordReader(source, file_no, page_no * PAGE_SIZE, skip_partial=True)]
            assert got == [key(r) for r in full if (r.file_no, r.offset) >= max(start, (file_no, PAGE_SIZE))]
    spanning = next(
        r for r in full if r.end_file_no == r.file_no and r.end_offset // PAGE_SIZE > r.offset // PAGE_SIZE + 1
    )
    with pytest.raises(CorruptRecordError, match="continuation"):
        list(RecordReader(source, spanning.file_no, (spanning.offset // PAGE_SIZE + 1) * PAGE_SIZE))


def test_reader_resumes_on_growing_file() -> None:
    rnd = random.Random(4)
    work = Workload(pages_per_file=8)
    work.commit([make_event(rnd, 100)], rnd)
    source = work.source()
    reader = RecordReader(source, 0)
    first = list(reader)
    work.commit([make_event(rnd, 20000)], rnd)
    source.files.update(work.source().files)
    second = list(reader)
    assert [r.type for r in first] == [RecordType.GTID_STATE, RecordType.COMMIT]
    assert [key(r) for r in second if r.type == RecordType.COMMIT] == [
        key(r) for r in list(RecordReader(work.source(), 0))[-1:]
    ]


def test_writer_resume_continues_page() -> None:
    rnd = random.Random(6)
    work = Workload(pages_per_file=8)
    work.commit([make_event(rnd, 500)], rnd)
    offset = work.writer.position[1]
    partial = work.writer.partial_page()
    assert partial is not None
    header = decode_header_page(work.files[0][0])
    assert header is not None
    resumed = PageWriter.resume(
        header, offset // PAGE_SIZE, offset % PAGE_SIZE, partial.data, pages_per_file=8, state_payload=work._state
    )
    work.writer = resumed
    work.commit([make_event(rnd, 40000)], rnd)
    check_round_trip(work)


def test_empty_and_missing_files() -> None:
    assert list(RecordReader(MemSource({}), 0)) == []
    assert list(RecordReader(MemSource({0: [bytes(PAGE_SIZE)] * 4}), 0)) == []
    work = Workload()
    work.commit([b"x" * 30], random.Random(0))
    source = work.source()
    source.files[1] = [bytes(PAGE_SIZE)] * 8
    reader = RecordReader(source, 0)
    assert len(list(reader)) == 2


# --------------------------------------------------------------------------- damaged input


def _sample_work() -> Workload:
    rnd = random.Random(21)
    work = Workload(pages_per_file=4, interval=2)
    run_ops(
        work,
        [
            ("commit", 3, 20000),
            ("oob", 10, 8000, 2),
            ("xa", 2, True),
            ("flush",),
            ("commit", 2, 30000),
            ("dual", 3, 3, 6000),
        ],
        rnd,
    )
    work.commit([make_event(rnd, 60)], rnd)
    return work


def read_all(source: MemSource) -> None:
    for group in RecordReader(source, 0).event_groups():
        for _ in group.raw_events():
            pass
    for record in RecordReader(source, 0):
        if record.type in (RecordType.GTID_STATE, RecordType.XA_PREPARE, RecordType.XA_COMPLETE):
            record.decode()


def test_sample_reads_clean() -> None:
    source = _sample_work().source()
    assert len(source.files) >= 3
    read_all(source)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_bit_flips_raise_only_decode_errors(data: st.DataObject) -> None:
    source = _sample_work().source()
    file_no = data.draw(st.sampled_from(sorted(source.files)))
    page_no = data.draw(st.integers(0, len(source.files[file_no]) - 1))
    bit = data.draw(st.integers(0, PAGE_SIZE * 8 - 1))
    reseal = data.draw(st.booleans())
    original = source.files[file_no][page_no]
    page = bytearray(original)
    page[bit // 8] ^= 1 << (bit % 8)
    if reseal:
        if page_no == 0:
            page[508:512] = crc32c(page[:508]).to_bytes(4, "little")
        page = bytearray(seal_page(page))
    source.files[file_no][page_no] = bytes(page)
    with contextlib.suppress(MariabinlogError):
        read_all(source)
    if not reseal and original != bytes(PAGE_SIZE):
        with pytest.raises(DecodeError):
            read_all(source)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_truncation_raises_only_decode_errors(data: st.DataObject) -> None:
    source = _sample_work().source()
    file_no = data.draw(st.sampled_from(sorted(source.files)))
    keep = data.draw(st.integers(0, len(source.files[file_no]) - 1))
    cut = data.draw(st.sampled_from([0, 1, 100, 8000, PAGE_SIZE - 1]))
    pages = source.files[file_no][:keep]
    if cut:
        pages.append(source.files[file_no][keep][:cut])
    source.files[file_no] = pages
    with contextlib.suppress(MariabinlogError):
        read_all(source)


def test_wrong_crc_names_file_and_page() -> None:
    source = _sample_work().source()
    page = bytearray(source.files[0][2])
    page[PAGE_DATA_END] ^= 1
    source.files[0][2] = bytes(page)
    with pytest.raises(ChecksumError) as info:
        list(RecordReader(source, 0))
    assert info.value.file == "binlog-000000.ibb" and info.value.offset == 2 * PAGE_SIZE + PAGE_DATA_END


def test_bad_chunk_length() -> None:
    source = _sample_work().source()
    page = bytearray(source.files[0][1])
    first = next(iter_chunks(page))
    page[first.offset + 1 : first.offset + 3] = (PAGE_SIZE - 3).to_bytes(2, "little")
    source.files[0][1] = seal_page(page)
    with pytest.raises(CorruptRecordError, match="page 1 in binlog number 0: Invalid chunk length") as info:
        list(RecordReader(source, 0))
    assert info.value.file == "binlog-000000.ibb" and info.value.offset == PAGE_SIZE + 1


def test_missing_next_file_inside_record() -> None:
    rnd = random.Random(8)
    work = Workload(pages_per_file=4, interval=0)
    while work.writer.position[0] == 0:
        work.commit([make_event(rnd, 12000)], rnd)
    source = work.source()
    spanning = [r for r in list(RecordReader(source, 0)) if r.end_file_no == 1 and r.file_no == 0]
    assert spanning
    del source.files[1]
    with pytest.raises(TruncatedError, match=r"binlog-000001\.ibb does not exist") as info:
        list(RecordReader(source, 0))
    assert info.value.file == "binlog-000000.ibb" and info.value.offset == spanning[0].offset


def test_record_structure_errors() -> None:
    def source_with(chunks: bytes) -> MemSource:
        page = bytearray(PAGE_SIZE)
        page[: len(chunks)] = chunks
        return MemSource({0: [IbbHeader(0, 4).encode(), seal_page(page)]})

    with pytest.raises(CorruptRecordError, match="starts with continuation"):
        list(RecordReader(source_with(b"\xc1\x01\x00x"), 0))
    with pytest.raises(CorruptRecordError, match="missing end chunk"):
        list(RecordReader(source_with(b"\x01\x01\x00x\x01\x01\x00y"), 0))
    with pytest.raises(CorruptRecordError, match="missing end chunk"):
        list(RecordReader(source_with(b"\x01\x01\x00x\x43\x01\x00y"), 0))
    with pytest.raises(TruncatedError, match="end of written data"):
        list(RecordReader(source_with(b"\x01\x01\x00x"), 0))
    nested = list(RecordReader(source_with(b"\x01\x01\x00x\x42\x02\x00\x00\x00\x44\x01\x00\xff\xc1\x01\x00y"), 0))
    assert [(r.type, r.nested) for r in nested] == [(2, True), (4, True), (1, False)]
    assert nested[-1].payload == b"xy"
    assert [r.type for r in RecordReader(source_with(b"\x81\x01\x00x\x41\x01\x00\x00"), 0, skip_partial=True)] == [1]


def _forged(
    nodes: list[tuple[int, int, int, int, int]], *, pointer: tuple[int, int] | None = None, count: int = 0
) -> MemSource:
    """Write OOB nodes with given links (offsets relative to slot positions) and a commit pointing at the last."""
    work = Workload(pages_per_file=8, interval=0)
    positions = []
    for index, lf, lo, rf, ro in nodes:
        span = work.record(RecordType.OOB_DATA, OobData(index, lf, lo, rf, ro, b"data%d" % index).encode())
        positions.append((span.file_no, span.offset))
    last = pointer or positions[-1]
    work.record(RecordType.COMMIT, CommitRecord((OobRef(count or len(nodes), *positions[0], *last),), b"G").encode())
    return work.source()


def _data_of(source: MemSource) -> bytes:
    return next(RecordReader(source, 0).event_groups()).data()


def test_dangling_and_cyclic_oob_pointers(monkeypatch: pytest.MonkeyPatch) -> None:
    good = next(RecordReader(_forged([(0, 0, 0, 0, 0)]), 0).event_groups())
    assert good.data() == b"Gdata0"
    node0 = good.commit.forests[0].last
    for pointer, text in [
        ((node0[0], node0[1] + 2), "dangling"),
        ((0, 100), "dangling.*not a possible record start"),
        ((0, 5 * PAGE_SIZE), "backwards"),
    ]:
        with pytest.raises(CorruptRecordError, match=text):
            _data_of(_forged([(0, 0, 0, 0, 0)], pointer=pointer))
    # a leaf whose prior-tree link points at itself
    with pytest.raises(CorruptRecordError, match="backwards"):
        _data_of(_forged([(0, 0, 0, *node0)]))
    # the leftmost leaf links forward
    with pytest.raises(CorruptRecordError, match="backwards"):
        _data_of(_forged([(0, 0, 0, 0, 0), (1, 0, 0, 0, 6 * PAGE_SIZE)]))
    # shared subtrees: every node points twice at the previous one (exponential if unchecked)
    src = _forged([(0, 0, 0, 0, 0)] + [(i, 0, node0[1], 0, node0[1]) for i in range(1, 40)])
    positions = [r.offset for r in RecordReader(src, 0) if r.type == RecordType.OOB_DATA]
    chain = [(0, 0, 0, 0, 0)] + [(i, 0, positions[i - 1], 0, positions[i - 1]) for i in range(1, 40)]
    with pytest.raises(CorruptRecordError, match="out of order"):
        _data_of(_forged(chain))
    monkeypatch.setattr(ibb_reader, "MAX_OOB_DEPTH", 10)
    with pytest.raises(CorruptRecordError, match="too deep"):
        _data_of(_forged(chain))
    monkeypatch.undo()
    # the header claims more nodes than the forest holds
    with pytest.raises(CorruptRecordError, match="nodes"):
        _data_of(_forged([(0, 0, 0, 0, 0)], count=5))
    # an interior node without right child
    with pytest.raises(CorruptRecordError, match="right child"):
        _data_of(_forged([(0, 0, 0, 0, 0), (1, 0, node0[1], 0, 0)]))


def test_oob_pointer_into_purged_file() -> None:
    rnd = random.Random(9)
    work = Workload(pages_per_file=8)
    forest = OobForestBuilder()
    work.oob_node(forest, b"piece")
    work.flush()
    assert forest.ref is not None
    work.commit([b"G"], rnd, ((forest.ref, [b"piece"]),))
    source = work.source()
    assert next(RecordReader(source, 1).event_groups()).data() == b"Gpiece"
    del source.files[0]
    with pytest.raises(CorruptRecordError, match=r"binlog-000000\.ibb does not exist"):
        next(RecordReader(source, 1).event_groups()).data()


def test_header_file_no_must_match_and_buffers_accepted() -> None:
    work = Workload()
    work.commit([b"x" * 100], random.Random(0))
    source = work.source()
    expected = [key(r) for r in RecordReader(source, 0)]
    as_views = MemSource({f: [memoryview(bytearray(p)) for p in pages] for f, pages in source.files.items()})
    assert [key(r) for r in RecordReader(as_views, 0)] == expected  # type: ignore[arg-type]
    source.files[0][0] = IbbHeader(5, 8).encode()
    with pytest.raises(CorruptRecordError, match="binlog number 5") as info:
        list(RecordReader(source, 0))
    assert info.value.file == "binlog-000000.ibb" and info.value.offset == 16


@pytest.mark.parametrize("seed", range(6))
def test_write_records_equals_one_record_at_a_time(seed: int) -> None:
    """The batch path (`write_records`, an archive's small commits) lays out the same pages as
    prepare / note / write_record one by one, notes every key before any GTID state record or
    header that follows the record's first byte, and stops after the record that began a file."""
    rnd = random.Random(seed)
    sizes = [rnd.choice((20, 90, 300, 2_000, 9_000, 16_000, 40_000)) for _ in range(400)]
    items = [(i, rnd.randbytes(size)) for i, size in enumerate(sizes)]

    def run(batch: bool) -> tuple[dict[tuple[int, int], bytes], list[tuple[int, int, int]], list[int]]:
        noted: list[int] = []
        states: list[tuple[int, int, int]] = []  # (file, page, keys noted when its state was written)

        def state(file_no: int, page_no: int) -> bytes:
            states.append((file_no, page_no, len(noted)))
            return GtidState(((0, 1, len(noted)),), None).encode()

        writer = PageWriter(pages_per_file=6, state_payload=state, state_interval=2)
        stops = []
        index = 0
        while index < len(items):
            if batch:
                index = writer.write_records(RecordType.COMMIT, items, index, noted.extend)
            else:
                began = len(states)
                while index < len(items):
                    writer.prepare()
                    noted.append(items[index][0])
                    file_before = writer.position[0]
                    writer.write_record(RecordType.COMMIT, items[index][1])
                    index += 1
                    if writer.position[0] != file_before or any(s[1] == 1 for s in states[began:]):
                        break
            stops.append(index)
        pages = {(p.file_no, p.page_no): p.data for p in writer.drain()}
        partial = writer.partial_page()
        if partial is not None:
            pages[(partial.file_no, partial.page_no)] = partial.data
        return pages, states, stops

    batch_pages, batch_states, batch_stops = run(True)
    single_pages, single_states, single_stops = run(False)
    assert batch_pages == single_pages
    assert batch_states == single_states
    # it stops exactly after each record during which a new file (header, page-1 state) began
    assert batch_stops == single_stops
    assert len(batch_stops) > 3
