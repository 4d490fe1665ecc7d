"""Spark schemas of the three views, the typed row-image schema of one table, and value rendering.

* ``events``: one row per event.  For `.ibb` files ``position`` is the COMMIT record's offset and
  ``event_index`` numbers the events of the group; for legacy files ``position`` is the event's
  own offset and ``event_index`` is 0.  GTID columns are set on every event of a group and null
  outside groups (Format_description, Gtid_list, Rotate, ...).
* ``rows``: one row per changed row, ``before``/``after`` as ``map<string,string>`` keyed by column
  name (``@1``, ``@2``... when neither the table map nor the schema history names them; ENUM/SET
  as labels where either lists the members); a key is missing when the column
  is not in the image (MINIMAL/NOBLOB), its value is null for SQL NULL.  With ``table`` set,
  ``before``/``after`` are structs of typed columns instead (see :func:`typed_row_struct`).
* ``groups``: one row per event group with its events' bytes (v4 events without checksum
  footer), the unit of replay.

Rendering of values as map strings: integers and decimals in decimal, floats as ``repr``,
temporal values as MariaDB prints them, TIMESTAMP in UTC, text as is, bytes as UTF-8 text when
they decode, else ``0x`` + hex.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..codec import columns as C
from ..codec.columns import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp
from ..codec.events import TableMapEvent
from ..schema.agree import collation_id
from ..schema.model import Column, binlog_types

_LOCATION = [
    StructField("source_file", StringType()),
    StructField("file_no", LongType()),
    StructField("position", LongType()),
    StructField("event_index", IntegerType()),
]
_GTID = [
    StructField("gtid", StringType()),
    StructField("domain_id", LongType()),
    StructField("gtid_server_id", LongType()),
    StructField("seq_no", LongType()),
    StructField("commit_id", LongType()),
    StructField("timestamp", TimestampType()),
]

EVENTS_SCHEMA = StructType(
    _LOCATION
    + _GTID
    + [
        StructField("server_id", LongType()),
        StructField("event_type", StringType()),
        StructField("type_code", IntegerType()),
        StructField("event_length", LongType()),
        StructField("flags", IntegerType()),
        StructField("database", StringType()),
        StructField("table", StringType()),
        StructField("query", StringType()),
        StructField("xid", LongType()),
    ]
)


def rows_schema(image: DataType | None = None) -> StructType:
    """The rows view; ``image`` is the type of ``before``/``after`` (default: string maps)."""
    image = image or MapType(StringType(), StringType())
    return StructType(
        _LOCATION
        + [StructField("row_index", IntegerType())]
        + _GTID
        + [
            StructField("database", StringType()),
            StructField("table", StringType()),
            StructField("op", StringType()),
            StructField("key_columns", ArrayType(StringType())),
            StructField("before", image),
            StructField("after", image),
        ]
    )


ROWS_SCHEMA = rows_schema()

GROUPS_SCHEMA = StructType(
    _LOCATION[:3]
    + _GTID
    + [
        StructField("gtid_flags", IntegerType()),
        StructField("event_count", IntegerType()),
        StructField("events", ArrayType(BinaryType())),
    ]
)

SCHEMAS = {"events": EVENTS_SCHEMA, "rows": ROWS_SCHEMA, "groups": GROUPS_SCHEMA}


# --------------------------------------------------------------------------------------------
# Values


def valid_text(value: str) -> str:
    """``value`` as valid UTF-8 text (surrogate-escaped bytes become U+FFFD)."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def decode_text(data: bytes) -> str:
    """Bytes of unknown charset as text (UTF-8, invalid sequences replaced)."""
    return data.decode("utf-8", "replace")


def _timestamp_text(value: MysqlTimestamp) -> str:
    if not value.seconds and not value.microsecond:
        return "0000-00-00 00:00:00"
    moment = datetime.datetime.fromtimestamp(value.seconds, datetime.UTC)
    frac = f".{value.microsecond:06d}" if value.microsecond else ""
    return moment.strftime("%Y-%m-%d %H:%M:%S") + frac


def _bytes_text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + value.hex()


_RENDERERS: dict[type, Callable[[Any], str]] = {
    str: valid_text,
    int: str,
    Decimal: str,
    bytes: _bytes_text,
    float: repr,
    MysqlTimestamp: _timestamp_text,
    MysqlDate: str,
    MysqlDateTime: str,
    MysqlTime: str,
}


def render(value: Any) -> str | None:
    """One decoded column value as map text (see the module docstring); None for NULL."""
    if value is None:
        return None
    return _RENDERERS.get(type(value), str)(value)


def render_function(value: Any) -> Callable[[Any], str]:
    """The function :func:`render` uses for values of ``value``'s type (not None)."""
    return _RENDERERS.get(type(value), str)


def column_names(table_map: TableMapEvent) -> tuple[str, ...]:
    """Names from the table map's optional metadata, else ``@1``, ``@2``, ..."""
    meta = table_map.optional_metadata
    names = meta.column_names if meta is not None else None
    count = len(table_map.column_types)
    if names is not None and len(names) == count:
        return tuple(valid_text(n) for n in names)
    return tuple(f"@{i + 1}" for i in range(count))


def key_columns(table_map: TableMapEvent, names: tuple[str, ...]) -> list[str] | None:
    """Primary key column names from the optional metadata, None when it has none."""
    meta = table_map.optional_metadata
    if meta is None or not meta.primary_key():
        return None
    return [names[i] for i in meta.key_indexes(len(names))]


# --------------------------------------------------------------------------------------------
# Typed row images of one table

Converter = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _to_date(value: Any) -> datetime.date | None:
    try:
        return value.to_date()  # type: ignore[no-any-return]
    except (ValueError, AttributeError):
        return None


def _to_datetime(value: Any) -> datetime.datetime | None:
    try:
        return value.to_datetime()  # type: ignore[no-any-return]
    except (ValueError, AttributeError, OverflowError):
        return None


def _to_timestamp(value: Any) -> datetime.datetime | None:
    if not isinstance(value, MysqlTimestamp) or (not value.seconds and not value.microsecond):
        return None
    try:
        return value.to_datetime()
    except (ValueError, OverflowError):  # a fraction past 999999: damaged bytes, as invalid dates
        return None


def _to_string(value: Any) -> str:
    return decode_text(value) if isinstance(value, bytes) else valid_text(str(value))


def _to_binary(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


def _to_decimal(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value)


def _decimal_within(precision: int, scale: int) -> Converter:
    """A DECIMAL(precision, scale) value, or None when damaged digit groups decoded to more
    integer digits than the type holds (Arrow refuses it; invalid dates become null too)."""
    limit = Decimal(10) ** (precision - scale)

    def convert(value: Any) -> Decimal | None:
        return value if -limit < value < limit else None

    return convert


def _column_type(column_type: int, meta: int, unsigned: bool, collation: int | None) -> tuple[DataType, Converter]:
    """Spark type and value converter of one column (module docstring of :mod:`.schema`)."""
    rtype = C.real_type(column_type, meta)
    if rtype == C.MYSQL_TYPE_LONGLONG:
        return (DecimalType(20, 0), _to_decimal) if unsigned else (LongType(), _identity)
    if rtype in C.INT_SIZES or rtype in (C.MYSQL_TYPE_YEAR, C.MYSQL_TYPE_ENUM):
        return LongType(), _identity
    if rtype == C.MYSQL_TYPE_BIT:
        return (DecimalType(20, 0), _to_decimal) if C.bit_width(meta) > 63 else (LongType(), _identity)
    if rtype == C.MYSQL_TYPE_SET:
        return (DecimalType(20, 0), _to_decimal) if meta & 0xFF > 7 else (LongType(), _identity)
    if rtype == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        if 0 < precision <= 38 and scale <= precision:
            return DecimalType(precision, scale), _decimal_within(precision, scale)
        return StringType(), _to_string
    if rtype in (C.MYSQL_TYPE_FLOAT, C.MYSQL_TYPE_DOUBLE):
        return DoubleType(), _identity
    if rtype in (C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE):
        return DateType(), _to_date
    if rtype in (C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_DATETIME2):
        return TimestampNTZType(), _to_datetime
    if rtype in (C.MYSQL_TYPE_TIMESTAMP, C.MYSQL_TYPE_TIMESTAMP2):
        return TimestampType(), _to_timestamp
    if rtype == C.MYSQL_TYPE_GEOMETRY:
        return BinaryType(), _to_binary
    if rtype in C.CHARACTER_TYPES or rtype in _BLOBS or rtype == C.MYSQL_TYPE_JSON:
        binary = collation == C.BINARY_COLLATION or (collation is None and rtype in _BLOBS)
        return (BinaryType(), _to_binary) if binary else (StringType(), _to_string)
    return StringType(), _to_string


_BLOBS = frozenset(
    (
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_TINY_BLOB,
        C.MYSQL_TYPE_MEDIUM_BLOB,
        C.MYSQL_TYPE_LONG_BLOB,
        C.MYSQL_TYPE_BLOB_COMPRESSED,
    )
)


def _enum_label(labels: tuple[str, ...]) -> Converter:
    """ENUM index -> its label ('' for the error value 0, as MariaDB prints it)."""
    return lambda value: labels[value - 1] if 0 < value <= len(labels) else ""


def _set_labels(labels: tuple[str, ...]) -> Converter:
    """SET bit mask -> its members joined by commas, as MariaDB prints it."""
    return lambda value: ",".join(label for i, label in enumerate(labels) if value >> i & 1)


def label_functions(table_map: TableMapEvent) -> tuple[Converter | None, ...]:
    """Per column: the ENUM/SET index-to-label function when the optional metadata (FULL,
    or supplied by the schema history) lists the members, else None."""
    meta = table_map.optional_metadata
    enums = iter((meta.enum_str_values or ()) if meta is not None else ())
    sets = iter((meta.set_str_values or ()) if meta is not None else ())
    out: list[Converter | None] = []
    for ctype, cmeta in zip(table_map.column_types, table_map.column_meta):
        rtype = C.real_type(ctype, cmeta)
        members = next(enums, None) if rtype == C.MYSQL_TYPE_ENUM else None
        members = next(sets, None) if rtype == C.MYSQL_TYPE_SET else members
        if members is None:
            out.append(None)
            continue
        labels = tuple(decode_text(m) for m in members)
        out.append(_enum_label(labels) if rtype == C.MYSQL_TYPE_ENUM else _set_labels(labels))
    return tuple(out)


def typed_row_struct(table_map: TableMapEvent) -> tuple[StructType, tuple[Converter, ...]]:
    """Struct type of one table's row images and the per-column converters.

    Integers are ``long`` (``decimal(20,0)`` for BIGINT UNSIGNED, BIT(64), 64-member SETs),
    DECIMAL ``decimal(p,s)`` (string beyond 38 digits), DATE ``date``, DATETIME ``timestamp_ntz``,
    TIMESTAMP ``timestamp`` (UTC), TIME ``string``, text ``string``, binary data ``binary``.
    ENUM and SET are ``string`` labels (``'a,c'``) when the metadata (FULL, or the schema
    history) has them.  Zero and invalid dates become null.  Without optional metadata the sign and charset are
    unknown: integers are read signed, CHAR/VARCHAR as UTF-8 text, BLOB/TEXT as binary.
    """
    types, metas = table_map.column_types, table_map.column_meta
    meta = table_map.optional_metadata
    if meta is not None:
        unsigned = meta.unsigned_flags(types, metas)
        collations = meta.column_collations(types, metas)
    else:
        unsigned = [False] * len(types)
        collations = [None] * len(types)
    fields, converters = [], []
    names = column_names(table_map)
    for name, ctype, cmeta, uns, coll, label in zip(names, types, metas, unsigned, collations, label_functions(table_map)):
        if label is not None:
            fields.append(StructField(name, StringType()))
            converters.append(label)
            continue
        spark_type, convert = _column_type(ctype, cmeta, uns, coll)
        fields.append(StructField(name, spark_type))
        converters.append(convert)
    return StructType(fields), tuple(converters)


# --------------------------------------------------------------------------------------------
# Columns of the schema history, and the rows view's map text read back into their types


def history_column_type(column: Column) -> DataType:
    """The Spark type the typed ``rows`` view gives a column the schema history describes
    (:func:`typed_row_struct`'s mapping, fed the binlog type the column is logged as)."""
    if column.members:
        return StringType()  # ENUM/SET labels
    logged = min(binlog_types(column.type), default=C.MYSQL_TYPE_VARCHAR)
    meta = 0
    if logged == C.MYSQL_TYPE_NEWDECIMAL:
        meta = (column.precision or 10) << 8 | (column.scale or 0)
    elif logged == C.MYSQL_TYPE_BIT:
        width = column.length or 1
        meta = (width // 8) << 8 | width % 8
    collation = C.BINARY_COLLATION if column.is_binary else collation_id(column.charset, column.collation)
    return _column_type(logged, meta, column.unsigned, collation)[0]


def _utc_timestamp(text: str) -> datetime.datetime | None:
    moment = _naive_timestamp(text)
    return None if moment is None or text.startswith("0000-00-00") else moment.replace(tzinfo=datetime.UTC)


def _naive_timestamp(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return None  # a zero or invalid date, null as in the typed view


def _date(text: str) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


def _binary(text: str) -> bytes:
    """Inverse of :func:`_bytes_text`: ``0x`` + hex stands for bytes that are not UTF-8."""
    if text.startswith("0x") and len(text) % 2 == 0:
        try:
            data = bytes.fromhex(text[2:])
            data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        except ValueError:
            pass
    return text.encode("utf-8")


#: Readers of a value's map text by the Spark type :func:`history_column_type` gives it.
_TEXT_READERS: dict[type, Callable[[str], Any]] = {
    LongType: int,
    DecimalType: Decimal,
    DoubleType: float,
    DateType: _date,
    TimestampNTZType: _naive_timestamp,
    TimestampType: _utc_timestamp,
    BinaryType: _binary,
}


def text_reader(spark_type: DataType) -> Callable[[str], Any]:
    """The function that reads a value's map text (:func:`render`) back as a value of
    ``spark_type`` (a type :func:`history_column_type` gives), as the typed view has it;
    text types read as they are."""
    return _TEXT_READERS.get(type(spark_type), str)


def value_text(value: Any) -> str | None:
    """A typed value, as a typed state table holds it, written as the map text the rows view
    gives it (the inverse of :func:`text_reader`): a value kept across a change of its
    column's type is read back by the new type as that type reads the server's text."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}" if value.microsecond else "")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return _bytes_text(bytes(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


#: Spark types whose map text Arrow's own cast reads as :data:`_TEXT_READERS` do, and whether
#: the type is dated (Arrow takes the year 0 that Python's date readers refuse).
_ARROW_CASTS: dict[type, bool] = {
    LongType: False, DecimalType: False, DoubleType: False, DateType: True, TimestampNTZType: True, TimestampType: True,
}


def text_array(text: Any, spark_type: DataType, arrow_type: Any, unread: list[int] | None = None) -> Any:
    """A column of map text (a pyarrow string array) read back as ``arrow_type`` values, as
    :func:`text_reader` reads each one: by Arrow's cast where it reads the text alike (the
    text :func:`render` writes), value by value where the cast refuses any of it (zero dates,
    bytes written as ``0x`` + hex, text of other kinds).  A text that is no value of the type
    (``'std'`` for a ``long``) raises, or with ``unread`` is null and its index listed there."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(spark_type, StringType):
        return text
    dated = _ARROW_CASTS.get(type(spark_type))
    if dated is not None and not (dated and pc.any(pc.starts_with(text, "0000")).as_py()):
        try:
            if isinstance(spark_type, TimestampType):  # wall time in UTC, as _utc_timestamp reads it
                return pc.cast(text, pa.timestamp("us")).cast(arrow_type)
            return pc.cast(text, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    read = text_reader(spark_type)
    if unread is None:
        return pa.array([None if v is None else read(v) for v in text.to_pylist()], type=arrow_type)
    values = []
    for index, value in enumerate(text.to_pylist()):
        try:
            values.append(None if value is None else read(value))
        except (ValueError, ArithmeticError):  # int('std'), Decimal('x') (InvalidOperation)
            values.append(None)
            unread.append(index)
    return pa.array(values, type=arrow_type)
