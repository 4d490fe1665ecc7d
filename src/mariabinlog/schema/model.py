"""Tables and columns as the schema history knows them, and how they compare to a Table_map.

A :class:`Table` is what a ``CREATE TABLE`` says about a table, reduced to what
decoding its rows needs: the columns in order with their SQL type, signedness,
character set and ENUM/SET labels, and the primary key.  Values are immutable so
a history can keep one object per table version and share it.

:func:`binlog_types` says which ``MYSQL_TYPE_*`` codes (real types, as
:func:`mariabinlog.codec.columns.real_type` gives them) a Table_map may carry for
a column of a given SQL type: the agreement check compares them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from ..codec import columns as C

#: SQL type name (lower case, as the history stores it) -> real binlog type codes it maps to.
_BINLOG_TYPES: dict[str, frozenset[int]] = {
    "tinyint": frozenset((C.MYSQL_TYPE_TINY,)),
    "smallint": frozenset((C.MYSQL_TYPE_SHORT,)),
    "mediumint": frozenset((C.MYSQL_TYPE_INT24,)),
    "int": frozenset((C.MYSQL_TYPE_LONG,)),
    "bigint": frozenset((C.MYSQL_TYPE_LONGLONG,)),
    "decimal": frozenset((C.MYSQL_TYPE_NEWDECIMAL,)),
    "float": frozenset((C.MYSQL_TYPE_FLOAT,)),
    "double": frozenset((C.MYSQL_TYPE_DOUBLE,)),
    "bit": frozenset((C.MYSQL_TYPE_BIT,)),
    "date": frozenset((C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE)),
    "time": frozenset((C.MYSQL_TYPE_TIME, C.MYSQL_TYPE_TIME2)),
    "datetime": frozenset((C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_DATETIME2)),
    "timestamp": frozenset((C.MYSQL_TYPE_TIMESTAMP, C.MYSQL_TYPE_TIMESTAMP2)),
    "year": frozenset((C.MYSQL_TYPE_YEAR,)),
    "char": frozenset((C.MYSQL_TYPE_STRING,)),
    "binary": frozenset((C.MYSQL_TYPE_STRING,)),
    "varchar": frozenset((C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_VARCHAR_COMPRESSED)),
    "varbinary": frozenset((C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_VARCHAR_COMPRESSED)),
    "enum": frozenset((C.MYSQL_TYPE_ENUM,)),
    "set": frozenset((C.MYSQL_TYPE_SET,)),
    "geometry": frozenset((C.MYSQL_TYPE_GEOMETRY,)),
}
_BLOBS = frozenset((C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_BLOB_COMPRESSED))
for _name in ("tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json"):
    _BINLOG_TYPES[_name] = _BLOBS

#: SQL types whose values are characters (a charset applies; ``binary`` charset = bytes).
TEXT_TYPES = frozenset(("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set"))
#: SQL types that are bytes whatever the table's charset.
BINARY_TYPES = frozenset(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry"))
#: Integer SQL types (their parameter is a display width, not a size).
INTEGER_TYPES = frozenset(("tinyint", "smallint", "mediumint", "int", "bigint"))


#: Identities of columns and table incarnations, unique within the process (never saved: a
#: history loaded from JSON replays its DDL and so draws them afresh, consistently).
_IDENTITIES = itertools.count(1)


def new_identity() -> int:
    """A fresh identity for a column or a table incarnation."""
    return next(_IDENTITIES)


def binlog_types(sql_type: str) -> frozenset[int]:
    """The real ``MYSQL_TYPE_*`` codes a Table_map may carry for a column of ``sql_type``."""
    return _BINLOG_TYPES.get(sql_type, frozenset())


def is_known_type(sql_type: str) -> bool:
    """True when the history knows how ``sql_type`` is logged (else the table falls back to ``@N``)."""
    return sql_type in _BINLOG_TYPES


@dataclass(frozen=True)
class Column:
    """One column: ``type`` is the SQL base type in lower case (``int``, ``varchar``, ``enum``...).

    ``charset`` is the character set of a character column (``binary`` for bytes),
    resolved when the column was defined (column, else table, else database,
    else server default); ``members`` are the ENUM/SET labels; ``length``,
    ``precision`` and ``scale`` are the declared sizes when given.  ``default`` is the
    constant ``DEFAULT`` as the rows view renders it (None: NULL, or not a constant), what
    the server gives rows that existed when the column was added.  ``ident`` is the
    column's identity: kept when the column is renamed or modified, new when it is added,
    so rows logged under an older shape can be matched to the current one.
    """

    name: str
    type: str
    unsigned: bool = False
    nullable: bool = True
    charset: str | None = None
    collation: str | None = None
    members: tuple[str, ...] = ()
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    default: str | None = None
    ident: int = field(default_factory=new_identity, compare=False, repr=False)

    @property
    def is_binary(self) -> bool:
        """True when values are bytes (BLOB/BINARY types, or a character type in charset ``binary``)."""
        return self.type in BINARY_TYPES or self.charset == "binary"

    def sql(self) -> str:
        """A short SQL spelling of the type, for messages and schema-change records."""
        text = self.type.upper()
        if self.members:
            text += "(" + ",".join("'" + m.replace("'", "''") + "'" for m in self.members) + ")"
        elif self.precision is not None:
            text += f"({self.precision}" + (f",{self.scale})" if self.scale is not None else ")")
        elif self.length is not None:
            text += f"({self.length})"
        if self.unsigned:
            text += " UNSIGNED"
        if self.charset is not None and self.type in TEXT_TYPES:
            text += f" CHARACTER SET {self.charset}"
        return text

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (defaults left out)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        for key in ("unsigned", "nullable", "charset", "collation", "length", "precision", "scale", "default"):
            value = getattr(self, key)
            if value != getattr(_DEFAULT_COLUMN, key):
                out[key] = value
        if self.members:
            out["members"] = list(self.members)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Column:
        """Inverse of :meth:`to_json`."""
        return cls(**{**data, "members": tuple(data.get("members", ()))})


_DEFAULT_COLUMN = Column("", "")


@dataclass(frozen=True)
class Table:
    """One version of a table: its columns in order and its primary key (column names).

    ``incarnation`` is the identity of the table's contents: kept by ALTER and RENAME,
    new on CREATE (also after a DROP, and for ``CREATE ... LIKE``) and on TRUNCATE, so rows
    logged before the table was emptied or recreated are known as gone.
    """

    database: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    collation: str | None = None
    #: Why the history cannot vouch for this table (an unparsable statement); columns are then empty.
    unknown: str | None = field(default=None, compare=False)
    incarnation: int = field(default_factory=new_identity, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        """(database, table), the catalog key."""
        return (self.database, self.name)

    def key_indexes(self) -> tuple[int, ...]:
        """Positions of the primary key's columns (names compared case-insensitively, as MariaDB does)."""
        positions = {column.name.lower(): index for index, column in enumerate(self.columns)}
        return tuple(positions[name.lower()] for name in self.primary_key if name.lower() in positions)

    def renamed(self, database: str, name: str) -> Table:
        """The same table under another name."""
        return replace(self, database=database, name=name)

    def created_as(self, database: str, name: str) -> Table:
        """A new table of the same shape (``CREATE TABLE ... LIKE``): new identities."""
        columns = tuple(replace(c, ident=new_identity()) for c in self.columns)
        return replace(self, database=database, name=name, columns=columns, incarnation=new_identity())

    def emptied(self) -> Table:
        """The same shape as a new incarnation (TRUNCATE): older rows are gone."""
        return replace(self, incarnation=new_identity())

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "database": self.database,
            "name": self.name,
            "columns": [c.to_json() for c in self.columns],
            "primary_key": list(self.primary_key),
        }
        if self.charset is not None:
            out["charset"] = self.charset
        if self.collation is not None:
            out["collation"] = self.collation
        if self.unknown is not None:
            out["unknown"] = self.unknown
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Table:
        """Inverse of :meth:`to_json`."""
        return cls(
            database=data["database"],
            name=data["name"],
            columns=tuple(Column.from_json(c) for c in data["columns"]),
            primary_key=tuple(data.get("primary_key", ())),
            charset=data.get("charset"),
            collation=data.get("collation"),
            unknown=data.get("unknown"),
        )
