"""What the mirror tests share: a mirror's tables read back with the formats' own libraries
(``deltalake``, ``pyiceberg`` on the SQLite catalog in the output directory), never through
mariabinlog's code, and rows compared in any order and any Arrow string width."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa


def lake_table(out: Path, table_format: str, kind: str, name: str = "cdc") -> pa.Table:
    """A mirror's table as ``deltalake`` or ``pyiceberg`` (SQLite catalog in OUT) read it."""
    if table_format == "delta":
        from deltalake import DeltaTable

        return DeltaTable(str(out / "cdc" if kind == "cdc" else out / kind / name)).to_pyarrow_table()
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("mariabinlog", uri=f"sqlite:///{out}/catalog.db", warehouse=f"file://{out}")
    if kind == "cdc":
        return catalog.load_table(("mariabinlog", "cdc")).scan().to_arrow()
    database, table = name.split(".", 1)
    return catalog.load_table((database + ("__changes" if kind == "changes" else ""), table)).scan().to_arrow()


def lake_names(out: Path, table_format: str, kind: str) -> list[str]:
    """The state or change tables a mirror holds."""
    if table_format == "delta":
        folder = out / kind
        return sorted(p.name for p in folder.iterdir() if (p / "_delta_log").is_dir()) if folder.is_dir() else []
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("mariabinlog", uri=f"sqlite:///{out}/catalog.db", warehouse=f"file://{out}")
    names = []
    for namespace in catalog.list_namespaces():
        if catalog.load_namespace_properties(namespace).get("mariabinlog.kind") == kind:
            database = namespace[0].removesuffix("__changes")
            names += [f"{database}.{t[-1]}" for t in catalog.list_tables(namespace)]
    return sorted(names)


def rows_of(table: pa.Table) -> list[str]:
    """A table's rows as sorted JSON texts (any column order, any Arrow string width)."""
    return sorted(json.dumps(row, default=str, sort_keys=True) for row in table.to_pylist())
