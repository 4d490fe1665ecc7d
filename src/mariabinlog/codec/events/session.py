"""The session context a Query event's status variables describe, as ``SET`` assignments.

Pure: decoded status variables (``QueryEvent.status_vars`` as a mapping) in, session
variable assignments out.  This is the one definition of which session variable each status
variable sets, with which value text and default: the printer (``tools/printer/query.py``,
``mariadb-binlog``'s ``print_query_header``) and the replica (``replication/apply.py``) both
render from it, each with its own policy (what changed, which ``Q_FLAGS2`` bits it may set,
how character sets are named).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from .. import charsets
from .query import (
    Q_AUTO_INCREMENT,
    Q_CHARACTER_SET_COLLATIONS,
    Q_CHARSET_CODE,
    Q_CHARSET_DATABASE_CODE,
    Q_FLAGS2_CODE,
    Q_LC_TIME_NAMES_CODE,
    Q_SQL_MODE_CODE,
    Q_TIME_ZONE_CODE,
    StatusValue,
)

# Option bits of Query Q_FLAGS2 (sql_priv.h).
OPTION_AUTO_IS_NULL = 1 << 14
OPTION_NO_CHECK_CONSTRAINT_CHECKS = 1 << 15
OPTION_NOT_AUTOCOMMIT = 1 << 19
OPTION_EXPLICIT_DEF_TIMESTAMP = 1 << 24
OPTION_NO_FOREIGN_KEY_CHECKS = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS = 1 << 27
OPTION_IF_EXISTS = 1 << 28
OPTION_INSERT_HISTORY = 1 << 30

#: (Q_FLAGS2 bit, inverted, session variable) in the order ``print_query_header`` prints them.
FLAGS2_VARS: tuple[tuple[int, bool, bytes], ...] = (
    (OPTION_NO_FOREIGN_KEY_CHECKS, True, b"foreign_key_checks"),
    (OPTION_AUTO_IS_NULL, False, b"sql_auto_is_null"),
    (OPTION_RELAXED_UNIQUE_CHECKS, True, b"unique_checks"),
    (OPTION_NOT_AUTOCOMMIT, True, b"autocommit"),
    (OPTION_NO_CHECK_CONSTRAINT_CHECKS, True, b"check_constraint_checks"),
    (OPTION_IF_EXISTS, False, b"sql_if_exists"),
    (OPTION_EXPLICIT_DEF_TIMESTAMP, False, b"explicit_defaults_for_timestamp"),
    (OPTION_INSERT_HISTORY, False, b"system_versioning_insert_history"),
)
#: Q_FLAGS2 bits a server writes only from some version on (``options_written``).
FLAGS2_VERSIONED = OPTION_IF_EXISTS | OPTION_EXPLICIT_DEF_TIMESTAMP | OPTION_INSERT_HISTORY
#: The Q_FLAGS2 bits a replica sets inside a transaction (autocommit and the versioned ones not).
FLAGS2_REPLAYED = (
    OPTION_NO_FOREIGN_KEY_CHECKS | OPTION_AUTO_IS_NULL | OPTION_RELAXED_UNIQUE_CHECKS | OPTION_NO_CHECK_CONSTRAINT_CHECKS
)

#: Defaults of the status variables a Query may leave out (the server's own).
DEFAULT_AUTO_INCREMENT = (1, 1)
DEFAULT_LC_TIME_NAMES = 0
DEFAULT_CHARSET_DATABASE = 0


def flags2_settings(flags2: int, bits: int) -> list[tuple[bytes, bytes]]:
    """``(variable, b"0" or b"1")`` of each Q_FLAGS2 session variable whose bit is in ``bits``."""
    return [
        (name, b"1" if bool(flags2 & bit) != inverted else b"0") for bit, inverted, name in FLAGS2_VARS if bits & bit
    ]


def flags2_assignments(flags2: int, bits: int) -> bytes:
    """``@@session.x=1, @@session.y=0, ...`` for the Q_FLAGS2 bits in ``bits`` (tool order)."""
    return b", ".join(b"@@session." + name + b"=" + value for name, value in flags2_settings(flags2, bits))


def _number(status: Mapping[int, StatusValue], code: int, default: int) -> int:
    value = status.get(code, default)
    return value if isinstance(value, int) else default


def _numbers(status: Mapping[int, StatusValue], code: int) -> tuple[int, ...]:
    value = status.get(code, ())
    return tuple(v for v in value if isinstance(v, int)) if isinstance(value, tuple) else ()


def sql_mode_value(status: Mapping[int, StatusValue]) -> bytes | None:
    """``sql_mode``'s value text, or None where the Query does not set it."""
    return b"%d" % _number(status, Q_SQL_MODE_CODE, 0) if Q_SQL_MODE_CODE in status else None


def auto_increment(status: Mapping[int, StatusValue]) -> tuple[int, int]:
    """``(auto_increment_increment, auto_increment_offset)``, the default where absent."""
    pair = _numbers(status, Q_AUTO_INCREMENT)
    return (pair[0], pair[1]) if len(pair) == 2 else DEFAULT_AUTO_INCREMENT


def auto_increment_assignment(pair: tuple[int, int]) -> bytes:
    """``@@session.auto_increment_increment=%d, @@session.auto_increment_offset=%d``."""
    return b"@@session.auto_increment_increment=%d, @@session.auto_increment_offset=%d" % pair


def charset_triple(status: Mapping[int, StatusValue]) -> tuple[int, int, int] | None:
    """``(character_set_client, collation_connection, collation_server)`` ids, or None."""
    triple = _numbers(status, Q_CHARSET_CODE)
    return (triple[0], triple[1], triple[2]) if len(triple) == 3 else None


def lc_time_names(status: Mapping[int, StatusValue]) -> int:
    """``lc_time_names``'s id, the default where absent."""
    return _number(status, Q_LC_TIME_NAMES_CODE, DEFAULT_LC_TIME_NAMES)


def time_zone(status: Mapping[int, StatusValue]) -> bytes:
    """``time_zone``'s name as logged (unquoted), ``b""`` where the Query does not set it."""
    zone = status.get(Q_TIME_ZONE_CODE)
    return zone if isinstance(zone, bytes) else b""


def time_zone_literal(zone: bytes) -> bytes:
    """``time_zone``'s name as an SQL string literal (backslash and quote escaped)."""
    return b"'" + zone.replace(b"\\", b"\\\\").replace(b"'", b"\\'") + b"'"


def charset_database(status: Mapping[int, StatusValue]) -> int:
    """``collation_database``'s id, 0 (the server's default) where absent."""
    return _number(status, Q_CHARSET_DATABASE_CODE, DEFAULT_CHARSET_DATABASE)


def collation_database_value(collation: int) -> bytes:
    """``collation_database``'s value text: the id, or ``DEFAULT`` for 0."""
    return b"%d" % collation if collation else b"DEFAULT"


def character_set_collations(status: Mapping[int, StatusValue]) -> tuple[int, ...]:
    """The ``(charset id, collation id, ...)`` pairs of ``character_set_collations``, or ``()``."""
    return _numbers(status, Q_CHARACTER_SET_COLLATIONS)


def character_set_collations_text(pairs: tuple[int, ...]) -> bytes | None:
    """``cs=coll,cs=coll`` for ``character_set_collations`` with this library's names of the ids,
    None when one of them is unknown (a replica names them as its target does instead)."""
    out = []
    for i in range(0, len(pairs), 2):
        cs = charsets.charset_name(pairs[i])
        coll = charsets.collation_name(pairs[i + 1])
        if cs is None or coll is None:
            return None
        out.append(f"{cs}={coll}".encode())
    return b",".join(out)


class SessionContext(NamedTuple):
    """Everything a Query's status variables say of its session, decoded and defaulted once
    (a printer caches it by the status variables' bytes)."""

    flags2: int | None
    sql_mode: bytes | None
    auto_increment: tuple[int, int]
    charset: tuple[int, int, int] | None
    time_zone: bytes
    lc_time_names: int
    charset_database: int
    collations: tuple[int, ...]


def session_context(status: Mapping[int, StatusValue]) -> SessionContext:
    """The :class:`SessionContext` of a Query's decoded status variables."""
    flags2 = status.get(Q_FLAGS2_CODE)
    return SessionContext(
        flags2 if isinstance(flags2, int) else None,
        sql_mode_value(status),
        auto_increment(status),
        charset_triple(status),
        time_zone(status),
        lc_time_names(status),
        charset_database(status),
        character_set_collations(status),
    )
