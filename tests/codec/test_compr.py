"""Compressed integers (ibb-format.md §4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mariabinlog.codec.ibb.compr import read_compr, write_compr
from mariabinlog.errors import TruncatedError

SPEC_VECTORS = [
    (0, "00"),
    (1, "08"),
    (31, "f8"),
    (32, "01 01"),
    (246, "b1 07"),
    (255, "f9 07"),
    (8191, "f9 ff"),
    (8192, "02 00 01"),
    (54090, "52 9a 06"),
    (2**53 - 1, "fe ff ff ff ff ff ff"),
    (2**53, "07 00 00 00 00 00 00 01 00"),
    (2**61 - 1, "ff ff ff ff ff ff ff ff 00"),
    (2**61, "07 00 00 00 00 00 00 00 01"),
    (2**64 - 1, "ff ff ff ff ff ff ff ff 07"),
]
BOUNDARIES = [0, 31, 32, 8191, 8192, 2**21 - 1, 2**21, 2**53 - 1, 2**53, 2**61 - 1, 2**61, 2**64 - 1]


@pytest.mark.parametrize(("value", "encoded"), SPEC_VECTORS)
def test_spec_vectors(value: int, encoded: str) -> None:
    data = bytes.fromhex(encoded)
    assert write_compr(value) == data
    assert read_compr(data, 0) == (value, len(data))


@given(st.one_of(st.sampled_from(BOUNDARIES), st.integers(0, 2**64 - 1)), st.binary(max_size=3))
def test_round_trip_at_offset(value: int, prefix: bytes) -> None:
    data = write_compr(value)
    buf = bytearray(prefix + data + b"\xaa")
    assert read_compr(buf, len(prefix)) == (value, len(prefix) + len(data))
    assert read_compr(memoryview(buf), len(prefix)) == (value, len(prefix) + len(data))


def test_lengths_are_minimal() -> None:
    assert [len(write_compr(v)) for v in (31, 32, 8191, 8192, 2**53 - 1, 2**53)] == [1, 2, 2, 3, 7, 9]


@given(st.integers(0, 2**53 - 1), st.integers(1, 7))
def test_non_minimal_encodings_are_accepted(value: int, size: int) -> None:
    if value.bit_length() + 3 > size * 8:
        size = 7
    data = ((value << 3) | (size - 1)).to_bytes(size, "little")
    assert read_compr(data, 0) == (value, size)
    nine = (((value << 3) | 7) & (2**64 - 1)).to_bytes(8, "little") + bytes((value >> 61,))
    assert read_compr(nine, 0) == (value, 9)


def test_ninth_byte_upper_bits_are_ignored() -> None:
    assert read_compr(b"\xff" * 9, 0) == (2**64 - 1, 9)
    assert read_compr(bytes.fromhex("07 00 00 00 00 00 00 00 f9"), 0) == (2**61, 9)


@pytest.mark.parametrize("value", BOUNDARIES)
def test_truncated_input_raises_with_offset(value: int) -> None:
    data = b"\x00\x00" + write_compr(value)
    for cut in range(2, len(data)):
        with pytest.raises(TruncatedError) as info:
            read_compr(data[:cut], 2)
        assert info.value.offset == 2


@pytest.mark.parametrize("value", [-1, 2**64])
def test_write_rejects_out_of_range(value: int) -> None:
    with pytest.raises(ValueError):
        write_compr(value)
