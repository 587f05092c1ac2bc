"""The daemon package is layered by the stages of the data flow: imports point down, never up,
and no module imports itself back through others."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memoryd"

#: Lower layers first; a module may import only modules of its own layer or a lower one.
LAYERS = [
    {"memoryd", "memoryd.agents", "memoryd.errors", "memoryd.text", "memoryd.meaning",
     "memoryd.project", "memoryd.params", "memoryd.redact", "memoryd.malloc",
     "memoryd.regular_file", "memoryd.collector", "memoryd.retrieval.dates",
     "memoryd.retrieval.age"},
    {"memoryd.ingest.sources", "memoryd.config", "memoryd.embed", "memoryd.embed_derive"},
    {"memoryd.store"},
    {"memoryd.ingest", "memoryd.retrieval", "memoryd.maintenance"},
    {"memoryd.engine", "memoryd.embed_threads"},
    {"memoryd.sessions", "memoryd.passes"},
    {"memoryd.server"},
    {"memoryd.cli", "memoryd.__main__", "memoryd.service"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    best = None
    for number, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and \
                    (best is None or len(name) > len(best[1])):
                best = (number, name)
    assert best is not None, f"{module} is in no layer"
    return best[0]


def imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        found = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] == "memoryd":
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == "memoryd")
    return graph


def test_imports_point_down_the_flow() -> None:
    upward = [f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
              for module, targets in imports().items() for target in targets
              if layer(target) > layer(module)]
    assert upward == []


def test_no_import_cycles() -> None:
    graph = imports()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in graph.get(module, ()):
            if target in path:
                cycles.append(path[path.index(target):] + [target])
            elif target in graph:
                visit(target, path + [target])

    for module in graph:
        visit(module, [module])
    assert cycles == []


def test_only_the_store_knows_the_schema() -> None:
    """Each table has one module that knows it, in memoryd/store/: no module elsewhere imports
    apsw, runs SQL (``.execute``, ``.executemany``) or reaches for the store's connection."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
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
