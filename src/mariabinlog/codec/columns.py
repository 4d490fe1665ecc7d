"""Column types of row-based events: type codes, per-column metadata, charsets, value types.

A Table_map event describes each column with a one-byte ``MYSQL_TYPE_*`` code
and 0-2 metadata bytes.  MariaDB folds those bytes into one uint16 per column
(``table_def::m_field_metadata``); that number is what ``mariadb-binlog -vv``
prints as ``meta=`` and what :data:`TableMapEvent.column_meta` holds, so every
consumer (row decoder, printer, writers) reasons about the same integer.

Row values that Python's standard types cannot hold faithfully (zero dates,
TIME beyond 24 h or negative, timestamps with their stored precision) get small
NamedTuples here, with conversion helpers to :mod:`datetime`.  :data:`ABSENT`
marks a column missing from a MINIMAL/NOBLOB row image (distinct from NULL).

The optional metadata block (``binlog_row_metadata=MINIMAL|FULL``) that may end
a Table_map event is decoded into :class:`OptionalMetadata`.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import DecodeError, TruncatedError
from .primitives import Buffer, read_lenenc_int, write_lenenc

# --------------------------------------------------------------------------
# Type codes (enum_field_types, include/mysql_com.h)

MYSQL_TYPE_DECIMAL = 0
MYSQL_TYPE_TINY = 1
MYSQL_TYPE_SHORT = 2
MYSQL_TYPE_LONG = 3
MYSQL_TYPE_FLOAT = 4
MYSQL_TYPE_DOUBLE = 5
MYSQL_TYPE_NULL = 6
MYSQL_TYPE_TIMESTAMP = 7
MYSQL_TYPE_LONGLONG = 8
MYSQL_TYPE_INT24 = 9
MYSQL_TYPE_DATE = 10
MYSQL_TYPE_TIME = 11
MYSQL_TYPE_DATETIME = 12
MYSQL_TYPE_YEAR = 13
MYSQL_TYPE_NEWDATE = 14
MYSQL_TYPE_VARCHAR = 15
MYSQL_TYPE_BIT = 16
MYSQL_TYPE_TIMESTAMP2 = 17
MYSQL_TYPE_DATETIME2 = 18
MYSQL_TYPE_TIME2 = 19
MYSQL_TYPE_BLOB_COMPRESSED = 140
MYSQL_TYPE_VARCHAR_COMPRESSED = 141
MYSQL_TYPE_JSON = 245
MYSQL_TYPE_NEWDECIMAL = 246
MYSQL_TYPE_ENUM = 247
MYSQL_TYPE_SET = 248
MYSQL_TYPE_TINY_BLOB = 249
MYSQL_TYPE_MEDIUM_BLOB = 250
MYSQL_TYPE_LONG_BLOB = 251
MYSQL_TYPE_BLOB = 252
MYSQL_TYPE_VAR_STRING = 253
MYSQL_TYPE_STRING = 254
MYSQL_TYPE_GEOMETRY = 255

#: Base type names as ``mariadb-binlog -vv`` prints them (see :func:`verbose_type_name`).
TYPE_NAMES: dict[int, str] = {
    MYSQL_TYPE_TINY: "TINYINT",
    MYSQL_TYPE_SHORT: "SHORTINT",
    MYSQL_TYPE_INT24: "MEDIUMINT",
    MYSQL_TYPE_LONG: "INT",
    MYSQL_TYPE_LONGLONG: "LONGINT",
    MYSQL_TYPE_NEWDECIMAL: "DECIMAL",
    MYSQL_TYPE_FLOAT: "FLOAT",
    MYSQL_TYPE_DOUBLE: "DOUBLE",
    MYSQL_TYPE_BIT: "BIT",
    MYSQL_TYPE_TIMESTAMP: "TIMESTAMP",
    MYSQL_TYPE_TIMESTAMP2: "TIMESTAMP",
    MYSQL_TYPE_DATETIME: "DATETIME",
    MYSQL_TYPE_DATETIME2: "DATETIME",
    MYSQL_TYPE_TIME: "TIME",
    MYSQL_TYPE_TIME2: "TIME",
    MYSQL_TYPE_DATE: "DATE",
    MYSQL_TYPE_NEWDATE: "DATE",
    MYSQL_TYPE_YEAR: "YEAR",
    MYSQL_TYPE_ENUM: "ENUM",
    MYSQL_TYPE_SET: "SET",
    MYSQL_TYPE_BLOB: "BLOB",
    MYSQL_TYPE_BLOB_COMPRESSED: "BLOB",
    MYSQL_TYPE_VARCHAR: "VARSTRING",
    MYSQL_TYPE_VAR_STRING: "VARSTRING",
    MYSQL_TYPE_VARCHAR_COMPRESSED: "VARSTRING",
    MYSQL_TYPE_STRING: "STRING",
    MYSQL_TYPE_GEOMETRY: "GEOMETRY",
}

#: Numeric columns: the ones the SIGNEDNESS optional metadata has a bit for.
NUMERIC_TYPES = frozenset(
    (
        MYSQL_TYPE_TINY,
        MYSQL_TYPE_SHORT,
        MYSQL_TYPE_INT24,
        MYSQL_TYPE_LONG,
        MYSQL_TYPE_LONGLONG,
        MYSQL_TYPE_NEWDECIMAL,
        MYSQL_TYPE_FLOAT,
        MYSQL_TYPE_DOUBLE,
    )
)

#: Character columns (real type): the ones DEFAULT_CHARSET / COLUMN_CHARSET describe.
#: GEOMETRY counts (its base class is BLOB).  The server also counts the
#: compressed BLOB/VARCHAR types (verified on 10.11), although mariadb-binlog's
#: ``--print-table-metadata`` does not.
CHARACTER_TYPES = frozenset(
    (
        MYSQL_TYPE_STRING,
        MYSQL_TYPE_VAR_STRING,
        MYSQL_TYPE_VARCHAR,
        MYSQL_TYPE_BLOB,
        MYSQL_TYPE_GEOMETRY,
        MYSQL_TYPE_BLOB_COMPRESSED,
        MYSQL_TYPE_VARCHAR_COMPRESSED,
    )
)

#: Integer byte widths, for the unsigned view of a signed decoded value.
INT_SIZES: dict[int, int] = {
    MYSQL_TYPE_TINY: 1,
    MYSQL_TYPE_SHORT: 2,
    MYSQL_TYPE_INT24: 3,
    MYSQL_TYPE_LONG: 4,
    MYSQL_TYPE_LONGLONG: 8,
}

_META_1 = frozenset(
    (
        MYSQL_TYPE_FLOAT,
        MYSQL_TYPE_DOUBLE,
        MYSQL_TYPE_TINY_BLOB,
        MYSQL_TYPE_MEDIUM_BLOB,
        MYSQL_TYPE_LONG_BLOB,
        MYSQL_TYPE_BLOB,
        MYSQL_TYPE_BLOB_COMPRESSED,
        MYSQL_TYPE_GEOMETRY,
        MYSQL_TYPE_JSON,
        MYSQL_TYPE_TIMESTAMP2,
        MYSQL_TYPE_DATETIME2,
        MYSQL_TYPE_TIME2,
    )
)
_META_2_BE = frozenset((MYSQL_TYPE_STRING, MYSQL_TYPE_ENUM, MYSQL_TYPE_SET, MYSQL_TYPE_NEWDECIMAL))
_META_2_LE = frozenset((MYSQL_TYPE_BIT, MYSQL_TYPE_VARCHAR, MYSQL_TYPE_VARCHAR_COMPRESSED))


def meta_size(column_type: int) -> int:
    """Number of Table_map metadata bytes a column of ``column_type`` carries (0, 1 or 2)."""
    if column_type in _META_1:
        return 1
    if column_type in _META_2_BE or column_type in _META_2_LE:
        return 2
    return 0


def decode_column_meta(types: bytes, buf: Buffer, pos: int, end: int) -> tuple[int, ...]:
    """Decode the Table_map metadata block ``buf[pos:end]`` into one uint16 per column.

    Follows ``table_def::table_def``: STRING/ENUM/SET and NEWDECIMAL keep
    ``byte0 << 8 | byte1``, BIT and VARCHAR a little-endian u16, the 1-byte
    kinds their byte, every other type 0.  An empty block (pre-5.1 primaries)
    gives all zeros, as MariaDB reads it.
    """
    if pos == end:
        return (0,) * len(types)
    out = []
    p = pos
    for column_type in types:
        size = meta_size(column_type)
        if p + size > end:
            raise TruncatedError(
                "truncated Table_map column metadata",
                offset=p,
                expected=f"{size} metadata bytes for column type {column_type}, {end - p} left",
            )
        if size == 0:
            out.append(0)
        elif size == 1:
            out.append(buf[p])
        elif column_type in _META_2_BE:
            out.append(buf[p] << 8 | buf[p + 1])
        else:
            out.append(buf[p] | buf[p + 1] << 8)
        p += size
    if p != end:
        raise DecodeError(
            "Table_map column metadata longer than its column types need",
            offset=p,
            expected=f"{p - pos} metadata bytes, not {end - pos}",
        )
    return tuple(out)


def encode_column_meta(types: bytes, metas: Sequence[int]) -> bytes:
    """Encode per-column uint16 metadata back into the Table_map metadata block."""
    if len(types) != len(metas):
        raise ValueError(f"{len(types)} column types but {len(metas)} metadata values")
    out = bytearray()
    for column_type, meta in zip(types, metas):
        size = meta_size(column_type)
        if size == 0:
            if meta:
                raise ValueError(f"column type {column_type} has no metadata, got {meta}")
        elif size == 1:
            out.append(meta)
        elif column_type in _META_2_BE:
            out += bytes((meta >> 8, meta & 0xFF))
        else:
            out += bytes((meta & 0xFF, meta >> 8))
    return bytes(out)


def real_type(column_type: int, meta: int) -> int:
    """The column's real type: STRING columns whose metadata says ENUM or SET become those."""
    if column_type == MYSQL_TYPE_STRING and meta >= 256:
        byte0 = meta >> 8
        if byte0 == MYSQL_TYPE_ENUM or byte0 == MYSQL_TYPE_SET:
            return byte0
    return column_type


def string_max_length(meta: int) -> int:
    """Maximum byte length of a STRING (CHAR/BINARY) column from its metadata (#37426 encoding)."""
    if meta < 256:
        return meta
    byte0, byte1 = meta >> 8, meta & 0xFF
    if (byte0 & 0x30) != 0x30:
        return byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte1


def string_meta(max_length: int) -> int:
    """Metadata of a CHAR/BINARY column of ``max_length`` bytes (inverse of :func:`string_max_length`)."""
    if not 0 <= max_length < 1024:
        raise ValueError(f"CHAR/BINARY byte length {max_length} outside 0..1023")
    return (MYSQL_TYPE_STRING ^ ((max_length & 0x300) >> 4)) << 8 | (max_length & 0xFF)


def bit_width(meta: int) -> int:
    """Number of bits of a BIT column from its metadata (bytes << 8 | extra bits)."""
    return (meta >> 8) * 8 + (meta & 0xFF)


def verbose_type_name(column_type: int, meta: int) -> str:
    """The type text ``mariadb-binlog -vv`` prints in ``/* TYPE meta=... */`` comments.

    Empty for types the tool cannot print (it stops with an error there).
    """
    rtype = real_type(column_type, meta)
    if rtype == MYSQL_TYPE_NEWDECIMAL:
        return f"DECIMAL({meta >> 8},{meta & 0xFF})"
    if rtype == MYSQL_TYPE_BIT:
        return f"BIT({bit_width(meta)})"
    if rtype in (MYSQL_TYPE_TIMESTAMP2, MYSQL_TYPE_DATETIME2, MYSQL_TYPE_TIME2):
        return f"{TYPE_NAMES[rtype]}({meta})"
    if rtype == MYSQL_TYPE_ENUM:
        size = meta & 0xFF
        return "ENUM(1 byte)" if size == 1 else "ENUM(2 bytes)" if size == 2 else ""
    if rtype == MYSQL_TYPE_SET:
        return f"SET({meta & 0xFF} bytes)"
    if rtype in (MYSQL_TYPE_BLOB, MYSQL_TYPE_BLOB_COMPRESSED):
        prefix = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}.get(meta)
        if prefix is None:
            return ""
        return prefix + (" COMPRESSED" if rtype == MYSQL_TYPE_BLOB_COMPRESSED else "")
    if rtype in (MYSQL_TYPE_VARCHAR, MYSQL_TYPE_VAR_STRING):
        return f"VARSTRING({meta})"
    if rtype == MYSQL_TYPE_VARCHAR_COMPRESSED:
        return f"VARSTRING({meta}) COMPRESSED"
    if rtype == MYSQL_TYPE_STRING:
        return f"STRING({string_max_length(meta)})"
    if rtype in (MYSQL_TYPE_TINY_BLOB, MYSQL_TYPE_MEDIUM_BLOB, MYSQL_TYPE_LONG_BLOB, MYSQL_TYPE_JSON):
        return ""
    return TYPE_NAMES.get(rtype, "")


def to_unsigned(value: int, column_type: int) -> int:
    """Unsigned view of an integer decoded as signed (no SIGNEDNESS metadata available)."""
    return value & ((1 << (8 * INT_SIZES[column_type])) - 1)


# --------------------------------------------------------------------------
# Charsets: MariaDB collation id -> Python codec (None = binary, keep bytes)

# fmt: off
_COLLATION_CODECS: dict[int, str | None] = {
    1: "big5", 2: "iso8859_2", 4: "cp850", 5: "cp1252", 7: "koi8_r", 8: "cp1252",
    9: "iso8859_2", 11: "ascii", 12: "euc_jp", 13: "shift_jis", 14: "cp1251", 15: "cp1252",
    16: "iso8859_8", 18: "tis_620", 19: "euc_kr", 20: "iso8859_13", 21: "iso8859_2", 22: "koi8_u",
    23: "cp1251", 24: "gb2312", 25: "iso8859_7", 26: "cp1250", 27: "iso8859_2", 28: "gbk",
    29: "cp1257", 30: "iso8859_9", 31: "cp1252", 33: "utf_8", 34: "cp1250", 35: "utf_16_be",
    36: "cp866", 38: "mac_latin2", 39: "mac_roman", 40: "cp852", 41: "iso8859_13", 42: "iso8859_13",
    43: "mac_latin2", 44: "cp1250", 45: "utf_8", 46: "utf_8", 47: "cp1252", 48: "cp1252",
    49: "cp1252", 50: "cp1251", 51: "cp1251", 52: "cp1251", 53: "mac_roman", 54: "utf_16_be",
    55: "utf_16_be", 56: "utf_16_le", 57: "cp1256", 58: "cp1257", 59: "cp1257", 60: "utf_32_be",
    61: "utf_32_be", 62: "utf_16_le", 63: None, 65: "ascii", 66: "cp1250", 67: "cp1256",
    68: "cp866", 70: "iso8859_7", 71: "iso8859_8", 74: "koi8_r", 75: "koi8_u", 77: "iso8859_2",
    78: "iso8859_9", 79: "iso8859_13", 80: "cp850", 81: "cp852", 83: "utf_8", 84: "big5",
    85: "euc_kr", 86: "gb2312", 87: "gbk", 88: "shift_jis", 89: "tis_620", 90: "utf_16_be",
    91: "euc_jp", 94: "cp1252", 95: "cp932", 96: "cp932", 97: "euc_jp", 98: "euc_jp", 99: "cp1250",
}
# fmt: on
# UCA collation blocks: (first id, last id, codec).  ucs2 is read as UTF-16 (same bytes for the BMP).
_COLLATION_RANGES: tuple[tuple[int, int, str], ...] = (
    (101, 127, "utf_16_be"),  # utf16_*_ci
    (128, 159, "utf_16_be"),  # ucs2_*_ci
    (160, 191, "utf_32_be"),  # utf32_*_ci
    (192, 223, "utf_8"),  # utf8mb3_*_ci
    (224, 255, "utf_8"),  # utf8mb4_*_ci
    (576, 639, "utf_8"),  # MariaDB utf8mb3/utf8mb4 extra collations
    (640, 703, "utf_16_be"),  # ucs2/utf16 extra collations
    (736, 767, "utf_32_be"),  # utf32 extra collations
    (2048, 2559, "utf_8"),  # utf8mb3/utf8mb4 uca1400
    (2560, 3071, "utf_16_be"),  # ucs2/utf16 uca1400
    (3072, 3327, "utf_32_be"),  # utf32 uca1400
)
BINARY_COLLATION = 63
_NOPAD_OFFSET = 1024  # MariaDB *_nopad_* collations are the base id + 1024


def collation_codec(collation_id: int) -> str | None:
    """Python codec name for a MariaDB collation id; None for binary or unknown (keep bytes)."""
    codec = _COLLATION_CODECS.get(collation_id)
    if codec is not None or collation_id in _COLLATION_CODECS:
        return codec
    for first, last, name in _COLLATION_RANGES:
        if first <= collation_id <= last:
            return name
    if _NOPAD_OFFSET <= collation_id < 2 * _NOPAD_OFFSET:
        return collation_codec(collation_id - _NOPAD_OFFSET)
    return None


# --------------------------------------------------------------------------
# Row values


class _Absent:
    """Type of :data:`ABSENT`; pickling and copying give the same object back."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


#: A column missing from a row image (MINIMAL/NOBLOB); NULL is ``None``.
ABSENT = _Absent()


@functools.lru_cache(maxsize=4096)
def epoch_days(year: int, month: int, day: int) -> int | None:
    """Days from 1970-01-01 to a proleptic Gregorian date, year 0 included (MariaDB's
    '0000-01-01' is a date, Python's ``datetime`` has no year 0); None for zero dates and for
    those no calendar has (month 13, February 30): what a reader gives as null (Debezium's
    Date and Timestamp values).  Cached: the rows of a binlog share few days."""
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day > (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]:
        return None
    y = year - (month <= 2)  # days from civil, the year counted from March
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


class MysqlDate(NamedTuple):
    """A DATE as stored, zero dates (0000-00-00, 2024-00-00) included."""

    year: int
    month: int
    day: int

    def to_date(self) -> datetime.date:
        """As :class:`datetime.date`; ValueError for zero or invalid dates."""
        return datetime.date(self.year, self.month, self.day)

    @classmethod
    def from_date(cls, value: datetime.date) -> MysqlDate:
        """From a :class:`datetime.date`."""
        return cls(value.year, value.month, value.day)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


class MysqlTime(NamedTuple):
    """A TIME: sign and magnitude, hours up to 838 (stored up to 1023)."""

    negative: bool
    hour: int
    minute: int
    second: int
    microsecond: int = 0

    def to_timedelta(self) -> datetime.timedelta:
        """As :class:`datetime.timedelta` (negative for negative times)."""
        delta = datetime.timedelta(
            hours=self.hour, minutes=self.minute, seconds=self.second, microseconds=self.microsecond
        )
        return -delta if self.negative else delta

    @classmethod
    def from_timedelta(cls, value: datetime.timedelta) -> MysqlTime:
        """From a :class:`datetime.timedelta`."""
        negative = value < datetime.timedelta(0)
        total = abs(value)
        usec = total.days * 86_400_000_000 + total.seconds * 1_000_000 + total.microseconds
        seconds, microsecond = divmod(usec, 1_000_000)
        return cls(negative, seconds // 3600, seconds // 60 % 60, seconds % 60, microsecond)

    def __str__(self) -> str:
        frac = f".{self.microsecond:06d}" if self.microsecond else ""
        return f"{'-' if self.negative else ''}{self.hour:02d}:{self.minute:02d}:{self.second:02d}{frac}"


class MysqlDateTime(NamedTuple):
    """A DATETIME as stored, zero dates included."""

    year: int
    month: int
    day: int
    hour: int = 0
    minute: int = 0
    second: int = 0
    microsecond: int = 0

    def to_datetime(self) -> datetime.datetime:
        """As a naive :class:`datetime.datetime`; ValueError for zero or invalid dates."""
        return datetime.datetime(*self)

    @classmethod
    def from_datetime(cls, value: datetime.datetime) -> MysqlDateTime:
        """From a (naive) :class:`datetime.datetime`."""
        return cls(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond)

    def __str__(self) -> str:
        frac = f".{self.microsecond:06d}" if self.microsecond else ""
        return (
            f"{self.year:04d}-{self.month:02d}-{self.day:02d} {self.hour:02d}:{self.minute:02d}:{self.second:02d}{frac}"
        )


class MysqlTimestamp(NamedTuple):
    """A TIMESTAMP: seconds since the epoch (UTC) and microseconds; 0 is the zero timestamp."""

    seconds: int
    microsecond: int = 0

    def to_datetime(self) -> datetime.datetime:
        """As an aware UTC :class:`datetime.datetime`."""
        return datetime.datetime.fromtimestamp(self.seconds, datetime.UTC).replace(microsecond=self.microsecond)

    @classmethod
    def from_datetime(cls, value: datetime.datetime) -> MysqlTimestamp:
        """From an aware :class:`datetime.datetime` (naive values are taken as UTC)."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
        delta = value.replace(microsecond=0) - epoch
        return cls(delta.days * 86400 + delta.seconds, value.microsecond)


# --------------------------------------------------------------------------
# Optional metadata (Table_map TLV block)

SIGNEDNESS = 1
DEFAULT_CHARSET = 2
COLUMN_CHARSET = 3
COLUMN_NAME = 4
SET_STR_VALUE = 5
ENUM_STR_VALUE = 6
GEOMETRY_TYPE = 7
SIMPLE_PRIMARY_KEY = 8
PRIMARY_KEY_WITH_PREFIX = 9
ENUM_AND_SET_DEFAULT_CHARSET = 10
ENUM_AND_SET_COLUMN_CHARSET = 11


class DefaultCharset(NamedTuple):
    """DEFAULT_CHARSET value: the common collation plus (nth column of the kind, collation) exceptions."""

    default: int
    overrides: tuple[tuple[int, int], ...] = ()

    def iter_collations(self) -> Iterator[int]:
        """Collation of the 1st, 2nd, ... column of the kind (endless)."""
        exceptions = dict(self.overrides)
        index = 0
        while True:
            yield exceptions.get(index, self.default)
            index += 1


_FIELD_BY_TYPE = {
    SIGNEDNESS: "signedness",
    DEFAULT_CHARSET: "default_charset",
    COLUMN_CHARSET: "column_charsets",
    COLUMN_NAME: "column_names",
    SET_STR_VALUE: "set_str_values",
    ENUM_STR_VALUE: "enum_str_values",
    GEOMETRY_TYPE: "geometry_types",
    SIMPLE_PRIMARY_KEY: "simple_primary_key",
    PRIMARY_KEY_WITH_PREFIX: "primary_key_with_prefix",
    ENUM_AND_SET_DEFAULT_CHARSET: "enum_and_set_default_charset",
    ENUM_AND_SET_COLUMN_CHARSET: "enum_and_set_column_charsets",
}


@dataclass(frozen=True)
class OptionalMetadata:
    """The optional metadata TLVs of a Table_map event.

    ``signedness`` is the raw bitmap (MSB first, one bit per numeric column,
    1 = UNSIGNED; see :meth:`unsigned_flags`).  Column names are UTF-8 text
    (undecodable bytes kept as surrogates); ENUM/SET strings stay bytes (they
    are in the column's charset).  ``unknown`` keeps TLVs of unknown types raw
    and ``order`` the TLV order, so :meth:`encode` reproduces the block.
    """

    signedness: bytes | None = None
    default_charset: DefaultCharset | None = None
    column_charsets: tuple[int, ...] | None = None
    column_names: tuple[str, ...] | None = None
    set_str_values: tuple[tuple[bytes, ...], ...] | None = None
    enum_str_values: tuple[tuple[bytes, ...], ...] | None = None
    geometry_types: tuple[int, ...] | None = None
    simple_primary_key: tuple[int, ...] | None = None
    primary_key_with_prefix: tuple[tuple[int, int], ...] | None = None
    enum_and_set_default_charset: DefaultCharset | None = None
    enum_and_set_column_charsets: tuple[int, ...] | None = None
    unknown: tuple[tuple[int, bytes], ...] = ()
    order: tuple[int, ...] | None = None
    _raw: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def primary_key(self) -> tuple[tuple[int, int], ...]:
        """The primary key as (column index, prefix length) pairs, 0 for a whole column: from
        SIMPLE_PRIMARY_KEY, else PRIMARY_KEY_WITH_PREFIX; empty when the map logs neither."""
        if self.simple_primary_key:
            return tuple((column, 0) for column in self.simple_primary_key)
        return self.primary_key_with_prefix or ()

    def key_indexes(self, width: int) -> tuple[int, ...]:
        """The primary key's column indexes (whole columns, with a prefix or not) below
        ``width``: an index past the table's columns (a damaged or forged map) names none."""
        return tuple(column for column, _ in self.primary_key() if column < width)

    def encode(self) -> bytes:
        """The TLV block: the decoded bytes verbatim, else a canonical encoding of the fields."""
        if self._raw is not None:
            return self._raw
        unknown = dict(self.unknown)
        order = self.order
        if order is None:
            order = tuple(t for t, name in _FIELD_BY_TYPE.items() if getattr(self, name) is not None)
            order += tuple(t for t, _ in self.unknown)
        out = bytearray()
        for tlv_type in order:
            name = _FIELD_BY_TYPE.get(tlv_type)
            if name is None:
                value = unknown[tlv_type]
            else:
                field_value = getattr(self, name)
                if field_value is None:
                    raise ValueError(f"optional metadata order names type {tlv_type} but {name} is None")
                value = _ENCODERS[tlv_type](field_value)
            out.append(tlv_type)
            out += write_lenenc(len(value))
            out += value
        return bytes(out)

    def unsigned_flags(self, types: bytes, metas: Sequence[int]) -> list[bool]:
        """Per column: True when the column is a numeric column flagged UNSIGNED."""
        bits = self.signedness or b""
        flags = []
        numeric_index = 0
        for column_type, meta in zip(types, metas):
            unsigned = False
            if real_type(column_type, meta) in NUMERIC_TYPES:
                byte = numeric_index >> 3
                unsigned = byte < len(bits) and bool(bits[byte] & (0x80 >> (numeric_index & 7)))
                numeric_index += 1
            flags.append(unsigned)
        return flags

    def column_collations(self, types: bytes, metas: Sequence[int]) -> list[int | None]:
        """Per column: its collation id (character columns, ENUM/SET) or None."""
        char_it = _collation_iter(self.default_charset, self.column_charsets)
        enum_it = _collation_iter(self.enum_and_set_default_charset, self.enum_and_set_column_charsets)
        out: list[int | None] = []
        for column_type, meta in zip(types, metas):
            rtype = real_type(column_type, meta)
            if rtype in CHARACTER_TYPES:
                out.append(next(char_it, None))
            elif rtype == MYSQL_TYPE_ENUM or rtype == MYSQL_TYPE_SET:
                out.append(next(enum_it, None))
            else:
                out.append(None)
        return out


def _collation_iter(default: DefaultCharset | None, per_column: tuple[int, ...] | None) -> Iterator[int]:
    if default is not None:
        return default.iter_collations()
    return iter(per_column or ())


def _read_uints(buf: Buffer, pos: int, end: int, what: str) -> list[int]:
    values = []
    while pos < end:
        value, pos = read_lenenc_int(buf, pos, what)
        values.append(value)
    if pos > end:
        raise TruncatedError(f"truncated {what}", offset=end, expected="a length-encoded integer inside the field")
    return values


def _read_str(buf: Buffer, pos: int, end: int, what: str) -> tuple[bytes, int]:
    length, pos = read_lenenc_int(buf, pos, what)
    if pos + length > end:
        raise TruncatedError(f"truncated {what}", offset=pos, expected=f"{length} bytes, {end - pos} left")
    return bytes(buf[pos : pos + length]), pos + length


def _dec_default_charset(buf: Buffer, pos: int, end: int) -> DefaultCharset:
    values = _read_uints(buf, pos, end, "optional metadata default charset")
    if not values or len(values) % 2 != 1:
        raise DecodeError(
            "malformed default charset", offset=pos, expected="a collation then (column, collation) pairs"
        )
    return DefaultCharset(values[0], tuple(zip(values[1::2], values[2::2])))


def _dec_names(buf: Buffer, pos: int, end: int) -> tuple[str, ...]:
    names = []
    while pos < end:
        name, pos = _read_str(buf, pos, end, "optional metadata column name")
        names.append(name.decode("utf-8", "surrogateescape"))
    return tuple(names)


def _dec_str_values(buf: Buffer, pos: int, end: int) -> tuple[tuple[bytes, ...], ...]:
    columns = []
    while pos < end:
        count, pos = read_lenenc_int(buf, pos, "optional metadata ENUM/SET value count")
        values = []
        for _ in range(count):
            value, pos = _read_str(buf, pos, end, "optional metadata ENUM/SET value")
            values.append(value)
        columns.append(tuple(values))
    if pos > end:
        raise TruncatedError("truncated ENUM/SET values", offset=end, expected="values inside the field")
    return tuple(columns)


def _dec_pairs(buf: Buffer, pos: int, end: int) -> tuple[tuple[int, int], ...]:
    values = _read_uints(buf, pos, end, "optional metadata primary key")
    if len(values) % 2:
        raise DecodeError("odd primary key with prefix field", offset=pos, expected="(column, prefix) pairs")
    return tuple(zip(values[::2], values[1::2]))


def _dec_uint_tuple(buf: Buffer, pos: int, end: int) -> tuple[int, ...]:
    return tuple(_read_uints(buf, pos, end, "optional metadata integer list"))


_DECODERS: dict[int, Callable[[Buffer, int, int], Any]] = {
    SIGNEDNESS: lambda buf, pos, end: bytes(buf[pos:end]),
    DEFAULT_CHARSET: _dec_default_charset,
    COLUMN_CHARSET: _dec_uint_tuple,
    COLUMN_NAME: _dec_names,
    SET_STR_VALUE: _dec_str_values,
    ENUM_STR_VALUE: _dec_str_values,
    GEOMETRY_TYPE: _dec_uint_tuple,
    SIMPLE_PRIMARY_KEY: _dec_uint_tuple,
    PRIMARY_KEY_WITH_PREFIX: _dec_pairs,
    ENUM_AND_SET_DEFAULT_CHARSET: _dec_default_charset,
    ENUM_AND_SET_COLUMN_CHARSET: _dec_uint_tuple,
}


def _enc_uints(values: Sequence[int]) -> bytes:
    return b"".join(write_lenenc(v) for v in values)


def _enc_default_charset(value: DefaultCharset) -> bytes:
    return write_lenenc(value.default) + b"".join(write_lenenc(i) + write_lenenc(c) for i, c in value.overrides)


def _enc_names(names: Sequence[str]) -> bytes:
    out = bytearray()
    for name in names:
        raw = name.encode("utf-8", "surrogateescape")
        out += write_lenenc(len(raw)) + raw
    return bytes(out)


def _enc_str_values(columns: Sequence[Sequence[bytes]]) -> bytes:
    out = bytearray()
    for values in columns:
        out += write_lenenc(len(values))
        for value in values:
            out += write_lenenc(len(value)) + value
    return bytes(out)


_ENCODERS: dict[int, Callable[[Any], bytes]] = {
    SIGNEDNESS: bytes,
    DEFAULT_CHARSET: _enc_default_charset,
    COLUMN_CHARSET: _enc_uints,
    COLUMN_NAME: _enc_names,
    SET_STR_VALUE: _enc_str_values,
    ENUM_STR_VALUE: _enc_str_values,
    GEOMETRY_TYPE: _enc_uints,
    SIMPLE_PRIMARY_KEY: _enc_uints,
    PRIMARY_KEY_WITH_PREFIX: lambda pairs: b"".join(write_lenenc(i) + write_lenenc(p) for i, p in pairs),
    ENUM_AND_SET_DEFAULT_CHARSET: _enc_default_charset,
    ENUM_AND_SET_COLUMN_CHARSET: _enc_uints,
}


def decode_optional_metadata(buf: Buffer, pos: int, end: int) -> OptionalMetadata:
    """Decode the optional metadata TLVs in ``buf[pos:end]`` (u8 type, lenenc length, value)."""
    start = pos
    fields: dict[str, object] = {}
    unknown = []
    order = []
    while pos < end:
        tlv_type = buf[pos]
        length, value_pos = read_lenenc_int(buf, pos + 1, "optional metadata field length")
        value_end = value_pos + length
        if value_end > end:
            raise TruncatedError(
                "truncated optional metadata field",
                offset=value_pos,
                expected=f"{length} bytes for field type {tlv_type}, {end - value_pos} left",
            )
        if tlv_type in order:
            raise DecodeError(
                f"optional metadata field type {tlv_type} repeated", offset=pos, expected="each field once"
            )
        name = _FIELD_BY_TYPE.get(tlv_type)
        if name is None:
            unknown.append((tlv_type, bytes(buf[value_pos:value_end])))
        else:
            fields[name] = _DECODERS[tlv_type](buf, value_pos, value_end)
        order.append(tlv_type)
        pos = value_end
    result = OptionalMetadata(**fields, unknown=tuple(unknown), order=tuple(order))  # type: ignore[arg-type]
    object.__setattr__(result, "_raw", bytes(buf[start:end]))
    return result
