"""Finding event boundaries inside a legacy binlog file without reading it from the start.

A legacy file is a chain of events, each header naming its length and ``log_pos``: the file
offset where the event ends.  Servers write ``log_pos`` faithfully, so a header at file offset
``p`` is believable when ``log_pos == p + length``; with CRC32 checksums the event's footer
confirms it.  That lets a reader that starts at an arbitrary offset (an input split of a large
file) hop to the next real event and go on by framing.  Files whose Format_description has no
``log_pos`` (written by tools that leave it 0) cannot be entered this way:
:func:`positions_recorded` says so, and such a file is read by framing from its start.
"""

from __future__ import annotations

from ..checksum import crc32
from . import CHECKSUM_CRC32, HEADER_LEN
from ..primitives import U32, Buffer

_MAX_EVENT = 1 << 30


def header_claim(buf: Buffer, pos: int, file_offset: int) -> int | None:
    """The event length the header at ``buf[pos:]`` claims if its ``log_pos`` says an event of
    that length starts at ``file_offset``; None when the header is not believable there."""
    if pos + HEADER_LEN > len(buf):
        return None
    length = U32.unpack_from(buf, pos + 9)[0]
    if length < HEADER_LEN or length > _MAX_EVENT:
        return None
    return length if U32.unpack_from(buf, pos + 13)[0] == file_offset + length else None


def footer_matches(buf: Buffer, pos: int, length: int, checksum_alg: int) -> bool:
    """Whether the event ``buf[pos:pos+length]`` carries a valid CRC32 footer (True without
    checksums: then the ``log_pos`` chain is the only evidence)."""
    if checksum_alg != CHECKSUM_CRC32:
        return True
    if length < HEADER_LEN + 4:
        return False
    return crc32(buf[pos : pos + length - 4]) == U32.unpack_from(buf, pos + length - 4)[0]


def positions_recorded(buf: Buffer, fd_pos: int = 4) -> bool:
    """Whether the file whose Format_description starts at ``buf[fd_pos:]`` records ``log_pos``
    (so :func:`header_claim` can find boundaries in it)."""
    return header_claim(buf, fd_pos, fd_pos) is not None
