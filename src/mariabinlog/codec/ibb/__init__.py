"""The `.ibb` ("binlog in engine") format codec, pure and sans-I/O (ibb-format.md).

Facade over the implementation modules:

* :mod:`.page` - header page, page CRCs, chunk headers;
* :mod:`.records` - record payloads and event splitting;
* :mod:`.writer` - records -> pages (:class:`PageWriter`) and OOB forest links;
* :mod:`.reader` - pages -> records and event groups through a :class:`PageSource`.
"""

from __future__ import annotations

from ..events.header import iter_events
from .page import (
    FLAG_CONT,
    FLAG_LAST,
    IBB_MAGIC,
    LEGACY_MAGIC,
    NO_FILE_REF,
    PAGE_DATA_END,
    PAGE_SIZE,
    PAGE_SIZE_SHIFT,
    Chunk,
    IbbHeader,
    RecordType,
    check_page,
    chunk_at,
    decode_header_page,
    iter_chunks,
    seal_page,
    file_kind,
    sniff_file,
)
from .reader import EventGroup, PageSource, Record, RecordReader
from .records import (
    CommitRecord,
    Dummy,
    GtidState,
    OobData,
    OobRef,
    RecordPayload,
    XaComplete,
    XaPrepare,
    Xid,
    decode_record,
)
from .writer import OobForestBuilder, PageWriter, RecordSpan, WrittenPage

__all__ = [
    "FLAG_CONT",
    "FLAG_LAST",
    "IBB_MAGIC",
    "LEGACY_MAGIC",
    "NO_FILE_REF",
    "PAGE_DATA_END",
    "PAGE_SIZE",
    "PAGE_SIZE_SHIFT",
    "Chunk",
    "CommitRecord",
    "Dummy",
    "EventGroup",
    "GtidState",
    "IbbHeader",
    "OobData",
    "OobForestBuilder",
    "OobRef",
    "PageSource",
    "PageWriter",
    "Record",
    "RecordPayload",
    "RecordReader",
    "RecordSpan",
    "RecordType",
    "WrittenPage",
    "XaComplete",
    "XaPrepare",
    "Xid",
    "check_page",
    "chunk_at",
    "decode_header_page",
    "decode_record",
    "iter_chunks",
    "iter_events",
    "seal_page",
    "file_kind",
    "sniff_file",
]
