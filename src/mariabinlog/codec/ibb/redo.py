"""The engine's redo-log format: checkpoint slots and LSN-stamped records, encoded and decoded.

Pure: bytes in, values out, and back; the engine (``engine/redo.py``) keeps the file, the
circular area's I/O, group commit and recovery policy.  The layout::

    [0, 4096)            checkpoint slot 0
    [4096, 8192)         checkpoint slot 1   (written alternately, newest valid wins)
    [8192, 8192 + cap)   circular record area: LSN x is stored at 8192 + x % cap

A checkpoint slot is ``"MBRL", u32 version, u64 number, lsn, epoch, capacity, end file,
end offset`` and a CRC-32C of those bytes, zero-padded to 4096.  A record is ``u32 length,
u32 crc, u64 lsn, body``; the CRC-32C covers ``lsn + body`` and is seeded with the
checkpoint's epoch.  The body is a list of operations (``OP_*``, fields as compressed
integers of ``codec/ibb/compr.py``), always ending with the binlog end position.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ...errors import EngineError
from ..checksum import crc32c
from .compr import read_compr, write_compr

SLOT_SIZE = 4096
AREA_START = 2 * SLOT_SIZE
MIN_CAPACITY = 1 << 20
FRAME = struct.Struct("<IIQ")
FRAME_SIZE = FRAME.size
FIRST_LSN = 1 << 14
_SLOT = struct.Struct("<4sIQQQQQQ")
_SLOT_MAGIC = b"MBRL"
_SLOT_VERSION = 1
_U32 = struct.Struct("<I")
_LSN = struct.Struct("<Q")

OP_PAGE = 1
"""file_no, page_no, offset, length, bytes: bytes appended to a binlog page (or a full page image)."""
OP_FORCED = 2
"""file_no, page_no, crc: a complete page written and fsynced to the binlog file before this record."""
OP_TRUNCATE = 3
"""file_no, pages: FLUSH BINARY LOGS cut the file to this many pages."""
OP_HOST = 4
"""length, bytes: a record of the host, handed back to it by recovery."""
OP_END = 5
"""file_no, offset: the binlog end position after this record (always last)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint: redo before ``lsn`` is no longer needed; the binlog up to ``end`` is on disk."""

    number: int
    lsn: int
    epoch: int
    capacity: int
    end: tuple[int, int]

    def encode(self) -> bytes:
        """One checkpoint slot (CRC-32C at the end of the used bytes, rest zero)."""
        body = _SLOT.pack(
            _SLOT_MAGIC, _SLOT_VERSION, self.number, self.lsn, self.epoch, self.capacity, self.end[0], self.end[1]
        )
        return (body + _U32.pack(crc32c(body))).ljust(SLOT_SIZE, b"\0")

    @classmethod
    def decode(cls, slot: bytes) -> Checkpoint | None:
        """The checkpoint in ``slot``, or None when the slot is empty or damaged."""
        if len(slot) < _SLOT.size + 4:
            return None
        body = slot[: _SLOT.size]
        if _U32.unpack_from(slot, _SLOT.size)[0] != crc32c(body):
            return None
        magic, version, number, lsn, epoch, capacity, end_file, end_offset = _SLOT.unpack(body)
        if magic != _SLOT_MAGIC or version != _SLOT_VERSION:
            return None
        return cls(number, lsn, epoch, capacity, (end_file, end_offset))


@dataclass(slots=True)
class RedoRecord:
    """A decoded record: its LSN range and operations ``(op, fields...)``."""

    lsn: int
    end_lsn: int
    ops: list[tuple[Any, ...]]

    @property
    def end(self) -> tuple[int, int]:
        """The binlog end position after this record."""
        op = self.ops[-1]
        if op[0] != OP_END:
            raise EngineError(f"redo record at LSN {self.lsn} lacks its end position")
        return op[1], op[2]


class RecordBuilder:
    """Builds one record body; ``end()`` closes it with the binlog end position."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def page(self, file_no: int, page_no: int, offset: int, data: bytes) -> None:
        """Bytes written at ``offset`` of a binlog page."""
        self.parts += (
            b"\x01" + write_compr(file_no) + write_compr(page_no) + write_compr(offset) + write_compr(len(data)),
            data,
        )

    def forced(self, file_no: int, page_no: int, crc: int) -> None:
        """A page that is durable in the binlog file itself (checked by CRC at recovery)."""
        self.parts.append(b"\x02" + write_compr(file_no) + write_compr(page_no) + write_compr(crc))

    def truncate(self, file_no: int, pages: int) -> None:
        """The file keeps only its first ``pages`` pages."""
        self.parts.append(b"\x03" + write_compr(file_no) + write_compr(pages))

    def host(self, data: bytes) -> None:
        """An opaque host record."""
        self.parts += (b"\x04" + write_compr(len(data)), data)

    def end(self, position: tuple[int, int]) -> bytes:
        """The finished body."""
        self.parts.append(b"\x05" + write_compr(position[0]) + write_compr(position[1]))
        return b"".join(self.parts)


def decode_body(lsn: int, end_lsn: int, body: bytes) -> RedoRecord:
    """Parse the operations of a record body (CRC already verified)."""
    ops: list[tuple[Any, ...]] = []
    pos = 0
    size = len(body)
    while pos < size:
        op = body[pos]
        pos += 1
        if op == OP_PAGE:
            file_no, pos = read_compr(body, pos)
            page_no, pos = read_compr(body, pos)
            offset, pos = read_compr(body, pos)
            length, pos = read_compr(body, pos)
            ops.append((op, file_no, page_no, offset, body[pos : pos + length]))
            pos += length
        elif op == OP_FORCED:
            file_no, pos = read_compr(body, pos)
            page_no, pos = read_compr(body, pos)
            crc, pos = read_compr(body, pos)
            ops.append((op, file_no, page_no, crc))
        elif op == OP_TRUNCATE:
            file_no, pos = read_compr(body, pos)
            pages, pos = read_compr(body, pos)
            ops.append((op, file_no, pages))
        elif op == OP_HOST:
            length, pos = read_compr(body, pos)
            ops.append((op, body[pos : pos + length]))
            pos += length
        elif op == OP_END:
            file_no, pos = read_compr(body, pos)
            offset, pos = read_compr(body, pos)
            ops.append((op, file_no, offset))
        else:
            raise EngineError(f"redo record at LSN {lsn}: unknown operation {op}")
    if pos != size or not ops or ops[-1][0] != OP_END:
        raise EngineError(f"redo record at LSN {lsn} is malformed")
    return RedoRecord(lsn, end_lsn, ops)


def _crc(epoch: int, data: bytes | memoryview) -> int:
    return crc32c(data, epoch & 0xFFFFFFFF)


def frame(lsn: int, epoch: int, body: bytes) -> bytes:
    """A whole record: frame header plus body."""
    tail = _LSN.pack(lsn) + body
    return _U32.pack(FRAME_SIZE + len(body)) + _U32.pack(_crc(epoch, tail)) + tail


def frame_head(head: bytes | memoryview) -> tuple[int, int, int]:
    """The frame header at the start of ``head``: (record length, CRC, LSN)."""
    return FRAME.unpack_from(head)  # type: ignore[return-value]


def frame_valid(epoch: int, record: bytes | memoryview, crc: int) -> bool:
    """Whether ``crc`` (from :func:`frame_head`) covers the record's ``lsn + body`` under ``epoch``."""
    return _crc(epoch, memoryview(record)[8:]) == crc
