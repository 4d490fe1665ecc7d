"""The row identities ``undo`` checks conflicts by come from the table map's primary key; a
damaged or forged table map whose key names a column past the table's stayed an IndexError
deep in the conflict check (found by the ``dump-ibb`` fuzz target in Debezium's twin)."""

from __future__ import annotations

from mariabinlog.codec.columns import OptionalMetadata
from mariabinlog.codec.events import TableMapEvent
from mariabinlog.codec.gtid import Gtid
from mariabinlog.tools.undo import _Keys


def _table_map(**meta: object) -> TableMapEvent:
    return TableMapEvent(
        table_id=7, schema="d", table="t", column_types=bytes([3, 3]), column_meta=(0, 0),
        null_bitmap=b"\x03", optional_metadata=OptionalMetadata(**meta),  # type: ignore[arg-type]
    )


def test_a_key_column_past_the_table_names_no_column() -> None:
    keys = _Keys(None)
    gtid = Gtid(0, 1, 1)
    assert keys.indexes(_table_map(simple_primary_key=(1,)), gtid) == (1,)
    assert keys.indexes(_table_map(simple_primary_key=(0, 9)), gtid) == (0,)
    assert keys.indexes(_table_map(primary_key_with_prefix=((5, 0), (1, 10))), gtid) == (1,)
    assert keys.indexes(_table_map(simple_primary_key=(2,)), gtid) == ()  # the whole row, then
