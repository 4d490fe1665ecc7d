"""The import layers of ``src/mariabinlog``: no cycle, nothing upward, no sibling imports.

Every ``import`` and ``from ... import`` of every module is read with :mod:`ast`, at module
level and inside functions, classes and ``if TYPE_CHECKING`` blocks alike, relative and
absolute.  Layers, lowest first (a module may import its own package and any lower layer)::

    errors < codec < schema | engine < tools | replication < spark < cli

``__main__.py``, ``cli.py`` and ``optionfiles.py`` are the top (cli); the package root
(``__init__.py``, the version) is the bottom and imports nothing.  Modules of
the same rank in different packages (``schema``/``engine``, ``tools``/``replication``) are
siblings and must not import each other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "mariabinlog"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

#: Rank of each sub-package (or top-level module); equal ranks are siblings.
RANKS: dict[str, int] = {
    "root": 0,
    "errors": 0,
    "codec": 1,
    "schema": 2,
    "engine": 2,
    "tools": 3,
    "replication": 3,
    "spark": 4,
    "cli": 5,
}

#: The package's own top-level modules that form the cli (top) layer.
TOP = ("__main__", "cli", "optionfiles")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (dotted module names) at ``path:line``."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}  ({self.path}:{self.line})"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module under ``root`` (a package ``__init__`` is named as the package)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_edges(root: Path) -> list[Edge]:
    """Every import between modules of the package at ``root``, wherever it is written."""
    modules = module_names(root)
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        shown = path.relative_to(root.parent).as_posix()
        for node in ast.walk(tree):
            for target in _targets(node, name, is_package, modules):
                edge = Edge(name, target, shown, node.lineno)
                if target != name and edge not in edges:
                    edges.append(edge)
    return edges


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules that one import statement loads (the most specific one per name)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            found = _deepest(alias.name, modules)
            if found:
                yield found
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        for alias in node.names:
            if f"{origin}.{alias.name}" in modules:
                yield f"{origin}.{alias.name}"
            else:
                found = _deepest(origin, modules)
                if found:
                    yield found


def _deepest(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``dotted`` that is one of the package's modules."""
    parts = dotted.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(module: str) -> str:
    """The layer a dotted module name belongs to.

    ``mariabinlog`` itself (its ``__init__``: the version, nothing else) is the root, at the
    bottom beside ``errors``: every layer may read ``__version__``, and the root imports nothing.
    """
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    return "cli" if parts[1] in TOP else parts[1]


def wrong_way(edges: list[Edge]) -> list[Edge]:
    """Imports that go up a layer or sideways into a sibling package."""
    bad = []
    for edge in edges:
        source, target = layer(edge.source), layer(edge.target)
        if source not in RANKS or target not in RANKS:
            bad.append(edge)  # a new package must be given its place in RANKS
        elif source != target and RANKS[target] >= RANKS[source]:
            bad.append(edge)
    return bad


def _edges_between(edges: list[Edge], component: list[str]) -> list[Edge]:
    members = set(component)
    return [e for e in edges if e.source in members and e.target in members]


def test_the_package_has_modules_and_imports() -> None:
    """The scan sees the real tree (a wrong path would make the other tests pass on nothing)."""
    edges = import_edges(SRC)
    assert len(module_names(SRC)) > 50
    assert any(e.source == "mariabinlog.cli" for e in edges)


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or through others."""
    edges = import_edges(SRC)
    found = cycles(edges)
    report = []
    for component in found:
        report.append("cycle: " + ", ".join(component))
        report.extend(f"    {edge}" for edge in _edges_between(edges, component))
    assert not found, "import cycles:\n" + "\n".join(report)


def test_imports_go_down_the_layers() -> None:
    """Each import goes to the same package or a lower layer, never up or to a sibling."""
    bad = wrong_way(import_edges(SRC))
    assert not bad, "imports against the layers (errors < codec < schema|engine < tools|replication < spark < cli):\n" + \
        "\n".join(f"    {edge}" for edge in bad)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / PACKAGE


@pytest.mark.parametrize("kind", ["absolute", "relative", "in-function", "from-package"])
def test_checker_finds_a_hidden_cycle_and_upward_edge(tmp_path: Path, kind: str) -> None:
    """The checker itself: an import inside a function, relative or not, still makes a cycle and an upward edge."""
    back = {
        "absolute": "import mariabinlog.engine.reader\n",
        "relative": "from ..engine import reader\n",
        "in-function": "def f() -> None:\n    from mariabinlog.engine.reader import thing\n",
        "from-package": "from mariabinlog.engine import reader\n",
    }[kind]
    root = _write(tmp_path, {
        "__init__.py": "", "codec/__init__.py": "", "engine/__init__.py": "",
        "engine/reader.py": "from mariabinlog.codec import events\n",
        "codec/events.py": back,
    })
    edges = import_edges(root)
    assert cycles(edges) == [["mariabinlog.codec.events", "mariabinlog.engine.reader"]]
    assert [(e.source, e.target) for e in wrong_way(edges)] == [("mariabinlog.codec.events", "mariabinlog.engine.reader")]


def test_checker_finds_a_sibling_import(tmp_path: Path) -> None:
    """tools and replication are siblings: an import between them is reported, a downward one is not."""
    root = _write(tmp_path, {
        "__init__.py": "", "codec/__init__.py": "", "tools/__init__.py": "", "replication/__init__.py": "",
        "codec/events.py": "",
        "tools/dump.py": "from ..replication import client\nfrom ..codec.events import X\n",
        "replication/client.py": "",
    })
    edges = import_edges(root)
    assert cycles(edges) == []
    assert [(e.source, e.target) for e in wrong_way(edges)] == [("mariabinlog.tools.dump", "mariabinlog.replication.client")]


def test_checker_reads_sub_folders(tmp_path: Path) -> None:
    """A sub-folder is its top folder's layer: relative imports out of ``codec/ibb/`` resolve, a
    cycle between two codec sub-packages is found, and an import from one up into ``engine`` is
    reported."""
    root = _write(tmp_path, {
        "__init__.py": "", "codec/__init__.py": "", "engine/__init__.py": "", "engine/files.py": "",
        "codec/events/__init__.py": "from .header import X\n",
        "codec/events/header.py": "from ..ibb.state import seek\n",
        "codec/ibb/__init__.py": "",
        "codec/ibb/state.py": "from ..events import decode\nfrom ...engine.files import F\n",
    })
    edges = import_edges(root)
    assert ("mariabinlog.codec.ibb.state", "mariabinlog.codec.events") in [(e.source, e.target) for e in edges]
    assert cycles(edges) == [["mariabinlog.codec.events", "mariabinlog.codec.events.header", "mariabinlog.codec.ibb.state"]]
    assert [(e.source, e.target) for e in wrong_way(edges)] == [("mariabinlog.codec.ibb.state", "mariabinlog.engine.files")]


def test_the_real_tree_has_its_sub_folders() -> None:
    """The scan reaches the sub-folders (codec/events, rows, ibb, wire; tools/dump, printer)."""
    names = module_names(SRC)
    for module in ("codec.events.header", "codec.rows.packed", "codec.ibb.page", "codec.wire.protocol",
                   "tools.dump.dumper", "tools.printer.rows"):
        assert f"{PACKAGE}.{module}" in names
        assert layer(f"{PACKAGE}.{module}") == module.split(".")[0]
