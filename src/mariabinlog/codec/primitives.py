"""Byte-level helpers shared by all codecs: precompiled structs and MySQL lenenc.

Everything here is pure: functions take a buffer and an offset and return the
value and the next offset.  Structs are compiled once at import time.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError, TruncatedError

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")
U16_BE = struct.Struct(">H")
U32_BE = struct.Struct(">I")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")

Buffer = bytes | bytearray | memoryview


def byte_view(data: Buffer) -> memoryview:
    """A flat view of ``data`` as unsigned bytes (whatever the item format of a memoryview)."""
    return memoryview(data).cast("B")


def read_u24(buf: Buffer, pos: int) -> int:
    """Read an unsigned 3-byte little-endian integer."""
    return buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)


def read_u48(buf: Buffer, pos: int) -> int:
    """Read an unsigned 6-byte little-endian integer (table ids)."""
    return U32.unpack_from(buf, pos)[0] | (U16.unpack_from(buf, pos + 4)[0] << 32)


def need(buf: Buffer, pos: int, size: int, what: str) -> None:
    """Raise TruncatedError unless ``size`` bytes are available at ``pos``."""
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise TruncatedError(f"truncated {what}", offset=pos, expected=f"{size} bytes, {max(len(buf) - pos, 0)} left")


def need_within(pos: int, size: int, end: int, what: str) -> None:
    """Raise TruncatedError unless ``size`` bytes at ``pos`` end by ``end``: a field inside one
    event of a larger buffer, where :func:`need` would read on into the next event."""
    if size < 0 or pos + size > end:
        raise TruncatedError(f"truncated {what}", offset=pos, expected=f"{size} bytes, {max(end - pos, 0)} left")


def read_lenenc(buf: Buffer, pos: int) -> tuple[int | None, int]:
    """Read a MySQL length-encoded integer; returns (value or None for 0xFB NULL, next pos)."""
    need(buf, pos, 1, "length-encoded integer")
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 251:
        return None, pos + 1
    if first == 252:
        need(buf, pos + 1, 2, "length-encoded integer")
        return U16.unpack_from(buf, pos + 1)[0], pos + 3
    if first == 253:
        need(buf, pos + 1, 3, "length-encoded integer")
        return read_u24(buf, pos + 1), pos + 4
    if first == 254:
        need(buf, pos + 1, 8, "length-encoded integer")
        return U64.unpack_from(buf, pos + 1)[0], pos + 9
    raise DecodeError("invalid length-encoded integer prefix 0xff", offset=pos, expected="a prefix below 0xff")


def read_lenenc_int(buf: Buffer, pos: int, what: str) -> tuple[int, int]:
    """Read a lenenc integer that must not be NULL."""
    value, nxt = read_lenenc(buf, pos)
    if value is None:
        raise DecodeError(f"unexpected NULL length for {what}", offset=pos, expected="a length")
    return value, nxt


def write_lenenc(value: int) -> bytes:
    """Encode ``value`` as a MySQL length-encoded integer (shortest form)."""
    if value < 251:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + U16.pack(value)
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + U64.pack(value)


def read_lenenc_bytes(buf: Buffer, pos: int, what: str) -> tuple[bytes, int]:
    """Read a lenenc-prefixed byte string."""
    length, pos = read_lenenc_int(buf, pos, what)
    need(buf, pos, length, what)
    return bytes(buf[pos : pos + length]), pos + length
