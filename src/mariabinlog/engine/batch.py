"""An archiver's batches in the engine: whole event groups received from a primary, written
under their own GTIDs in as few appends (redo records) as possible.

Why a room of its own: the archive has no client waiting on each commit, so it writes every
group the socket delivered at once and makes the batch durable with one group commit
(docs/commands/archive.md, "Durability"); the engine's own :meth:`Engine.commit` is one group, one
append.  :class:`Batch` holds no state between calls; the
:class:`~mariabinlog.engine.engine.Engine` holds it and lends it the append path
(:class:`~.host.WritePath`), its own :meth:`Engine.commit` for groups that go out-of-band, and the
sizes an append may lay out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..codec.framing import stored_group
from ..codec.groups import EventGroup
from ..codec.gtid import Gtid
from ..codec.ibb.page import PAGE_SIZE, RecordType
from ..codec.ibb.records import COMMIT_PLAIN_HEADER, CommitRecord
from .config import EngineConfig
from .host import WritePath

#: Bytes of small groups :meth:`Batch.commit_groups` writes in one append (one redo record).
BATCH_BYTES = 1 << 20


class Batch:
    """:meth:`commit_groups` (held by the engine)."""

    def __init__(
        self,
        path: WritePath,
        config: EngineConfig,
        redo_capacity: Callable[[], int],
        record_room: Callable[[int], int],
        commit: Callable[..., Any],
    ) -> None:
        self._path = path
        self._config = config
        #: bytes of the redo log (a batch is at most an eighth of it)
        self._redo_capacity = redo_capacity
        #: ``record_room(slack)``: bytes one append may lay out (``Engine._record_room``)
        self._record_room = record_room
        #: the engine's :meth:`~mariabinlog.engine.engine.Engine.commit`, for out-of-band groups
        self._commit = commit

    def commit_groups(self, groups: Sequence[EventGroup]) -> int:
        """Write whole event groups received from elsewhere (an archiver's batch) in commit order
        under their own GTIDs, in as few appends as possible: one redo record for consecutive
        groups up to :data:`BATCH_BYTES` (cut where a new file begins); a group larger than the
        spill size goes out-of-band through :meth:`Engine.commit`.  Each group's GTID event is stored as
        :meth:`Engine.commit` would write it (:func:`stored_group`).  Nothing waits for durability
        (:meth:`Engine.group_commit`); returns the LSN after the last append."""
        path = self._path
        end_lsn = 0
        spill = self._config.spill
        bound = max(PAGE_SIZE, min(BATCH_BYTES, self._redo_capacity() // 8))
        index = 0
        while index < len(groups):
            group = groups[index]
            if group.size > spill:
                head = group.gtid_event
                end_lsn = self._commit(group.body(), gtid=group.gtid, flags2=group.flags2, timestamp=group.timestamp,
                                      wait=False, gtid_fields=head.optional_fields()).lsn
                index += 1
                continue
            payloads: list[tuple[Gtid, bytes]] = []
            size = 0
            room = self._record_room(1)  # one append never begins two files (EngineConfig.record_room)
            stored = self._stored_payload
            while index < len(groups) and size < bound:
                group = groups[index]
                if group.size > spill:
                    break
                assert group.gtid is not None
                payload = stored(group)
                if payloads and size + len(payload) > room:
                    break
                payloads.append((group.gtid, payload))
                size += len(payload)
                index += 1
            with path.lock:
                path.check_open()
                writer = path.writer()
                done = 0
                while done < len(payloads):
                    first = done

                    def op() -> int:
                        return writer.write_records(RecordType.COMMIT, payloads, first, path.note_gtids)

                    left = sum(len(p) for _, p in payloads[first:])
                    done, end_lsn = path.append(op, size=left)
        if end_lsn:
            path.after_write(end_lsn, False)
        return end_lsn

    def _stored_payload(self, group: EventGroup) -> bytes:
        """The COMMIT record payload of a received group: header ``00``, the GTID event as the
        engine writes its own, the other events as they are."""
        data = group.data()
        offsets = group.offsets
        stored = stored_group(data, offsets[1] if len(offsets) > 1 else len(data), COMMIT_PLAIN_HEADER)
        if stored is not None:
            return stored
        head = group.gtid_event
        assert group.gtid is not None
        event = self._path.gtid_event(group.gtid, flags2=head.flags2, timestamp=head.timestamp, **head.optional_fields())
        return CommitRecord((), event + group.body()).encode()
