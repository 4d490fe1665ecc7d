"""`.ibb` pages: header page (page 0), page CRC-32C trailers and chunk headers.

ibb-format.md §1-§3 and §5.  Every page is 16 KiB; its last 4 bytes hold the
CRC-32C of the rest, little-endian.  Page 0 carries the file header plus an
extra CRC of bytes 0..507 at 508 so the header can be checked before the page
size is known.  Data pages hold chunks ``type_flags, u16 length, payload``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from ...errors import ChecksumError, CorruptRecordError, DecodeError, TruncatedError
from ..checksum import crc32c
from ..primitives import U32, Buffer

PAGE_SIZE_SHIFT = 14
PAGE_SIZE = 1 << PAGE_SIZE_SHIFT
PAGE_DATA_END = PAGE_SIZE - 4
"""First byte of the CRC trailer: chunks live in ``[0, PAGE_DATA_END)``."""
CHUNK_HEADER_SIZE = 3
MAX_CHUNK_START = PAGE_DATA_END - 4
"""A writer starts a chunk only at offsets <= this (3 header bytes + 1 payload byte fit)."""
READER_PAGE_END = PAGE_SIZE - 7
"""Readers treat offsets >= this as the end of the page (bytes 16377..16379 are never read)."""

HEADER_BLOCK_SIZE = 512
HEADER_CRC_OFFSET = HEADER_BLOCK_SIZE - 4
HEADER_USED_SIZE = 64
IBB_MAGIC = b"\xfe\xfe\x0d\x01"
LEGACY_MAGIC = b"\xfe\x62\x69\x6e"
VERSION_MAJOR = 1
VERSION_MINOR = 0
NO_FILE_REF = (1 << 64) - 1
"""``xa_ref_file_no`` value meaning "no pending XA" (``~0``)."""

FLAG_CONT = 0x80
FLAG_LAST = 0x40
TYPE_MASK = 0x3F
FILLER = 0xFF


class RecordType(IntEnum):
    """Record/chunk types (``enum fsp_binlog_chunk_types``)."""

    EMPTY = 0
    COMMIT = 1
    GTID_STATE = 2
    OOB_DATA = 3
    DUMMY = 4
    XA_PREPARE = 5
    XA_COMPLETE = 6


NESTABLE_TYPES = frozenset((RecordType.GTID_STATE, RecordType.DUMMY))
"""Types whose chunks may sit between the chunks of another record (ALLOWED_NESTED_RECORDS)."""

_u32 = U32.unpack_from
_pack_u32 = U32.pack
_HEADER_FIELDS = struct.Struct("<4sIIIQQQQQQ")
ZERO_PAGE = bytes(PAGE_SIZE)


@dataclass(frozen=True, slots=True)
class IbbHeader:
    """Fields of the 64-byte file header on page 0 (§3)."""

    file_no: int
    page_count: int
    start_lsn: int = 0
    gtid_state_interval: int = 128
    oob_ref_file_no: int = 0
    xa_ref_file_no: int = NO_FILE_REF
    page_size_shift: int = PAGE_SIZE_SHIFT
    version_major: int = VERSION_MAJOR
    version_minor: int = VERSION_MINOR

    def encode(self) -> bytes:
        """The complete 16 KiB header page with the 512-byte-region CRC and the page CRC."""
        page = bytearray(PAGE_SIZE)
        _HEADER_FIELDS.pack_into(
            page,
            0,
            IBB_MAGIC,
            self.page_size_shift,
            self.version_major,
            self.version_minor,
            self.file_no,
            self.page_count,
            self.start_lsn,
            self.gtid_state_interval,
            self.oob_ref_file_no,
            self.xa_ref_file_no,
        )
        page[HEADER_CRC_OFFSET:HEADER_BLOCK_SIZE] = _pack_u32(crc32c(memoryview(page)[:HEADER_CRC_OFFSET]))
        return seal_page(page)


def sniff_file(first_bytes: Buffer) -> str:
    """Classify a binlog file by its first 4 bytes: ``"ibb"``, ``"empty"`` or ``"legacy"``.

    "empty" is a pre-allocated `.ibb` file with nothing written yet.  Anything
    else raises DecodeError with mariadb-binlog's text.
    """
    if len(first_bytes) < 4:
        raise TruncatedError("File is not a binary log file.", offset=0, expected="at least 4 bytes")
    magic = bytes(first_bytes[:4])
    if magic == IBB_MAGIC:
        return "ibb"
    if magic == b"\0\0\0\0":
        return "empty"
    if magic == LEGACY_MAGIC:
        return "legacy"
    raise DecodeError(
        "File is not a binary log file.", offset=0, expected=f"magic {IBB_MAGIC.hex(' ')} or {LEGACY_MAGIC.hex(' ')}"
    )


def file_kind(first_bytes: Buffer) -> str | None:
    """:func:`sniff_file` for callers that skip what is no binlog: the kind, or None (too short,
    or another magic)."""
    try:
        return sniff_file(first_bytes)
    except DecodeError:
        return None


def decode_header_page(page: Buffer) -> IbbHeader | None:
    """Validate and decode page 0 in mariadb-binlog's order; None for an empty pre-allocated file.

    ``page`` may be just the first 512 bytes; when it holds a whole page the
    full-page CRC is checked too (the server checks it, mariadb-binlog not).
    """
    kind = sniff_file(page)
    if kind == "empty":
        return None
    if kind == "legacy":
        raise DecodeError("legacy binlog file, not an InnoDB binlog", offset=0, expected=f"magic {IBB_MAGIC.hex(' ')}")
    if len(page) < HEADER_BLOCK_SIZE:
        raise TruncatedError(
            "Cannot read first page of InnoDB binlog file", offset=len(page), expected=f"{HEADER_BLOCK_SIZE} bytes"
        )
    stored = _u32(page, HEADER_CRC_OFFSET)[0]
    computed = crc32c(memoryview(page)[:HEADER_CRC_OFFSET])
    if stored != computed:
        raise ChecksumError(
            "Cannot read first page of InnoDB binlog file",
            offset=HEADER_CRC_OFFSET,
            expected=f"CRC-32C 0x{computed:08X} of bytes 0..507, found 0x{stored:08X}",
        )
    (_, shift, major, minor, file_no, page_count, start_lsn, interval, oob_ref, xa_ref) = _HEADER_FIELDS.unpack_from(
        page, 0
    )
    if major > VERSION_MAJOR:
        raise DecodeError(
            "Unsupported version of InnoDB binlog file, cannot read",
            offset=8,
            expected=f"major version <= {VERSION_MAJOR}, found {major}",
        )
    if shift != PAGE_SIZE_SHIFT:
        raise DecodeError(
            "Invalid/unsupported page size in InnoDB binlog file, cannot read",
            offset=4,
            expected=f"page size shift {PAGE_SIZE_SHIFT}, found {shift}",
        )
    if len(page) >= PAGE_SIZE:
        stored = _u32(page, PAGE_DATA_END)[0]
        computed = crc32c(memoryview(page)[:PAGE_DATA_END])
        if stored != computed:
            raise _crc_error(0, stored, computed)
    return IbbHeader(file_no, page_count, start_lsn, interval, oob_ref, xa_ref, shift, major, minor)


def _crc_error(page_no: int, stored: int, computed: int) -> ChecksumError:
    return ChecksumError(
        f"page {page_no}: invalid CRC-32C checksum 0x{stored:08X}", offset=PAGE_DATA_END, expected=f"0x{computed:08X}"
    )


def check_page(page: Buffer, page_no: int) -> bool:
    """Verify a data page; False for an all-zero (not yet written) page, True if it holds data.

    Errors carry page-relative offsets; anchor them with ``err.located(file, page_no * PAGE_SIZE)``.
    """
    if len(page) != PAGE_SIZE:
        raise TruncatedError(f"page {page_no} is short", offset=len(page), expected=f"{PAGE_SIZE} bytes")
    stored = _u32(page, PAGE_DATA_END)[0]
    computed = crc32c(memoryview(page)[:PAGE_DATA_END])
    if stored == computed:
        return True
    if page == ZERO_PAGE:
        return False
    raise _crc_error(page_no, stored, computed)


def page_crc(page: Buffer) -> int:
    """The CRC-32C stored in a page's trailer."""
    return _u32(page, PAGE_DATA_END)[0]  # type: ignore[no-any-return]


def page_crc_valid(page: Buffer) -> bool:
    """Whether a page's trailer holds the CRC-32C of its data (an all-zero page is not valid)."""
    return page_crc(page) == crc32c(memoryview(page)[:PAGE_DATA_END])


def seal_page(page: bytearray) -> bytes:
    """Store the CRC-32C trailer into ``page`` (16 KiB) and return it as bytes."""
    page[PAGE_DATA_END:] = _pack_u32(crc32c(memoryview(page)[:PAGE_DATA_END]))
    return bytes(page)


def chunk_at(page: Buffer, offset: int) -> tuple[int, int] | None:
    """Chunk header at ``offset``: ``(type_flags, payload_length)``, or None at the end of the page.

    ``type_flags == 0`` means end of written data.  A length reaching into the
    CRC raises CorruptRecordError (page-relative offset).
    """
    if offset >= READER_PAGE_END:
        return None
    flags = page[offset]
    if flags == FILLER:
        return None
    if flags == 0:
        return 0, 0
    length = page[offset + 1] | (page[offset + 2] << 8)
    if length + CHUNK_HEADER_SIZE + 4 > PAGE_SIZE - offset:
        raise CorruptRecordError(
            "Invalid chunk length", offset=offset + 1, expected=f"at most {PAGE_SIZE - offset - 7}, found {length}"
        )
    if not flags & TYPE_MASK:
        raise CorruptRecordError(
            "chunk of record type 0 with flags", offset=offset, expected="0x00 (end of data) or a record type 1..63"
        )
    return flags, length


def py_page_records(page: Buffer, offset: int) -> tuple[list[tuple[int, bytes, int, int]], int]:
    """The records from ``offset`` of a page that are each one whole chunk (LAST, not CONT):
    ``(type, payload, chunk offset, offset after it)``, and the offset of the first chunk that
    is not one (a record's first or later chunk of several, the end of data or of the page, a
    damaged header), which the caller reads chunk by chunk (:func:`chunk_at` says what is
    wrong).  Compiled as ``codec.ibb.reader.page_records``."""
    if offset < 0 or len(page) < PAGE_SIZE:
        raise ValueError("not a page, or an offset outside it")
    found = []
    while True:
        try:
            header = chunk_at(page, offset)
        except CorruptRecordError:
            break
        if header is None or header[0] & FLAG_CONT or not header[0] & FLAG_LAST:  # end of data: flags 0
            break
        flags, length = header
        end = offset + CHUNK_HEADER_SIZE + length
        found.append((flags & TYPE_MASK, bytes(page[offset + CHUNK_HEADER_SIZE : end]), offset, end))
        offset = end
    return found, offset


class Chunk(NamedTuple):
    """One chunk of a data page: where it starts, its type byte and its payload."""

    offset: int
    type_flags: int
    payload: bytes


def iter_chunks(page: Buffer, offset: int = 0) -> Iterator[Chunk]:
    """Chunks of one page from ``offset`` until the end of the page or of written data."""
    while True:
        header = chunk_at(page, offset)
        if header is None or header[0] == 0:
            return
        flags, length = header
        start = offset + CHUNK_HEADER_SIZE
        yield Chunk(offset, flags, bytes(page[start : start + length]))
        offset = start + length
