"""Checksum repair for mutated inputs, so that mutations reach past the first check.

A random byte flip almost always breaks an event's CRC-32 or a page's CRC-32C, and the
reader then stops at its first verification; the custom mutator of :mod:`fuzz.run` passes
most mutants through these functions, which store the checksum the damaged bytes would
have if a writer had written them.  Both walk the structure as a reader frames it and stop
quietly where the framing itself is broken (the decoder under test reports that).
"""

from __future__ import annotations

import zlib

from crc32c import crc32c

from mariabinlog.codec.events import (
    CHECKSUM_CRC32,
    FORMAT_DESCRIPTION_EVENT,
    HEADER_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    description_checksum_alg,
)
from mariabinlog.codec.ibb import PAGE_DATA_END, PAGE_SIZE

LEGACY_MAGIC = b"\xfebin"
_HEADER_CRC = 508


def fix_event_crcs(data: bytearray, pos: int = 0, alg: int = 0) -> int:
    """Recompute the CRC-32 footer of every framed event in ``data[pos:]`` (legacy framing,
    the Format_description deciding which events carry one); returns the algorithm in force."""
    size = len(data)
    while pos + HEADER_LEN <= size:
        length = int.from_bytes(data[pos + 9 : pos + 13], "little")
        if length < HEADER_LEN or pos + length > size:
            break
        if data[pos + 4] == FORMAT_DESCRIPTION_EVENT:
            alg = description_checksum_alg(data, pos, length)
            own = alg
        else:
            own = alg
        if own == CHECKSUM_CRC32 and length >= HEADER_LEN + 4:
            body = bytearray(data[pos : pos + length - 4])
            if data[pos + 4] == FORMAT_DESCRIPTION_EVENT:
                body[17] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
            data[pos + length - 4 : pos + length] = zlib.crc32(body).to_bytes(4, "little")
        pos += length
    return alg


def fix_legacy_file(data: bytes) -> bytes:
    """A legacy binlog (magic + events) with every event's CRC-32 footer made right."""
    if not data.startswith(LEGACY_MAGIC):
        return data
    out = bytearray(data)
    fix_event_crcs(out, 4)
    return bytes(out)


def seal_pages(pages: list[bytearray]) -> None:
    """Store each whole 16 KiB page's CRC-32C (and page 0's header-block CRC when it is one)."""
    for number, page in enumerate(pages):
        if len(page) != PAGE_SIZE:
            continue
        if number == 0 and page[:4] == b"\xfe\xfe\x0d\x01":
            page[_HEADER_CRC:512] = crc32c(bytes(page[:_HEADER_CRC])).to_bytes(4, "little")
        page[PAGE_DATA_END:] = crc32c(bytes(page[:PAGE_DATA_END])).to_bytes(4, "little")
