"""An archiver's batches in the engine: whole event groups received from a primary, written
under their own GTIDs in as few appends (redo records) as possible.

Why a room of its own: the archive has no client waiting on each commit, so it writes every
group the socket delivered at once and makes the batch durable with one group commit
(docs/commands/archive.md, "Durability"); the engine's own :meth:`commit` is one group, one
append.  :class:`BatchRoom` is mixed into the :class:`~mariabinlog.engine.engine.Engine`,
which lends it the write lock, the page writer and the append path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..codec.events import stored_gtid_event
from ..codec.groups import EventGroup
from ..codec.gtid import Gtid
from ..codec.ibb.page import PAGE_SIZE, RecordType
from ..codec.ibb.writer import PageWriter
from .config import EngineConfig

#: Bytes of small groups :meth:`BatchRoom.commit_groups` writes in one append (one redo record).
BATCH_BYTES = 1 << 20


class BatchRoom:
    """:meth:`commit_groups` (mixed into the engine)."""

    _lock: threading.Lock
    _writer: PageWriter
    _entered: Any
    config: EngineConfig
    redo: Any
    _append: Callable[..., Any]
    _after_write: Callable[[int, bool], None]
    _check_open: Callable[[], None]
    _note_gtid: Callable[[Gtid], None]
    _record_room: Callable[[int], int]
    commit: Callable[..., Any]
    gtid_event: Callable[..., bytes]

    def commit_groups(self, groups: Sequence[EventGroup]) -> int:
        """Write whole event groups received from elsewhere (an archiver's batch) in commit order
        under their own GTIDs, in as few appends as possible: one redo record for consecutive
        groups up to :data:`BATCH_BYTES` (cut where a new file begins); a group larger than the
        spill size goes out-of-band through :meth:`commit`.  Each group's GTID event is stored as
        :meth:`commit` would write it (:func:`stored_gtid_event`).  Nothing waits for durability
        (:meth:`group_commit`); returns the LSN after the last append."""
        end_lsn = 0
        spill = self.config.spill
        bound = max(PAGE_SIZE, min(BATCH_BYTES, self.redo.capacity // 8))
        index = 0
        while index < len(groups):
            group = groups[index]
            if group.size > spill:
                head = group.gtid_event
                end_lsn = self.commit(group.body(), gtid=group.gtid, flags2=group.flags2, timestamp=group.timestamp,
                                      wait=False, gtid_fields=head.optional_fields()).lsn
                index += 1
                continue
            payloads: list[tuple[Gtid, bytes | bytearray]] = []
            size = 0
            room = self._record_room(1)  # one append never begins two files (EngineConfig.record_room)
            while index < len(groups) and groups[index].size <= spill and size < bound:
                group = groups[index]
                assert group.gtid is not None
                payload = self._stored_payload(group)
                if payloads and size + len(payload) > room:
                    break
                payloads.append((group.gtid, payload))
                size += len(payload)
                index += 1
            with self._lock:
                self._check_open()
                writer = self._writer
                done = 0
                while done < len(payloads):
                    first = done

                    def op() -> int:
                        taken = first
                        while taken < len(payloads):
                            gtid, payload = payloads[taken]
                            writer.prepare()
                            self._note_gtid(gtid)
                            writer.write_record(RecordType.COMMIT, payload)
                            taken += 1
                            if self._entered is not None:
                                break  # a new file: its redo record must be a separate one
                        return taken

                    left = sum(len(p) for _, p in payloads[first:])
                    done, end_lsn = self._append(op, size=left)
        if end_lsn:
            self._after_write(end_lsn, False)
        return end_lsn

    def _stored_payload(self, group: EventGroup) -> bytes | bytearray:
        """The COMMIT record payload of a received group: header ``00``, the GTID event as the
        engine writes its own, the other events as they are."""
        data = group.data()
        head_len = group.offsets[1] if len(group.offsets) > 1 else len(data)
        if stored_gtid_event(data, head_len):
            payload = bytearray(1 + len(data))
            payload[1:] = data
            payload[18:20] = b"\0\0"  # the header flags the engine's own GTID events have
            return payload
        head = group.gtid_event
        assert group.gtid is not None
        event = self.gtid_event(group.gtid, flags2=head.flags2, timestamp=head.timestamp, **head.optional_fields())
        return b"\0" + event + group.body()
