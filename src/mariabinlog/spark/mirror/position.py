"""Positions in the followed stream: how far a mirror's table has been applied.

A position is an offset of the ``mariabinlog`` streaming source (:mod:`..stream`): the file
and byte that end a stretch of whole event groups, with the binlog's GTID state there::

    {"stream": "ibb", "file": "binlog-000003.ibb", "offset": 81920, "gtid_state": "0-1-17,1-2-9"}

Positions are ordered by (file number, byte), so one number orders them all: the file
number in the high 32 bits and the byte in the low 32 (:func:`version`).  The same number of
a CDC row (its ``file_no`` and ``position``: an ``.ibb`` group's COMMIT record, a legacy
event's own offset) is below a position's exactly when the row's group ends before it, so
a table that recorded position P holds every row below ``version(P)`` and none above.  That
number is the table's Delta transaction version (``txn`` action) and sits, with the whole
offset, in its Iceberg snapshot properties.

The GTID state says which DDL of the schema history lies before a position: a statement of
GTID ``d-s-n`` does when the state's last GTID of domain ``d`` has a sequence number of at
least ``n`` (sequence numbers grow within a domain, as the source's GTID seek assumes), which
orders statements of every domain against a position, not just those of one domain.
"""

from __future__ import annotations

import json
from typing import Any

from ...codec.gtid import BinlogState, Gtid, GtidList
from ...engine.files import ibb_file_no, legacy_file_no
from ...errors import MirrorError

Offset = dict[str, Any]

#: The offset of nothing applied yet (before every row).
NOTHING: Offset = {"stream": "", "file": "", "offset": 0, "gtid_state": ""}


def file_number(offset: Offset) -> int:
    """The file number of an offset's file (``binlog-000003.ibb``, ``mysql-bin.000003``: 3)."""
    name = offset.get("file") or ""
    if not name:
        return 0
    number = ibb_file_no(name) if offset.get("stream") == "ibb" else legacy_file_no(name)
    if number is None:
        raise MirrorError(f"stream offset names {name!r}, which is not a binlog file name")
    return number


def version(offset: Offset | None) -> int:
    """The offset as one number: file number << 32 | byte (-1: nothing applied)."""
    if not offset or not offset.get("file"):
        return -1
    return file_number(offset) << 32 | int(offset["offset"])


def text(offset: Offset) -> str:
    """The offset as compact JSON (what commit metadata and the ledger hold)."""
    return json.dumps({k: offset.get(k, NOTHING[k]) for k in NOTHING}, separators=(",", ":"))


def parse(data: str | None) -> Offset | None:
    """An offset from :func:`text` (None for None or empty)."""
    if not data:
        return None
    try:
        offset = json.loads(data)
    except ValueError:
        raise MirrorError(f"not a stream offset: {data!r}") from None
    if not isinstance(offset, dict) or not all(k in offset for k in NOTHING):
        raise MirrorError(f"not a stream offset: {data!r}")
    return offset


def state(offset: Offset | None) -> BinlogState:
    """The GTID state of an offset."""
    listed = (offset or {}).get("gtid_state") or ""
    return BinlogState.from_list(GtidList.parse(listed)) if listed else BinlogState()


def gtids_behind(applied: Offset | None, latest: Offset) -> int:
    """Event groups in ``latest``'s state that ``applied``'s lacks, by sequence number per domain."""
    have, newest = state(applied), state(latest)
    behind = 0
    for gtid in newest.connect_state().values():
        mine = have.last(gtid.domain)
        behind += max(0, gtid.seq - (mine.seq if mine is not None else 0))
    return behind


def _before(record: dict[str, Any], at: BinlogState, offset: Offset) -> bool:
    """Whether a DDL record of a saved schema history lies before ``offset``."""
    gtid = record.get("gtid")
    if gtid:
        parsed = Gtid.parse(gtid)
        last = at.last(parsed.domain)
        return last is not None and last.seq >= parsed.seq
    # No GTID (a server older than GTIDs): only a legacy stream read from the same files orders it.
    if offset.get("stream") != "legacy":
        return True
    return (legacy_file_no(record.get("file") or ""), int(record.get("pos") or 0)) < (
        file_number(offset), int(offset["offset"]))


def records_before(history: dict[str, Any], offset: Offset | None) -> int:
    """How many DDL records of a saved history (its JSON) lie before ``offset``: they come
    first in the history, which records the stream's statements in stream order."""
    if not offset or not offset.get("file"):
        return 0
    at = state(offset)
    count = 0
    for record in history.get("ddl", []):
        if not _before(record, at, offset):
            break
        count += 1
    return count


def history_until(history: dict[str, Any], offset: Offset) -> tuple[str, int]:
    """(JSON text, record count) of the saved history ``history`` cut at ``offset``: the
    snapshot and the statements before it, as the stream had its tables there.  The history
    file of a followed archive grows past what a micro-batch read; the cut makes a batch
    see the tables as they were at its end, whenever it runs or runs again."""
    count = records_before(history, offset)
    cut = {**history, "ddl": history.get("ddl", [])[:count]}
    return json.dumps(cut, ensure_ascii=False, sort_keys=True), count
