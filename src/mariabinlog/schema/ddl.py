"""Apply DDL statements to a catalog of tables, parsing them with sqlglot (MySQL dialect).

:class:`Catalog` is the set of tables and database charsets at one point of the
stream.  :meth:`Catalog.apply` takes one statement as a Query event logged it
(text, the session's default database, the server's default charset) and
changes the catalog the way MariaDB did: CREATE TABLE (column list, LIKE, AS
SELECT with a column list), CREATE OR REPLACE, ALTER TABLE (ADD/DROP/MODIFY/
CHANGE/RENAME COLUMN with FIRST/AFTER, primary key changes, RENAME TO,
CONVERT TO CHARACTER SET), RENAME TABLE, DROP TABLE, CREATE/DROP DATABASE and
TRUNCATE (no schema change).  Statements that are not DDL are ignored.

A DDL statement the parser cannot read raises :class:`~mariabinlog.errors.UnparsedDDLError` naming the
tables it concerns (found from sqlglot's tokens), so the history marks those
tables unknown until their next CREATE.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from ..codec import charsets
from ..errors import UnparsedDDLError
from .model import BINARY_TYPES, INTEGER_TYPES, TEXT_TYPES, Column, Table, is_known_type


class MariaDBDDL(MySQL):
    """sqlglot's MySQL dialect plus MariaDB's column types it lacks: spatial subtypes, INET4/INET6.

    Spatial subtypes are logged as GEOMETRY columns; INET4/INET6 (like UUID) as fixed-size
    binary strings.
    """

    class Tokenizer(MySQL.Tokenizer):
        """MySQL's keywords, with the extra type names."""

        KEYWORDS = {
            **MySQL.Tokenizer.KEYWORDS,
            **{
                name: TokenType.GEOMETRY
                for name in (
                    "POINT",
                    "LINESTRING",
                    "POLYGON",
                    "MULTIPOINT",
                    "MULTILINESTRING",
                    "MULTIPOLYGON",
                    "GEOMETRYCOLLECTION",
                )
            },
            "INET4": TokenType.BINARY,
            "INET6": TokenType.BINARY,
        }


_DIALECT = MariaDBDDL
_DDL_VERBS = frozenset(("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"))

#: sqlglot DataType names -> (our SQL type, unsigned).
_TYPES: dict[str, tuple[str, bool]] = {
    "BOOLEAN": ("tinyint", False),
    "BIGDECIMAL": ("decimal", False),
    "TIMESTAMPTZ": ("timestamp", False),
    "TIMESTAMPLTZ": ("timestamp", False),
    "DATETIME64": ("datetime", False),
    "UUID": ("binary", False),
}
for _name in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "DECIMAL", "DOUBLE", "FLOAT"):
    _TYPES[_name] = (_name.lower(), False)
    _TYPES["U" + _name] = (_name.lower(), True)
for _name in (
    "BIT DATE TIME DATETIME TIMESTAMP YEAR CHAR VARCHAR BINARY VARBINARY TINYTEXT TEXT MEDIUMTEXT LONGTEXT "
    "TINYBLOB BLOB MEDIUMBLOB LONGBLOB JSON ENUM SET GEOMETRY"
).split():
    _TYPES[_name] = (_name.lower(), False)


class _QuietFallback(logging.Filter):
    """Drops sqlglot's note that it read a statement as an opaque command: we report those ourselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())


#: Words that may stand between the verb and TABLE/DATABASE/SEQUENCE (CREATE OR REPLACE TEMPORARY TABLE,
#: ALTER ONLINE IGNORE TABLE, DROP TEMPORARY TABLE).
_MODIFIERS = frozenset(("OR", "REPLACE", "TEMPORARY", "ONLINE", "IGNORE"))
_OBJECTS = frozenset(("TABLE", "TABLES", "DATABASE", "SCHEMA", "SEQUENCE"))
#: ALTER TABLE actions that manage partitions only (the columns stay as they are).
_PARTITION_ACTIONS = frozenset(
    ("ADD", "DROP", "TRUNCATE", "REORGANIZE", "EXCHANGE", "COALESCE", "REBUILD", "ANALYZE", "CHECK", "OPTIMIZE",
     "REPAIR", "REMOVE", "CONVERT")
)


def _object_word(tokens: list[Token]) -> str | None:
    """TABLE, DATABASE... for a statement about one (TRUNCATE counts as TABLE), else None."""
    if not tokens or tokens[0].text.upper() not in _DDL_VERBS:
        return None
    if tokens[0].text.upper() == "TRUNCATE":
        return "TABLE"
    for token in tokens[1:5]:
        word = token.text.upper()
        if word in _OBJECTS:
            return word
        if word not in _MODIFIERS:
            return None
    return None


def is_ddl(sql: str) -> bool:
    """True for the statements the history follows: CREATE/ALTER/DROP/RENAME/TRUNCATE of tables,
    sequences and databases (not views, triggers, routines, users, indexes)."""
    return _object_word(_tokens(sql)) is not None


def changes_shape(sql: str) -> bool:
    """True for DDL that may change a table's shape; False for TRUNCATE, which keeps the shape
    and only starts a new incarnation, and for statements that are not DDL."""
    tokens = _tokens(sql)
    return _object_word(tokens) is not None and tokens[0].text.upper() != "TRUNCATE"


def _partition_only(tokens: list[Token]) -> bool:
    """An ALTER TABLE whose action manages partitions (ADD PARTITION, REORGANIZE PARTITION...)."""
    words = [t.text.upper() for t in tokens]
    if words[:1] != ["ALTER"] or "TABLE" not in words:
        return False
    at = words.index("TABLE") + 2
    if at < len(words) and words[at - 1 : at] and tokens[at].token_type == TokenType.DOT:
        at += 2
    return at + 1 < len(words) and words[at] in _PARTITION_ACTIONS and words[at + 1].startswith("PARTITION")


def _without_partitioning(sql: str, tokens: list[Token]) -> str | None:
    """The statement cut before a top-level PARTITION BY clause (it does not change columns), or None."""
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type == TokenType.PARTITION_BY:
            return sql[: token.start]
    return None


#: The columns of a MariaDB SEQUENCE table (what its rows events carry).
_SEQUENCE_COLUMNS = (
    Column("next_not_cached_value", "bigint", nullable=False),
    Column("minimum_value", "bigint", nullable=False),
    Column("maximum_value", "bigint", nullable=False),
    Column("start_value", "bigint", nullable=False),
    Column("increment", "bigint", nullable=False),
    Column("cache_size", "bigint", unsigned=True, nullable=False),
    Column("cycle_option", "tinyint", unsigned=True, nullable=False),
    Column("cycle_count", "bigint", nullable=False),
)


def charset_of_collation(collation: str) -> str | None:
    """Character set of a collation name (None when unknown)."""
    lowered = collation.lower()
    for charset, name in charsets.COLLATIONS.values():
        if name == lowered:
            return charset
    return None


@dataclass
class Catalog:
    """Tables by (database, table) and the default charset of databases created in the stream."""

    tables: dict[tuple[str, str], Table] = field(default_factory=dict)
    database_charsets: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Catalog:
        """A shallow copy (tables are immutable)."""
        return Catalog(dict(self.tables), dict(self.database_charsets))

    def get(self, database: str, table: str) -> Table | None:
        """The table, or None when the catalog does not know it."""
        return self.tables.get((database, table))

    def apply(self, sql: str, database: str, server_charset: str | None = None) -> list[tuple[str, str]] | None:
        """Apply one statement; returns the (db, table) keys it changed, None when it is not DDL.

        ``database`` is the session's default database (the Query event's), used
        for unqualified names; ``server_charset`` the server default charset for
        tables and databases that name none.  Raises :class:`~mariabinlog.errors.UnparsedDDLError`.
        """
        tokens = _tokens(sql)
        if _object_word(tokens) is None:
            return None
        if _partition_only(tokens):
            return []
        words = [t.text.upper() for t in tokens[:4]]
        if words[0] == "TRUNCATE":
            return self._truncate(tokens, database)
        if words[0] == "ALTER" and "TABLE" in words and words.index("TABLE") > 1:
            # ALTER ONLINE/IGNORE TABLE: the modifiers do not change what the statement does.
            sql = sql[: tokens[1].start] + sql[tokens[words.index("TABLE")].start :]
            tokens = _tokens(sql)
        try:
            tree = sqlglot.parse_one(sql, read=_DIALECT)
        except (SqlglotError, RecursionError) as error:
            shorter = _without_partitioning(sql, tokens)
            try:
                if shorter is None:
                    raise
                tree = sqlglot.parse_one(shorter, read=_DIALECT)
            except (SqlglotError, RecursionError):
                raise UnparsedDDLError(_parse_failure(error), _named_tables(tokens, database)) from None
        try:
            if isinstance(tree, exp.Command):
                return self._command(tokens, database, server_charset)
            if isinstance(tree, exp.Create):
                return self._create(tree, database, server_charset)
            if isinstance(tree, exp.Alter):
                return self._alter(tree, database, server_charset)
            if isinstance(tree, exp.Drop):
                return self._drop(tree, database)
        except UnparsedDDLError as error:
            if error.tables:
                raise
            raise UnparsedDDLError(error.reason, _named_tables(tokens, database)) from None
        except RecursionError as error:  # an expression nested deeper than the tree walk goes
            raise UnparsedDDLError(_parse_failure(error), _named_tables(tokens, database)) from None
        return []  # CREATE INDEX, views, routines...: no column changes

    # -- statements ---------------------------------------------------------

    def _create(self, tree: exp.Create, database: str, server_charset: str | None) -> list[tuple[str, str]]:
        kind = (tree.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA"):
            name = tree.this.name
            charset = _property_charset(tree.args.get("properties")) or server_charset
            if charset is not None:
                self.database_charsets[name] = charset
            return []
        if kind == "SEQUENCE":
            key = _table_key(tree.this, database)
            if not (tree.args.get("exists") and key in self.tables):
                self.tables[key] = Table(key[0], key[1], _SEQUENCE_COLUMNS)
            return [key]
        if kind != "TABLE":
            return []
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        key = _table_key(target, database)
        like = tree.find(exp.LikeProperty)
        if like is not None:
            source = self.tables.get(_table_key(like.this, database))
            if source is None:
                raise UnparsedDDLError(f"CREATE TABLE LIKE an unknown table {like.this.sql(_DIALECT)}", (key,))
            self.tables[key] = source.created_as(*key)
            return [key]
        if tree.args.get("exists") and key in self.tables:
            return []
        if not isinstance(tree.this, exp.Schema):
            raise UnparsedDDLError("CREATE TABLE ... AS SELECT without a column list", (key,))
        table_charset, table_collation = _charset_pair(tree.args.get("properties"))
        default = table_charset or self.database_charsets.get(key[0]) or server_charset
        columns: list[Column] = []
        primary: list[str] = []
        for item in tree.this.expressions:
            if isinstance(item, exp.ColumnDef):
                column = _column(item, default, table_collation)
                columns.append(column)
                if _has_constraint(item, exp.PrimaryKeyColumnConstraint):
                    primary = [column.name]
            elif isinstance(item, exp.PrimaryKey):
                primary = [_ident(e) for e in item.expressions]
            elif isinstance(item, exp.Identifier):
                raise UnparsedDDLError(f"column {item.name} has no type", (key,))
        self.tables[key] = Table(key[0], key[1], tuple(columns), tuple(primary), default, table_collation)
        return [key]

    def _alter(self, tree: exp.Alter, database: str, server_charset: str | None) -> list[tuple[str, str]]:
        if (tree.args.get("kind") or "").upper() != "TABLE":
            return []
        key = _table_key(tree.this, database)
        table = self.tables.get(key)
        if table is None:
            raise UnparsedDDLError(f"ALTER TABLE of a table the history does not know: {key[0]}.{key[1]}", (key,))
        columns = list(table.columns)
        primary = list(table.primary_key)
        new_key = key
        table_charset = table.charset
        for action in tree.args.get("actions") or ():
            if isinstance(action, exp.ColumnDef):
                column = _column(action, table.charset, None)
                _place(columns, column, action.args.get("position"), len(columns), key)
                if _has_constraint(action, exp.PrimaryKeyColumnConstraint):
                    primary = [column.name]
            elif isinstance(action, exp.ModifyColumn):
                definition = action.this
                old_name = _ident(action.args["rename_from"]) if action.args.get("rename_from") else definition.name
                index = _index(columns, old_name, key)
                column = replace(_column(definition, table.charset, None), ident=columns[index].ident)
                del columns[index]
                _place(columns, column, definition.args.get("position"), index, key)
                primary = [column.name if p.lower() == old_name.lower() else p for p in primary]
            elif isinstance(action, exp.RenameColumn):
                old, new = _ident(action.this), _ident(action.args["to"])
                index = _index(columns, old, key)
                columns[index] = replace(columns[index], name=new)
                primary = [new if p.lower() == old.lower() else p for p in primary]
            elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
                for target in action.args.get("tables") or ():
                    index = _index(columns, _ident(target), key)
                    dropped = columns.pop(index).name.lower()
                    primary = [p for p in primary if p.lower() != dropped]
            elif isinstance(action, exp.DropPrimaryKey):
                primary = []
            elif isinstance(action, exp.AddConstraint):
                for item in action.expressions:
                    if isinstance(item, exp.PrimaryKey):
                        primary = [_ident(e) for e in item.expressions]
            elif isinstance(action, exp.AlterRename):
                new_key = _table_key(action.this, key[0])
            elif isinstance(action, exp.Properties):
                table_charset = _property_charset(action) or table_charset
        if new_key != key:
            del self.tables[key]
        self.tables[new_key] = replace(
            table, database=new_key[0], name=new_key[1], columns=tuple(columns), primary_key=tuple(primary),
            charset=table_charset,
        )
        return [key, new_key] if new_key != key else [key]

    def _drop(self, tree: exp.Drop, database: str) -> list[tuple[str, str]]:
        kind = (tree.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA"):
            target = tree.this if tree.this is not None else (tree.args.get("tables") or [None])[0]
            if target is None:
                raise UnparsedDDLError("DROP DATABASE without a name", ())
            name = target.name
            self.database_charsets.pop(name, None)
            gone = [k for k in self.tables if k[0] == name]
            for k in gone:
                del self.tables[k]
            return gone
        if kind not in ("TABLE", "SEQUENCE"):
            return []
        gone = []
        for target in tree.args.get("tables") or (tree.this,):
            k = _table_key(target, database)
            if self.tables.pop(k, None) is not None:
                gone.append(k)
        return gone

    def _command(self, tokens: list[Token], database: str, server_charset: str | None) -> list[tuple[str, str]]:
        """Statements sqlglot keeps opaque: RENAME TABLE and ALTER TABLE ... CONVERT TO CHARACTER SET."""
        words = [t.text.upper() if t.token_type != TokenType.IDENTIFIER else t.text for t in tokens]
        if words[:2] == ["RENAME", "TABLE"]:
            return self._rename(tokens[2:], database)
        if words[:2] == ["ALTER", "TABLE"] and "CONVERT" in words:
            key, rest = _read_name(tokens, 2, database)
            at = words.index("CONVERT")
            if words[at + 1 : at + 4] == ["TO", "CHARACTER", "SET"] and key in self.tables:
                charset = tokens[at + 4].text.lower()
                table = self.tables[key]
                columns = tuple(
                    replace(c, charset=charset, collation=None) if c.type in TEXT_TYPES and c.charset != "binary" else c
                    for c in table.columns
                )
                self.tables[key] = replace(table, columns=columns, charset=charset, collation=None)
                return [key]
        raise UnparsedDDLError("statement the SQL parser reads only as an opaque command", _named_tables(tokens, database))

    def _truncate(self, tokens: list[Token], database: str) -> list[tuple[str, str]]:
        """``TRUNCATE [TABLE] t``: same shape, a new incarnation (its older rows are gone)."""
        key, _ = _read_name(tokens, 2 if len(tokens) > 1 and tokens[1].text.upper() == "TABLE" else 1, database)
        table = self.tables.get(key)
        if table is None:
            return []
        self.tables[key] = table.emptied()
        return [key]

    def _rename(self, tokens: list[Token], database: str) -> list[tuple[str, str]]:
        """``a TO b, c TO d``: renames apply left to right, as MariaDB does."""
        changed: list[tuple[str, str]] = []
        pos = 0
        while pos < len(tokens):
            old, pos = _read_name(tokens, pos, database)
            if pos >= len(tokens) or tokens[pos].text.upper() != "TO":
                raise UnparsedDDLError("RENAME TABLE without TO", (old,))
            new, pos = _read_name(tokens, pos + 1, database)
            table = self.tables.pop(old, None)
            if table is not None:
                self.tables[new] = table.renamed(*new)
            changed += [old, new]
            if pos < len(tokens) and tokens[pos].token_type == TokenType.COMMA:
                pos += 1
        return changed


# -- helpers ----------------------------------------------------------------


def _parse_failure(error: Exception) -> str:
    """Why sqlglot could not read a statement, in one line: its own first line, or for an
    expression nested past Python's recursion limit (sqlglot's parser recurses per level;
    about 50 parentheses exhaust it) that it is nested too deeply."""
    if isinstance(error, RecursionError):
        return "statement nested too deeply for the DDL parser"
    return str(error).splitlines()[0]


def _tokens(sql: str) -> list[Token]:
    """The statement's tokens; the tail sqlglot keeps as one string after a command verb is split too."""
    try:
        tokens = [t for t in sqlglot.tokenize(sql, read=_DIALECT) if t.token_type != TokenType.SEMICOLON]
    except SqlglotError:
        return []
    if len(tokens) == 2 and tokens[0].token_type == TokenType.RENAME and tokens[1].token_type == TokenType.STRING:
        return tokens[:1] + _tokens(tokens[1].text)
    return tokens


def _read_name(tokens: list[Token], pos: int, database: str) -> tuple[tuple[str, str], int]:
    """A possibly qualified table name starting at ``tokens[pos]``: ((db, table), next position)."""
    if pos >= len(tokens):
        raise UnparsedDDLError("the statement ends where a table name should be", ())
    first = tokens[pos].text
    if pos + 2 < len(tokens) and tokens[pos + 1].token_type == TokenType.DOT:
        return (first, tokens[pos + 2].text), pos + 3
    return (database, first), pos + 1


def _named_tables(tokens: list[Token], database: str) -> tuple[tuple[str, str], ...]:
    """The table a DDL statement names after its TABLE keyword (for marking it unknown)."""
    for pos, token in enumerate(tokens[:-1]):
        if token.text.upper() == "TABLE":
            start = pos + 1
            while start < len(tokens) and tokens[start].text.upper() in ("IF", "NOT", "EXISTS"):
                start += 1
            if start < len(tokens):
                return (_read_name(tokens, start, database)[0],)
    return ()


def _ident(node: exp.Expression) -> str:
    return node.name if not isinstance(node, exp.Identifier) else node.this


def _table_key(node: exp.Expression, database: str) -> tuple[str, str]:
    """(database, table) of a table name; a name of three parts, or with an empty part
    (``a..b``, which the parser reads as a catalog), is none the server accepts."""
    db = node.args.get("db") if isinstance(node, exp.Table) else None
    if isinstance(node, exp.Table) and (node.args.get("catalog") is not None or not isinstance(db, (exp.Identifier, type(None)))):
        raise UnparsedDDLError(f"{node.sql(_DIALECT)} is not a database.table name", ())
    return (_ident(db) if db is not None else database, node.name)


def _index(columns: list[Column], name: str, key: tuple[str, str]) -> int:
    lowered = name.lower()
    for index, column in enumerate(columns):
        if column.name.lower() == lowered:
            return index
    raise UnparsedDDLError(f"no column {name} in {key[0]}.{key[1]} as the history knows it", (key,))


def _place(columns: list[Column], column: Column, position: exp.Expression | None, default: int,
           key: tuple[str, str]) -> None:
    """Insert ``column`` at FIRST / AFTER x / ``default``; AFTER a column the history does not
    know makes the statement unreadable for that table."""
    if position is None:
        columns.insert(default, column)
    elif (position.args.get("position") or "").upper() == "FIRST":
        columns.insert(0, column)
    else:
        after = _ident(position.this)
        found = next((i for i, c in enumerate(columns) if c.name.lower() == after.lower()), None)
        if found is None:
            raise UnparsedDDLError(f"AFTER {after}: no such column in {key[0]}.{key[1]} as the history knows it",
                                   (key,))
        columns.insert(found + 1, column)


def _has_constraint(definition: exp.ColumnDef, kind: type[exp.Expression]) -> bool:
    return any(isinstance(c.args.get("kind"), kind) for c in definition.args.get("constraints") or ())


def _property_charset(properties: exp.Expression | None) -> str | None:
    return _charset_pair(properties)[0]


def _charset_pair(properties: exp.Expression | None) -> tuple[str | None, str | None]:
    """(charset, collation) named by CHARACTER SET / COLLATE table or database options."""
    charset = collation = None
    for prop in properties.expressions if properties is not None else ():
        if isinstance(prop, exp.CharacterSetProperty):
            charset = prop.this.name.lower()
        elif isinstance(prop, exp.CollateProperty):
            collation = prop.this.name.lower()
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    return charset, collation


def _ints(params: Iterable[exp.Expression]) -> list[int]:
    """A type's parameters (``VARCHAR(10)``, ``DECIMAL(10,2)``); one that is not a plain
    number (``VARCHAR(abc)``, which sqlglot parses) makes the statement unreadable."""
    out = []
    for param in params:
        value = param.this if isinstance(param, exp.DataTypeParam) else param
        text = value.name
        if not (text.isascii() and text.isdigit()):
            raise UnparsedDDLError(f"type parameter {value.sql()!r} is not a number", ())
        out.append(int(text))
    return out


def _column(definition: exp.ColumnDef, default_charset: str | None, default_collation: str | None) -> Column:
    """A column from its definition; character columns without a charset get ``default_charset``."""
    kind = definition.args.get("kind")
    type_name = kind.this.name if isinstance(kind, exp.DataType) else ""
    sql_type, unsigned = _TYPES.get(type_name, (type_name.lower(), False))
    if not is_known_type(sql_type):
        raise UnparsedDDLError(f"column {definition.name} has a type the history does not know: {type_name}", ())
    nullable = True
    charset = collation = None
    binary_flag = False
    default: exp.Expression | None = None
    for constraint in definition.args.get("constraints") or ():
        value = constraint.args.get("kind")
        if isinstance(value, exp.NotNullColumnConstraint):
            nullable = bool(value.args.get("allow_null"))
        elif isinstance(value, exp.PrimaryKeyColumnConstraint):
            nullable = False
        elif isinstance(value, exp.CharacterSetColumnConstraint):
            charset = value.this.name.lower()
        elif isinstance(value, exp.CollateColumnConstraint):
            collation = value.this.name.lower()
        elif isinstance(value, exp.BinaryColumnConstraint):
            binary_flag = True
        elif isinstance(value, exp.DefaultColumnConstraint):
            default = value.this
    members: tuple[str, ...] = ()
    length = precision = scale = None
    params = kind.expressions if isinstance(kind, exp.DataType) else []
    if sql_type in ("enum", "set"):
        members = tuple(p.this.name if isinstance(p, exp.DataTypeParam) else p.name for p in params)
    elif params and sql_type == "decimal":
        sizes = _ints(params)
        precision, scale = sizes[0], (sizes[1] if len(sizes) > 1 else 0)
    elif params and sql_type not in INTEGER_TYPES:
        length = _ints(params)[0]
    elif sql_type == "decimal":
        precision, scale = 10, 0
    if sql_type in TEXT_TYPES:
        if sql_type == "json":
            charset, collation = "utf8mb4", "utf8mb4_bin"
        if charset is None and collation is not None:
            charset = charset_of_collation(collation)
        if charset is None:
            charset, collation = default_charset, collation or default_collation
        if binary_flag and collation is None and charset is not None:
            collation = f"{charset}_bin"
    return Column(
        definition.name,
        sql_type,
        unsigned=unsigned,
        nullable=nullable,
        charset=charset,
        collation=collation,
        members=members,
        length=length,
        precision=precision,
        scale=scale,
        default=_default_text(default, sql_type, nullable, members),
    )


def _default_text(default: exp.Expression | None, sql_type: str, nullable: bool,
                  members: tuple[str, ...]) -> str | None:
    """The value the server gives rows that exist when the column is added, as text: a
    constant ``DEFAULT``, else for NOT NULL the type's implicit default (0, '', the first
    ENUM member); None for NULL and for defaults that are not constants (expressions,
    CURRENT_TIMESTAMP, temporal zero values)."""
    if isinstance(default, exp.Neg) and isinstance(default.this, exp.Literal) and not default.this.is_string:
        return "-" + default.this.name
    if isinstance(default, exp.Literal):
        return default.name
    if default is not None or nullable:
        return None
    if sql_type in INTEGER_TYPES or sql_type in ("decimal", "float", "double", "bit", "year"):
        return "0"
    if sql_type == "enum":
        return members[0] if members else ""
    if sql_type in TEXT_TYPES or sql_type in BINARY_TYPES:
        return ""
    return None
