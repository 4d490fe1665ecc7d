"""Starting schemas for the schema history: a live server, a ``mariadb-dump --no-data`` file, a saved history.

Tables created before the binlog begins are unknown to a history built from the
binlog's DDL alone; these give it a snapshot to start from.  This is the schema
package's one module that talks to a server (pymysql); the rest is pure.  Both
``dump`` (tools) and ``archive`` (replication) use it:

* :func:`from_server` asks a live server (``mariadb://user[:password]@host:port``)
  for ``SHOW CREATE TABLE`` of every base table, as of now: DDL run later must be
  in the binlog read afterwards (a warning says so).
* :func:`from_dump_file` reads the CREATE statements of a ``mariadb-dump`` file,
  following its ``USE`` statements.
* :func:`starting_history` picks one of them, or a history saved by an earlier run.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from ..errors import SchemaHistoryError
from .ddl import Catalog
from .history import SchemaHistory

log = logging.getLogger(__name__)

_SYSTEM_DATABASES = ("mysql", "information_schema", "performance_schema", "sys")


def _statements(text: str, where: str) -> list[str]:
    """The statements of an SQL script, split at sqlglot's semicolon tokens."""
    try:
        tokens = sqlglot.tokenize(text, read="mysql")
    except SqlglotError as error:
        raise SchemaHistoryError(f"{where}: cannot read the SQL: {error}") from error
    out = []
    start = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            out.append(text[start : token.start].strip())
            start = token.end + 1
    out.append(text[start:].strip())
    return [s for s in out if s]


def from_dump_file(path: str | os.PathLike[str]) -> SchemaHistory:
    """A history whose snapshot is the tables a ``mariadb-dump --no-data`` file creates."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as error:
        raise SchemaHistoryError(f"{path}: cannot read the schema file: {error}") from error
    history = SchemaHistory(source=f"file {path}")
    database = ""
    for statement in _statements(text, str(path)):
        tokens = statement.split(None, 1)
        if tokens[0].upper() == "USE" and len(tokens) == 2:
            database = tokens[1].strip().strip("`")
            continue
        history.apply(statement, database, file=str(path), pos=0)
    return SchemaHistory(history.catalog, source=f"file {path}")


def from_server(url: str) -> SchemaHistory:
    """A history whose snapshot is every base table of a live server, read now."""
    import pymysql  # only here: every archive imports this module, few read a live server

    parts = urlsplit(url)
    if parts.scheme not in ("mariadb", "mysql") or not parts.hostname:
        raise SchemaHistoryError(f"--schema-from wants mariadb://user[:password]@host[:port], not {url!r}")
    host, port = parts.hostname, parts.port or 3306
    try:
        connection = pymysql.connect(
            host=host,
            port=port,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            charset="utf8mb4",
        )
    except pymysql.MySQLError as error:
        raise SchemaHistoryError(f"{host}:{port}: cannot read the schema: {error}") from error
    catalog = Catalog()
    history = SchemaHistory(catalog, source=f"server {host}:{port}")
    with connection, connection.cursor() as cursor:
        cursor.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        charsets = {name: charset for name, charset in cursor.fetchall() if name not in _SYSTEM_DATABASES}
        history.catalog.database_charsets.update(charsets)
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'"
        )
        for database, table in cursor.fetchall():
            if database in _SYSTEM_DATABASES:
                continue
            cursor.execute(f"SHOW CREATE TABLE `{database.replace('`', '``')}`.`{table.replace('`', '``')}`")
            history.apply(cursor.fetchone()[1], database, file=f"{host}:{port}", pos=0, server_charset=charsets.get(database))
    log.warning(
        "schema read from %s:%d as of now: DDL run on it after this moment must be in the binlog that is read",
        host,
        port,
    )
    return SchemaHistory(history.catalog, source=f"server {host}:{port}")


def starting_history(
    *, schema_from: str | None = None, schema_file: str | None = None, saved: str | None = None
) -> SchemaHistory:
    """The history to start from: at most one source; an empty history when none is given."""
    given = [v for v in (schema_from, schema_file, saved) if v is not None]
    if len(given) > 1:
        raise SchemaHistoryError("give one of --schema-from, --schema-file and --schema-history, not several")
    if schema_from is not None:
        return from_server(schema_from)
    if schema_file is not None:
        return from_dump_file(schema_file)
    if saved is not None:
        return SchemaHistory.load(saved)
    return SchemaHistory()
