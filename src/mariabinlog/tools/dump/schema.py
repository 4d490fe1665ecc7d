"""``mariabinlog dump --format=schema-history``: the schema history of the files read, as JSON.

Follows the DDL of every accepted Query event (from the starting schema the
``--schema-*`` options give) and writes the history once the files are read: a
file ``--schema-history`` and :meth:`mariabinlog.schema.SchemaHistory.load`
read back, e.g. to give Spark jobs or later dumps the names and types of a
``binlog_row_metadata=NO_LOG`` binlog.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...codec.events import GTID_EVENT, GTID_LIST_EVENT, QUERY_COMPRESSED_EVENT, QUERY_EVENT
from ...schema import SchemaTracker
from .sink import EventSink


class SchemaHistorySink(EventSink):
    """Feeds Query events and every group's GTID (and a file's Gtid_list) to the history, so
    each statement is recorded with the stream's GTID position; writes the history as one
    JSON document at the end."""

    record_positions = True

    def __init__(self, write: Callable[[bytes], Any], schema: SchemaTracker) -> None:
        super().__init__(write)
        self.schema = schema
        self.gtid: str | None = None
        self.display_name = ""

    def begin_file(self, name: str = "") -> None:
        super().begin_file(name)
        self.display_name = name.rsplit("/", 1)[-1]

    def print_event(self, ev: Any) -> None:
        if ev.type_code == GTID_EVENT:
            g = ev.decoded()
            self.gtid = f"{g.domain_id}-{ev.server_id}-{g.seq_no}"
            self.schema.observe_group(self.gtid)
        elif ev.type_code == GTID_LIST_EVENT:
            self.schema.observe_gtid_list(ev.decoded().gtids)
        elif ev.type_code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            self.schema.observe_query(ev.decoded(), file=self.display_name, pos=ev.position, gtid=self.gtid)

    def finish(self, complete: bool) -> None:
        self.out.append(json.dumps(self.schema.history.to_json(), indent=1, ensure_ascii=False).encode("utf-8") + b"\n")
        self.drain()
