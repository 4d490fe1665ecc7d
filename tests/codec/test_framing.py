"""The one fast event path (``codec/framing.py`` and its compiled twin ``_framefast.c``).

One suite for both: every test runs each scanner in :data:`SCANNERS` (the compiled one unless
``MARIABINLOG_PURE_PYTHON=1``) and checks it against the pure one and against the slow path
(:class:`~mariabinlog.codec.groups.GroupAssembler` over decoded events, the one rule), on the
real binlogs of the corpus (row, statement, mixed, XA, compressed, no checksums), whole, cut into
random pieces, as dump-stream packets, and damaged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from corpus_data import corpus_glob
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mariabinlog.codec import framing
from mariabinlog.codec.events.header import reframe, split_events
from mariabinlog.codec.primitives import U32
from mariabinlog.codec.events import CHECKSUM_CRC32, FORMAT_DESCRIPTION_EVENT, QUERY_EVENT, decode_event, rows_body
from mariabinlog.codec.groups import (
    CONTROL_EVENTS,
    EventGroup,
    GroupAssembler,
    clear_log_pos,
    py_statement_events,
    strip_checksum,
)
from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events
from mariabinlog.codec.events import rows as rows_module
from mariabinlog.codec.events.rows import ROWS_KIND
from mariabinlog.codec.events.transaction import GtidEvent, py_stored_group
from mariabinlog.errors import DecodeError

PURE_PYTHON = os.environ.get("MARIABINLOG_PURE_PYTHON", "") not in ("", "0")
SCANNERS: dict[str, Any] = {"python": framing.PyScanner}
ENCODERS: dict[str, Any] = {"python": framing.py_encode_dump}
OFFSETS: dict[str, Any] = {"python": framing.py_event_offsets}
STORED: dict[str, Any] = {"python": py_stored_group}
STATEMENTS: dict[str, Any] = {"python": py_statement_events}
STORED_EVENTS: dict[str, Any] = {"python": framing.py_stored_events}
if framing._fast is not None:
    STORED_EVENTS["c"] = framing._fast.stored_events
    STORED["c"] = framing._fast.stored_group
    STATEMENTS["c"] = framing._fast.statement_events
    SCANNERS["c"] = framing._fast.Scanner
    ENCODERS["c"] = framing._fast.encode_dump
    OFFSETS["c"] = framing._fast.event_offsets

BINLOGS = corpus_glob("binlogs/*/*.0*")


def test_compiled_path_is_built_and_the_default() -> None:
    if PURE_PYTHON:
        assert framing.Scanner is framing.PyScanner and framing.encode_dump is framing.py_encode_dump
        return
    assert "c" in SCANNERS, "the C extension is not built: pip install -e . (scripts/setup.sh)"
    assert framing.Scanner is framing._fast.Scanner


def test_pure_python_switch() -> None:
    code = "from mariabinlog.codec import framing; print(framing.Scanner.__name__, framing._fast)"
    env = {**os.environ, "MARIABINLOG_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["PyScanner", "None"]


def _fd_of(data: bytes) -> tuple[bool, int]:
    """(events end with CRC32, Query post-header length) of a legacy file."""
    fd = next(iter_legacy_events(data))
    return fd.checksum_alg == CHECKSUM_CRC32, fd.context().post_header_len(QUERY_EVENT)  # type: ignore[attr-defined]


def scan_file(cls: Any, data: bytes, pieces: list[int] | None = None) -> list[Any]:
    """What a reader sees: groups, and each stop with the event it stopped at (skipped as the slow
    path would take it), reading ``data`` in the given piece sizes (default: at once)."""
    checksum, query_len = _fd_of(data)
    if query_len < 13:
        return []
    scanner = cls(checksum=checksum, query_header_len=query_len)
    seen: list[Any] = []
    pos, avail = 4, 4
    cuts = iter(pieces or ())
    while pos < len(data):
        if avail <= pos:
            avail = min(len(data), avail + next(cuts, len(data)))
        found, pos, stop = scanner.scan_events(data, pos, avail, 3)
        seen += [("group", g) for g in found]
        if stop == framing.SCAN_MORE or (stop == framing.SCAN_END and pos < len(data)):
            if avail >= len(data):
                seen.append(("truncated", pos))
                break
            avail = min(len(data), avail + next(cuts, len(data)))
        elif stop == framing.SCAN_EVENT:
            seen.append(("event", pos, data[pos + 4], scanner.discard()))
            pos += int.from_bytes(data[pos + 9 : pos + 13], "little")
        elif stop == framing.SCAN_CUT:
            seen.append(("cut", pos, scanner.discard()))
    return seen


def slow_groups(data: bytes) -> list[tuple[Any, ...]]:
    """The groups the slow path (decoded events through GroupAssembler) cuts from ``data``."""
    decoder = EventStreamDecoder()
    assembler = GroupAssembler()
    out = []
    for event in iter_legacy_events(data, decoder=decoder):
        if event.type_code in CONTROL_EVENTS:
            continue
        raw = bytes(data[event.position : event.end_position])
        if decoder.checksum_alg == CHECKSUM_CRC32:
            raw = strip_checksum(raw)
        group = assembler.feed(event, raw)
        if group is not None:
            out.append((group.data(), group.gtid))
    return out


@pytest.mark.parametrize("path", BINLOGS, ids=lambda p: p.parent.name)
def test_scanners_agree_with_each_other_and_the_slow_path(path: Path) -> None:
    data = path.read_bytes()
    want = scan_file(framing.PyScanner, data)
    for name, cls in SCANNERS.items():
        assert scan_file(cls, data) == want, name
    groups = [framing.group_of(g) for kind, g in ((s[0], s[1]) for s in want) if kind == "group"]
    checksum, query_len = _fd_of(data)
    if query_len >= 13:
        # every group the slow path makes, the fast one makes (or leaves whole to the slow path)
        fast = {(g.data(), g.gtid) for g in groups}
        slow = slow_groups(data)
        taken = [item for item in slow if item in fast]
        assert len(taken) == len(fast)
        assert [kind for kind, *_ in want if kind == "cut"] == []
        for group in groups:
            assert group.offsets == tuple(s for s, _ in split_events(group.data())) + (group.size,)
            assert all(raw[13:17] == bytes(4) for raw in group.raw)
            assert group.gtid == (group.gtid_event.domain_id, group.gtid_event.server_id, group.gtid_event.seq_no)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pieces_do_not_change_what_is_found(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(BINLOGS), label="binlog")
    binlog = path.read_bytes()
    pieces = data.draw(st.lists(st.integers(1, 5000), min_size=1, max_size=40), label="pieces")
    want = scan_file(framing.PyScanner, binlog)
    for name, cls in SCANNERS.items():
        assert scan_file(cls, binlog, pieces) == want, name


def as_packets(data: bytes, start_seq: int = 1) -> tuple[bytes, list[int]]:
    """The events of a legacy file as dump packets (``00`` + event), and where each starts."""
    out = bytearray()
    starts = []
    seq = start_seq
    pos = 4
    while pos < len(data):
        length = int.from_bytes(data[pos + 9 : pos + 13], "little")
        starts.append(len(out))
        out += (length + 1).to_bytes(3, "little") + bytes((seq, 0)) + data[pos : pos + length]
        seq = (seq + 1) & 0xFF
        pos += length
    return bytes(out), starts


def scan_stream(cls: Any, data: bytes, stream: bytes, chunk: int, seq: int) -> list[Any]:
    checksum, query_len = _fd_of(data)
    scanner = cls(checksum=checksum, query_header_len=query_len)
    seen: list[Any] = []
    pos, avail = 0, 0
    while pos < len(stream):
        if avail <= pos:
            avail = min(len(stream), avail + chunk)
        found, pos, following, stop = scanner.scan_packets(stream, pos, avail, seq)
        seen += found
        if following >= 0 and seq >= 0:
            seq = following
        if stop in (framing.SCAN_MORE, framing.SCAN_END):
            avail = min(len(stream), avail + chunk)
        elif stop == framing.SCAN_EVENT:
            seen.append(("event", pos, scanner.discard()))
            packet_seq = stream[pos + 3]
            pos += 4 + int.from_bytes(stream[pos : pos + 3], "little")
            if seq >= 0:
                seq = (packet_seq + 1) & 0xFF
        else:
            seen.append(("stop", stop, pos, scanner.discard()))
            break
    return seen


@pytest.mark.parametrize("path", BINLOGS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("chunk", [7, 1000, 1 << 20])
def test_dump_packets_give_the_file_groups(path: Path, chunk: int) -> None:
    data = path.read_bytes()
    stream, _ = as_packets(data)
    want = [g for kind, g, *_ in scan_file(framing.PyScanner, data) if kind == "group"]
    for name, cls in SCANNERS.items():
        seen = scan_stream(cls, data, stream, chunk, 1)
        assert [g for g in seen if not isinstance(g[0], str)] == want, name
        assert seen == scan_stream(framing.PyScanner, data, stream, chunk, 1), name


def test_packets_the_slow_path_must_see() -> None:
    data = BINLOGS[0].read_bytes()
    stream, starts = as_packets(data)
    for cls in SCANNERS.values():
        checksum, query_len = _fd_of(data)
        # a wrong sequence id, an ERR packet, a multi-part packet header: left where they are
        scanner = cls(checksum=checksum, query_header_len=query_len)
        assert scanner.scan_packets(stream, starts[5], len(stream), 77)[1:] == (starts[5], -1, framing.SCAN_EVENT)
        err = b"\x09\x00\x00\x05\xff\x48\x04#HY000x"
        assert cls(checksum=checksum).scan_packets(err, 0, len(err), -1) == ([], 0, -1, framing.SCAN_EVENT)
        big = b"\xff\xff\xff\x01\x00" + bytes(30)
        assert cls(checksum=checksum).scan_packets(big, 0, len(big), -1) == ([], 0, -1, framing.SCAN_EVENT)
        assert cls(checksum=checksum).scan_packets(stream[:3], 0, 3, -1) == ([], 0, -1, framing.SCAN_MORE)


def first_group_span(data: bytes) -> tuple[int, int, int]:
    """(GTID event start, its end, the group's end) of the first event group of a file."""
    pos = 4
    spans = []
    while pos < len(data):
        length = int.from_bytes(data[pos + 9 : pos + 13], "little")
        spans.append((pos, length, data[pos + 4]))
        pos += length
    for i, (start, length, code) in enumerate(spans):
        if code == 162:
            scanner = framing.PyScanner(checksum=_fd_of(data)[0])
            found, end, _ = scanner.scan_events(data, start, len(data), 1)
            assert found
            return start, start + length, end
    raise AssertionError("no GTID event")


@pytest.mark.parametrize("name", sorted(SCANNERS))
def test_damage_stops_at_the_damaged_event(name: str) -> None:
    cls = SCANNERS[name]
    data = BINLOGS[0].read_bytes()
    start, gtid_end, end = first_group_span(data)
    checksum, _ = _fd_of(data)
    assert checksum
    bad = bytearray(data)
    bad[gtid_end + 25] ^= 0x40  # inside the event after the GTID event: its CRC no longer matches
    scanner = cls(checksum=True)
    assert scanner.scan_events(bytes(bad), start, len(bad)) == ([], gtid_end, framing.SCAN_EVENT)
    partial = scanner.discard()
    assert partial is not None and partial[0] == clear_log_pos(strip_checksum(data[start:gtid_end]))
    assert cls(checksum=True, verify=False).scan_events(bytes(bad), start, end, 1)[2] != framing.SCAN_EVENT
    # a GTID event further on while a group is open: that group was cut off
    later = reframe(data[start : gtid_end - 4], log_pos=end + 1000, checksum=True)
    cut = data[start:gtid_end] + later + data[gtid_end:end]
    scanner = cls(checksum=True)
    assert scanner.scan_events(cut, 0, len(cut)) == ([], gtid_end - start, framing.SCAN_CUT)
    assert scanner.discard()[1] == (0, gtid_end - start - 4)
    # the same GTID event again (a packet repeated on the way): the slow path names it
    repeated = data[start:gtid_end] + data[start:end]
    scanner = cls(checksum=True)
    assert scanner.scan_events(repeated, 0, len(repeated)) == ([], gtid_end - start, framing.SCAN_EVENT)
    # an event of the group repeated: likewise
    first_event_end = gtid_end + U32.unpack_from(data, gtid_end + 9)[0]
    twice = data[start:first_event_end] + data[gtid_end:end]
    scanner = cls(checksum=True)
    assert scanner.scan_events(twice, 0, len(twice))[1:] == (first_event_end - start, framing.SCAN_EVENT)


def test_group_end_rules_on_crafted_events() -> None:
    """COMMIT/ROLLBACK exactly; XA COMMIT only in a completed-XA group; stand-alone at the first Query."""
    from mariabinlog.codec.events import GtidEvent, QueryEvent, XidEvent, IntvarEvent

    def group(flags2: int, *events: Any) -> bytes:
        return b"".join(e.encode() for e in (GtidEvent(seq_no=5, domain_id=1, flags2=flags2, server_id=9), *events))

    cases = [
        (group(0, QueryEvent(query=b"BEGIN"), QueryEvent(query=b"COMMIT")), True),
        (group(0, QueryEvent(query=b"BEGIN"), QueryEvent(query=b"commit")), False),
        (group(0, QueryEvent(query=b"BEGIN"), XidEvent(xid=3)), True),
        (group(1, IntvarEvent(kind=2, value=7), QueryEvent(query=b"INSERT INTO t VALUES (NULL)")), True),
        (group(0x80, QueryEvent(query=b"xa commit 'x'")), True),
        (group(0, QueryEvent(query=b"BEGIN"), QueryEvent(query=b"XA COMMIT 'x'")), False),
    ]
    for data, ends in cases:
        for cls in SCANNERS.values():
            found, pos, stop = cls().scan_events(data, 0, len(data))
            assert (len(found) == 1) == ends, (data, cls)
            if ends:
                assert found[0][0] == data and pos == len(data)
                assert framing.group_of(found[0]).gtid == (1, 9, 5)
        events = [decode_event(data, s, e) for s, e in split_events(data)]
        assembler = GroupAssembler()
        made = [assembler.feed(e, data[s:t]) for e, (s, t) in zip(events, split_events(data))]
        assert (made[-1] is not None) == ends


@pytest.mark.parametrize("path", BINLOGS[:4], ids=lambda p: p.parent.name)
@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("skip", [False, True])
def test_encode_dump_frames_positions_and_checksums(path: Path, checksum: bool, skip: bool) -> None:
    data = path.read_bytes()
    groups = [framing.group_of(g) for kind, g, *_ in scan_file(framing.PyScanner, data) if kind == "group"]
    assert groups
    want = None
    for name, encode in ENCODERS.items():
        pos, seq, out = 4, 200, []
        for group in groups:
            packets, pos, seq = encode(group.data(), group.offsets, pos, checksum, seq, skip)
            out.append(packets)
        got = (b"".join(out), pos, seq)
        want = want or got
        assert got == want, name
    stream, end, _ = want
    position, at, n = 4, 0, 0
    while at < len(stream):
        length = int.from_bytes(stream[at : at + 3], "little")
        event = stream[at + 5 : at + 4 + length]
        assert stream[at + 4] == 0 and int.from_bytes(event[9:13], "little") == len(event)
        position += len(event)
        assert int.from_bytes(event[13:17], "little") == position
        if checksum:
            assert zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")
        assert not (skip and event[4] == 160)
        at += 4 + length
        n += 1
    assert position == end
    # 0 keeps log_pos 0 (an engine-style stream)
    packets, pos, _ = framing.encode_dump(groups[0].data(), groups[0].offsets, 0, False, 0, False)
    assert pos == 0 and int.from_bytes(packets[5 + 13 : 5 + 17], "little") == 0


@pytest.mark.parametrize("name", sorted(OFFSETS))
def test_event_offsets_of_stored_groups(name: str) -> None:
    offsets_of = OFFSETS[name]
    assert offsets_of(b"") == (0,)
    for path in BINLOGS:
        data = path.read_bytes()
        for kind, item, *_ in scan_file(framing.PyScanner, data)[:50]:
            if kind != "group":
                continue
            group = framing.group_of(item)
            assert offsets_of(group.data()) == group.offsets == tuple(s for s, _ in split_events(group.data())) + (
                group.size,)
            assert offsets_of(group.data()[:-1]) is None
            assert offsets_of(group.data() + bytes(5)) is None


@pytest.mark.parametrize("name", sorted(STORED))
def test_stored_group_is_the_engines_own_gtid_event(name: str) -> None:
    """The archive's copy of a received group into a COMMIT record: where the GTID event has the
    fixed layout, the bytes are the engine's own encoding of that event (header flags cleared)
    and the rest as received; anything else (XA, extra fields, damage) is None, and the caller
    encodes the GTID event anew."""
    stored_group = STORED[name]
    seen = 0
    for path in BINLOGS:
        for kind, item, *_ in scan_file(framing.PyScanner, path.read_bytes())[:40]:
            if kind != "group":
                continue
            group = framing.group_of(item)
            data, head = group.data(), group.offsets[1]
            out = stored_group(data, head, b"\0")
            assert out == py_stored_group(data, head, b"\0")
            assert stored_group(memoryview(data), head, b"") == (out[1:] if out is not None else None)
            if out is None:
                continue
            seen += 1
            event = decode_event(data, 0, head)
            assert isinstance(event, GtidEvent)
            assert out[1 + 19 : 1 + head] == event.encode_body()
            assert out == b"\0" + data[:17] + b"\0\0" + data[19:]
            for at, value in ((31, 0x40), (31, 0x80), (head - 1, 1)):  # XA flags, padding not zero
                bad = bytearray(data)
                bad[at] |= value
                assert stored_group(bytes(bad), head, b"") is None
            assert stored_group(data[: head - 1], head, b"") is None
            assert stored_group(data, head - 1, b"") is None
    assert seen > 100
    assert stored_group(b"", 0, b"") is None and stored_group(bytes(40), 38, b"") is None


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_statement_events_are_the_query_events_a_schema_history_reads(name: str) -> None:
    statement_events = STATEMENTS[name]
    seen = 0
    for path in BINLOGS:
        for kind, item, *_ in scan_file(framing.PyScanner, path.read_bytes()):
            if kind != "group":
                continue
            group = framing.group_of(item)
            data, offsets = group.data(), group.offsets
            found = statement_events(data, offsets)
            assert found == py_statement_events(data, offsets) == statement_events(memoryview(data), offsets)
            events = group.events
            assert [events[i] for i in found if events[i].query not in (b"BEGIN", b"COMMIT", b"ROLLBACK")] == [
                e for e in events[1:] if e.type_code in (QUERY_EVENT, 165) and e.query not in (b"BEGIN", b"COMMIT",
                                                                                              b"ROLLBACK")]
            assert all(events[i].type_code in (QUERY_EVENT, 165) for i in found)
            seen += len(found)
    assert seen > 50
    # BEGIN/COMMIT/ROLLBACK by their last bytes only; an event too short for a tail counts
    event = bytes(19) + b"\0BEGIN"
    typed = event[:4] + bytes((QUERY_EVENT,)) + event[5:]
    assert statement_events(bytes(19) + typed, (0, 19, 19 + len(typed))) == ()
    short = bytes(4) + bytes((QUERY_EVENT,)) + b"N"
    assert statement_events(bytes(19) + short, (0, 19, 19 + len(short))) == (1,)
    with pytest.raises(ValueError):
        statement_events(bytes(19), (0, 19, 40))


@pytest.mark.parametrize("name", sorted(STORED_EVENTS))
def test_stored_events_are_the_scanners_group(name: str) -> None:
    """A stored COMMIT record's events (after its header byte) as the scanner's group tuple:
    the `.ibb` readers' small-commit path, the same group the scanner cut."""
    stored_events = STORED_EVENTS[name]
    seen = 0
    for path in BINLOGS:
        for kind, item, *_ in scan_file(framing.PyScanner, path.read_bytes())[:40]:
            if kind != "group":
                continue
            seen += 1
            data = item[0]
            assert stored_events(b"\0" + data, 1) == framing.py_stored_events(b"\0" + data, 1) == (*item[:7], 0)
            assert stored_events(data, 0) == (*item[:7], 0)
            for bad in (data[:-1], data + bytes(3), data[19:], b"\x00" * 5 + data[5:]):
                assert stored_events(bad, 0) == framing.py_stored_events(bad, 0)
    assert seen > 100
    for pos in (-1, 1):
        assert stored_events(b"", pos) is None
    assert stored_events(b"", 0) is None


def test_rows_layout_twins_agree() -> None:
    """The compiled rows event layout (the ordinary case) equals the pure one on every rows
    event of the corpus, read with each post-header length a Format_description may declare,
    whole and cut; where it declines (None), the pure twin reads or reports the event."""
    if framing._fast is None:
        assert rows_module._fast_layout is None
        return
    fast = framing._fast.rows_layout
    seen = declined = 0
    for path in BINLOGS:
        for kind, item, *_ in scan_file(framing.PyScanner, path.read_bytes())[:60]:
            if kind != "group":
                continue
            data, offsets = item[0], item[1]
            for i in range(len(offsets) - 1):
                a, b = offsets[i], offsets[i + 1]
                if data[a + 4] not in ROWS_KIND or data[a + 4] in (166, 167, 168, 169, 170, 171):
                    continue
                update = ROWS_KIND[data[a + 4]] == "update"
                for post in (6, 8, 10):
                    for end in (b, b - 1, a + 19 + 7, a + 19 + post + 1):
                        try:
                            want: Any = rows_module.py_rows_layout(data, a + 19, post, update, end)
                        except DecodeError:
                            want = None
                        got = fast(data, a + 19, post, update, end)
                        if got is None:
                            declined += 1
                        else:
                            seen += 1
                            assert got == tuple(want)
                            assert rows_module.rows_layout(memoryview(data), a + 19, post, update, end) == want
    assert seen > 100 and declined > 100
    assert fast(b"", 0, 8, False, 0) is None and fast(bytes(30), 5, 8, False, 40) is None


def test_rows_body_reads_what_the_decoder_reads() -> None:
    """``rows_body`` (a rows event's images without the event) gives the decoded event's
    table id, kind, width, bitmaps and row images on every rows event of the corpus, compressed
    ones among them, and fails wherever the decoder fails on the event cut short."""
    seen = compressed = 0
    for path in BINLOGS:
        data = path.read_bytes()
        dec = EventStreamDecoder()
        for event in iter_legacy_events(data, decoder=dec):
            code = event.type_code
            if code not in ROWS_KIND:
                continue
            pos = event.position
            assert pos is not None and event.end_position is not None
            end = event.end_position - (4 if dec.checksum_alg == CHECKSUM_CRC32 else 0)
            body = rows_body(data, pos, end, dec.ctx, code, pos)
            assert body == (code, event.kind, event.table_id, event.width, event.present_before,
                            event.present_after, event.rows_data, pos)
            seen += 1
            compressed += code >= 166
            for cut in (end - 1, pos + 19 + 5, pos + 10):
                try:
                    decode_event(data, pos, cut, dec.ctx)
                except DecodeError:
                    with pytest.raises(DecodeError):
                        rows_body(data, pos, cut, dec.ctx, code, pos)
    assert seen > 300 and compressed > 10


def test_shared_table_map() -> None:
    """A Table_map whose body repeats one seen before is that event (so readers find repeats
    by identity), made current for its table id either way; a Format_description drops them."""
    data = next(p for p in BINLOGS if p.stat().st_size > 100_000).read_bytes()
    dec = EventStreamDecoder()
    maps = [(e.position, e.end_position, e) for e in iter_legacy_events(data, decoder=dec) if e.type_code == 19]
    assert len(maps) > 10
    shared = EventStreamDecoder()
    shared.decode(data, 4)
    footer = 4 if shared.checksum_alg == CHECKSUM_CRC32 else 0
    bodies: dict[bytes, Any] = {}
    for pos, end, event in maps:
        got = shared.shared_table_map(data, pos, end - footer)
        assert shared.table_maps[event.table_id] is got
        assert (got.table_id, got.schema, got.table, got.column_types, got.column_meta) == (
            event.table_id, event.schema, event.table, event.column_types, event.column_meta)
        assert bodies.setdefault(data[pos + 19 : end - footer], got) is got
    assert len(bodies) < len(maps)
    shared.decode(data, 4)
    pos, end, _ = maps[0]
    assert shared.shared_table_map(data, pos, end - footer) is not bodies[data[pos + 19 : end - footer]]


def test_crc32_is_zlibs() -> None:
    if PURE_PYTHON:
        assert framing._fast is None
        return
    for size in (0, 1, 7, 8, 9, 63, 64, 1000, 65537):
        blob = os.urandom(size)
        assert framing._fast.crc32(blob) == zlib.crc32(blob)
        assert framing._fast.crc32(memoryview(blob)[1:]) == zlib.crc32(blob[1:])


def test_event_group_views_agree() -> None:
    data = BINLOGS[0].read_bytes()
    found = [g for kind, g, *_ in scan_file(framing.Scanner, data) if kind == "group"]
    for item in found[:20]:
        group = framing.group_of(item)
        twin = EventGroup(group.gtid, raw=list(group.raw))
        assert twin.data() == group.data() and twin.offsets == group.offsets and twin.types() == group.types()
        assert [e.type_code for e in group.events] == list(group.types())
        assert group.body() == group.data()[group.offsets[1] :]
        assert len(group) == len(group.raw) and group.size == len(group.data())
        assert group.flags2 == group.gtid_event.flags2 and group.timestamp == group.gtid_event.timestamp
        assert [q.query for q in group.statements()] == [
            e.query for e in group.events if e.type_code == QUERY_EVENT and e.query not in (b"BEGIN", b"COMMIT")
        ]
    assert FORMAT_DESCRIPTION_EVENT in CONTROL_EVENTS
