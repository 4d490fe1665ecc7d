"""The compiled columnar path of the ``rows`` view against the pure-Python reference path.

One suite for both paths: every case reads the same input through ``read_splits(...,
columnar=False)`` (pure Python: decoded row tuples rendered by ``schema.render``) and through
the compiled ``spark/_arrowfast.MapBuilder`` (Arrow buffers filled in C), and the Arrow tables must be
equal, value for value.  Random tables of every column type (the row codec's own strategy),
values at the rendering edges (DECIMAL in exponent form, invalid UTF-8, other charsets, zero
TIMESTAMP, negative TIME), the real-server corpus and engine-written `.ibb` sets; a Spark read
(which runs the compiled path in its Python workers) gives the same DataFrame; batches stay
under the byte bound.  ``MARIABINLOG_PURE_PYTHON=1`` turns the compiled path off everywhere.
The planning scan's shortcut (rows events hopped over undecoded) is held to a full read too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from codec.test_rows import Col, bitmap, draw_rows, rows_event, table_map
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mariabinlog.codec import columns as C
from mariabinlog.codec import rows
from mariabinlog.codec.columns import MysqlTime, MysqlTimestamp
from mariabinlog.codec.events import ROWS_KIND, rows_body
from mariabinlog.engine.files import discover_binlogs
from mariabinlog.errors import DecodeError
from mariabinlog.spark import read
from mariabinlog.spark import split as split_reader
from mariabinlog.spark.options import ScanOptions
from mariabinlog.spark.plan import plan
from mariabinlog.spark.schema import ROWS_SCHEMA, column_names, render
from mariabinlog.spark.partition import arrow_schema

MAP = pa.map_(pa.string(), pa.string())


def _compiled() -> None:
    assert read.map_builder(render) is not None, (
        "the compiled row decoder is not built or is disabled: run `bash scripts/setup.sh` "
        "(and unset MARIABINLOG_PURE_PYTHON)"
    )


def _pure_maps(tm: Any, event: Any) -> tuple[pa.Array, pa.Array]:
    changes = rows.RowDecoder(tm).decode(event)
    names = column_names(tm)
    full_before = read._full(event.present_before, event.width)
    full_after = read._full(event.present_after if event.kind == "update" else event.present_before, event.width)
    before, after = read.MapColumn(), read.MapColumn()
    before.add_all(names, [c.before for c in changes], not full_before)
    after.add_all(names, [c.after for c in changes], not full_after)
    return before.array(MAP), after.array(MAP)


def _compiled_maps(tm: Any, event: Any, max_rows: int = 1 << 30) -> tuple[pa.Array, pa.Array]:
    builder = read.map_builder(render)
    kind, data, first, second = rows.FastRowDecoder(tm).programs(event)
    names = column_names(tm)
    befores, afters = [], []
    pos, index = 0, 0
    while pos < len(data):
        pos, index = builder.add(data, pos, first, second, kind, names, 0, index, max_rows, 1 << 30)
        taken = builder.take()
        befores.append(read._map_array(MAP, taken[3]))
        afters.append(read._map_array(MAP, taken[4]))
    return pa.concat_arrays(befores), pa.concat_arrays(afters)


def _check_event(tm: Any, kind: str, changes: list[rows.RowChange], before: bytes, after: bytes | None,
                 max_rows: int = 1 << 30) -> None:
    data = rows.encode_rows(tm, kind, changes, before, after)
    event = rows_event(kind, len(tm.column_types), before, after, data)
    pure = _pure_maps(tm, event)
    fast = _compiled_maps(tm, event, max_rows)
    for a, b in zip(pure, fast):
        b.validate(full=True)
        assert a.equals(b), (a.to_pylist(), b.to_pylist())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_tables_render_alike(data: st.DataObject) -> None:
    _compiled()
    drawn = draw_rows(data)
    max_rows = data.draw(st.integers(1, 5), label="rows per take")
    _check_event(drawn.tm, drawn.kind, drawn.changes, drawn.before, drawn.after, max_rows)


def test_rendering_edges_render_alike() -> None:
    """Values whose text has special rules, with and without the optional metadata."""
    _compiled()
    latin1, utf8 = 8, 45  # latin1_swedish_ci, utf8mb4_general_ci
    cols = [
        Col(C.MYSQL_TYPE_NEWDECIMAL, 20 << 8 | 10, None),
        Col(C.MYSQL_TYPE_NEWDECIMAL, 10 << 8 | 0, None),
        Col(C.MYSQL_TYPE_VARCHAR, 200, None, collation=utf8),
        Col(C.MYSQL_TYPE_VARCHAR, 200, None, collation=latin1),
        Col(C.MYSQL_TYPE_BLOB, 2, None),
        Col(C.MYSQL_TYPE_TIMESTAMP2, 6, None),
        Col(C.MYSQL_TYPE_TIME2, 3, None),
        Col(C.MYSQL_TYPE_DOUBLE, 8, None),
        Col(C.MYSQL_TYPE_FLOAT, 4, None),
        Col(C.MYSQL_TYPE_LONGLONG, 0, None, unsigned=True),
    ]
    values = [
        (Decimal("0.0000001000"), Decimal("-1234567890"), "plain", "caf\xe9", b"\xff\xfe", MysqlTimestamp(0, 0),
         MysqlTime(True, 838, 59, 59, 0), 1e300, 0.1, 2**64 - 1),
        (Decimal("0E-10"), Decimal("0"), "bad \udcff utf8", "ascii", b"ok", MysqlTimestamp(2**31, 999999),
         MysqlTime(False, 0, 0, 1, 500000), float("nan"), float("-inf"), 0),
        (Decimal("-0.0000012345"), Decimal("1"), "\u00e9\u4e2d\U0001f600", "\xff\xe9", b"\xc3\xa9",
         MysqlTimestamp(86399, 1), MysqlTime(True, 0, 0, 0, 1000), -0.0, 3.0, 12345678901234),
        (Decimal("0.000001"), None, None, None, None, None, None, None, None, None),
        # long ASCII runs before and after multi-byte and invalid UTF-8 (read eight bytes a step)
        (Decimal("1.5"), Decimal("2"), "0123456789abcdef\u00e9 and then more ASCII text \U0001f600 end",
         "0123456789abcdef\xe9", b"0123456789abcdef\xff", MysqlTimestamp(1, 1), MysqlTime(False, 100, 0, 0, 7000),
         1.5, 2.5, 7),
        (Decimal("-1"), Decimal("-2"), "0123456789abcdefgh \udcff ijklmnopqrstuvwxyz", "abcdefghijklmnopqrstu",
         b"abcdefghijklmnop", MysqlTimestamp(2, 10), MysqlTime(True, 99, 59, 59, 999000), 1e-7, 1e16, 10**9),
    ]
    for with_metadata in (True, False):
        tm = table_map(cols, with_metadata=with_metadata)
        full = bitmap(range(len(cols)), len(cols))
        part = bitmap([0, 2, 5], len(cols))
        inserts = [rows.RowChange("insert", None, v) for v in values]
        _check_event(tm, "insert", inserts, full, None)
        updates = [rows.RowChange("update", v, tuple(x if i in (0, 2, 5) else C.ABSENT for i, x in enumerate(w)))
                   for v, w in zip(values, values[1:] + values[:1])]
        _check_event(tm, "update", updates, full, part)


def test_bad_rows_data_raises_the_pure_error() -> None:
    _compiled()
    cols = [Col(C.MYSQL_TYPE_LONG, 0, None), Col(C.MYSQL_TYPE_VARCHAR, 100, None, collation=45)]
    tm = table_map(cols, with_metadata=True)
    full = bitmap(range(2), 2)
    data = rows.encode_rows(tm, "insert", [rows.RowChange("insert", None, (1, "abc"))], full)
    event = rows_event("insert", 2, full, None, data[:-2])
    errors = []
    for decode in (_pure_maps, _compiled_maps):
        with pytest.raises(DecodeError) as info:
            decode(tm, event)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


def _both(files: list[Any], options: ScanOptions) -> tuple[pa.Table, pa.Table, list[pa.RecordBatch]]:
    schema = arrow_schema(ROWS_SCHEMA)
    pure = [b for part in plan(files, options) for b in read.read_splits(part, options, schema, columnar=False)]
    fast = [b for part in plan(files, options) for b in read.read_splits(part, options, schema)]
    assert all(b.schema.equals(schema) for b in fast)
    return pa.Table.from_batches(pure, schema), pa.Table.from_batches(fast, schema), fast


@pytest.mark.parametrize("batch_rows", ["7", "65536"])
def test_corpus_rows_view_alike(corpus_dir: Path, batch_rows: str) -> None:
    """Every real-server binlog of the corpus (all column types, MINIMAL images, compressed events)."""
    _compiled()
    workloads = sorted(p for p in (corpus_dir / "binlogs").iterdir() if p.is_dir())
    assert workloads, f"no binlogs under {corpus_dir / 'binlogs'}"
    total = 0
    for workload in workloads:
        options = ScanOptions.parse({"view": "rows", "batchRows": batch_rows})
        pure, fast, batches = _both(discover_binlogs(str(workload)), options)
        assert pure.equals(fast), workload.name
        assert all(b.num_rows <= int(batch_rows) for b in batches)
        total += pure.num_rows
    assert total > 1000


def test_engine_ibb_rows_view_alike(stress_ibb: tuple[Path, list[str]], sample_ibb: tuple[Path, Any]) -> None:
    """`.ibb` sets with OOB groups, file-crossing groups and many splits."""
    _compiled()
    for directory in (stress_ibb[0], sample_ibb[0]):
        options = ScanOptions.parse({"view": "rows", "batchRows": "50", "maxPartitionBytes": "32k"})
        pure, fast, _ = _both(discover_binlogs(str(directory)), options)
        assert pure.num_rows > 500 and pure.equals(fast), directory


def test_batches_bounded_in_bytes(stress_ibb: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A small byte bound cuts one big transaction into many small batches, same rows."""
    _compiled()
    files = discover_binlogs(str(stress_ibb[0]))
    options = ScanOptions.parse({"view": "rows", "batchRows": "1000000"})
    whole, _, _ = _both(files, options)
    monkeypatch.setattr(read, "MAX_BATCH_BYTES", 8192)
    pure, fast, batches = _both(files, options)
    assert len(batches) > 20 and pure.equals(fast) and fast.equals(whole)
    for batch in batches:
        held = sum(batch.column(name).nbytes for name in ("before", "after", "row_index"))
        assert held < 8192 + 4096, held


@pytest.mark.spark
def test_spark_dataframe_equals_the_pure_path(spark: Any, corpus_dir: Path) -> None:
    """Spark's Python workers run the compiled path; the DataFrame equals the pure batches."""
    _compiled()
    directory = corpus_dir / "binlogs" / "w02_types_full"
    options = ScanOptions.parse({"view": "rows"})
    pure, _, _ = _both(discover_binlogs(str(directory)), options)
    expected = [
        {k: (dict(v) if isinstance(v, list) and k in ("before", "after") else v) for k, v in row.items()}
        for row in pure.to_pylist()
    ]
    got = [row.asDict() for row in spark.read.format("mariabinlog").option("view", "rows")
           .option("schemaHistory", "none").load(str(directory))
           .orderBy("file_no", "position", "event_index", "row_index").collect()]

    def comparable(row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "timestamp": None if row["timestamp"] is None else row["timestamp"].timestamp()}

    assert [comparable(r) for r in got] == [comparable(r) for r in expected]


def test_typed_view_alike(sample_ibb: tuple[Path, Any], corpus_dir: Path) -> None:
    """With ``table`` set, images are typed structs: built column by column, equal to the
    reference path's per-row dicts."""
    from mariabinlog.spark.schema import rows_schema, typed_row_struct
    from mariabinlog.spark.source import find_table_map

    cases = [(str(sample_ibb[0]), ("shop", "orders")), (str(sample_ibb[0]), ("shop", "customers"))]
    for workload in sorted((corpus_dir / "binlogs").iterdir()):
        files = discover_binlogs(str(workload))
        tables = {(r["database"], r["table"]) for b in read.read_splits(
            [s for part in plan(files, ScanOptions.parse({"view": "rows"})) for s in part],
            ScanOptions.parse({"view": "rows"}), arrow_schema(ROWS_SCHEMA)) for r in b.to_pylist()}
        cases += [(str(workload), t) for t in sorted(tables)]
    compared, refused = 0, []
    for directory, table in cases:
        files = discover_binlogs(directory)
        schema = arrow_schema(rows_schema(typed_row_struct(find_table_map(files, table))[0]))
        options = ScanOptions.parse({"view": "rows", "table": ".".join(table), "batchRows": "13"})
        try:
            pure = [b for part in plan(files, options) for b in read.read_splits(part, options, schema, columnar=False)]
        except pa.ArrowException as error:  # the table changed shape (ALTER): both paths refuse alike
            with pytest.raises(type(error)):
                [b for part in plan(files, options) for b in read.read_splits(part, options, schema)]
            refused.append(table)
            continue
        fast = [b for part in plan(files, options) for b in read.read_splits(part, options, schema)]
        assert all(b.schema.equals(schema) for b in fast)
        assert pa.Table.from_batches(pure, schema).equals(pa.Table.from_batches(fast, schema)), (directory, table)
        compared += 1
    assert compared > 10 and len(refused) < compared, refused


def test_schema_scan_skips_only_rows_events(corpus_dir: Path, stress_ibb: tuple[Path, list[str]]) -> None:
    """The rows view's planning pass (:func:`read.scan_schema`) hops over rows events
    undecoded: it sees every other event exactly as a full read does (same positions,
    indexes and groups), so its DDL and GTIDs are the same."""
    from mariabinlog.spark.plan import Split

    sets = [p for p in sorted((corpus_dir / "binlogs").iterdir()) if p.is_dir()] + [stress_ibb[0]]
    skipped = 0
    for directory in sets:
        files = discover_binlogs(str(directory))
        options = ScanOptions(gtid_seek=False)
        for f in files:
            split = Split(f.kind, f.path, f.directory, f.file_no, 0, f.size)
            every = [(i.position, i.index, i.event.type_code, i.group) for i in split_reader.SplitReader(split, options)]
            hopped = [(i.position, i.index, i.event.type_code, i.group)
                      for i in split_reader.SplitReader(split, options, skip=frozenset(ROWS_KIND))]
            assert hopped == [e for e in every if e[2] not in ROWS_KIND], f.path
            skipped += len(every) - len(hopped)
    assert skipped > 1000


def _items(split: Any, options: ScanOptions, **kw: Any) -> list[tuple[Any, ...]]:
    return [(i.position, i.index, i.event.type_code, i.group, i.length, i.event.end_position,
             getattr(i.event, "rows_data", None), getattr(i.event, "table_id", None))
            for i in split_reader.SplitReader(split, options, **kw)]


def _outcome(split: Any, options: ScanOptions, **kw: Any) -> tuple[list[tuple[Any, ...]], str | None]:
    """The items a reader yields before it stops, and the error it stops with."""
    out: list[tuple[Any, ...]] = []
    try:
        for i in split_reader.SplitReader(split, options, **kw):
            out.append((i.position, i.event.type_code, i.group, i.length))
    except DecodeError as err:
        return out, str(err)
    return out, None


def _rows_outcome(split: Any, options: ScanOptions, **kw: Any) -> tuple[list[tuple[Any, ...]], str | None]:
    """The rows events a reader yields before it stops, each with what its table map says at
    that point, and the error it stops with."""
    out: list[tuple[Any, ...]] = []
    reader = split_reader.SplitReader(split, options, quiet=read.ROWS_QUIET, **kw)
    try:
        for i in reader:
            event = i.event
            if event.type_code in ROWS_KIND:
                table_map = reader.decoder.table_map_for(event)  # type: ignore[arg-type]
                out.append((i.position, i.index, event.type_code, i.group, i.length, event.kind, event.width,  # type: ignore[union-attr]
                            event.present_before, event.present_after, event.rows_data,  # type: ignore[union-attr]
                            table_map.table_id, table_map.schema, table_map.table, table_map.column_types,
                            table_map.column_meta, table_map.optional_metadata))
    except DecodeError as err:
        return out, str(err)
    return out, None


@pytest.mark.parametrize("scan_bytes, group_bytes", [(None, None), (4096, 10_000), (64, 100)])
def test_scanned_groups_give_the_events_of_a_full_read(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_bytes: int | None, group_bytes: int | None
) -> None:
    """With ``quiet`` types the legacy reader takes whole groups from the codec's scanner and
    decodes only the wanted events: it yields exactly what the event-by-event read yields but
    for those types (same positions, lengths, groups and decoded rows), and on damage (a
    flipped byte, a cut file, a body that does not decode under verifyChecksum=false) it
    yields the same events and stops with the same error naming file and offset; with
    ``rows_bodies`` its rows events (as bodies) and their table maps are the same.  Small scan
    stretches keep groups open across scans; a small group bound hands big groups (the 1 MB
    transaction) back to the event-by-event reading."""
    from mariabinlog.spark.plan import Split

    if scan_bytes is not None:
        monkeypatch.setattr(split_reader, "_SCAN_BYTES", scan_bytes)
        monkeypatch.setattr(split_reader, "_SCAN_GROUP_BYTES", group_bytes)

    quiet = read.ROWS_QUIET
    taken = 0
    workloads = [p for p in sorted((corpus_dir / "binlogs").iterdir()) if p.is_dir()]
    for directory in workloads:
        for f in discover_binlogs(str(directory)):
            split = Split(f.kind, f.path, f.directory, f.file_no, 0, f.size)
            for options in (ScanOptions(gtid_seek=False), ScanOptions(gtid_seek=False, verify_checksum=False)):
                every = _items(split, options)
                scanned = _items(split, options, quiet=quiet)
                assert scanned == [e for e in every if e[2] not in quiet], f.path
                taken += len(scanned)
                bodies = _rows_outcome(split, options, rows_bodies=True)
                assert bodies == _rows_outcome(split, options) and bodies[1] is None, f.path
    assert taken > 1000
    from mariabinlog.codec.events.stream import iter_legacy_events

    source = next(p for p in workloads if p.name == "w07_gtid_domains") / "mysql-bin.000003"
    data = source.read_bytes()
    events = list(iter_legacy_events(data))
    damaged = []
    for code in (162, 19, 23, 24, 16, 2):  # GTID, Table_map, Write_rows, Update_rows, Xid, Query
        of_type = [e for e in events if e.type_code == code]
        assert of_type, code
        event = of_type[len(of_type) // 2]
        for at in (event.position + 9, event.position + 19 + 2, event.end_position - 5):
            flipped = bytearray(data)
            flipped[at] ^= 0x40
            damaged.append(bytes(flipped))
        damaged.append(data[: event.position + 30])
    for index, content in enumerate(damaged):
        path = tmp_path / f"damaged-{index}.000001"
        path.write_bytes(content)
        split = Split("legacy", str(path), str(tmp_path), 1, 0, len(content))
        for options in (ScanOptions(gtid_seek=False), ScanOptions(gtid_seek=False, verify_checksum=False)):
            every, error = _outcome(split, options)
            scanned, scanned_error = _outcome(split, options, quiet=quiet)
            assert scanned == [e for e in every if e[1] not in quiet] and scanned_error == error, (index, error)
            assert _rows_outcome(split, options, rows_bodies=True) == _rows_outcome(split, options), (index, error)


def test_rows_bodies_of_ibb_splits(stress_ibb: tuple[Path, list[str]], sample_ibb: tuple[Path, Any]) -> None:
    """An `.ibb` split read with ``rows_bodies`` gives the rows events (as bodies) and table
    maps of a full read; a rows event that does not read stops it with the decoder's error."""
    from mariabinlog.spark.plan import Split

    seen = 0
    for directory in (stress_ibb[0], sample_ibb[0]):
        for f in discover_binlogs(str(directory)):
            split = Split(f.kind, f.path, f.directory, f.file_no, 0, f.size)
            bodies = _rows_outcome(split, ScanOptions(gtid_seek=False), rows_bodies=True)
            assert bodies == _rows_outcome(split, ScanOptions(gtid_seek=False)) and bodies[1] is None, f.path
            seen += len(bodies[0])
    assert seen > 1000
    f = discover_binlogs(str(sample_ibb[0]))[0]
    reader = split_reader.SplitReader(Split(f.kind, f.path, f.directory, f.file_no, 0, f.size), ScanOptions(),
                                      rows_bodies=True)
    cut = bytearray(30)
    cut[4], cut[9] = 30, 30  # a Write_rows v2 event of 30 bytes: no room for its bitmaps
    with pytest.raises(DecodeError) as want:
        reader.decoder.decode(bytes(cut), 0)
    with pytest.raises(DecodeError) as got:
        rows_body(bytes(cut), 0, 30, reader.decoder.ctx, 30, 7)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kind, texts", [
    ("long", ["1", "-5", "+7", None, "9223372036854775807", " 3"]),
    ("double", ["1.5", "inf", "-inf", "nan", "1e+300", "0.1", None, "-0.0", "1_0"]),
    ("decimal", ["12.30", "-0.05", "7", None]),
    ("date", ["2024-02-29", "1000-01-01", None]),
    ("date", ["2024-02-29", "0000-00-00", "0000-01-01"]),  # zero dates: the per-value readers
    ("timestamp_ntz", ["2024-01-01 10:11:12.123456", "2024-01-01 10:11:12", None]),
    ("timestamp_ntz", ["2024-01-01 10:11:12", "0000-00-00 00:00:00"]),
    ("timestamp", ["2024-01-01 10:11:12.5", "1970-01-01 00:00:01", "0000-00-00 00:00:00"]),
    ("binary", ["abc", "0xff00", None]),
    ("string", ["é", None]),
])
def test_text_array_reads_as_text_reader(kind: str, texts: list[str | None]) -> None:
    """The pipeline reads map text back column by column (Arrow's casts where they read it
    alike): every value as the per-value reader of its type reads it."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import (BinaryType, DateType, DecimalType, DoubleType, LongType, StringType,
                                   TimestampNTZType, TimestampType)

    from mariabinlog.spark.schema import text_array, text_reader

    spark_type = {"long": LongType(), "double": DoubleType(), "decimal": DecimalType(12, 2), "date": DateType(),
                  "timestamp_ntz": TimestampNTZType(), "timestamp": TimestampType(), "binary": BinaryType(),
                  "string": StringType()}[kind]
    arrow_type = to_arrow_type(spark_type, timezone="UTC")
    read = text_reader(spark_type)
    want = pa.array([None if t is None else read(t) for t in texts], type=arrow_type)
    got = text_array(pa.array(texts, pa.string()), spark_type, arrow_type)
    assert got.type == arrow_type
    assert [repr(v) for v in got.to_pylist()] == [repr(v) for v in want.to_pylist()]  # NaN, -0.0 too


def test_text_array_lists_the_text_its_type_cannot_read() -> None:
    """Text that is no value of the column's type raises, or with ``unread`` is null and
    listed (the pipeline reports such rows instead of writing them)."""
    from pyspark.sql.types import DecimalType, LongType

    from mariabinlog.spark.schema import text_array

    texts = pa.array(["1", "std", None, "-3", "x1"], pa.string())
    with pytest.raises(ValueError):
        text_array(texts, LongType(), pa.int64())
    unread: list[int] = []
    assert text_array(texts, LongType(), pa.int64(), unread).to_pylist() == [1, None, None, -3, None]
    assert unread == [1, 4]
    unread = []
    assert text_array(pa.array(["1.50", "x"]), DecimalType(8, 2), pa.decimal128(8, 2), unread)[1].as_py() is None
    assert unread == [1]


_REPEAT_TYPES = {"q": pa.int64(), "i": pa.int32(), "s": pa.string(), "l": pa.list_(pa.string())}
_REPEAT_VALUES = {
    "q": st.none() | st.integers(-(2**63), 2**63 - 1),
    "i": st.none() | st.integers(-(2**31), 2**31 - 1),
    "s": st.none() | st.text(),
    "l": st.none() | st.lists(st.text(max_size=5), max_size=4),
}


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_repeat_per_row_is_arrow_take(data: st.DataObject) -> None:
    """The compiled per-row repetition of per-event values gives the arrays Arrow's
    ``pa.array(...).take(...)`` gives (what it replaced), nulls and empty lists included."""
    _compiled()
    kinds = data.draw(st.text(alphabet="qisl", min_size=1, max_size=6))
    events = data.draw(st.lists(st.tuples(*(_REPEAT_VALUES[k] for k in kinds)).map(list), min_size=1, max_size=8))
    index = data.draw(st.lists(st.integers(0, len(events) - 1), max_size=40))
    packed = pa.array(index, pa.int32())
    parts = read.repeat_per_row(events, kinds, packed.buffers()[1].to_pybytes())
    for column, (kind, part) in enumerate(zip(kinds, parts)):
        expected = pa.array([e[column] for e in events], _REPEAT_TYPES[kind]).take(packed)
        got = read._repeated(_REPEAT_TYPES[kind], len(index), part)
        got.validate(full=True)
        assert got.equals(expected)


def test_repeat_per_row_refuses_bad_input() -> None:
    _compiled()
    one = pa.array([0], pa.int32()).buffers()[1].to_pybytes()
    with pytest.raises(IndexError):
        read.repeat_per_row([["a"]], "s", pa.array([1], pa.int32()).buffers()[1].to_pybytes())
    with pytest.raises(TypeError):
        read.repeat_per_row([[1]], "s", one)
    with pytest.raises(TypeError):
        read.repeat_per_row([["a"]], "l", one)
    with pytest.raises(OverflowError):
        read.repeat_per_row([[2**31]], "i", one)
    with pytest.raises(ValueError):
        read.repeat_per_row([[1]], "x", one)
    with pytest.raises(TypeError):
        read.repeat_per_row([[1]], "qq", one)


def test_builder_reads_only_the_codecs_images() -> None:
    """``spark/_arrowfast`` reads the codec's compiled ``Image`` programs (``_rowimage.h``): it is
    configured with the codec's own type and refuses another; without the compiled row decoder
    (``MARIABINLOG_PURE_PYTHON=1``) there is no builder and the rows view takes the pure path."""
    _compiled()
    images = rows.compiled_images()
    assert images is not None and images[0] is rows._rowsfast.Image
    with pytest.raises(TypeError):
        read._arrowfast.configure(tuple, *images[1:])
    builder = read.map_builder(render)
    with pytest.raises(TypeError):
        builder.add(b"", 0, object(), None, "insert", (), 0, 0, 1, 1)
    code = "from mariabinlog.spark import read, schema; print(read._arrowfast, read.map_builder(schema.render))"
    env = {**os.environ, "MARIABINLOG_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "None"]


def test_typed_columns_take_damaged_decimals_and_fractions_as_null() -> None:
    """Damaged digit groups decode a DECIMAL(10,0) to 12 digits and a TIMESTAMP(6) fraction
    past 999999: the typed struct's converters give null (as for invalid dates) instead of
    an ArrowInvalid or ValueError that failed the Spark task (found reviewing the spark fuzz
    target's typed view)."""
    from mariabinlog.codec.events import TableMapEvent
    from mariabinlog.spark.schema import typed_row_struct

    tm = TableMapEvent(
        table_id=1, schema="d", table="t",
        column_types=bytes((C.MYSQL_TYPE_NEWDECIMAL, C.MYSQL_TYPE_TIMESTAMP2)),
        column_meta=(10 << 8 | 0, 6), null_bitmap=b"\x03",
    )
    struct, converters = typed_row_struct(tm)
    arrow = arrow_schema(struct)  # the struct's fields as Arrow types
    damaged = (Decimal("131294967295"), MysqlTimestamp(1, 16777215))
    fine = (Decimal("-9999999999"), MysqlTimestamp(1, 999999))
    for index, field in enumerate(arrow):
        values = [converters[index](damaged[index]), converters[index](fine[index])]
        assert values[0] is None and values[1] is not None
        pa.array(values, type=field.type)


def test_typed_maps_follow_ddl_on_a_shared_map() -> None:
    """A reader hands a repeated Table_map body over as one event (``shared_table_map``), so
    the history's typing of it must not outlive a DDL Query: a column renamed in place (the
    map's body unchanged) is named anew after the Query, and before it as it was."""
    from mariabinlog.codec.columns import MYSQL_TYPE_LONG
    from mariabinlog.codec.events import QueryEvent
    from mariabinlog.schema import SchemaHistory
    from mariabinlog.spark.plan import Split
    from mariabinlog.spark.schema import column_names

    maps = read.TypedMaps(SchemaHistory(), Split("legacy", "/x/mysql-bin.000001", "/x", 1, 0, 1000))
    shared = table_map([Col(MYSQL_TYPE_LONG, 0, None), Col(MYSQL_TYPE_LONG, 0, None)])

    def item(seq: int, query: bytes | None = None) -> Any:
        group = split_reader.Group(0, 1, seq, None, 0, 0, 1, seq * 100)
        event = None if query is None else QueryEvent(query=query, database=b"db")
        return split_reader.Item(seq * 100 + 10, 0, event, None, group, 10)

    maps.observe(item(1, b"CREATE DATABASE db"))
    maps.observe(item(2, b"CREATE TABLE t (a INT, b INT)"))
    assert column_names(maps.typed(shared, item(3))) == ("a", "b")
    assert column_names(maps.typed(shared, item(4))) == ("a", "b")
    maps.observe(item(5, b"ALTER TABLE t RENAME COLUMN a TO x"))
    assert column_names(maps.typed(shared, item(6))) == ("x", "b")
