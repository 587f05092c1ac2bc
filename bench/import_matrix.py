"""Which layer of memoryd imports which: `python bench/import_matrix.py`.

memoryd is layered by the stages of the data flow (LAYERS, top first): a module may import its
own layer and the layers below it, never one above, and the client (``memoryd_client``, at the
bottom) imports nothing of the daemon. Every ``.py`` file of both packages is parsed; an import
is resolved to the module it names (``from memoryd.passes import consolidate`` is
``memoryd.passes.consolidate``, not the package) and tagged as made at import time, lazily
inside a function, or only for type checking. All three count: a lazy or type-only import
against the flow still ties the lower layer to the upper one.

Prints the matrix of imported names from layer to layer (rows and columns top first, so a
number below the diagonal points up), then every import against the flow and every cycle of
modules. Exits 1 when there is either. ``tests/test_layout.py`` asserts the same with this
module's LAYERS, imports() and cycles().
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"memoryd": ROOT / "memoryd", "memoryd_client": ROOT / "client" / "memoryd_client"}

#: The layers, top first. A module is in the layer whose prefix names it most closely (a new
#: folder is in "base" until it is given its place here). The store sits below the
#: configuration and the model: it is handed the values it needs.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry", ("memoryd.cli", "memoryd.__main__", "memoryd.service")),
    ("server", ("memoryd.server",)),
    ("sessions", ("memoryd.sessions",)),
    ("passes", ("memoryd.passes",)),
    ("writes", ("memoryd.writes",)),
    ("sync", ("memoryd.sync",)),
    ("maintenance", ("memoryd.maintenance",)),
    ("retrieval", ("memoryd.retrieval",)),
    ("ingest", ("memoryd.ingest",)),
    ("embedding", ("memoryd.embedding",)),
    ("config", ("memoryd.config", "memoryd.settings", "memoryd.watched_sources",
                "memoryd.sources_file")),
    ("store", ("memoryd.store",)),
    ("base", ("memoryd",)),
    ("client", ("memoryd_client",)),
]


@dataclass(frozen=True)
class Import:
    """One module importing another (``names`` of it; 1 for ``import x``)."""

    source: str
    target: str
    names: int
    kind: str  # 'top' | 'lazy' | 'typing'
    line: int


def modules(packages: dict[str, Path] = PACKAGES) -> dict[str, Path]:
    """Every module of the packages (name → folder) by its dotted name."""
    found = {}
    for top, folder in packages.items():
        for path in folder.rglob("*.py"):
            parts = (top, *path.relative_to(folder).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def layer(module: str) -> int:
    """The index in LAYERS of the layer ``module`` is in (0 is the top)."""
    best = max(((len(prefix), number) for number, (_, prefixes) in enumerate(LAYERS)
                for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), default=None)
    if best is None:
        raise ValueError(f"{module} is in no layer")
    return best[1]


def _imports_of(module: str, tree: ast.Module, known: dict[str, Path]) -> list[Import]:
    packages = {name.split(".")[0] for name in known}
    found: list[Import] = []

    def walk(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "lazy" if kind == "top" else kind
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = "typing"
            if isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: up from this module's package
                    package = module.split(".")
                    package = package[:len(package) - child.level + (
                        known[module].name == "__init__.py")]
                    base = ".".join([*package, base] if base else package)
                if base.split(".")[0] in packages:
                    targets = Counter(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                                      for a in child.names)
                    found.extend(Import(module, target, count, inner, child.lineno)
                                 for target, count in targets.items())
            elif isinstance(child, ast.Import):
                found.extend(Import(module, a.name, 1, inner, child.lineno)
                             for a in child.names if a.name.split(".")[0] in packages)
            walk(child, inner)

    walk(tree, "top")
    return found


def imports(packages: dict[str, Path] = PACKAGES) -> list[Import]:
    """Every import of one of the packages' modules by another, wherever it is made."""
    known = modules(packages)
    return [found for module, path in sorted(known.items())
            for found in _imports_of(module, ast.parse(path.read_text("utf-8")), known)]


def against_the_flow(found: list[Import]) -> list[Import]:
    """The imports of a module in a layer above the importer's."""
    return [i for i in found if layer(i.target) < layer(i.source)]


def cycles(found: list[Import], package: str) -> list[list[str]]:
    """The cycles among ``package``'s modules (each once, from its smallest module)."""
    graph: dict[str, set[str]] = {}
    for i in found:
        if i.source.split(".")[0] == package and i.target.split(".")[0] == package \
                and i.target != i.source:
            graph.setdefault(i.source, set()).add(i.target)
    # every cycle lies within one strongly connected group: walk those alone (walking every
    # path of the whole graph took seconds, for the answer "none")
    group = _groups(graph)
    graph = {module: {t for t in targets if group[t] == group[module]}
             for module, targets in graph.items()
             if any(group[t] == group[module] for t in targets)}
    seen: set[tuple[str, ...]] = set()
    loops: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                loop = path[path.index(target):]
                start = loop.index(min(loop))
                key = tuple(loop[start:] + loop[:start])
                if key not in seen:
                    seen.add(key)
                    loops.append([*key, key[0]])
            else:
                visit(target, [*path, target])

    for module in sorted(graph):
        visit(module, [module])
    return loops


def _groups(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's strongly connected group (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    group: dict[str, int] = {}
    stack: list[str] = []
    for root in sorted({*graph, *(t for targets in graph.values() for t in targets)}):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    while True:
                        member = stack.pop()
                        group[member] = index[module]
                        if member == module:
                            break
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                work.append((target, iter(sorted(graph.get(target, ())))))
            elif target not in group:  # on the stack: in the group being walked
                low[module] = min(low[module], index[target])
    return group


def matrix(found: list[Import]) -> str:
    """The imported names from layer to layer as a table, top layer first."""
    counts = Counter((layer(i.source), layer(i.target)) for i in found
                     for _ in range(i.names) if layer(i.source) != layer(i.target))
    names = [name[:9] for name, _ in LAYERS]
    lines = ["from\\to   " + " ".join(f"{n:>9}" for n in names)]
    for row, name in enumerate(names):
        cells = [str(counts[row, column]) if counts[row, column] else "." for column in
                 range(len(names))]
        lines.append(f"{name:<9} " + " ".join(f"{c:>9}" for c in cells))
    return "\n".join(lines)


def main() -> int:
    found = imports()
    print(matrix(found))
    wrong = against_the_flow(found)
    loops = [loop for package in PACKAGES for loop in cycles(found, package)]
    print(f"\n{len(wrong)} import(s) against the flow")
    for i in wrong:
        print(f"  {i.source}:{i.line} ({LAYERS[layer(i.source)][0]}) imports {i.target} "
              f"({LAYERS[layer(i.target)][0]}) [{i.kind}]")
    print(f"{len(loops)} cycle(s) of modules")
    for loop in loops:
        print("  " + " -> ".join(loop))
    return 1 if wrong or loops else 0


if __name__ == "__main__":
    sys.exit(main())
