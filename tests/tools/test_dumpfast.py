"""The compiled fast paths of the printer (``_dumpfast``) against their Python references.

For every rows event of every corpus binlog (every column type the corpus
has, FULL/MINIMAL/NOBLOB images, compressed events): the ``###`` lines of
``-v`` and ``-vv`` and the row count from ``verbose_rows`` equal
``rowsql.rows_sql``'s; ``count_rows`` equals the generated Python counter;
``base64_lines`` equals ``base64.encodebytes``.  Odd data (truncated rows,
an impossible DECIMAL digit group, an UPDATE without after columns) makes
``verbose_rows`` hand over to Python (None), which then prints or fails
exactly as the tool does.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from mariabinlog.codec.events import RowsEvent, TableMapEvent
from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events
from mariabinlog.errors import DecodeError
from mariabinlog.tools.printer import base
from mariabinlog.tools.printer import rows as R
from mariabinlog.tools.printer import rowsizes
from mariabinlog.tools.printer import rowsql

from corpus_data import corpus_glob

BINLOGS = corpus_glob("binlogs/*/mysql-bin.*")

fast = base._fast
pytestmark = pytest.mark.skipif(fast is None, reason="the _dumpfast extension is not built (pip install -e .)")


def rows_events(path: Path) -> list[tuple[TableMapEvent, RowsEvent]]:
    decoder = EventStreamDecoder()
    data = path.read_bytes()
    found = []
    for event in iter_legacy_events(data, decoder=decoder):
        if isinstance(event, RowsEvent):
            found.append((decoder.table_map_for(event), event))
    return found


def header(tm: TableMapEvent, kind: str) -> bytes:
    return b"### %s %s.%s\n" % (R._COMMAND[kind], rowsql.quote_identifier(tm.schema), rowsql.quote_identifier(tm.table))


def python_verbose(tm: TableMapEvent, ev: Any, verbose: int) -> tuple[bytes, int]:
    text = rowsql.rows_sql(tm, ev, verbose=verbose)
    return text, text.count(header(tm, ev.kind))


def fast_verbose(tm: TableMapEvent, ev: Any, verbose: int, data: bytes | None = None) -> tuple[bytes, int] | None:
    plan = R._verbose_plan(tm)
    assert plan, f"no fast plan for {tm.schema}.{tm.table}"
    rows = ev.rows_data if data is None else data
    return fast.verbose_rows(  # type: ignore[union-attr]
        rows, 0, len(rows), R._KIND_CODE[ev.kind], ev.width, ev.present_before, ev.present_after,
        plan, header(tm, ev.kind), verbose,
    )


@pytest.mark.parametrize("path", BINLOGS, ids=[f"{p.parent.name}/{p.name}" for p in BINLOGS])
def test_corpus_rows_events(path: Path) -> None:
    checked = 0
    for tm, ev in rows_events(path):
        if not R._verbose_plan(tm) or not ev.rows_data:
            continue
        for verbose in (1, 2):
            expected = python_verbose(tm, ev, verbose)
            assert fast_verbose(tm, ev, verbose) == expected
        info = R.TableInfo(tm, tm.schema.encode(), tm.table.encode())
        update = ev.kind == "update"
        counter = rowsizes.row_counter(info.sizes, ev.width, ev.present_before, ev.present_after if update else None)
        assert fast.count_rows(  # type: ignore[union-attr]
            ev.rows_data, 0, len(ev.rows_data), info.sizes, ev.width, ev.present_before,
            ev.present_after if update else None,
        ) == counter(ev.rows_data, 0, len(ev.rows_data))
        checked += 1
    assert checked or path.parent.name in ("w04_statement",)


def test_every_corpus_type_has_a_fast_plan() -> None:
    """The fast path is not silently skipped: every corpus table map compiles to a plan."""
    without = set()
    for path in BINLOGS:
        for tm, _ in rows_events(path):
            if not R._verbose_plan(tm):
                without.add(f"{tm.schema}.{tm.table}")
    assert not without


def test_base64_lines() -> None:
    for n in (0, 1, 2, 3, 56, 57, 58, 113, 114, 115, 8192, 65537):
        data = os.urandom(n)
        expected = base64.encodebytes(data) if n else b"\n"
        assert fast.base64_lines(data) == expected  # type: ignore[union-attr]
        assert fast.base64_lines(memoryview(data)) == expected  # type: ignore[union-attr]


def _sample(workload: str, kind: str) -> tuple[TableMapEvent, RowsEvent]:
    for path in corpus_glob(f"binlogs/{workload}/mysql-bin.*"):
        for tm, ev in rows_events(path):
            if ev.kind == kind and ev.rows_data and R._verbose_plan(tm):
                return tm, ev
    raise AssertionError(f"no {kind} rows event in {workload}")


def test_odd_data_falls_back_to_python() -> None:
    tm, ev = _sample("w02_types_full", "insert")
    data = ev.rows_data
    for cut in (1, len(data) // 2, len(data) - 1):
        assert fast_verbose(tm, ev, 1, data[:cut]) is None
        with pytest.raises(DecodeError):
            rowsql.rows_sql(tm, _Rows(ev, data[:cut]), verbose=1)
    # An UPDATE whose after image has no columns: the tool's "### SET /* no columns */".
    tm, ev = _sample("w01_basic_row", "update")
    empty = _Rows(ev, ev.rows_data, after=bytes(len(ev.present_after or b"")))
    assert fast_verbose(tm, empty, 1) is None


def test_decimal_digit_groups() -> None:
    """DECIMAL values the C code prints itself (zeros, negative zeros, every width), and a
    digit group over 999999999 it hands back to Python."""
    from decimal import Decimal

    from mariabinlog.codec.rows import RowChange, encode_rows

    dec_map = next(
        t
        for path in corpus_glob("binlogs/w02_types_full/mysql-bin.*")
        for t, _ in rows_events(path)
        if t.table == "t_dec"
    )
    ncols = len(dec_map.column_types)
    present = bytes([0xFF] * ((ncols + 7) >> 3))
    rows = [
        (1, "0", "0.00", "0.00000", "-0.0001", "0", "-0.000000001", "1.5", "0", "-1", "1", "0.000"),
        (2, *(["-0"] * 10), "0.000"),
        (3, "-9", "-99.99", "-0.99999", "-99999.9999", "-9999999999", "-999999999.999999999",
         "-9999999999.9999999999", "-999999999999999.999999999999999", "-1" + "0" * 37,
         "-12345678901234567890123456789012345.123456789012345678901234567890", "1.001"),
    ]
    changes = [RowChange("insert", None, tuple(v if isinstance(v, int) else Decimal(v) for v in row)) for row in rows]
    data = encode_rows(dec_map, "insert", changes, present)
    ev = _Rows.insert(ncols, present, data)
    for verbose in (1, 2):
        assert fast_verbose(dec_map, ev, verbose) == python_verbose(dec_map, ev, verbose)
    # DECIMAL(10,0): one digit in a byte, then a 4-byte group; 0xffffffff ^ sign is no digit group.
    plan = ((2, 10, 0, b"###   @1=", b"", b""),)
    odd = bytes([0]) + bytes([0x80, 0xFF, 0xFF, 0xFF, 0xFF])
    assert fast.verbose_rows(odd, 0, len(odd), 0, 1, b"\x01", None, plan, b"### INSERT\n", 1) is None  # type: ignore[union-attr]


class _Rows:
    """A RowsEventLike with other row data or bitmaps."""

    def __init__(self, ev: Any, data: bytes, after: bytes | None = None) -> None:
        self.table_id = ev.table_id
        self.width = ev.width
        self.kind = ev.kind
        self.present_before = ev.present_before
        self.present_after = after if after is not None else ev.present_after
        self.rows_data = data

    @classmethod
    def insert(cls, ncols: int, present: bytes, data: bytes) -> Any:
        obj = cls.__new__(cls)
        obj.table_id = 0
        obj.width = ncols
        obj.kind = "insert"
        obj.present_before = present
        obj.present_after = None
        obj.rows_data = data
        return obj
