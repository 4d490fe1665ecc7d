"""The spark package's modules import each other one way (no circle, not even through an import
inside a function): issue 13's rule, checked on the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

import mariabinlog.spark

SPARK = Path(mariabinlog.spark.__file__).parent


def _edges() -> dict[str, set[str]]:
    """Module name -> the sibling spark modules it imports anywhere in its body."""
    names = {p.stem for p in SPARK.glob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in SPARK.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is None:
                    found.update(a.name for a in node.names if a.name in names)
                elif node.module.split(".")[0] in names:
                    found.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mariabinlog.spark."):
                found.add(node.module.split(".")[2])
        edges[path.stem] = found - {path.stem}
    return edges


def test_spark_modules_form_no_circle() -> None:
    edges = _edges()
    assert "stream" in edges["source"], "the batch source builds the stream reader"
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        trail.append(name)
        for nxt in sorted(edges.get(name, ())):
            if nxt == "__init__":
                continue
            assert state.get(nxt) != 1, f"import circle: {' -> '.join(trail[trail.index(nxt):] + [nxt])}"
            if nxt not in state:
                visit(nxt)
        trail.pop()
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)
