"""Compressed unsigned 64-bit integers of the `.ibb` format (ibb-format.md §4).

1..7 or 9 bytes, little-endian; the low 3 bits of the first byte are the
length tag (``len = tag + 1``, tag 7 means 9 bytes).  The value is the
little-endian integer shifted right by 3; a 9th byte carries bits 61..63.
Readers accept non-minimal encodings and, like MariaDB's ``compr_int_read``,
ignore the upper 5 bits of the 9th byte.  ``read_compr`` runs once per field of
every record header, so it avoids slicing for the common 1..2 byte forms.
"""

from __future__ import annotations

from ...errors import TruncatedError
from ..primitives import U32, U64, Buffer

_MASK64 = (1 << 64) - 1
_u32 = U32.unpack_from
_u64 = U64.unpack_from


def _truncated(buf: Buffer, pos: int, size: int) -> TruncatedError:
    left = max(len(buf) - pos, 0)
    return TruncatedError("truncated compressed integer", offset=pos, expected=f"{size} bytes, {left} left")


def read_compr(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode the compressed integer at ``pos``; return ``(value, next_pos)``."""
    try:
        first = buf[pos]
    except IndexError:
        raise _truncated(buf, pos, 1) from None
    tag = first & 7
    if tag == 0:
        return first >> 3, pos + 1
    if tag == 1:
        if pos + 2 > len(buf):
            raise _truncated(buf, pos, 2)
        return (first | (buf[pos + 1] << 8)) >> 3, pos + 2
    if tag == 7:
        if pos + 9 > len(buf):
            raise _truncated(buf, pos, 9)
        return (_u64(buf, pos)[0] >> 3) | ((buf[pos + 8] & 7) << 61), pos + 9
    end = pos + tag + 1
    if end > len(buf):
        raise _truncated(buf, pos, tag + 1)
    if tag == 3:
        return _u32(buf, pos)[0] >> 3, end
    return int.from_bytes(buf[pos:end], "little") >> 3, end


def write_compr(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**64) in the shortest form MariaDB writes."""
    if value < 32:
        if value < 0:
            raise ValueError(f"compressed integer must be unsigned, got {value}")
        return bytes((value << 3,))
    if value > _MASK64:
        raise ValueError(f"compressed integer does not fit in 64 bits: {value}")
    size = (value.bit_length() + 10) >> 3
    if size < 8:
        return ((value << 3) | (size - 1)).to_bytes(size, "little")
    return (((value << 3) | 7) & _MASK64).to_bytes(8, "little") + bytes((value >> 61,))
