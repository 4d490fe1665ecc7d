"""Row images of rows events: decode them into Python values and encode them back.

A rows event carries, per row, one image (INSERT: after, DELETE: before) or two
(UPDATE: before then after).  An image is a NULL bitmap with one bit per
*present* column, then the present non-NULL values in column order, each in its
type's packed form (``Field_*::pack``).  Which columns are present comes from
the event's column bitmaps: all of them with ``binlog_row_image=FULL``, a subset
with MINIMAL/NOBLOB, where missing columns decode to :data:`ABSENT` (NULL is
``None``).

Values:

* integers: ``int``, signed unless the Table_map's optional SIGNEDNESS metadata
  says UNSIGNED (without it the sign is unknown; :func:`columns.to_unsigned`
  gives the other view); DECIMAL: exact :class:`decimal.Decimal`;
  FLOAT/DOUBLE: ``float``; BIT, SET (bitmask), ENUM (1-based index): ``int``;
  YEAR: ``int`` (0 for the zero year).
* DATE, TIME, DATETIME, TIMESTAMP (old and fractional formats):
  :class:`MysqlDate`, :class:`MysqlTime`, :class:`MysqlDateTime`,
  :class:`MysqlTimestamp`, which keep zero dates, negative and >24 h times.
* CHAR/VARCHAR/TEXT (and MariaDB JSON, a LONGTEXT): ``str`` when the column's
  charset is known from optional metadata and not binary (undecodable bytes
  become surrogates, ``surrogateescape``, so encoding gives the bytes back);
  otherwise ``bytes``: without optional metadata (MariaDB's default
  ``binlog_row_metadata=NO_LOG``) the charset is unknown and the caller decides.
  BINARY/BLOB, GEOMETRY (4-byte SRID + WKB) and compressed columns (stored
  compressed form): ``bytes``.

``decode(..., raw=True)`` is the stored view whatever the metadata says:
integers signed, strings ``bytes`` (what ``mariadb-binlog -v`` prints).

One :class:`RowDecoder` is made per table map and cached in
``table_map.decoder`` (table maps of the same shape share its compiled
columns); it compiles one plan per (column bitmap, NULL bitmap)
pair, merging runs of fixed-size columns into one precompiled
:class:`struct.Struct`.  :data:`IMPLEMENTATIONS` lists the decoders behind
:func:`row_decoder`: this pure-Python one and, when the C extension
``_rowsfast`` is built, :class:`FastRowDecoder`, which runs the same column
plans in C (``MARIABINLOG_PURE_PYTHON=1`` turns it off).  Tests run every one.

For compiled consumers of the same images (the Spark rows view's ``spark/_arrowfast.c``,
which includes ``_rowimage.h``): :meth:`FastRowDecoder.programs` gives an event's compiled
image programs and :func:`compiled_images` what such a module is configured with.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any, NamedTuple, NoReturn, Protocol

from ...errors import DecodeError, TruncatedError
from .. import columns as C
from ..columns import (
    ABSENT,
    MysqlDate,
    MysqlDateTime,
    MysqlTime,
    MysqlTimestamp,
    OptionalMetadata,
)
from ..native import load_fast
from .packed import FAST_PLAN_VERSION, ColumnCodec, Step, column_codec

__all__ = [
    "ABSENT",
    "DEFAULT_IMPLEMENTATION",
    "IMPLEMENTATIONS",
    "FastRowDecoder",
    "MysqlDate",
    "MysqlDateTime",
    "MysqlTime",
    "MysqlTimestamp",
    "RowChange",
    "RowDecoder",
    "encode_rows",
    "row_decoder",
]


class TableMapLike(Protocol):
    """What the row codec needs from a Table_map event."""

    table_id: int
    schema: str
    table: str
    column_types: bytes
    column_meta: tuple[int, ...]
    null_bitmap: bytes
    optional_metadata: OptionalMetadata | None
    decoder: object | None


class RowsEventLike(Protocol):
    """What the row codec needs from a rows event (``rows_data`` already decompressed)."""

    table_id: int
    width: int
    present_before: bytes
    present_after: bytes | None
    rows_data: bytes

    @property
    def kind(self) -> str: ...


class RowChange(NamedTuple):
    """One row of a rows event: ``kind`` is 'insert', 'update' or 'delete'.

    ``before``/``after`` are tuples with one item per column (``None`` = NULL,
    :data:`ABSENT` = not in the image); ``before`` is None for inserts and
    ``after`` None for deletes.
    """

    kind: str
    before: tuple[Any, ...] | None
    after: tuple[Any, ...] | None


# --------------------------------------------------------------------------
# Image plans

# ``tuple.__new__(SomeNamedTuple, items)`` skips the generated Python ``__new__``
# of NamedTuples (as in :mod:`.packed`).
_new = tuple.__new__


def _fixed_step(run: list[ColumnCodec]) -> Step:
    """One step for consecutive fixed-size non-NULL columns: one unpack, then conversions."""
    st = struct.Struct("<" + "".join(col.fmt or "" for col in run))
    unpack_from = st.unpack_from
    size = st.size
    convs = tuple((k, col.conv) for k, col in enumerate(run) if col.conv is not None)
    if not convs:

        def step(buf: bytes, pos: int, out: list) -> int:
            out += unpack_from(buf, pos)
            return pos + size

    else:

        def step(buf: bytes, pos: int, out: list) -> int:
            base = len(out)
            out += unpack_from(buf, pos)
            for k, conv in convs:
                out[base + k] = conv(out[base + k])
            return pos + size

    step.columns = run  # type: ignore[attr-defined]
    return step


def _steps(cols: list[ColumnCodec]) -> list[Step]:
    steps: list[Step] = []
    run: list[ColumnCodec] = []
    for col in cols:
        if col.fmt is not None:
            run.append(col)
            continue
        if run:
            steps.append(_fixed_step(run))
            run = []
        assert col.step is not None
        col.step.columns = [col]  # type: ignore[attr-defined]
        steps.append(col.step)
    if run:
        steps.append(_fixed_step(run))
    return steps


def _getter(indexes: list[int]) -> Callable[[list], tuple[Any, ...]]:
    if len(indexes) >= 2:
        return itemgetter(*indexes)  # type: ignore[return-value]
    if len(indexes) == 1:
        only = indexes[0]
        return lambda out: (out[only],)
    return lambda out: ()


_Run = Callable[[bytes, int], tuple[tuple[Any, ...], int]]


def _truncated(step: Step, buf: bytes, pos: int) -> TruncatedError:
    cols = step.columns  # type: ignore[attr-defined]
    names = ", ".join(f"@{col.index + 1}" for col in cols)
    size = sum(col.size for col in cols)
    return TruncatedError(
        f"truncated row image at column {names}",
        offset=pos,
        expected=f"{size or 'more'} bytes, {max(len(buf) - pos, 0)} left",
    )


def _make_run(present: list[ColumnCodec], nulls: list[bool], width: int) -> _Run:
    """Compile the reader of images with these present columns and this NULL pattern."""
    values = [col for col, is_null in zip(present, nulls) if not is_null]
    steps = tuple(_steps(values))
    slot = {col.index: 2 + k for k, col in enumerate(values)}
    for col, is_null in zip(present, nulls):
        if is_null:
            slot[col.index] = 0
    dense = len(values) == width
    if dense and len(steps) == 1 and all(col.fmt is not None and col.conv is None for col in values):
        unpack_from = struct.Struct("<" + "".join(col.fmt or "" for col in values)).unpack_from
        size = sum(col.size for col in values)
        step = steps[0]

        def run_flat(buf: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
            try:
                return unpack_from(buf, pos), pos + size
            except struct.error:
                raise _truncated(step, buf, pos) from None

        return run_flat

    getter = _getter([slot.get(i, 1) for i in range(width)])

    def run(buf: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        out: list = [None, ABSENT]
        step = None
        try:
            for step in steps:
                pos = step(buf, pos, out)
        except (struct.error, IndexError):
            raise _truncated(step, buf, pos) from None  # type: ignore[arg-type]
        return getter(out), pos

    return run


class _ImageReader:
    """Reads row images of one column bitmap; caches a compiled run per NULL bitmap.

    ``fast`` is the compiled decoder's program for the same images (made on first use).
    """

    __slots__ = ("fast", "null_bytes", "present", "runs", "width")

    _MAX_RUNS = 512

    def __init__(self, present: list[ColumnCodec], width: int) -> None:
        self.present = present
        self.width = width
        self.null_bytes = (len(present) + 7) >> 3
        self.runs: dict[bytes, _Run] = {}
        self.fast: Any = None

    def compile_fast(self) -> Any:
        """The ``_rowsfast.Image`` of these images: one program entry per present column."""
        assert _rowsfast is not None
        program = [(col.index, col.fmt is not None, *col.op) for col in self.present]
        self.fast = _rowsfast.Image(self.width, program, self)
        return self.fast

    def compile(self, buf: bytes, pos: int) -> _Run:
        """Compile (and cache) the run for the NULL bitmap at ``pos``."""
        key = buf[pos : pos + self.null_bytes]
        if len(key) < self.null_bytes:
            raise TruncatedError(
                "truncated row image NULL bitmap",
                offset=pos,
                expected=f"{self.null_bytes} bytes, {len(key)} left",
            )
        nulls = [bool(key[k >> 3] >> (k & 7) & 1) for k in range(len(self.present))]
        run = _make_run(self.present, nulls, self.width)
        if len(self.runs) >= self._MAX_RUNS:
            self.runs.clear()
        self.runs[key] = run
        return run


def _bitmap_columns(bitmap: bytes, width: int) -> list[int]:
    return [i for i in range(width) if bitmap[i >> 3] >> (i & 7) & 1]


_ColumnSets = dict[bool, list[ColumnCodec]]
_Readers = dict[tuple[bytes, int, bool], _ImageReader]
#: Compiled columns and image readers by table shape (column types, metadata, optional
#: metadata): a binlog repeats the same Table_map in every transaction.
_PLANS: dict[tuple[bytes, tuple[int, ...], OptionalMetadata | None], tuple[_ColumnSets, _Readers]] = {}
#: The cache's bound is the columns it holds, not its entries: a plan costs ~0.75 KiB a
#: column and a table may have 4,096 (1,024 such plans were 3 GiB).  2^15 columns (~24 MiB):
#: a thousand tables of 32 columns, or eight of the widest.
_MAX_PLAN_COLUMNS = 1 << 15
_plan_columns = [0]  # columns in _PLANS
#: Image readers per plan, one per column bitmap seen (MINIMAL images vary it per statement).
_MAX_READERS = 64


def _compile_columns(types: bytes, metas: Sequence[int], optional: OptionalMetadata | None) -> _ColumnSets:
    """The column codecs of a table, for the typed (False) and the stored (True) view."""
    if optional is not None:
        unsigned = optional.unsigned_flags(types, metas)
        codecs = [None if c is None else C.collation_codec(c) for c in optional.column_collations(types, metas)]
    else:
        unsigned = [False] * len(types)
        codecs = [None] * len(types)
    columns = {
        raw: [column_codec(i, t, m, u, c, raw) for i, (t, m, u, c) in enumerate(zip(types, metas, unsigned, codecs))]
        for raw in ((False, True) if optional is not None else (False,))
    }
    if optional is None:  # nothing differs between the stored and the typed view
        columns[True] = columns[False]
    return columns


class RowDecoder:
    """Decoding plan of one table map (pure Python); get it with :func:`row_decoder`.

    Table maps of the same shape share the compiled plan.
    """

    __slots__ = ("_columns", "_readers", "table_map")

    def __init__(self, table_map: TableMapLike) -> None:
        self.table_map = table_map
        types, metas = table_map.column_types, table_map.column_meta
        if len(metas) != len(types):
            raise DecodeError(
                "table map has metadata for a different number of columns",
                expected=f"{len(types)} metadata values, not {len(metas)}",
            )
        key = (bytes(types), tuple(metas), table_map.optional_metadata)
        plan = _PLANS.get(key)
        if plan is None:
            if _plan_columns[0] + len(types) > _MAX_PLAN_COLUMNS:
                _PLANS.clear()
                _plan_columns[0] = 0
            plan = _PLANS[key] = (_compile_columns(*key), {})
            _plan_columns[0] += len(types)
        self._columns, self._readers = plan

    def _reader(self, bitmap: bytes, width: int, raw: bool) -> _ImageReader:
        key = (bitmap, width, raw)
        reader = self._readers.get(key)
        if reader is None:
            cols = self._columns[raw]
            reader = _ImageReader([cols[i] for i in _bitmap_columns(bitmap, width)], width)
            if len(self._readers) >= _MAX_READERS:
                self._readers.clear()
            self._readers[key] = reader
        return reader

    def _images(self, rows_event: RowsEventLike, raw: bool) -> tuple[str, bytes, _ImageReader, _ImageReader]:
        """Check the event against the table map: (kind, rows_data, first image reader, second)."""
        width = rows_event.width
        ncols = len(self.table_map.column_types)
        if width > ncols:
            raise DecodeError(
                f"rows event has {width} columns but table map {self.table_map.table_id} has {ncols}",
                expected=f"at most {ncols} columns",
            )
        kind = rows_event.kind
        nbitmap = (width + 7) >> 3
        before_bits = rows_event.present_before
        after_bits = rows_event.present_after
        if len(before_bits) != nbitmap or (kind == "update" and (after_bits is None or len(after_bits) != nbitmap)):
            raise DecodeError("rows event column bitmap of the wrong size", expected=f"{nbitmap} bytes per bitmap")
        data = rows_event.rows_data
        if not isinstance(data, bytes):
            data = bytes(data)
        first = self._reader(before_bits, width, raw)
        second = self._reader(after_bits, width, raw) if kind == "update" else first  # type: ignore[arg-type]
        return kind, data, first, second

    def decode(self, rows_event: RowsEventLike, *, raw: bool = False) -> list[RowChange]:
        """Decode every row of ``rows_event`` (see the module docstring for the value types).

        ``raw=True`` gives the stored view: integers signed, strings bytes.
        Errors carry the offset inside ``rows_data``.
        """
        kind, data, first, second = self._images(rows_event, raw)
        first_runs = first.runs
        second_runs = second.runs
        nb1, nb2 = first.null_bytes, second.null_bytes
        end = len(data)
        pos = 0
        changes: list[RowChange] = []
        append = changes.append
        while pos < end:
            start = pos
            run = first_runs.get(data[pos : pos + nb1]) or first.compile(data, pos)
            row, pos = run(data, pos + nb1)
            if pos == start:
                raise _empty_image(pos)
            if kind == "insert":
                append(_new(RowChange, (kind, None, row)))
            elif kind == "delete":
                append(_new(RowChange, (kind, row, None)))
            else:
                run = second_runs.get(data[pos : pos + nb2]) or second.compile(data, pos)
                after, pos = run(data, pos + nb2)
                append(_new(RowChange, (kind, row, after)))
        return changes

    def encode_image(self, row: Sequence[Any], present: bytes) -> bytes:
        """Encode one row image: NULL bitmap (unused bits set, as the server does) and values."""
        cols = self._columns[False]
        if len(row) != len(cols):
            raise ValueError(f"row has {len(row)} values, table has {len(cols)} columns")
        if len(present) < (len(cols) + 7) >> 3:
            raise ValueError(f"column bitmap of {len(present)} bytes for {len(cols)} columns")
        indexes = _bitmap_columns(present, len(cols))
        null_bits = bytearray(b"\xff" * ((len(indexes) + 7) >> 3))
        parts = [bytes(null_bits)]
        for k, i in enumerate(indexes):
            value = row[i]
            if value is ABSENT:
                raise ValueError(f"column @{i + 1} is in the column bitmap but ABSENT")
            if value is not None:
                null_bits[k >> 3] &= ~(1 << (k & 7)) & 0xFF
                parts.append(cols[i].encode(value))
        for i, value in enumerate(row):
            if value is not ABSENT and not present[i >> 3] >> (i & 7) & 1:
                raise ValueError(f"column @{i + 1} is not in the column bitmap but holds {value!r}")
        parts[0] = bytes(null_bits)
        return b"".join(parts)


def _empty_image(pos: int) -> DecodeError:
    return DecodeError("row image without columns", offset=pos, expected="a non-empty column bitmap")


class FastRowDecoder(RowDecoder):
    """The same plans run by the compiled interpreter ``_rowsfast`` (same values, same errors).

    Python still compiles every column (``ColumnCodec.op``); C walks the programs
    over whole events.
    """

    __slots__ = ()

    def decode(self, rows_event: RowsEventLike, *, raw: bool = False) -> list[RowChange]:
        """Decode every row of ``rows_event``, as :meth:`RowDecoder.decode`."""
        kind, data, first, second = self._images(rows_event, raw)
        first_image = first.fast or first.compile_fast()
        second_image = second.fast or second.compile_fast()
        changes: list[RowChange] = _rowsfast.decode(data, first_image, second_image, kind)
        return changes

    def programs(self, rows_event: RowsEventLike) -> tuple[str, bytes, Any, Any]:
        """(kind, rows_data, first image program, second) of ``rows_event``, checked against the
        table map, for compiled readers of the images (``spark/_arrowfast.c``: columnar output)."""
        kind, data, first, second = self._images(rows_event, False)
        return kind, data, first.fast or first.compile_fast(), second.fast or second.compile_fast()


def _fast_error(reader: _ImageReader | None, data: bytes, image_pos: int, offset: int) -> NoReturn:
    """Error hook of ``_rowsfast``: raise what the Python decoder raises for the image at ``image_pos``.

    The compiled decoder found the image bad at ``offset``; the Python plan of
    the same image gives the error's class and text (one source of messages)
    and must fail at the same offset.  ``reader`` None: an image without columns.
    """
    if reader is None:
        raise _empty_image(offset)
    try:
        run = reader.compile(data, image_pos)
        run(data, image_pos + reader.null_bytes)
    except DecodeError as error:
        if error.offset != offset:
            raise RuntimeError(f"compiled row decoder failed at offset {offset}, the Python one at {error.offset}")
        raise
    raise RuntimeError(f"compiled row decoder failed at offset {offset} on an image the Python one reads")


def _load_fast() -> Any:
    """The compiled decoder module, or None (not built, stale, or MARIABINLOG_PURE_PYTHON=1)."""
    module = load_fast("mariabinlog.codec.rows._rowsfast", "PLAN_VERSION", FAST_PLAN_VERSION, "codec/rows")
    if module is None:
        return None
    module.configure(ABSENT, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, RowChange, Decimal, _fast_error)
    return module


_rowsfast = _load_fast()

#: Row decoder implementations by name; tests run every one.
IMPLEMENTATIONS: dict[str, type[RowDecoder]] = {"python": RowDecoder}
if _rowsfast is not None:
    IMPLEMENTATIONS["c"] = FastRowDecoder

#: What :func:`row_decoder` compiles: the compiled decoder when it is available.
DEFAULT_IMPLEMENTATION: type[RowDecoder] = FastRowDecoder if _rowsfast is not None else RowDecoder


def compiled_images() -> tuple[Any, ...] | None:
    """What a compiled reader of the row images (``spark/_arrowfast.c``, built on
    ``_rowimage.h``) is configured with: ``(Image, ABSENT, MysqlDate, MysqlTime, MysqlDateTime,
    MysqlTimestamp, Decimal, error hook)``, ``Image`` being the compiled programs'
    type; None when the compiled decoder is not in use (not built, disabled, or
    :data:`DEFAULT_IMPLEMENTATION` set to the pure one)."""
    if DEFAULT_IMPLEMENTATION is not FastRowDecoder:
        return None
    return (_rowsfast.Image, ABSENT, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, Decimal, _fast_error)


def row_decoder(table_map: TableMapLike) -> RowDecoder:
    """The row decoder of ``table_map``, compiled once and cached in ``table_map.decoder``."""
    decoder = table_map.decoder
    if decoder is None:
        decoder = table_map.decoder = DEFAULT_IMPLEMENTATION(table_map)
    return decoder  # type: ignore[return-value]


def encode_rows(
    table_map: TableMapLike,
    kind: str,
    changes: Iterable[RowChange],
    present_before: bytes,
    present_after: bytes | None = None,
) -> bytes:
    """Encode ``changes`` into the ``rows_data`` of a rows event of ``kind``.

    ``present_before`` is the event's first column bitmap (the only one of
    INSERT and DELETE events; for INSERT it describes the after image) and
    ``present_after`` the UPDATE after-image bitmap.  Rows have one item per
    table column; columns outside a bitmap must be :data:`ABSENT`.
    """
    decoder = row_decoder(table_map)
    parts = []
    if kind == "insert":
        for change in changes:
            parts.append(decoder.encode_image(_image(change.after, "after", kind), present_before))
    elif kind == "delete":
        for change in changes:
            parts.append(decoder.encode_image(_image(change.before, "before", kind), present_before))
    elif kind == "update":
        if present_after is None:
            raise ValueError("an update needs present_after")
        for change in changes:
            parts.append(decoder.encode_image(_image(change.before, "before", kind), present_before))
            parts.append(decoder.encode_image(_image(change.after, "after", kind), present_after))
    else:
        raise ValueError(f"kind must be 'insert', 'update' or 'delete', not {kind!r}")
    return b"".join(parts)


def _image(row: tuple[Any, ...] | None, which: str, kind: str) -> tuple[Any, ...]:
    if row is None:
        raise ValueError(f"{kind} change without a {which} image")
    return row
