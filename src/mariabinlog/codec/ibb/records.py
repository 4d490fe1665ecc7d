"""Payloads of `.ibb` records (ibb-format.md §6) and splitting event streams.

Each record type is a frozen slotted dataclass with ``encode() -> bytes`` and
``decode(payload)``.  Decoding errors carry payload-relative offsets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import CorruptRecordError, DecodeError
from .compr import read_compr, write_compr
from .page import RecordType
from ..primitives import U32, Buffer, need

_MAX_U32 = (1 << 32) - 1
_u32 = U32.unpack_from
_pack_u32 = U32.pack
XID_PART_MAX = 64
XA_PREPARE_FLAGS = 42
"""First byte of XA_PREPARE as MariaDB writes it today (a "type/flag" placeholder)."""


@dataclass(frozen=True, slots=True)
class OobRef:
    """Reference to an OOB forest: node count and locations (file_no, byte offset) of nodes 0 and N-1."""

    num_nodes: int
    first_file_no: int
    first_offset: int
    last_file_no: int
    last_offset: int

    def encode(self) -> bytes:
        """The five compr ints as stored in COMMIT and XA_PREPARE records."""
        if self.num_nodes <= 0:
            raise ValueError("an OOB forest reference needs at least one node")
        return b"".join(
            map(
                write_compr,
                (self.num_nodes, self.first_file_no, self.first_offset, self.last_file_no, self.last_offset),
            )
        )

    @property
    def last(self) -> tuple[int, int]:
        """Location of the newest node, where traversal starts."""
        return self.last_file_no, self.last_offset


def _read_oob_ref(buf: Buffer, pos: int) -> tuple[OobRef | None, int]:
    """Read ``num_nodes`` and, when non-zero, the four location ints."""
    num_nodes, pos = read_compr(buf, pos)
    if not num_nodes:
        return None, pos
    first_file, pos = read_compr(buf, pos)
    first_offset, pos = read_compr(buf, pos)
    last_file, pos = read_compr(buf, pos)
    last_offset, pos = read_compr(buf, pos)
    return OobRef(num_nodes, first_file, first_offset, last_file, last_offset), pos


#: The header of a COMMIT record that references no OOB forest (its event data follows).
COMMIT_PLAIN_HEADER = b"\0"


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """COMMIT (§6.1): up to two OOB forests (dual cache: non-transactional first) and event data."""

    forests: tuple[OobRef, ...]
    data: bytes

    def encode(self) -> bytes:
        """Header ``00`` / forest + ``00`` / two forests, then the event data."""
        if len(self.forests) > 2:
            raise ValueError("a commit record references at most two OOB forests")
        header = b"".join(ref.encode() for ref in self.forests)
        if len(self.forests) < 2:
            header += COMMIT_PLAIN_HEADER
        return header + self.data

    @classmethod
    def decode(cls, payload: Buffer) -> CommitRecord:
        """Parse the commit header; the rest is event data."""
        forest, pos = _read_oob_ref(payload, 0)
        forests: tuple[OobRef, ...] = ()
        if forest is not None:
            second, pos = _read_oob_ref(payload, pos)
            forests = (forest,) if second is None else (forest, second)
        return cls(forests, bytes(payload[pos:]))


@dataclass(frozen=True, slots=True)
class GtidState:
    """GTID_STATE (§6.2): one (domain_id, server_id, seq_no) per pair, plus the earliest pending-XA file."""

    gtids: tuple[tuple[int, int, int], ...]
    xa_ref_file_no: int | None = None

    def encode(self) -> bytes:
        """count, xa_ref_file_no + 1 (0 = none), then the triples, all compr."""
        parts = [
            write_compr(len(self.gtids)),
            write_compr(0 if self.xa_ref_file_no is None else self.xa_ref_file_no + 1),
        ]
        for domain_id, server_id, seq_no in self.gtids:
            if domain_id > _MAX_U32 or server_id > _MAX_U32:
                raise ValueError(f"domain_id and server_id must fit in 32 bits: {domain_id}-{server_id}-{seq_no}")
            parts += (write_compr(domain_id), write_compr(server_id), write_compr(seq_no))
        return b"".join(parts)

    @classmethod
    def decode(cls, payload: Buffer) -> GtidState:
        """Parse a full or differential state; trailing bytes are ignored like MariaDB's release build."""
        count, pos = read_compr(payload, 0)
        xa_plus_1, pos = read_compr(payload, pos)
        gtids = []
        for _ in range(count):
            field_pos = pos
            domain_id, pos = read_compr(payload, pos)
            server_id, pos = read_compr(payload, pos)
            if domain_id > _MAX_U32 or server_id > _MAX_U32:
                raise CorruptRecordError(
                    "GTID domain_id or server_id out of range", offset=field_pos, expected="values <= 4294967295"
                )
            seq_no, pos = read_compr(payload, pos)
            gtids.append((domain_id, server_id, seq_no))
        return cls(tuple(gtids), xa_plus_1 - 1 if xa_plus_1 else None)


@dataclass(frozen=True, slots=True)
class OobData:
    """OOB_DATA (§6.3): one forest node; ``(0, 0)`` locations are null links."""

    node_index: int
    left_file_no: int
    left_offset: int
    right_file_no: int
    right_offset: int
    data: bytes

    def encode(self) -> bytes:
        """Five compr ints then the raw piece of the spilled event stream."""
        return self.header() + self.data

    def header(self) -> bytes:
        """The five compr ints alone."""
        return b"".join(
            map(
                write_compr,
                (self.node_index, self.left_file_no, self.left_offset, self.right_file_no, self.right_offset),
            )
        )

    @classmethod
    def decode(cls, payload: Buffer) -> OobData:
        """Parse node index, links and data."""
        node_index, pos = read_compr(payload, 0)
        left_file, pos = read_compr(payload, pos)
        left_offset, pos = read_compr(payload, pos)
        right_file, pos = read_compr(payload, pos)
        right_offset, pos = read_compr(payload, pos)
        return cls(node_index, left_file, left_offset, right_file, right_offset, bytes(payload[pos:]))


@dataclass(frozen=True, slots=True)
class Dummy:
    """DUMMY (§6.6): 0xFF filler that completes a page before FLUSH BINARY LOGS truncates a file."""

    length: int

    def encode(self) -> bytes:
        """``length`` bytes of 0xFF."""
        return b"\xff" * self.length

    @classmethod
    def decode(cls, payload: Buffer) -> Dummy:
        """Readers skip the content; only its length is kept."""
        return cls(len(payload))


@dataclass(frozen=True, slots=True)
class Xid:
    """An XA transaction id: formatID (u32), gtrid and bqual (up to 64 bytes each)."""

    format_id: int
    gtrid: bytes
    bqual: bytes = b""

    def encode(self) -> bytes:
        """formatID u32 LE, gtrid length, bqual length, gtrid + bqual."""
        if len(self.gtrid) > XID_PART_MAX or len(self.bqual) > XID_PART_MAX:
            raise ValueError("XA gtrid and bqual are at most 64 bytes each")
        return _pack_u32(self.format_id) + bytes((len(self.gtrid), len(self.bqual))) + self.gtrid + self.bqual

    @classmethod
    def read(cls, buf: Buffer, pos: int) -> tuple[Xid, int]:
        """Parse an XID at ``pos``; return it and the next position."""
        need(buf, pos, 6, "XID")
        format_id = _u32(buf, pos)[0]
        gtrid_len, bqual_len = buf[pos + 4], buf[pos + 5]
        if gtrid_len > XID_PART_MAX or bqual_len > XID_PART_MAX:
            raise CorruptRecordError("XID part too long", offset=pos + 4, expected="gtrid and bqual lengths <= 64")
        pos += 6
        need(buf, pos, gtrid_len + bqual_len, "XID data")
        end = pos + gtrid_len + bqual_len
        return cls(format_id, bytes(buf[pos : pos + gtrid_len]), bytes(buf[pos + gtrid_len : end])), end


@dataclass(frozen=True, slots=True)
class XaPrepare:
    """XA_PREPARE (§6.4): flags byte, engine count, XID, then optionally the OOB forest (5 compr ints).

    Layout as in MariaDB's ``chunk_data_xa_prepare``: byte 0 is a type/flag byte
    (42 today), byte 1 the engine count.  The server does not yet append the
    forest ("ToDo"); when present it follows the XID.
    """

    xid: Xid
    engine_count: int = 1
    oob: OobRef | None = None
    flags: int = XA_PREPARE_FLAGS

    def encode(self) -> bytes:
        """Fixed part, XID and (if any) the forest reference."""
        tail = self.oob.encode() if self.oob is not None else b""
        return bytes((self.flags, self.engine_count)) + self.xid.encode() + tail

    @classmethod
    def decode(cls, payload: Buffer) -> XaPrepare:
        """Parse; a payload ending after the XID has no forest."""
        need(payload, 0, 2, "XA_PREPARE record")
        xid, pos = Xid.read(payload, 2)
        oob = None
        if pos < len(payload):
            oob, pos = _read_oob_ref(payload, pos)
            if oob is None:
                for _ in range(4):
                    _, pos = read_compr(payload, pos)
        return cls(xid, payload[1], oob, payload[0])


@dataclass(frozen=True, slots=True)
class XaComplete:
    """XA_COMPLETE (§6.5): commit (flag 0) or rollback (flag 1) of a prepared XID."""

    xid: Xid
    rollback: bool = False

    def encode(self) -> bytes:
        """Flag byte then the XID."""
        return (b"\x01" if self.rollback else b"\x00") + self.xid.encode()

    @classmethod
    def decode(cls, payload: Buffer) -> XaComplete:
        """Parse; only bit 0 of the flag byte is defined (IBB_FL_XA_TYPE_MASK)."""
        need(payload, 0, 1, "XA_COMPLETE record")
        xid, _ = Xid.read(payload, 1)
        return cls(xid, bool(payload[0] & 1))


RecordPayload = CommitRecord | GtidState | OobData | Dummy | XaPrepare | XaComplete

_DECODERS: dict[int, Callable[[Buffer], RecordPayload]] = {
    RecordType.COMMIT: CommitRecord.decode,
    RecordType.GTID_STATE: GtidState.decode,
    RecordType.OOB_DATA: OobData.decode,
    RecordType.DUMMY: Dummy.decode,
    RecordType.XA_PREPARE: XaPrepare.decode,
    RecordType.XA_COMPLETE: XaComplete.decode,
}


def decode_record(record_type: int, payload: Buffer) -> RecordPayload:
    """Decode the payload of a record of ``record_type``."""
    decoder = _DECODERS.get(record_type)
    if decoder is None:
        raise DecodeError(f"unknown .ibb record type {record_type}", offset=0, expected="a type 1..6")
    return decoder(payload)
