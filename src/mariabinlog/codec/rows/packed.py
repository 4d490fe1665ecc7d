"""Column values in their packed form (``Field_*::pack``): one codec per column of a table map.

A row image holds each present non-NULL value in its column type's packed form.
:func:`column_codec` compiles, once per column, a :class:`ColumnCodec`: how the pure-Python
decoder reads the value (a ``struct`` code and conversion for fixed-size values, a
``step`` for the others), how the encoder writes it back, and the same reading as an
opcode for the compiled decoder (``_rowsfast.c``, ``_OP_*``).  The image plans and
decoders built from these columns are in :mod:`mariabinlog.codec.rows`.

Packed DECIMAL is here too (:func:`decimal_size`, :func:`decimal_value`,
:func:`decimal_text`, :func:`decimal_str`): User_var events and the printers read it
with the row codec's unpacker.
"""

from __future__ import annotations

import datetime
import functools
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ...errors import DecodeError, TruncatedError
from .. import columns as C
from ..columns import (
    MysqlDate,
    MysqlDateTime,
    MysqlTime,
    MysqlTimestamp,
)
from ..primitives import U16, U32

# ``tuple.__new__(SomeNamedTuple, items)`` skips the generated Python ``__new__``
# of NamedTuples: a third of the decoding time of temporal columns.
_new = tuple.__new__

Step = Callable[[bytes, int, list], int]
_Encoder = Callable[[Any], bytes]

# Opcodes of the compiled decoder (``_rowsfast.c``, same numbers): how it reads a column.
# A column's ``op`` is ``(opcode, size, flag, a, b, obj)``; see each factory.
_OP_INT = 1  # little-endian integer of ``size`` bytes (1..8), flag = signed
_OP_UINT_BE = 2  # big-endian unsigned integer of ``size`` bytes (0..8)
_OP_FLOAT = 3
_OP_DOUBLE = 4
_OP_YEAR = 5
_OP_DATE = 6
_OP_TIME = 7  # old 3-byte TIME
_OP_DATETIME = 8  # old 8-byte DATETIME
_OP_TIMESTAMP = 9  # old 4-byte TIMESTAMP
_OP_TIMESTAMP2 = 10  # a = fraction bytes, b = microseconds per stored unit
_OP_DATETIME2 = 11  # a, b as TIMESTAMP2
_OP_TIME2 = 12  # a, b as TIMESTAMP2
_OP_DECIMAL = 13  # a = precision, b = scale, obj = conv (for digit groups out of range)
_OP_CONV = 14  # any other fixed-size value: obj = conv(bytes of ``size``)
_OP_VAR = 20  # ``size``-byte length then data; obj = text codec name or None (bytes)
_OP_NONE = 21  # MYSQL_TYPE_NULL: None, no bytes
_OP_FAIL = 22  # unreadable column: the error when it holds a value
#: Bump with ``PLAN_VERSION`` in ``_rowsfast.c`` whenever opcodes or their arguments change.
FAST_PLAN_VERSION = 1

_Op = tuple[int, int, bool, int, int, Any]


def _op(opcode: int, size: int = 0, flag: bool = False, a: int = 0, b: int = 0, obj: Any = None) -> _Op:
    return (opcode, size, flag, a, b, obj)


class ColumnCodec:
    """How one column is read and written.

    Fixed-size columns have ``fmt`` (a struct code, e.g. ``"i"`` or ``"5s"``),
    ``size`` and an optional ``conv`` applied to the unpacked item; the others
    have ``step(buf, pos, out) -> pos`` which appends the value.  ``op`` says
    the same to the compiled decoder (see ``_OP_*``).
    """

    __slots__ = ("conv", "encode", "fmt", "index", "op", "size", "step")

    def __init__(
        self,
        index: int,
        encode: _Encoder,
        op: _Op,
        *,
        fmt: str | None = None,
        size: int = 0,
        conv: Callable[[Any], Any] | None = None,
        step: Step | None = None,
    ) -> None:
        self.index = index
        self.encode = encode
        self.op = op
        self.fmt = fmt
        self.size = size
        self.conv = conv
        self.step = step


def _int_codec(index: int, size: int, signed: bool) -> ColumnCodec:
    low = -(1 << (8 * size - 1))
    high = 1 << (8 * size)
    mask = high - 1

    def encode(value: Any) -> bytes:
        if not isinstance(value, int) or not low <= value < high:
            raise ValueError(f"column @{index + 1}: {value!r} is not a {size}-byte integer")
        return (value & mask).to_bytes(size, "little")

    op = _op(_OP_INT, size, signed)
    if size == 3:
        return ColumnCodec(index, encode, op, fmt="3s", size=3, conv=lambda b: int.from_bytes(b, "little", signed=signed))
    code = {1: "b", 2: "h", 4: "i", 8: "q"}[size]
    return ColumnCodec(index, encode, op, fmt=code if signed else code.upper(), size=size)


def _float_codec(index: int, double: bool) -> ColumnCodec:
    packer = struct.Struct("<d" if double else "<f")

    def encode(value: Any) -> bytes:
        try:
            return packer.pack(value)
        except (struct.error, TypeError, OverflowError) as exc:
            raise ValueError(f"column @{index + 1}: {value!r} is not a float: {exc}") from None

    op = _op(_OP_DOUBLE, 8) if double else _op(_OP_FLOAT, 4)
    return ColumnCodec(index, encode, op, fmt="d" if double else "f", size=8 if double else 4)


def _year_codec(index: int) -> ColumnCodec:
    def encode(value: Any) -> bytes:
        if value == 0:
            return b"\0"
        if not 1901 <= value <= 2155:
            raise ValueError(f"column @{index + 1}: YEAR {value!r} outside 0, 1901..2155")
        return bytes((value - 1900,))

    return ColumnCodec(index, encode, _op(_OP_YEAR, 1), fmt="B", size=1, conv=lambda b: b + 1900 if b else 0)


def _as_tuple(value: Any, cls: type, index: int) -> Any:
    if isinstance(value, cls):
        return value
    if cls is MysqlDate and isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return MysqlDate.from_date(value)
    if cls is MysqlDateTime and isinstance(value, datetime.datetime):
        return MysqlDateTime.from_datetime(value)
    if cls is MysqlTime and isinstance(value, datetime.timedelta):
        return MysqlTime.from_timedelta(value)
    if cls is MysqlTimestamp:
        if isinstance(value, datetime.datetime):
            return MysqlTimestamp.from_datetime(value)
        if isinstance(value, int):
            return MysqlTimestamp(value, 0)
    if isinstance(value, tuple):
        return cls(*value)
    raise ValueError(f"column @{index + 1}: {value!r} is not a {cls.__name__}")


def _date_codec(index: int) -> ColumnCodec:
    def conv(b: bytes) -> MysqlDate:
        v = b[0] | b[1] << 8 | b[2] << 16
        return _new(MysqlDate, (v >> 9, v >> 5 & 15, v & 31))

    def encode(value: Any) -> bytes:
        d = _as_tuple(value, MysqlDate, index)
        if not (0 <= d.year < 1 << 15 and 0 <= d.month < 16 and 0 <= d.day < 32):
            raise ValueError(f"column @{index + 1}: DATE {value!r} out of range")
        return (d.year << 9 | d.month << 5 | d.day).to_bytes(3, "little")

    return ColumnCodec(index, encode, _op(_OP_DATE, 3), fmt="3s", size=3, conv=conv)


def _old_time_codec(index: int) -> ColumnCodec:
    def conv(b: bytes) -> MysqlTime:
        v = int.from_bytes(b, "little", signed=True)
        a = -v if v < 0 else v
        return _new(MysqlTime, (v < 0, a // 10000, a // 100 % 100, a % 100, 0))

    def encode(value: Any) -> bytes:
        t = _as_tuple(value, MysqlTime, index)
        _check_frac(t.microsecond, 0, index, value)
        v = t.hour * 10000 + t.minute * 100 + t.second
        try:
            return (-v if t.negative else v).to_bytes(3, "little", signed=True)
        except OverflowError:
            raise ValueError(f"column @{index + 1}: TIME {value!r} out of range") from None

    return ColumnCodec(index, encode, _op(_OP_TIME, 3), fmt="3s", size=3, conv=conv)


def _old_datetime_codec(index: int) -> ColumnCodec:
    def conv(v: int) -> MysqlDateTime:
        d, t = divmod(v, 1000000)
        return _new(MysqlDateTime, (d // 10000, d // 100 % 100, d % 100, t // 10000, t // 100 % 100, t % 100, 0))

    def encode(value: Any) -> bytes:
        x = _as_tuple(value, MysqlDateTime, index)
        _check_frac(x.microsecond, 0, index, value)
        v = ((x.year * 100 + x.month) * 100 + x.day) * 1000000 + (x.hour * 100 + x.minute) * 100 + x.second
        if not 0 <= v < 1 << 64:
            raise ValueError(f"column @{index + 1}: DATETIME {value!r} out of range")
        return v.to_bytes(8, "little")

    return ColumnCodec(index, encode, _op(_OP_DATETIME, 8), fmt="Q", size=8, conv=conv)


def _old_timestamp_codec(index: int) -> ColumnCodec:
    def encode(value: Any) -> bytes:
        ts = _as_tuple(value, MysqlTimestamp, index)
        _check_frac(ts.microsecond, 0, index, value)
        if not 0 <= ts.seconds < 1 << 32:
            raise ValueError(f"column @{index + 1}: TIMESTAMP {value!r} out of range")
        return ts.seconds.to_bytes(4, "little")

    def conv(v: int) -> MysqlTimestamp:
        return _new(MysqlTimestamp, (v, 0))

    return ColumnCodec(index, encode, _op(_OP_TIMESTAMP, 4), fmt="I", size=4, conv=conv)


def _check_frac(microsecond: int, fsp: int, index: int, value: Any) -> None:
    """Refuse fractions finer than the column keeps (rather than silently truncating them)."""
    if not 0 <= microsecond < 1000000 or microsecond % 10 ** (6 - fsp):
        raise ValueError(f"column @{index + 1}: {value!r} has a fraction finer than {fsp} digits")


def _frac_layout(fsp: int, index: int) -> tuple[int, int]:
    """(fraction bytes, microseconds per stored unit) of fractional-seconds precision ``fsp``."""
    if not 0 <= fsp <= 6:
        raise DecodeError(f"column @{index + 1}: fractional seconds precision {fsp}", expected="metadata 0..6")
    return (fsp + 1) // 2, (1, 10000, 10000, 100, 100, 1, 1)[fsp]


def _timestamp2_codec(index: int, fsp: int) -> ColumnCodec:
    fb, unit = _frac_layout(fsp, index)
    shift = 8 * fb
    mask = (1 << shift) - 1
    size = 4 + fb

    def conv(b: bytes) -> MysqlTimestamp:
        v = int.from_bytes(b, "big")
        return _new(MysqlTimestamp, (v >> shift, (v & mask) * unit))

    def encode(value: Any) -> bytes:
        ts = _as_tuple(value, MysqlTimestamp, index)
        _check_frac(ts.microsecond, fsp, index, value)
        if not 0 <= ts.seconds < 1 << 32:
            raise ValueError(f"column @{index + 1}: TIMESTAMP {value!r} out of range")
        return (ts.seconds << shift | ts.microsecond // unit).to_bytes(size, "big")

    return ColumnCodec(index, encode, _op(_OP_TIMESTAMP2, size, a=fb, b=unit), fmt=f"{size}s", size=size, conv=conv)


def _datetime2_codec(index: int, fsp: int) -> ColumnCodec:
    fb, unit = _frac_layout(fsp, index)
    shift = 8 * fb
    mask = (1 << shift) - 1
    size = 5 + fb
    offset = 0x8000000000

    def conv(b: bytes) -> MysqlDateTime:
        v = int.from_bytes(b, "big")
        intpart = (v >> shift) - offset
        if intpart < 0:
            intpart = -intpart
        ymd = intpart >> 17
        ym = ymd >> 5
        hms = intpart & 0x1FFFF
        return _new(MysqlDateTime, (ym // 13, ym % 13, ymd & 31, hms >> 12, hms >> 6 & 63, hms & 63, (v & mask) * unit))

    def encode(value: Any) -> bytes:
        x = _as_tuple(value, MysqlDateTime, index)
        _check_frac(x.microsecond, fsp, index, value)
        if not (
            0 <= x.year <= 9999
            and 0 <= x.month <= 12
            and 0 <= x.day < 32
            and 0 <= x.hour < 32
            and 0 <= x.minute < 64
            and 0 <= x.second < 64
        ):
            raise ValueError(f"column @{index + 1}: DATETIME {value!r} out of range")
        ymdhms = ((x.year * 13 + x.month) << 5 | x.day) << 17 | x.hour << 12 | x.minute << 6 | x.second
        return ((ymdhms + offset) << shift | x.microsecond // unit).to_bytes(size, "big")

    return ColumnCodec(index, encode, _op(_OP_DATETIME2, size, a=fb, b=unit), fmt=f"{size}s", size=size, conv=conv)


def _time2_codec(index: int, fsp: int) -> ColumnCodec:
    fb, unit = _frac_layout(fsp, index)
    shift = 8 * fb
    mask = (1 << shift) - 1
    size = 3 + fb
    offset = 0x800000 << shift

    def conv(b: bytes) -> MysqlTime:
        v = int.from_bytes(b, "big") - offset
        a = -v if v < 0 else v
        hms = a >> shift
        return _new(MysqlTime, (v < 0, hms >> 12 & 1023, hms >> 6 & 63, hms & 63, (a & mask) * unit))

    def encode(value: Any) -> bytes:
        t = _as_tuple(value, MysqlTime, index)
        _check_frac(t.microsecond, fsp, index, value)
        if not (0 <= t.hour < 1024 and 0 <= t.minute < 64 and 0 <= t.second < 64):
            raise ValueError(f"column @{index + 1}: TIME {value!r} out of range")
        a = (t.hour << 12 | t.minute << 6 | t.second) << shift | t.microsecond // unit
        return ((-a if t.negative else a) + offset).to_bytes(size, "big")

    return ColumnCodec(index, encode, _op(_OP_TIME2, size, a=fb, b=unit), fmt=f"{size}s", size=size, conv=conv)


_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    """Packed size in bytes of DECIMAL(precision, scale) (``my_decimal_get_binary_size``)."""
    intg = precision - scale
    return intg // 9 * 4 + _DIG2BYTES[intg % 9] + scale // 9 * 4 + _DIG2BYTES[scale % 9]


def _decimal_codec(index: int, meta: int) -> ColumnCodec:
    precision, scale = meta >> 8, meta & 0xFF
    if not 0 < precision <= 65 or scale > precision:
        raise DecodeError(f"column @{index + 1}: DECIMAL({precision},{scale})", expected="0 < scale <= precision <= 65")
    intg = precision - scale
    # Digit groups, most significant first: (digits, bytes); integer part then fraction.
    int_groups = ([(intg % 9, _DIG2BYTES[intg % 9])] if intg % 9 else []) + [(9, 4)] * (intg // 9)
    frac_groups = [(9, 4)] * (scale // 9) + ([(scale % 9, _DIG2BYTES[scale % 9])] if scale % 9 else [])
    size = decimal_size(precision, scale)
    bits = 8 * size
    sign_bit = 1 << (bits - 1)
    all_ones = (1 << bits) - 1

    def layout(groups: list[tuple[int, int]], end_shift: int) -> list[tuple[int, int, int]]:
        out = []
        shift = end_shift + sum(8 * nbytes for _, nbytes in groups)
        for digits, nbytes in groups:
            shift -= 8 * nbytes
            out.append((shift, (1 << (8 * nbytes)) - 1, 10**digits))
        return out

    frac_bits = sum(8 * nbytes for _, nbytes in frac_groups)
    int_layout = layout(int_groups, frac_bits)
    frac_layout = layout(frac_groups, 0)

    template = f"%s%d.%0{scale}d" if scale else "%s%d"
    from_bytes = int.from_bytes

    if len(int_layout) <= 1 and len(frac_layout) <= 1:  # up to 9+9 digits: no group loops
        ishift, imask, _ = int_layout[0] if int_layout else (0, 0, 1)
        fmask = frac_layout[0][1] if frac_layout else 0

        def conv(b: bytes) -> Decimal:
            x = from_bytes(b, "big") ^ sign_bit
            if b[0] & 0x80:
                sign = ""
            else:
                x ^= all_ones
                sign = "-"
            if scale:
                return Decimal(template % (sign, x >> ishift & imask, x & fmask))
            return Decimal(template % (sign, x & imask))

    else:

        def conv(b: bytes) -> Decimal:
            x = from_bytes(b, "big") ^ sign_bit
            if b[0] & 0x80:
                sign = ""
            else:
                x ^= all_ones
                sign = "-"
            ipart = 0
            for shift, mask, mult in int_layout:
                ipart = ipart * mult + (x >> shift & mask)
            if not scale:
                return Decimal(template % (sign, ipart))
            fpart = 0
            for shift, mask, mult in frac_layout:
                fpart = fpart * mult + (x >> shift & mask)
            return Decimal(template % (sign, ipart, fpart))

    def encode(value: Any) -> bytes:
        try:
            d = value if isinstance(value, Decimal) else Decimal(value)
        except (ArithmeticError, TypeError, ValueError):
            raise ValueError(f"column @{index + 1}: {value!r} is not a decimal") from None
        if not d.is_finite():
            raise ValueError(f"column @{index + 1}: {value!r} is not a finite decimal")
        sign, digits, exponent = d.as_tuple()
        assert isinstance(exponent, int)
        n = int("".join(map(str, digits)) or "0")
        shift = exponent + scale
        if shift >= 0:
            n *= 10**shift
        else:
            n, rest = divmod(n, 10**-shift)
            if rest:
                raise ValueError(f"column @{index + 1}: {value!r} has more than {scale} fraction digits")
        ipart, fpart = divmod(n, 10**scale)
        if ipart >= 10**intg:
            raise ValueError(f"column @{index + 1}: {value!r} does not fit DECIMAL({precision},{scale})")
        x = 0
        remaining = intg
        for digits_n, nbytes in int_groups:
            remaining -= digits_n
            x = x << (8 * nbytes) | ipart // 10**remaining % 10**digits_n
        remaining = scale
        for digits_n, nbytes in frac_groups:
            remaining -= digits_n
            x = x << (8 * nbytes) | fpart // 10**remaining % 10**digits_n
        if sign:
            x ^= all_ones
        return (x ^ sign_bit).to_bytes(size, "big")

    op = _op(_OP_DECIMAL, size, a=precision, b=scale, obj=conv)
    return ColumnCodec(index, encode, op, fmt=f"{size}s", size=size, conv=conv)


@functools.lru_cache(maxsize=256)
def _decimal_unpacker(precision: int, scale: int) -> Callable[[bytes], Decimal]:
    return _decimal_codec(0, precision << 8 | scale).conv  # type: ignore[return-value]


def decimal_value(data: bytes, precision: int, scale: int) -> Decimal:
    """The packed DECIMAL(precision, scale) at the start of ``data`` (User_var values, rows):
    the one Python unpacker, the row codec's."""
    return _decimal_unpacker(precision, scale)(bytes(data[: decimal_size(precision, scale)]))


def decimal_str(value: Decimal) -> bytes:
    """A DECIMAL value as the server prints it (``decimal2string``): every fraction digit,
    and a negative zero without fraction digits printed as plain 0."""
    if not value and value.as_tuple().exponent == 0:
        return b"0"
    return format(value, "f").encode()


def decimal_text(data: bytes, precision: int, scale: int) -> bytes:
    """A packed DECIMAL as the server prints it (``bin2decimal`` + ``decimal2string``);
    "0" for a declaration or data no server writes."""
    if not 0 < precision <= 65 or scale > precision or len(data) < decimal_size(precision, scale):
        return b"0"
    return decimal_str(decimal_value(data, precision, scale))


def bit_image(value: int, size: int) -> bytes:
    """A BIT value's packed image: ``size`` bytes, big-endian (``Field_bit::pack``)."""
    return value.to_bytes(size, "big")


def uint_image(value: int, size: int) -> bytes:
    """An unsigned value as ``size`` little-endian bytes (the packed image of ENUM and SET)."""
    return value.to_bytes(size, "little")


def geometry_parts(value: bytes) -> tuple[int, bytes]:
    """A GEOMETRY value (MariaDB's internal form): ``(SRID, WKB)``."""
    return int.from_bytes(value[:4], "little"), value[4:]


def _bit_codec(index: int, meta: int) -> ColumnCodec:
    nbits = C.bit_width(meta)
    size = (nbits + 7) // 8

    def encode(value: Any) -> bytes:
        if not isinstance(value, int) or not 0 <= value < 1 << (8 * size):
            raise ValueError(f"column @{index + 1}: {value!r} does not fit BIT({nbits})")
        return bit_image(value, size)

    def conv(b: bytes) -> int:
        return int.from_bytes(b, "big")

    op = _op(_OP_UINT_BE, size) if size <= 8 else _op(_OP_CONV, size, obj=conv)
    return ColumnCodec(index, encode, op, fmt=f"{size}s", size=size, conv=conv)


def _le_uint_codec(index: int, size: int, what: str) -> ColumnCodec:
    def encode(value: Any) -> bytes:
        if not isinstance(value, int) or not 0 <= value < 1 << (8 * size):
            raise ValueError(f"column @{index + 1}: {value!r} does not fit a {size}-byte {what}")
        return uint_image(value, size)

    op = _op(_OP_INT, size)  # ENUM 1..2, SET 1..8 bytes
    code = {1: "B", 2: "H", 4: "I", 8: "Q"}.get(size)
    if code is not None:
        return ColumnCodec(index, encode, op, fmt=code, size=size)
    return ColumnCodec(index, encode, op, fmt=f"{size}s", size=size, conv=lambda b: int.from_bytes(b, "little"))


def _text_decoder(codec: str) -> Callable[[bytes], str | bytes]:
    def decode(data: bytes) -> str | bytes:
        try:
            return data.decode(codec, "surrogateescape")
        except UnicodeDecodeError:  # e.g. odd-length UCS-2: no lossless text form
            return data

    return decode


def _var_codec(index: int, prefix: int, text: str | None, codec: str | None, what: str) -> ColumnCodec:
    """Length-prefixed value (VARCHAR, CHAR, BLOB, TEXT, GEOMETRY): ``prefix``-byte LE length, then data.

    ``text``: the codec values decode with (None: keep bytes); ``codec``: the one ``encode`` uses for str.
    """
    capacity = 1 << (8 * prefix)
    decode = _text_decoder(text) if text is not None else None

    def overrun(buf: bytes, pos: int, length: int) -> TruncatedError:
        return TruncatedError(
            f"truncated {what} value of column @{index + 1}",
            offset=pos,
            expected=f"{prefix}-byte length and {length} bytes, {len(buf) - pos} left",
        )

    if prefix == 1:

        def read(buf: bytes, pos: int) -> tuple[bytes, int]:
            end = pos + 1 + buf[pos]
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 1)
            return buf[pos + 1 : end], end

    elif prefix == 2:

        def read(buf: bytes, pos: int) -> tuple[bytes, int]:
            end = pos + 2 + U16.unpack_from(buf, pos)[0]
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 2)
            return buf[pos + 2 : end], end

    elif prefix == 3:

        def read(buf: bytes, pos: int) -> tuple[bytes, int]:
            end = pos + 3 + (buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16)
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 3)
            return buf[pos + 3 : end], end

    else:

        def read(buf: bytes, pos: int) -> tuple[bytes, int]:
            end = pos + 4 + U32.unpack_from(buf, pos)[0]
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 4)
            return buf[pos + 4 : end], end

    if decode is None and prefix == 1:  # the common VARCHAR/CHAR cases, inlined

        def step(buf: bytes, pos: int, out: list) -> int:
            end = pos + 1 + buf[pos]
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 1)
            out.append(buf[pos + 1 : end])
            return end

    elif decode is None and prefix == 2:

        def step(buf: bytes, pos: int, out: list) -> int:
            end = pos + 2 + (buf[pos] | buf[pos + 1] << 8)
            if end > len(buf):
                raise overrun(buf, pos, end - pos - 2)
            out.append(buf[pos + 2 : end])
            return end

    elif decode is None:

        def step(buf: bytes, pos: int, out: list) -> int:
            value, end = read(buf, pos)
            out.append(value)
            return end

    else:

        def step(buf: bytes, pos: int, out: list) -> int:
            value, end = read(buf, pos)
            out.append(decode(value))
            return end

    def encode(value: Any) -> bytes:
        if isinstance(value, str):
            data = value.encode(codec or "utf-8", "surrogateescape")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            raise TypeError(f"column @{index + 1}: {value!r} is not str or bytes")
        if len(data) >= capacity:
            raise ValueError(f"column @{index + 1}: {len(data)} bytes do not fit a {prefix}-byte length")
        return len(data).to_bytes(prefix, "little") + data

    return ColumnCodec(index, encode, _op(_OP_VAR, prefix, obj=text), step=step)


def _null_codec(index: int) -> ColumnCodec:
    def step(buf: bytes, pos: int, out: list) -> int:
        out.append(None)
        return pos

    def encode(value: Any) -> bytes:
        if value is not None:
            raise ValueError(f"column @{index + 1}: a NULL-type column holds only None")
        return b""

    return ColumnCodec(index, encode, _op(_OP_NONE), step=step)


def _failing_codec(index: int, error: DecodeError) -> ColumnCodec:
    """A column this codec cannot read: raise when a row actually holds a value for it."""

    def step(buf: bytes, pos: int, out: list) -> int:
        raise DecodeError(error.reason, offset=pos, expected=error.expected)

    def encode(value: Any) -> bytes:
        raise ValueError(f"column @{index + 1}: {error.reason}")

    return ColumnCodec(index, encode, _op(_OP_FAIL), step=step)


_TEXT_TYPES = frozenset((C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_BLOB))
_BLOB_TYPES = frozenset(
    (
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_BLOB_COMPRESSED,
        C.MYSQL_TYPE_TINY_BLOB,
        C.MYSQL_TYPE_MEDIUM_BLOB,
        C.MYSQL_TYPE_LONG_BLOB,
        C.MYSQL_TYPE_GEOMETRY,
        C.MYSQL_TYPE_JSON,
    )
)


def column_codec(index: int, column_type: int, meta: int, unsigned: bool, codec: str | None, raw: bool) -> ColumnCodec:
    """Compile the codec of one column (``codec``: Python text codec, None = bytes)."""
    rtype = C.real_type(column_type, meta)
    size = C.INT_SIZES.get(rtype)
    if size is not None:
        return _int_codec(index, size, not unsigned or raw)
    text = codec if not raw and rtype in _TEXT_TYPES else None
    if rtype in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_VARCHAR_COMPRESSED):
        return _var_codec(index, 1 if meta < 256 else 2, text, codec, "VARCHAR")
    if rtype == C.MYSQL_TYPE_STRING:
        return _var_codec(index, 1 if C.string_max_length(meta) < 256 else 2, text, codec, "CHAR")
    if rtype in _BLOB_TYPES:
        if not 1 <= meta <= 4:
            error = DecodeError(f"column @{index + 1}: BLOB length size {meta}", expected="metadata 1..4")
            return _failing_codec(index, error)
        return _var_codec(index, meta, text, codec, "BLOB")
    factory = _FIXED_FACTORIES.get(rtype)
    if factory is None:
        error = DecodeError(
            f"column @{index + 1}: cannot decode column type {column_type} (meta {meta})",
            expected="a supported MYSQL_TYPE_* code",
        )
        return _failing_codec(index, error)
    try:
        return factory(index, meta)
    except DecodeError as error:
        return _failing_codec(index, error)


def _enum_codec(index: int, meta: int) -> ColumnCodec:
    size = meta & 0xFF
    if size not in (1, 2):
        raise DecodeError(f"column @{index + 1}: ENUM pack length {size}", expected="1 or 2")
    return _le_uint_codec(index, size, "ENUM")


def _set_codec(index: int, meta: int) -> ColumnCodec:
    size = meta & 0xFF
    if not 1 <= size <= 8:
        raise DecodeError(f"column @{index + 1}: SET pack length {size}", expected="1..8")
    return _le_uint_codec(index, size, "SET")


_FIXED_FACTORIES: dict[int, Callable[[int, int], ColumnCodec]] = {
    C.MYSQL_TYPE_FLOAT: lambda i, m: _float_codec(i, False),
    C.MYSQL_TYPE_DOUBLE: lambda i, m: _float_codec(i, True),
    C.MYSQL_TYPE_YEAR: lambda i, m: _year_codec(i),
    C.MYSQL_TYPE_DATE: lambda i, m: _date_codec(i),
    C.MYSQL_TYPE_NEWDATE: lambda i, m: _date_codec(i),
    C.MYSQL_TYPE_TIME: lambda i, m: _old_time_codec(i),
    C.MYSQL_TYPE_DATETIME: lambda i, m: _old_datetime_codec(i),
    C.MYSQL_TYPE_TIMESTAMP: lambda i, m: _old_timestamp_codec(i),
    C.MYSQL_TYPE_TIMESTAMP2: _timestamp2_codec,
    C.MYSQL_TYPE_DATETIME2: _datetime2_codec,
    C.MYSQL_TYPE_TIME2: _time2_codec,
    C.MYSQL_TYPE_NEWDECIMAL: _decimal_codec,
    C.MYSQL_TYPE_BIT: _bit_codec,
    C.MYSQL_TYPE_ENUM: _enum_codec,
    C.MYSQL_TYPE_SET: _set_codec,
    C.MYSQL_TYPE_NULL: lambda i, m: _null_codec(i),
}
