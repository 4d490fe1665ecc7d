"""Statement events: Query (and its status variables), Query_compressed, Intvar, Rand, User_var."""

from __future__ import annotations

import struct
import zlib
from decimal import Decimal
from typing import Any

from ...errors import DecodeError, TruncatedError
from .header import (
    LOAD_EVENT,
    EXEC_LOAD_EVENT,
    CREATE_FILE_EVENT,
    APPEND_BLOCK_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    EXECUTE_LOAD_QUERY_EVENT,
    DecodeContext,
    Decoder,
    Event,
    INTVAR_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    USER_VAR_EVENT,
)
from ..primitives import Buffer, F64, need, need_within, U16, U32, U64, U8
from ..rows.packed import decimal_size, decimal_value

# Query status variable codes (sql/log_event.h Q_*).
Q_FLAGS2_CODE = 0
Q_SQL_MODE_CODE = 1
Q_CATALOG_CODE = 2
Q_AUTO_INCREMENT = 3
Q_CHARSET_CODE = 4
Q_TIME_ZONE_CODE = 5
Q_CATALOG_NZ_CODE = 6
Q_LC_TIME_NAMES_CODE = 7
Q_CHARSET_DATABASE_CODE = 8
Q_TABLE_MAP_FOR_UPDATE_CODE = 9
Q_MASTER_DATA_WRITTEN_CODE = 10
Q_INVOKER = 11
Q_HRNOW = 128
Q_XID = 129
Q_GTID_FLAGS3 = 130
Q_CHARACTER_SET_COLLATIONS = 131

StatusValue = int | bytes | tuple[int, ...] | tuple[bytes, bytes]


def _decode_status_vars(buf: Buffer, pos: int, end: int) -> list[tuple[int, StatusValue]]:
    """Parse Query status variables in order; an unknown code keeps the rest raw (code -1)."""
    out: list[tuple[int, StatusValue]] = []
    while pos < end:
        code = buf[pos]
        start = pos
        pos += 1
        try:
            if code == Q_FLAGS2_CODE or code == Q_MASTER_DATA_WRITTEN_CODE:
                need(buf, pos, 4, "Query status variable")
                out.append((code, U32.unpack_from(buf, pos)[0]))
                pos += 4
            elif code == Q_SQL_MODE_CODE or code == Q_TABLE_MAP_FOR_UPDATE_CODE or code == Q_XID:
                need(buf, pos, 8, "Query status variable")
                out.append((code, U64.unpack_from(buf, pos)[0]))
                pos += 8
            elif code == Q_AUTO_INCREMENT:
                need(buf, pos, 4, "Query status variable")
                out.append((code, struct.unpack_from("<HH", buf, pos)))
                pos += 4
            elif code == Q_CHARSET_CODE:
                need(buf, pos, 6, "Query status variable")
                out.append((code, struct.unpack_from("<HHH", buf, pos)))
                pos += 6
            elif code in (Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE):
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n, "Query status variable")
                out.append((code, bytes(buf[pos + 1 : pos + 1 + n])))
                pos += 1 + n
            elif code == Q_CATALOG_CODE:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n + 1, "Query status variable")
                out.append((code, bytes(buf[pos + 1 : pos + 1 + n])))
                pos += 2 + n
            elif code == Q_LC_TIME_NAMES_CODE or code == Q_CHARSET_DATABASE_CODE:
                need(buf, pos, 2, "Query status variable")
                out.append((code, U16.unpack_from(buf, pos)[0]))
                pos += 2
            elif code == Q_INVOKER:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, n + 1, "Query status variable")
                user = bytes(buf[pos + 1 : pos + 1 + n])
                pos += 1 + n
                m = buf[pos]
                need(buf, pos + 1, m, "Query status variable")
                host = bytes(buf[pos + 1 : pos + 1 + m])
                pos += 1 + m
                out.append((code, (user, host)))
            elif code == Q_HRNOW:
                need(buf, pos, 3, "Query status variable")
                out.append((code, buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16))
                pos += 3
            elif code == Q_GTID_FLAGS3:
                need(buf, pos, 1, "Query status variable")
                out.append((code, buf[pos]))
                pos += 1
            elif code == Q_CHARACTER_SET_COLLATIONS:
                need(buf, pos, 1, "Query status variable")
                n = buf[pos]
                need(buf, pos + 1, 4 * n, "Query status variable")
                out.append((code, struct.unpack_from("<" + "H" * (2 * n), buf, pos + 1)))
                pos += 1 + 4 * n
            else:
                # The server stops parsing at an unknown code too; keep the rest verbatim.
                out.append((-1, bytes(buf[start:end])))
                return out
        except TruncatedError:
            raise DecodeError("Query status variables overrun their length", offset=start, expected=f"status block ending at {end}") from None
    if pos != end:
        raise DecodeError("Query status variables overrun their length", offset=pos, expected=f"status block ending at {end}")
    return out


def _encode_status_vars(status: list[tuple[int, StatusValue]]) -> bytes:
    out = bytearray()
    for code, value in status:
        if code == -1:
            out += value  # type: ignore[operator]
            continue
        out.append(code)
        if code in (Q_FLAGS2_CODE, Q_MASTER_DATA_WRITTEN_CODE):
            out += U32.pack(value)  # type: ignore[arg-type]
        elif code in (Q_SQL_MODE_CODE, Q_TABLE_MAP_FOR_UPDATE_CODE, Q_XID):
            out += U64.pack(value)  # type: ignore[arg-type]
        elif code == Q_AUTO_INCREMENT:
            out += struct.pack("<HH", *value)  # type: ignore[misc]
        elif code == Q_CHARSET_CODE:
            out += struct.pack("<HHH", *value)  # type: ignore[misc]
        elif code in (Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE):
            out.append(len(value))  # type: ignore[arg-type]
            out += value  # type: ignore[operator]
        elif code == Q_CATALOG_CODE:
            out.append(len(value))  # type: ignore[arg-type]
            out += value + b"\0"  # type: ignore[operator]
        elif code in (Q_LC_TIME_NAMES_CODE, Q_CHARSET_DATABASE_CODE):
            out += U16.pack(value)  # type: ignore[arg-type]
        elif code == Q_INVOKER:
            user, host = value  # type: ignore[misc]
            out += bytes((len(user),)) + user + bytes((len(host),)) + host
        elif code == Q_HRNOW:
            out += int(value).to_bytes(3, "little")  # type: ignore[arg-type]
        elif code == Q_GTID_FLAGS3:
            out.append(value)  # type: ignore[arg-type]
        elif code == Q_CHARACTER_SET_COLLATIONS:
            out.append(len(value) // 2)  # type: ignore[arg-type]
            out += struct.pack("<" + "H" * len(value), *value)  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown Query status variable code {code}")
    return bytes(out)


def compress_block(data: bytes) -> bytes:
    """MariaDB's compressed-event block: 0x80|L, L big-endian length bytes, zlib stream."""
    n = len(data)
    width = 1 if n < 1 << 8 else 2 if n < 1 << 16 else 3 if n < 1 << 24 else 4
    return bytes((0x80 | width,)) + n.to_bytes(width, "big") + zlib.compress(data)


def decompress_block(buf: Buffer, pos: int, end: int) -> bytes:
    """Inverse of :func:`compress_block`; a bad block raises DecodeError at its offset."""
    need(buf, pos, 1, "compressed block")
    head = buf[pos]
    width = head & 0x07
    if not head & 0x80 or not 1 <= width <= 4:
        raise DecodeError(f"bad compressed block header 0x{head:02x}", offset=pos, expected="0x80 | length width 1..4")
    need(buf, pos + 1, width, "compressed block")
    size = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
    # Inflate at most the declared size (zlib grows its output as it goes, so a size that
    # claims gigabytes allocates nothing until the stream delivers); one byte more tells a
    # stream that inflates past its size, which MariaDB's uncompress() refuses too.
    try:
        dec = zlib.decompressobj()
        data = dec.decompress(bytes(buf[pos + 1 + width : end]), size + 1)
        complete = dec.eof
    except zlib.error as exc:
        raise DecodeError(f"compressed block does not inflate: {exc}", offset=pos, expected="a zlib stream") from None
    if len(data) > size:
        raise DecodeError(
            "compressed block inflates past its declared size", offset=pos, expected=f"{size} bytes"
        )
    if len(data) != size or not complete:
        raise DecodeError(
            f"compressed block inflates to {len(data)} bytes{'' if complete else ' and does not end'}",
            offset=pos,
            expected=f"{size} bytes in a complete zlib stream",
        )
    return data


class QueryEvent(Event):
    """Query (2): a statement with its session context (status variables)."""

    type_code = QUERY_EVENT
    __slots__ = ("thread_id", "exec_time", "error_code", "status_vars", "database", "query", "compressed_block")

    def __init__(
        self,
        *,
        query: bytes,
        database: bytes = b"",
        thread_id: int = 0,
        exec_time: int = 0,
        error_code: int = 0,
        status_vars: list[tuple[int, StatusValue]] | None = None,
        compressed_block: bytes | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.thread_id = thread_id
        self.exec_time = exec_time
        self.error_code = error_code
        self.status_vars = status_vars if status_vars is not None else []
        self.database = database
        self.query = query
        # Compressed variant only: the stored block, so re-encoding is byte-exact.
        self.compressed_block = compressed_block

    def status(self, code: int) -> StatusValue | None:
        """Value of status variable ``code`` or None when absent."""
        for c, value in self.status_vars:
            if c == code:
                return value
        return None

    def _query_bytes(self) -> bytes:
        return self.query

    def encode_body(self) -> bytes:
        status = _encode_status_vars(self.status_vars)
        return (
            struct.pack("<IIBHH", self.thread_id, self.exec_time, len(self.database), self.error_code, len(status))
            + status
            + self.database
            + b"\0"
            + self._query_bytes()
        )


class QueryCompressedEvent(QueryEvent):
    """Query_compressed (165): a Query whose text is a zlib block."""

    type_code = QUERY_COMPRESSED_EVENT
    __slots__ = ()

    def _query_bytes(self) -> bytes:
        if self.compressed_block is None:
            self.compressed_block = compress_block(self.query)
        return self.compressed_block


INTVAR_LAST_INSERT_ID = 1
INTVAR_INSERT_ID = 2


class IntvarEvent(Event):
    """Intvar (5): LAST_INSERT_ID (1) or INSERT_ID (2) for the next statement."""

    type_code = INTVAR_EVENT
    __slots__ = ("kind", "value")

    def __init__(self, *, kind: int, value: int, **header: int) -> None:
        super().__init__(**header)
        self.kind = kind
        self.value = value

    def encode_body(self) -> bytes:
        return U8.pack(self.kind) + U64.pack(self.value)


class RandEvent(Event):
    """Rand (13): the RAND() seeds of the next statement."""

    type_code = RAND_EVENT
    __slots__ = ("seed1", "seed2")

    def __init__(self, *, seed1: int, seed2: int, **header: int) -> None:
        super().__init__(**header)
        self.seed1 = seed1
        self.seed2 = seed2

    def encode_body(self) -> bytes:
        return U64.pack(self.seed1) + U64.pack(self.seed2)


USER_VAR_STRING = 0
USER_VAR_REAL = 1
USER_VAR_INT = 2
USER_VAR_ROW = 3
USER_VAR_DECIMAL = 4
USER_VAR_UNSIGNED_F = 1


class UserVarEvent(Event):
    """User_var (14): a user variable the next statement uses; ``value`` stays raw bytes."""

    type_code = USER_VAR_EVENT
    __slots__ = ("var_name", "is_null", "value_type", "charset", "value", "var_flags")

    def __init__(
        self,
        *,
        var_name: bytes,
        is_null: bool = False,
        value_type: int = USER_VAR_STRING,
        charset: int = 0,
        value: bytes = b"",
        var_flags: int | None = None,
        **header: int,
    ) -> None:
        super().__init__(**header)
        self.var_name = var_name
        self.is_null = is_null
        self.value_type = value_type
        self.charset = charset
        self.value = value
        self.var_flags = var_flags

    def decoded_value(self) -> None | float | int | Decimal | bytes:
        """The variable's value: None (NULL), float (REAL), int (INT, signed unless the
        unsigned flag is set), Decimal (DECIMAL) or the raw bytes of a STRING (in
        ``charset``).  The one decoder of User_var values; printers format it."""
        if self.is_null:
            return None
        val = self.value
        kind = self.value_type
        if kind == USER_VAR_REAL:
            return F64.unpack_from(val.ljust(8, b"\0"))[0]
        if kind == USER_VAR_INT:
            number = int.from_bytes(val[:8].ljust(8, b"\0"), "little")
            if not (self.var_flags or 0) & USER_VAR_UNSIGNED_F and number >= 1 << 63:
                number -= 1 << 64
            return number
        if kind == USER_VAR_DECIMAL:
            precision, scale = (val[0], val[1]) if len(val) >= 2 else (0, 0)
            if not 0 < precision <= 65 or scale > precision or len(val) - 2 < decimal_size(precision, scale):
                return Decimal(0)
            return decimal_value(val[2:], precision, scale)
        return val

    def encode_body(self) -> bytes:
        out = U32.pack(len(self.var_name)) + self.var_name + U8.pack(1 if self.is_null else 0)
        if self.is_null:
            return out
        out += U8.pack(self.value_type) + U32.pack(self.charset) + U32.pack(len(self.value)) + self.value
        if self.var_flags is not None:
            out += U8.pack(self.var_flags)
        return out


_QUERY_POST_V3 = struct.Struct("<IIBH")
_QUERY_HEAD = struct.Struct("<IIBHH")
_RAND = struct.Struct("<QQ")

def rand_seeds(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """A Rand body from ``pos`` to ``end``: ``(seed1, seed2)``."""
    need_within(pos, 16, end, "Rand event body")
    return _RAND.unpack_from(buf, pos)  # type: ignore[return-value]


def query_sections(buf: Buffer, pos: int, post: int, end: int) -> tuple[int, int, int, bytes, bytes, int] | None:
    """A Query event's body from ``pos`` (post-header of ``post`` >= 13 bytes) to ``end``, checked
    only for its layout: ``(thread_id, exec_time, error_code, status variables' bytes, database,
    offset of the query text)``, or None where the database is not NUL-terminated inside it."""
    thread_id, exec_time, db_len, error_code, status_len = _QUERY_HEAD.unpack_from(buf, pos)
    s = pos + post
    d = s + status_len
    q = d + db_len + 1
    if q <= end and buf[q - 1] == 0:
        return thread_id, exec_time, error_code, bytes(buf[s:d]), bytes(buf[d : q - 1]), q
    return None


def query_status_bytes(buf: Buffer, pos: int, post: int) -> bytes:
    """The status variables' bytes of a Query whose post-header (``post`` >= 13 bytes) is at ``pos``."""
    s = pos + post
    return bytes(buf[s : s + _QUERY_HEAD.unpack_from(buf, pos)[4]])


def intvar_fields(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """An Intvar body from ``pos`` to ``end``: ``(kind, value)`` with the value as the stored
    unsigned 64 bits."""
    need_within(pos, 9, end, "Intvar event body")
    return buf[pos], U64.unpack_from(buf, pos + 1)[0]


#: Execute_load_query's dup_handling values (sql/log_event.h enum_load_dup_handling).
LOAD_DUP_ERROR = 0
LOAD_DUP_IGNORE = 1
LOAD_DUP_REPLACE = 2
_EXEC_LOAD = struct.Struct("<IIIB")


class LoadBlockEvent(Event):
    """Begin_load_query (17) or Append_block (9): a block of a LOAD DATA file, by file id."""

    __slots__ = ("type_code", "file_id", "block")

    def __init__(self, type_code: int, *, file_id: int, block: bytes, **header: int) -> None:
        super().__init__(**header)
        self.type_code = type_code  # type: ignore[misc]
        self.file_id = file_id
        self.block = block

    def encode_body(self) -> bytes:
        return U32.pack(self.file_id) + self.block


class ExecuteLoadQueryEvent(QueryEvent):
    """Execute_load_query (18): a LOAD DATA statement over the file the load blocks built;
    ``fn_pos_start``/``fn_pos_end`` delimit the file name clause inside ``query``."""

    type_code = EXECUTE_LOAD_QUERY_EVENT
    __slots__ = ("file_id", "fn_pos_start", "fn_pos_end", "dup_handling")

    def __init__(
        self, *, file_id: int, fn_pos_start: int, fn_pos_end: int, dup_handling: int = LOAD_DUP_ERROR, **fields: Any
    ) -> None:
        super().__init__(**fields)
        self.file_id = file_id
        self.fn_pos_start = fn_pos_start
        self.fn_pos_end = fn_pos_end
        self.dup_handling = dup_handling

    def encode_body(self) -> bytes:
        body = super().encode_body()
        return body[:13] + _EXEC_LOAD.pack(self.file_id, self.fn_pos_start, self.fn_pos_end, self.dup_handling) + body[13:]


#: sql_ex option flags of pre-5.0 LOAD DATA events (sql/log_event.h).
LOAD_OPT_ENCLOSED_F = 0x02
LOAD_REPLACE_F = 0x04
LOAD_IGNORE_F = 0x08
_LOAD_HEADER = struct.Struct("<IIIBBI")


class CreateFileEvent(Event):
    """Create_file (8): a pre-5.0 LOAD DATA statement (Load_log_event layout, new sql_ex
    format) with the file's first block; Append_block and Exec_load follow by file id."""

    type_code = CREATE_FILE_EVENT
    __slots__ = (
        "thread_id", "exec_time", "skip_lines", "field_term", "enclosed", "line_term", "line_start",
        "escaped", "opt_flags", "fields", "table", "database", "file_name", "file_id", "block",
    )

    def __init__(self, *, file_id: int, file_name: bytes, block: bytes, **fields: Any) -> None:
        header = {k: fields.pop(k) for k in ("timestamp", "server_id", "log_pos", "flags") if k in fields}
        super().__init__(**header)
        self.file_id = file_id
        self.file_name = file_name
        self.block = block
        self.thread_id: int = fields["thread_id"]
        self.exec_time: int = fields["exec_time"]
        self.skip_lines: int = fields["skip_lines"]
        self.field_term: bytes = fields["field_term"]
        self.enclosed: bytes = fields["enclosed"]
        self.line_term: bytes = fields["line_term"]
        self.line_start: bytes = fields["line_start"]
        self.escaped: bytes = fields["escaped"]
        self.opt_flags: int = fields["opt_flags"]
        self.fields: list[bytes] = fields["fields"]
        self.table: bytes = fields["table"]
        self.database: bytes = fields["database"]

    def encode_body(self) -> bytes:
        out = _LOAD_HEADER.pack(
            self.thread_id, self.exec_time, self.skip_lines, len(self.table), len(self.database), len(self.fields)
        ) + U32.pack(self.file_id)
        for text in (self.field_term, self.enclosed, self.line_term, self.line_start, self.escaped):
            out += U8.pack(len(text)) + text
        out += U8.pack(self.opt_flags) + bytes(len(f) for f in self.fields)
        out += b"".join(f + b"\0" for f in self.fields)
        return out + self.table + b"\0" + self.database + b"\0" + self.file_name + b"\0" + self.block


class ExecLoadEvent(Event):
    """Exec_load (10): run the pre-5.0 LOAD DATA whose Create_file has ``file_id``."""

    type_code = EXEC_LOAD_EVENT
    __slots__ = ("file_id",)

    def __init__(self, *, file_id: int, **header: int) -> None:
        super().__init__(**header)
        self.file_id = file_id

    def encode_body(self) -> bytes:
        return U32.pack(self.file_id)


def _dec_query(
    buf: Buffer,
    p: int,
    end: int,
    hdr: dict[str, int],
    ctx: DecodeContext,
    compressed: bool = False,
    type_code: int = QUERY_EVENT,
) -> Event:
    post = ctx.post_header_len(QUERY_COMPRESSED_EVENT if compressed else type_code)
    need(buf, p, max(post, 11), "Query post-header")
    thread_id, exec_time, db_len, error_code = _QUERY_POST_V3.unpack_from(buf, p)
    # Binlog v3 (MySQL 4.x) Query events have no status variables: an 11-byte post-header.
    status_len = U16.unpack_from(buf, p + 11)[0] if post >= 13 else 0
    s = p + post
    need(buf, s, status_len + db_len + 1, "Query status variables and database")
    status = _decode_status_vars(buf, s, s + status_len)
    d = s + status_len
    if buf[d + db_len] != 0:
        raise DecodeError("Query database name is not NUL-terminated", offset=d + db_len, expected="0x00")
    q = d + db_len + 1
    kwargs = dict(
        thread_id=thread_id,
        exec_time=exec_time,
        error_code=error_code,
        status_vars=status,
        database=bytes(buf[d : d + db_len]),
        **hdr,
    )
    if compressed:
        block = bytes(buf[q:end])
        return QueryCompressedEvent(query=decompress_block(buf, q, end), compressed_block=block, **kwargs)
    return QueryEvent(query=bytes(buf[q:end]), **kwargs)


def _dec_execute_load_query(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    post = ctx.post_header_len(EXECUTE_LOAD_QUERY_EVENT)
    need(buf, p, max(post, 13 + _EXEC_LOAD.size), "Execute_load_query post-header")
    file_id, start, stop, dup = _EXEC_LOAD.unpack_from(buf, p + 13)
    query = _dec_query(buf, p, end, hdr, ctx, type_code=EXECUTE_LOAD_QUERY_EVENT)
    assert isinstance(query, QueryEvent)
    return ExecuteLoadQueryEvent(
        file_id=file_id,
        fn_pos_start=start,
        fn_pos_end=stop,
        dup_handling=dup,
        query=query.query,
        database=query.database,
        thread_id=query.thread_id,
        exec_time=query.exec_time,
        error_code=query.error_code,
        status_vars=query.status_vars,
        **hdr,
    )


def _dec_load_block(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext, type_code: int) -> Event:
    need(buf, p, 4, "load block file id")
    return LoadBlockEvent(type_code, file_id=U32.unpack_from(buf, p)[0], block=bytes(buf[p + 4 : end]), **hdr)


def _dec_query_compressed(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    return _dec_query(buf, p, end, hdr, ctx, compressed=True)


def _dec_intvar(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 9, "Intvar body")
    return IntvarEvent(kind=buf[p], value=U64.unpack_from(buf, p + 1)[0], **hdr)


def _dec_rand(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 16, "Rand body")
    return RandEvent(seed1=U64.unpack_from(buf, p)[0], seed2=U64.unpack_from(buf, p + 8)[0], **hdr)


def _dec_user_var(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "User_var name length")
    n = U32.unpack_from(buf, p)[0]
    need(buf, p + 4, n + 1, "User_var name")
    name = bytes(buf[p + 4 : p + 4 + n])
    q = p + 4 + n
    if buf[q]:
        return UserVarEvent(var_name=name, is_null=True, **hdr)
    need(buf, q + 1, 9, "User_var value header")
    value_type = buf[q + 1]
    charset, vlen = struct.unpack_from("<II", buf, q + 2)
    v = q + 10
    if v + vlen > end:
        raise TruncatedError("truncated User_var value", offset=v, expected=f"{vlen} bytes")
    flags = buf[v + vlen] if v + vlen < end else None
    return UserVarEvent(
        var_name=name, value_type=value_type, charset=charset, value=bytes(buf[v : v + vlen]), var_flags=flags, **hdr
    )


def _cstring(data: bytes, pos: int, base: int, what: str) -> tuple[bytes, int]:
    """The NUL-terminated string at ``pos`` of ``data`` (``base``: where ``data`` starts in the
    event buffer, for error offsets); searched in place, never copying the rest."""
    stop = data.find(b"\0", pos)
    if stop < 0:
        raise TruncatedError(f"truncated {what}", offset=base + pos, expected="a NUL-terminated string")
    return data[pos:stop], stop + 1


def _dec_create_file(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    load_post = ctx.post_header_len(LOAD_EVENT) or _LOAD_HEADER.size - 4
    need(buf, p, load_post + 4, "Create_file post-header")
    thread_id, exec_time, skip_lines, table_len, db_len, num_fields = _LOAD_HEADER.unpack_from(buf, p)
    file_id = U32.unpack_from(buf, p + load_post)[0]
    q = p + load_post + ctx.post_header_len(CREATE_FILE_EVENT)
    texts = []
    for _ in range(5):
        need(buf, q, 1, "LOAD DATA options")
        n = buf[q]
        need(buf, q + 1, n, "LOAD DATA options")
        texts.append(bytes(buf[q + 1 : q + 1 + n]))
        q += 1 + n
    need(buf, q, 1 + num_fields, "LOAD DATA field lengths")
    opt_flags = buf[q]
    q += 1 + num_fields
    # One copy of the rest: a field name per NUL (copying the rest per name was quadratic).
    rest, t = bytes(buf[q:end]), 0
    fields = []
    for _ in range(num_fields):
        name, t = _cstring(rest, t, q, "LOAD DATA field name")
        fields.append(name)
    table, t = _cstring(rest, t, q, "LOAD DATA table name")
    database, t = _cstring(rest, t, q, "LOAD DATA database name")
    file_name, t = _cstring(rest, t, q, "LOAD DATA file name")
    return CreateFileEvent(
        file_id=file_id,
        file_name=file_name,
        block=rest[t:],
        thread_id=thread_id,
        exec_time=exec_time,
        skip_lines=skip_lines,
        field_term=texts[0],
        enclosed=texts[1],
        line_term=texts[2],
        line_start=texts[3],
        escaped=texts[4],
        opt_flags=opt_flags,
        fields=fields,
        table=table,
        database=database,
        **hdr,
    )


def _dec_exec_load(buf: Buffer, p: int, end: int, hdr: dict[str, int], ctx: DecodeContext) -> Event:
    need(buf, p, 4, "Exec_load file id")
    return ExecLoadEvent(file_id=U32.unpack_from(buf, p)[0], **hdr)


#: Decoders of this room's event types, merged by :func:`mariabinlog.codec.events.decode_event`.
DECODERS: dict[int, Decoder] = {
    QUERY_EVENT: _dec_query,
    QUERY_COMPRESSED_EVENT: _dec_query_compressed,
    INTVAR_EVENT: _dec_intvar,
    RAND_EVENT: _dec_rand,
    USER_VAR_EVENT: _dec_user_var,
    EXECUTE_LOAD_QUERY_EVENT: _dec_execute_load_query,
    BEGIN_LOAD_QUERY_EVENT: lambda b, p, e, h, c: _dec_load_block(b, p, e, h, c, BEGIN_LOAD_QUERY_EVENT),
    APPEND_BLOCK_EVENT: lambda b, p, e, h, c: _dec_load_block(b, p, e, h, c, APPEND_BLOCK_EVENT),
    CREATE_FILE_EVENT: _dec_create_file,
    EXEC_LOAD_EVENT: _dec_exec_load,
}
