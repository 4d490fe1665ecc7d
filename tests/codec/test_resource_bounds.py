"""Length fields that claim gigabytes: a typed error before anything large is allocated.

Each input is a few dozen bytes whose length field claims up to 2**64; decoding must raise a
:class:`~mariabinlog.errors.DecodeError` while tracemalloc's peak stays under 1 MiB (the fuzz
campaigns check the same with -malloc_limit_mb=64 on whatever the mutator makes).
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable

import pytest

from mariabinlog.codec import events as ev
from mariabinlog.codec.ibb import decode_record, iter_events
from mariabinlog.codec.events.stream import iter_legacy_events
from mariabinlog.errors import DecodeError


def _event(type_code: int, body: bytes, length: int | None = None) -> bytes:
    size = 19 + len(body) if length is None else length
    return struct.pack("<IBIIIH", 0, type_code, 1, size, 0, 0) + body


def _decode(data: bytes) -> Callable[[], object]:
    return lambda: ev.decode_event(data, 0)


LEN64 = b"\xfe" + struct.pack("<Q", 1 << 63)

CASES = {
    "event length 4 GiB": lambda: list(iter_legacy_events(b"\xfebin" + _event(ev.XID_EVENT, b"\0" * 8, 0xFFFFFFFF))),
    "Table_map column count 2^63": _decode(
        _event(ev.TABLE_MAP_EVENT, b"\1\0\0\0\0\0" + b"\1\0" + b"\1d\0" + b"\1t\0" + LEN64 + b"\3\3")
    ),
    "Table_map metadata length 2^63": _decode(
        _event(ev.TABLE_MAP_EVENT, b"\1\0\0\0\0\0" + b"\1\0" + b"\1d\0" + b"\1t\0" + b"\1\3" + LEN64)
    ),
    "rows event column count 2^63": _decode(_event(ev.WRITE_ROWS_EVENT, b"\1\0\0\0\0\0\1\0\2\0" + LEN64)),
    "Gtid_list count 2^32-1": _decode(_event(ev.GTID_LIST_EVENT, struct.pack("<I", 0x0FFFFFFF) + b"\0" * 16)),
    "User_var name length 4 GiB": _decode(_event(ev.USER_VAR_EVENT, struct.pack("<I", 0xFFFFFFFF) + b"x")),
    "User_var value length 4 GiB": _decode(
        _event(ev.USER_VAR_EVENT, struct.pack("<I", 1) + b"x\0" + b"\0" + struct.pack("<II", 33, 0xFFFFFFFF) + b"v")
    ),
    "Create_file 2^32-1 fields": _decode(
        _event(ev.CREATE_FILE_EVENT, struct.pack("<IIIBBI", 1, 0, 0, 1, 1, 0xFFFFFFFF) + struct.pack("<I", 7) + b"\0" * 8)
    ),
    "compressed rows declared 4 GiB": _decode(
        _event(ev.WRITE_ROWS_COMPRESSED_EVENT, b"\1\0\0\0\0\0\1\0\2\0\1\1" + b"\x84\xff\xff\xff\xff" + b"x\x9c\x03\0\0\0\0\1")
    ),
    "event in an .ibb group 4 GiB": lambda: list(iter_events([_event(ev.XID_EVENT, b"\0" * 8, 0xFFFFFFFF)])),
    "GTID_STATE record of 2^61 GTIDs": lambda: decode_record(2, b"\x07" + b"\xff" * 8 + b"\0" * 8),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_length_claim_is_refused_before_allocating(case: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            CASES[case]()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{case}: {peak} bytes allocated before the refusal"
