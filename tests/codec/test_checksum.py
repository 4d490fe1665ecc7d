"""CRC-32C (pages) and CRC-32 (legacy events)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mariabinlog.codec import checksum
from mariabinlog.codec.checksum import crc32, crc32c


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_crc32_is_zlib() -> None:
    assert crc32(b"123456789") == 0xCBF43926


def test_hardware_backend_is_used() -> None:
    assert checksum.CRC32C_BACKEND in ("crc32c", "google-crc32c")
    assert checksum.CRC32_BACKEND == "zlib-ng"


@given(st.binary(max_size=3000), st.integers(0, 2**32 - 1))
def test_crc32_backend_is_zlibs_crc32(data: bytes, start: int) -> None:
    import zlib

    assert crc32(data, start) == zlib.crc32(data, start)
    assert crc32(memoryview(data)[1:]) == zlib.crc32(data[1:])


def test_accepts_any_buffer_and_chains() -> None:
    data = bytearray(b"123456789")
    assert crc32c(memoryview(data)[:4]) == crc32c(b"1234")
    assert crc32c(data[4:], crc32c(data[:4])) == 0xE3069283
    assert crc32(data[4:], crc32(data[:4])) == 0xCBF43926


@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_table_fallback_matches(data: bytes, start: int) -> None:
    assert checksum._table_crc32c(data, start) == crc32c(data, start)
