"""Event codec: byte-exact round trips on the real corpus and on generated values, and traps."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mariabinlog.codec import events as ev
from mariabinlog.codec.events.stream import EventStreamDecoder, footer_len, iter_legacy_events
from mariabinlog.errors import (
    ChecksumError,
    DecodeError,
    EncryptedBinlogError,
    MariabinlogError,
    TruncatedError,
)

from corpus_data import CORPUS, corpus_glob

BINLOGS = corpus_glob("binlogs/*/mysql-bin.*")


def _corpus_ids() -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in BINLOGS]


@pytest.mark.parametrize("path", BINLOGS, ids=_corpus_ids())
def test_corpus_events_reencode_to_identical_bytes(path: Path) -> None:
    data = path.read_bytes()
    dec = EventStreamDecoder()
    count = 0
    previous_end = 4
    for event in iter_legacy_events(data, decoder=dec):
        raw = data[event.position : event.end_position]
        crc = dec.checksum_alg == ev.CHECKSUM_CRC32
        if isinstance(event, ev.FormatDescriptionEvent):
            crc = event.checksum_alg == ev.CHECKSUM_CRC32
        assert event.encode(checksum=crc) == raw, (path, event.position, event)
        assert event.position == previous_end  # positions come from framing
        previous_end = event.end_position
        assert not isinstance(event, ev.UnknownEvent), event
        count += 1
    assert previous_end == len(data)
    assert count > 3


def test_corpus_has_every_event_family_we_claim() -> None:
    seen: set[type] = set()
    for path in BINLOGS:
        for event in iter_legacy_events(path.read_bytes()):
            seen.add(type(event))
    for cls in (
        ev.FormatDescriptionEvent,
        ev.GtidListEvent,
        ev.BinlogCheckpointEvent,
        ev.GtidEvent,
        ev.QueryEvent,
        ev.QueryCompressedEvent,
        ev.XidEvent,
        ev.TableMapEvent,
        ev.RowsEvent,
        ev.AnnotateRowsEvent,
        ev.RotateEvent,
        ev.IntvarEvent,
        ev.RandEvent,
        ev.UserVarEvent,
        ev.XaPrepareEvent,
    ):
        assert cls in seen, cls


def test_compressed_events_inflate() -> None:
    path = CORPUS / "binlogs" / "w10_compressed" / "mysql-bin.000001"
    compressed = [e for e in iter_legacy_events(path.read_bytes()) if isinstance(e, ev.RowsEvent) and e.compressed]
    assert compressed
    for event in compressed:
        assert event.compressed_block is not None
        assert ev.decompress_block(event.compressed_block, 0, len(event.compressed_block)) == event.rows_data
        assert event.kind in ("insert", "update", "delete")


def test_checksum_none_files_have_no_footer() -> None:
    path = CORPUS / "binlogs" / "w11_checksum_none" / "mysql-bin.000001"
    dec = EventStreamDecoder()
    events = list(iter_legacy_events(path.read_bytes(), decoder=dec))
    assert dec.checksum_alg == ev.CHECKSUM_OFF
    assert any(isinstance(e, ev.GtidEvent) for e in events)


# ----------------------------------------------------------------- generated

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, 2**64 - 1)
short_bytes = st.binary(max_size=40)
header = st.fixed_dictionaries(
    {"timestamp": u32, "server_id": u32, "log_pos": u32, "flags": u16}
)


def _gtid_events() -> st.SearchStrategy[ev.Event]:
    def build(h: dict, seq: int, dom: int, flags2: int, cid: int, fmt: int, gtrid: bytes, bqual: bytes, fx: int, eng: int, sa: int, tid: int) -> ev.Event:
        xa = flags2 & (ev.FL_PREPARED_XA | ev.FL_COMPLETED_XA)
        return ev.GtidEvent(
            seq_no=seq,
            domain_id=dom,
            flags2=flags2,
            commit_id=cid if flags2 & ev.FL_GROUP_COMMIT_ID else None,
            xa_format_id=fmt if xa else None,
            xa_gtrid=gtrid if xa else b"",
            xa_bqual=bqual if xa else b"",
            flags_extra=fx,
            extra_engines=eng if fx & ev.FL_EXTRA_MULTI_ENGINE_E1 else None,
            sa_seq_no=sa if fx & (ev.FL_COMMIT_ALTER_E1 | ev.FL_ROLLBACK_ALTER_E1) else None,
            thread_id=tid if fx & ev.FL_EXTRA_THREAD_ID else None,
            **h,
        )

    return st.builds(
        build, header, u64, u32, u8, u64, st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=64), st.binary(max_size=64), st.integers(0, 0x1F), u8, u64, u32,
    )


status_vars = st.lists(
    st.one_of(
        st.tuples(st.just(ev.Q_FLAGS2_CODE), u32),
        st.tuples(st.just(ev.Q_SQL_MODE_CODE), u64),
        st.tuples(st.just(ev.Q_AUTO_INCREMENT), st.tuples(u16, u16)),
        st.tuples(st.just(ev.Q_CHARSET_CODE), st.tuples(u16, u16, u16)),
        st.tuples(st.just(ev.Q_TIME_ZONE_CODE), st.binary(max_size=30)),
        st.tuples(st.just(ev.Q_CATALOG_NZ_CODE), st.binary(max_size=10)),
        st.tuples(st.just(ev.Q_LC_TIME_NAMES_CODE), u16),
        st.tuples(st.just(ev.Q_CHARSET_DATABASE_CODE), u16),
        st.tuples(st.just(ev.Q_TABLE_MAP_FOR_UPDATE_CODE), u64),
        st.tuples(st.just(ev.Q_INVOKER), st.tuples(st.binary(max_size=20), st.binary(max_size=20))),
        st.tuples(st.just(ev.Q_HRNOW), st.integers(0, 999999)),
        st.tuples(st.just(ev.Q_XID), u64),
        st.tuples(st.just(ev.Q_GTID_FLAGS3), u8),
    ),
    max_size=8,
)

events_strategy = st.one_of(
    _gtid_events(),
    st.builds(lambda h, q, d, t, x, e, s: ev.QueryEvent(query=q, database=d, thread_id=t, exec_time=x, error_code=e, status_vars=s, **h),
              header, st.binary(max_size=200), st.binary(max_size=64), u32, u32, u16, status_vars),
    st.builds(lambda h, q, s: ev.QueryCompressedEvent(query=q, status_vars=s, **h), header, st.binary(max_size=300), status_vars),
    st.builds(lambda h, x: ev.XidEvent(xid=x, **h), header, u64),
    st.builds(lambda h, p, f: ev.RotateEvent(next_position=p, next_file=f, **h), header, u64, short_bytes),
    st.builds(lambda h, k, v: ev.IntvarEvent(kind=k, value=v, **h), header, st.sampled_from([1, 2]), u64),
    st.builds(lambda h, a, b: ev.RandEvent(seed1=a, seed2=b, **h), header, u64, u64),
    st.builds(lambda h, n: ev.UserVarEvent(var_name=n, is_null=True, **h), header, short_bytes),
    st.builds(lambda h, n, t, c, v, f: ev.UserVarEvent(var_name=n, value_type=t, charset=c, value=v, var_flags=f, **h),
              header, short_bytes, st.integers(0, 4), u32, short_bytes, st.one_of(st.none(), u8)),
    st.builds(lambda h, g, f: ev.GtidListEvent(gtids=g, list_flags=f, **h), header, st.lists(st.tuples(u32, u32, u64), max_size=6), st.integers(0, 3)),
    st.builds(lambda h, f: ev.BinlogCheckpointEvent(filename=f, **h), header, short_bytes),
    st.builds(lambda h, q: ev.AnnotateRowsEvent(query=q, **h), header, st.binary(max_size=200)),
    st.builds(lambda h, i, m: ev.IncidentEvent(incident=i, message=m, **h), header, u16, st.binary(min_size=0, max_size=255)),
    st.builds(lambda h, i: ev.HeartbeatEvent(log_ident=i, **h), header, short_bytes),
    st.builds(lambda h, o, f, g, b: ev.XaPrepareEvent(one_phase=o, format_id=f, gtrid=g, bqual=b, **h),
              header, st.booleans(), st.integers(-(2**31), 2**31 - 1), st.binary(max_size=64), st.binary(max_size=64)),
    st.builds(lambda h, s, k, n: ev.StartEncryptionEvent(crypto_scheme=s, key_version=k, nonce=n, **h), header, u8, u32, st.binary(min_size=12, max_size=12)),
    st.builds(lambda h, t, s, f, o: ev.PartialRowDataEvent(total_fragments=t, sequence=s, fragment=f, fragment_flags=1 if o is not None else 0, original_size=o, **h),
              header, u32, u32, short_bytes, st.one_of(st.none(), u64)),
    st.builds(lambda h, c, b: ev.UnknownEvent(c, b, **h), header, st.sampled_from([6, 7, 29, 33, 35, 200, 250]), short_bytes),
    # A server that knows checksums (MariaDB 5.3+, MySQL 5.6.1+) writes the algorithm byte and CRC field.
    st.builds(lambda h, v, c, a: ev.FormatDescriptionEvent(server_version=v, create_timestamp=c, checksum_alg=a, **h),
              header, st.from_regex(r"\A(10|11|12)\.[0-9]{1,2}\.[0-9]{1,2}-MariaDB[a-z-]{0,20}\Z"), u32, st.sampled_from([0, 1])),
    # An older one writes neither: its post-header array runs to the end of the event.
    st.builds(lambda h, v, c: ev.FormatDescriptionEvent(server_version=v, create_timestamp=c, **h),
              header, st.from_regex(r"\A(4\.1|5\.[015])\.[0-9]{1,2}-[a-z-]{0,20}\Z"), u32),
    st.builds(lambda h, b: ev.StopEvent(body=b, **h), header, st.binary(max_size=4)),
)


@settings(max_examples=400, deadline=None)
@given(events_strategy, st.booleans())
def test_generated_events_round_trip(event: ev.Event, checksum: bool) -> None:
    if isinstance(event, ev.FormatDescriptionEvent):
        checksum = event.checksum_alg == ev.CHECKSUM_CRC32
    data = event.encode(checksum=checksum)
    assert ev.read_header(data)[3] == len(data)
    end = len(data) - (4 if checksum and not isinstance(event, ev.FormatDescriptionEvent) else 0)
    decoded = ev.decode_event(data, 0, end)
    assert type(decoded) is type(event)
    assert decoded.encode(checksum=checksum) == data
    if isinstance(event, ev.FormatDescriptionEvent) and checksum:
        decoded.checksum_field = event.checksum_field  # the footer CRC is derived data
    if not isinstance(event, ev.QueryCompressedEvent):
        assert decoded == event


#: v2 extra data as servers write it and the reader checks it: nothing, extra-row-info chunks
#: (tag 0, a length that counts itself and the format byte, the format, the data), or another tag.
_V2_EXTRA = st.one_of(
    st.just(b""),
    st.builds(lambda fmt, d: bytes([0, len(d) + 2, fmt]) + d, st.integers(0, 255), st.binary(max_size=10)),
    st.builds(lambda tag, d: bytes([tag]) + d, st.integers(1, 255), st.binary(max_size=20)),
)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2**48 - 1), st.sampled_from(sorted(ev.ROWS_KIND)), st.integers(1, 70), st.binary(max_size=300), st.integers(0, 0xFFFF), _V2_EXTRA)
def test_generated_rows_event_frames_round_trip(table_id: int, code: int, width: int, rows: bytes, flags: int, extra: bytes) -> None:
    nb = (width + 7) // 8
    event = ev.RowsEvent(
        code,
        table_id=table_id,
        width=width,
        present_before=b"\xff" * nb,
        present_after=b"\xfe" * nb if ev.ROWS_KIND[code] == "update" else None,
        rows_data=rows,
        rows_flags=flags,
        extra_data=extra,
    )
    data = event.encode(checksum=True)
    decoded = ev.decode_event(data, 0, len(data) - 4)
    assert decoded.encode(checksum=True) == data
    assert decoded.rows_data == rows and decoded.kind == event.kind


def test_rows_framing_follows_the_post_header_length_as_the_server_does() -> None:
    """``Rows_log_event`` reads extra data when the Format_description's post-header length is
    10 (ROWS_HEADER_LEN_V2), whatever the type code, and the bitmaps after the declared
    post-header: one rule, ``rows_layout``, for the event decoder and the printers."""
    from mariabinlog.codec.events.header import DecodeContext, default_post_header_lengths
    from mariabinlog.codec.events.rows import rows_layout

    head = (42).to_bytes(6, "little") + b"\x01\x00"  # table id 42, STMT_END_F
    extra = b"\x04\x00\x01\xaa"  # length 4 (itself included): a chunk of an unknown tag
    bitmaps = b"\x03\x07"  # 3 columns, all present
    body = head + extra + bitmaps + b"ROW"
    assert rows_layout(body, 0, 10, False, len(body)) == (42, 1, 6, 8, 3, b"\x07", None, 14)
    body = head + bitmaps + b"ROW"
    assert rows_layout(body, 0, 8, False, len(body)) == (42, 1, 6, -1, 3, b"\x07", None, 10)
    body = head + b"\xee" * 4 + bitmaps + b"\x05ROW"  # a longer post-header: its bytes skipped
    assert rows_layout(body, 0, 12, True, len(body)) == (42, 1, 6, -1, 3, b"\x07", b"\x05", 15)
    body = head[:4] + head[6:] + bitmaps + b"ROW"  # 4-byte table ids
    assert rows_layout(body, 0, 6, False, len(body)) == (42, 1, 4, -1, 3, b"\x07", None, 8)
    # A v1 type code under a post-header length of 10 has extra data, a v2 one under 8 none.
    for code, post, framed in ((ev.WRITE_ROWS_EVENT_V1, 10, head + extra), (ev.WRITE_ROWS_EVENT, 8, head)):
        lengths = bytearray(default_post_header_lengths())
        lengths[code - 1] = post
        event = ev.RowsEvent(code, table_id=42, width=3, present_before=b"\x07", rows_data=b"ROW").encode(checksum=False)
        data = event[:19] + framed + bitmaps + b"ROW"
        data = data[:9] + len(data).to_bytes(4, "little") + data[13:]
        decoded = ev.decode_event(data, 0, len(data), DecodeContext(bytes(lengths)))
        assert (decoded.table_id, decoded.width, decoded.present_before, decoded.rows_data) == (42, 3, b"\x07", b"ROW")


# --------------------------------------------------------------------- traps


def _file(*events: ev.Event, checksum: bool = True) -> bytes:
    fd = ev.FormatDescriptionEvent(server_version="10.11.19-MariaDB-log", checksum_alg=1 if checksum else 0)
    out = bytearray(b"\xfebin")
    for event in (fd, *events):
        out += event.encode(checksum=checksum, log_pos=0)
    return bytes(out)


def test_unknown_event_types_are_kept_raw_not_skipped() -> None:
    data = _file(ev.UnknownEvent(222, b"opaque payload"), ev.XidEvent(xid=7))
    events = list(iter_legacy_events(data))
    unknown = [e for e in events if isinstance(e, ev.UnknownEvent)]
    assert len(unknown) == 1 and unknown[0].body == b"opaque payload" and unknown[0].type_code == 222
    assert isinstance(events[-1], ev.XidEvent)


def test_positions_are_computed_even_when_log_pos_is_zero() -> None:
    data = _file(ev.XidEvent(xid=1), ev.XidEvent(xid=2))
    events = list(iter_legacy_events(data))
    assert all(e.log_pos == 0 for e in events)
    assert [e.position for e in events] == [4, events[0].end_position, events[1].end_position]
    assert events[-1].end_position == len(data)


def test_table_maps_are_dropped_at_format_description_and_rotate() -> None:
    dec = EventStreamDecoder()
    tm = ev.TableMapEvent(table_id=5, schema="d", table="t", column_types=b"\x03", column_meta=(0,), null_bitmap=b"\x01")
    rows = ev.RowsEvent(ev.WRITE_ROWS_EVENT_V1, table_id=5, width=1, present_before=b"\x01", rows_data=b"\x00\x01\x00\x00\x00")
    for reset in (ev.RotateEvent(next_file=b"x.000002"), ev.FormatDescriptionEvent(server_version="10.11")):
        dec.observe(tm)
        assert dec.table_map_for(rows) is tm
        dec.observe(reset)
        with pytest.raises(DecodeError, match="without a preceding Table_map"):
            dec.table_map_for(rows)


def test_encrypted_binlog_gives_a_clear_error() -> None:
    data = _file(ev.StartEncryptionEvent(crypto_scheme=1, key_version=1, nonce=b"\x01" * 12), ev.XidEvent(xid=3))
    it = iter_legacy_events(data)
    assert isinstance(next(it), ev.FormatDescriptionEvent)
    assert isinstance(next(it), ev.StartEncryptionEvent)
    with pytest.raises(EncryptedBinlogError, match="encryption key"):
        next(it)


def test_crc_mismatch_names_the_offset() -> None:
    data = bytearray(_file(ev.XidEvent(xid=1)))
    data[-6] ^= 0x01
    with pytest.raises(ChecksumError) as info:
        list(iter_legacy_events(bytes(data)))
    assert info.value.offset == len(data) - 31


def test_truncated_file_raises_truncated_error() -> None:
    data = _file(ev.QueryEvent(query=b"CREATE TABLE t (a INT)", database=b"d"))
    with pytest.raises(TruncatedError):
        list(iter_legacy_events(data[:-5]))


def test_error_can_be_located_in_a_file() -> None:
    err = TruncatedError("truncated event header", offset=10, expected="19 header bytes")
    located = err.located("/x/mysql-bin.000001", 100)
    assert isinstance(located, TruncatedError)
    assert "mysql-bin.000001" in str(located) and "offset 110" in str(located) and "expected 19 header bytes" in str(located)


# ---------------------------------------------------------------------- fuzz


def _consume(data: bytes, verify: bool) -> None:
    for event in iter_legacy_events(data, verify_checksum=verify):
        if isinstance(event, ev.RowsEvent):
            _ = event.kind


def test_fuzz_mutated_corpus_files_raise_only_library_errors() -> None:
    """A few thousand bit flips, truncations and splices: typed errors only, fast, bounded memory."""
    import tracemalloc

    rng = random.Random(1234)
    seeds = [p.read_bytes() for p in BINLOGS if p.stat().st_size < 20000]
    tracemalloc.start()
    try:
        for i in range(3000):
            data = bytearray(rng.choice(seeds))
            mode = i % 4
            if mode == 0:
                for _ in range(rng.randint(1, 8)):
                    data[rng.randrange(4, len(data))] ^= 1 << rng.randrange(8)
            elif mode == 1:
                del data[rng.randrange(4, len(data)) :]
            elif mode == 2:
                pos = rng.randrange(4, len(data))
                data[pos : pos + 4] = rng.randbytes(4)
            else:
                data = bytearray(b"\xfebin" + rng.randbytes(rng.randrange(0, 600)))
            tracemalloc.reset_peak()
            try:
                _consume(bytes(data), verify=i % 3 == 0)
            except MariabinlogError:
                pass
            peak = tracemalloc.get_traced_memory()[1]
            assert peak < 64 * len(data) + 1_000_000, (i, peak, len(data))
    finally:
        tracemalloc.stop()


def test_crc_footer_is_zlib_crc32() -> None:
    data = ev.XidEvent(xid=42).encode(checksum=True)
    assert int.from_bytes(data[-4:], "little") == zlib.crc32(data[:-4])


@pytest.mark.parametrize(
    ("version", "has_checksum"),
    [
        ("5.1.63-google-debug-log", False),
        ("5.6.0-m4", False),
        ("5.6.1-log", True),
        ("8.0.40-debug", True),
        ("5.2.10-MariaDB-log", False),
        ("5.3.0-MariaDB", True),
        ("5.5.36-MariaDB-debug-log", True),
        ("10.11.9-MariaDB-log", True),
        ("", False),
    ],
)
def test_checksum_byte_exists_from_the_version_that_introduced_it(version: str, has_checksum: bool) -> None:
    """The FD's algorithm byte is read only from MariaDB 5.3 / MySQL 5.6.1 on; before, the
    bytes there are post-header lengths (0x08 etc.), never a CRC declaration."""
    assert ev.version_has_checksum(version) is has_checksum
    data = ev.FormatDescriptionEvent(server_version=version, checksum_alg=1 if has_checksum else 0).encode(checksum=has_checksum)
    assert footer_len(data, 0, len(data), 0) == (4 if has_checksum else 0)
    decoded = ev.decode_event(data)
    assert decoded.checksum_alg == (1 if has_checksum else 0)
    assert decoded.encode(checksum=has_checksum) == data


def test_user_var_values_are_decoded_once_for_every_reader() -> None:
    """UserVarEvent.decoded_value: the one decoder the printer, JSON, listing and apply call."""
    import struct
    from decimal import Decimal

    from mariabinlog.codec.rows.packed import _decimal_codec, decimal_str

    def uv(kind: int, value: bytes, flags: int | None = None) -> object:
        return ev.UserVarEvent(var_name=b"v", value_type=kind, value=value, var_flags=flags).decoded_value()

    assert uv(ev.USER_VAR_INT, (2**64 - 5).to_bytes(8, "little")) == -5
    assert uv(ev.USER_VAR_INT, (2**64 - 5).to_bytes(8, "little"), ev.USER_VAR_UNSIGNED_F) == 2**64 - 5
    assert uv(ev.USER_VAR_REAL, struct.pack("<d", 2.5)) == 2.5
    packed = _decimal_codec(0, 10 << 8 | 2).encode("-12.30")
    value = uv(ev.USER_VAR_DECIMAL, bytes([10, 2]) + packed)
    assert value == Decimal("-12.30") and decimal_str(value) == b"-12.30"
    assert decimal_str(Decimal("-0")) == b"0" and decimal_str(Decimal("0.00")) == b"0.00"
    assert uv(ev.USER_VAR_STRING, b"abc") == b"abc"
    assert ev.UserVarEvent(var_name=b"v", is_null=True).decoded_value() is None


def test_compressed_block_that_inflates_past_its_declared_size_is_refused() -> None:
    """A block declaring 10 bytes whose zlib stream holds 10,000: refused at the block, not
    silently cut (MariaDB's uncompress() fails the same way)."""
    block = bytes((0x81, 10)) + zlib.compress(b"x" * 10_000)
    with pytest.raises(DecodeError, match="past its declared size") as info:
        ev.decompress_block(block, 0, len(block))
    assert info.value.offset == 0


def test_compressed_block_with_a_cut_zlib_stream_is_refused() -> None:
    whole = ev.compress_block(b"SELECT 1" * 50)
    with pytest.raises(DecodeError, match="does not end"):
        ev.decompress_block(whole[:-4], 0, len(whole) - 4)


def test_compressed_block_claiming_gigabytes_allocates_only_what_inflates() -> None:
    import tracemalloc

    block = bytes((0x84,)) + (0xFFFFFFFF).to_bytes(4, "big") + zlib.compress(b"y" * 1000)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="inflates to 1000 bytes"):
            ev.decompress_block(block, 0, len(block))
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
