"""The codec functions that code outside codec/ calls instead of parsing bytes itself."""

from __future__ import annotations

import pytest

from mariabinlog.codec import events as E
from mariabinlog.codec.events.session import (
    FLAGS2_REPLAYED,
    OPTION_NO_FOREIGN_KEY_CHECKS,
    OPTION_NOT_AUTOCOMMIT,
    collation_database_value,
    flags2_assignments,
    flags2_settings,
    session_context,
    time_zone_literal,
)
from mariabinlog.codec.events.stream import stored_crc
from mariabinlog.codec.ibb.redo import Checkpoint, RecordBuilder, decode_body, frame, frame_head, frame_valid
from mariabinlog.codec.rows.layout import image_fields, row_counter, size_codes
from mariabinlog.codec import columns as C
from mariabinlog.errors import TruncatedError


def test_redo_frame_and_slot_round_trip() -> None:
    builder = RecordBuilder()
    builder.page(1, 2, 3, b"abc")
    builder.forced(1, 4, 0xDEADBEEF)
    body = builder.end((1, 99))
    record = frame(1 << 14, 7, body)
    length, crc, lsn = frame_head(record)
    assert (length, lsn) == (len(record), 1 << 14)
    assert frame_valid(7, record, crc) and not frame_valid(8, record, crc)
    decoded = decode_body(lsn, lsn + length, record[16:])
    assert decoded.end == (1, 99)
    checkpoint = Checkpoint(3, 1 << 14, 7, 1 << 20, (1, 99))
    slot = checkpoint.encode()
    assert len(slot) == 4096 and Checkpoint.decode(slot) == checkpoint
    assert Checkpoint.decode(b"\0" * 4096) is None


def test_session_context_and_assignments() -> None:
    status = {
        E.Q_FLAGS2_CODE: OPTION_NO_FOREIGN_KEY_CHECKS,
        E.Q_SQL_MODE_CODE: 1 << 30,
        E.Q_CHARSET_CODE: (33, 33, 8),
        E.Q_TIME_ZONE_CODE: b"+01:00",
    }
    ctx = session_context(status)
    assert ctx.flags2 == OPTION_NO_FOREIGN_KEY_CHECKS
    assert ctx.sql_mode == b"%d" % (1 << 30)
    assert ctx.auto_increment == (1, 1) and ctx.lc_time_names == 0 and ctx.charset_database == 0
    assert ctx.charset == (33, 33, 8) and ctx.time_zone == b"+01:00" and ctx.collations == ()
    assert flags2_assignments(ctx.flags2, OPTION_NO_FOREIGN_KEY_CHECKS | OPTION_NOT_AUTOCOMMIT) == (
        b"@@session.foreign_key_checks=0, @@session.autocommit=1"
    )
    assert [name for name, _ in flags2_settings(0, FLAGS2_REPLAYED)] == [
        b"foreign_key_checks",
        b"sql_auto_is_null",
        b"unique_checks",
        b"check_constraint_checks",
    ]
    assert collation_database_value(0) == b"DEFAULT" and collation_database_value(8) == b"8"
    assert time_zone_literal(b"a'b\\") == b"'a\\'b\\\\'"
    assert session_context({}).flags2 is None and session_context({}).sql_mode is None


def test_event_field_readers() -> None:
    gtid = E.GtidEvent(seq_no=5, domain_id=2, flags2=E.FL_STANDALONE, server_id=1).encode(checksum=True)
    when, code, server_id, length, _, _ = E.header_fields(gtid, 0)
    assert (code, server_id, length) == (E.GTID_EVENT, 1, len(gtid)) and E.event_length(gtid, 0) == len(gtid)
    assert E.gtid_head(gtid, 19) == (5, 2, E.FL_STANDALONE)
    assert stored_crc(gtid, len(gtid)) == int.from_bytes(gtid[-4:], "little")
    moved = E.with_log_pos(gtid, 1234)
    assert E.header_fields(moved, 0)[4] == 1234 and moved[17:] == gtid[17:]
    assert E.gtid_fields(gtid, 19, len(gtid) - 4) == (5, 2, E.FL_STANDALONE)
    grouped = E.GtidEvent(seq_no=6, domain_id=2, flags2=E.FL_GROUP_COMMIT_ID, commit_id=41, server_id=1).encode()
    assert E.gtid_commit_id(grouped, 19, len(grouped), E.FL_GROUP_COMMIT_ID) == 41
    assert E.gtid_commit_id(gtid, 19, len(gtid) - 4, E.FL_STANDALONE) is None
    with pytest.raises(TruncatedError, match="commit id"):  # the flag set, the id not there
        E.gtid_commit_id(gtid + gtid, 19, 19 + 13, E.FL_GROUP_COMMIT_ID)
    xid = E.XidEvent(xid=77).encode()
    assert E.xid_value(xid, 19, len(xid)) == 77
    assert E.rand_seeds(E.RandEvent(seed1=1, seed2=2).encode(), 19, 35) == (1, 2)
    assert E.intvar_fields(E.IntvarEvent(kind=2, value=9).encode(), 19, 28) == (2, 9)
    xa = E.XaPrepareEvent(one_phase=False, format_id=1, gtrid=b"g", bqual=b"bq").encode()
    assert E.xa_prepare_fields(xa, 19, len(xa)) == (0, 1, b"g", b"bq")
    # a body that ends before its fields (inside a longer buffer: the next event's bytes
    # must not be read as this one's) is refused with the field and the bytes left
    for read, buf, end in ((E.gtid_fields, gtid, 19 + 12), (E.xid_value, xid + xid, len(xid) - 1),
                           (E.xa_prepare_fields, xa + xa, len(xa) - 1),
                           (E.checkpoint_name, b"\0" * 19 + b"\x09\0\0\0bin.0001" + b"\0" * 30, 19 + 12)):
        with pytest.raises(TruncatedError, match="truncated"):
            read(buf, 19, end)


def test_row_layout_measures_images() -> None:
    types = bytes((C.MYSQL_TYPE_LONG, C.MYSQL_TYPE_VARCHAR))
    sizes = size_codes(types, (0, 20))
    assert sizes == (4, -1)
    row = b"\x00" + (7).to_bytes(4, "little") + b"\x02hi"
    data = row + row
    assert row_counter(sizes, 2, b"\x03", None)(data, 0, len(data)) == 2
    fields, end = image_fields(sizes, b"\x03", data, 0, len(data))
    assert fields == [(0, (7).to_bytes(4, "little")), (1, b"\x02hi")] and end == len(row)
