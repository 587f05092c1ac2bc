"""The packages are layered by the stages of the data flow: imports point down, never up; the
client imports nothing of the daemon; and no module imports itself back through others.

The layers and the import graph are bench/import_matrix.py's (which prints them as a matrix).
Every import counts — made at import time, lazily in a function, or only for type checking —
and ``from package import module`` is an import of that module, not of the package.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _import_matrix() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_matrix",
                                                  ROOT / "bench" / "import_matrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


matrix = _import_matrix()
LAYER_NAMES = [name for name, _ in matrix.LAYERS]


@pytest.fixture(scope="module")
def found() -> list:
    return matrix.imports()


@pytest.mark.parametrize("name", LAYER_NAMES)
def test_imports_point_down_the_flow(found: list, name: str) -> None:
    upward = [f"{i.source}:{i.line} imports {i.target} ({LAYER_NAMES[matrix.layer(i.target)]}, "
              f"{i.kind})" for i in matrix.against_the_flow(found)
              if LAYER_NAMES[matrix.layer(i.source)] == name]
    assert upward == []


def test_the_client_imports_nothing_of_the_daemon(found: list) -> None:
    """memoryd_client is installed on its own (`pip install ./client`): it cannot need memoryd."""
    assert [f"{i.source}:{i.line} imports {i.target}" for i in found
            if i.source.split(".")[0] == "memoryd_client"
            and i.target.split(".")[0] == "memoryd"] == []


def test_no_import_cycles_in_the_daemon(found: list) -> None:
    assert matrix.cycles(found, "memoryd") == []


def test_no_import_cycles_in_the_client(found: list) -> None:
    assert matrix.cycles(found, "memoryd_client") == []


def test_the_wire_request_stops_at_the_server(found: list) -> None:
    """A request's params (the wire's ``Params``) are parsed at ``memoryd/server/`` into the
    records the layers below take: the module that defines ``Params`` is the server's, and no
    module outside the server imports it."""
    home = [module for module, path in matrix.modules().items()
            if any(isinstance(node, ast.ClassDef) and node.name == "Params"
                   for node in ast.parse(path.read_text("utf-8")).body)]
    assert home
    outside = [f"{module} defines Params outside memoryd/server/" for module in home
               if not module.startswith("memoryd.server.")]
    outside += [f"{i.source}:{i.line} imports {i.target}" for i in found
                if i.target in home and not i.source.startswith("memoryd.server.")]
    assert outside == []


def test_the_guard_sees_every_kind_of_import(tmp_path: Path) -> None:
    """``from pkg import module``, relative imports, lazy and type-only imports are all edges
    of the graph (the old guard recorded ``from memoryd.passes import consolidate`` as an
    import of the empty package, and missed the cycles through it)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import deep\n")
    (package / "sub" / "deep.py").write_text("VALUE = 1\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from pkg import b\n"
        "from pkg.sub import deep, VALUE\n"
        "import pkg.sub\n"
        "if TYPE_CHECKING:\n    from pkg.c import Thing\n"
        "def later():\n    from .b import name\n")
    (package / "b.py").write_text("name = 1\n")
    (package / "c.py").write_text("def f():\n    import pkg.a\n")
    edges = {(i.source, i.target, i.kind) for i in matrix.imports({"pkg": package})}
    assert edges == {
        ("pkg.sub", "pkg.sub.deep", "top"),
        ("pkg.a", "pkg.b", "top"),
        ("pkg.a", "pkg.sub.deep", "top"),
        ("pkg.a", "pkg.sub", "top"),  # VALUE, and import pkg.sub
        ("pkg.a", "pkg.c", "typing"),
        ("pkg.a", "pkg.b", "lazy"),
        ("pkg.c", "pkg.a", "lazy"),
    }
    assert matrix.cycles(matrix.imports({"pkg": package}), "pkg") == [["pkg.a", "pkg.c", "pkg.a"]]


def test_only_the_store_knows_the_schema() -> None:
    """Each table has one module that knows it, in memoryd/store/: no module elsewhere (the
    daemon's or the client's) imports apsw, runs SQL (``.execute``, ``.executemany``) or
    reaches for the store's connection."""
    found = []
    for module, path in matrix.modules().items():
        if module == "memoryd.store" or module.startswith("memoryd.store."):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                named = [node.module or ""]
            else:
                named = []
            if any(name.split(".")[0] == "apsw" for name in named):
                found.append(f"{module}:{node.lineno} imports apsw")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("execute", "executemany"):
                found.append(f"{module}:{node.lineno} calls .{node.func.attr}(")
            if isinstance(node, ast.Attribute) and node.attr in ("db", "_db") and \
                    getattr(node.value, "attr", getattr(node.value, "id", None)) == "store":
                found.append(f"{module}:{node.lineno} uses the store's connection")
    assert found == []
