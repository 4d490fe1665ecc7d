"""Bytes are read and written only in ``codec/`` (ARCHITECTURE.md, "the house").

Every ``.py`` of ``src/mariabinlog`` outside ``codec/`` is parsed with ``ast``; the test fails,
naming ``file:line``, on ``import struct`` / ``from struct import``, on any call of
``.unpack``, ``.unpack_from``, ``.pack``, ``.pack_into`` or ``.iter_unpack``, on
``int.from_bytes`` and ``.to_bytes(``, and on ``memoryview(...).cast``.  There is no allowlist:
code outside the codec calls a codec function that hands it values.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mariabinlog"
CODEC = PACKAGE / "codec"

_STRUCT_METHODS = frozenset(("unpack", "unpack_from", "pack", "pack_into", "iter_unpack"))


def byte_handling(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each place in ``tree`` that parses or builds bytes itself."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "struct" or alias.name.startswith("struct."):
                    found.append((node.lineno, "import struct"))
        elif isinstance(node, ast.ImportFrom):
            if node.module == "struct" and node.level == 0:
                found.append((node.lineno, "from struct import"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            target = node.func.value
            if attr in _STRUCT_METHODS:
                found.append((node.lineno, f".{attr}(...)"))
            elif attr == "to_bytes":
                found.append((node.lineno, ".to_bytes(...)"))
            elif attr == "from_bytes" and isinstance(target, ast.Name) and target.id == "int":
                found.append((node.lineno, "int.from_bytes(...)"))
            elif (
                attr == "cast"
                and isinstance(target, ast.Call)
                and isinstance(target.func, ast.Name)
                and target.func.id == "memoryview"
            ):
                found.append((node.lineno, "memoryview(...).cast(...)"))
    return found


def _outside_codec() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if CODEC not in p.parents)


def test_no_bytes_outside_codec() -> None:
    problems = []
    for path in _outside_codec():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, what in byte_handling(tree):
            problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert not problems, "bytes parsed or built outside codec/ (call a codec function):\n" + "\n".join(problems)


def test_the_check_sees_each_form() -> None:
    planted = """
import struct
from struct import unpack_from
import os, struct as s
x = S.unpack_from(buf, 0)[0]
S.pack_into(buf, 0, 1)
y = S.pack(1)
z = S.unpack(b"....")
for a in S.iter_unpack(b""):
    pass
n = int.from_bytes(b"\\x01", "little")
b = n.to_bytes(2, "big")
v = memoryview(data).cast("B")
"""
    lines = sorted(line for line, _ in byte_handling(ast.parse(planted)))
    assert lines == [2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13]


def test_the_check_lets_other_calls_pass() -> None:
    fine = """
table = pa_table.cast(schema)
col = F.col("x").cast("long")
h = header_fields(buf, 0)
v = memoryview(data)[4:]
"""
    assert byte_handling(ast.parse(fine)) == []


def test_the_check_covers_every_room() -> None:
    rooms = {p.relative_to(PACKAGE).parts[0] for p in _outside_codec()}
    assert {"engine", "tools", "replication", "spark", "schema", "cli.py"} <= rooms
