"""The import graph of the ``fpgashare`` package, read from the source with ``ast``: every import
of every module under runtime/, wherever it is written (at the top, under ``TYPE_CHECKING``, inside
a function). tests/test_import_graph.py checks it has no cycles; tests/test_layers.py that each
layer imports only the layers below it."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

RUNTIME = Path(__file__).resolve().parent.parent / "runtime"
PACKAGE = "fpgashare"


def module_name(path: Path) -> str:
    """``runtime/sched/core/engine.py`` -> ``fpgashare.sched.core.engine`` (a package: its __init__)."""
    parts = list(path.relative_to(RUNTIME).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by name."""
    return {module_name(p): p for p in sorted(RUNTIME.rglob("*.py")) if "build" not in p.parts}


def _resolve(name: str, known: dict[str, Path], from_import: bool) -> str | None:
    """The module under runtime/ that ``name`` is, or, for ``from a.b import c``, the module
    ``a.b`` that holds the name ``c``; None for the package's other roots (hdl_sim, apps, ...)."""
    if name in known:
        return name
    parent = name.rpartition(".")[0]
    return parent if from_import and parent in known else None


def imports_of(name: str) -> set[str]:
    """The package's modules ``name`` imports."""
    known = modules()
    path = known[name]
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
            from_import = False
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            # ``from a.b import c``: the module a.b.c if there is one, else a name in a.b
            targets = [f"{origin}.{alias.name}" for alias in node.names]
            from_import = True
        else:
            continue
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                resolved = _resolve(target, known, from_import)
                if resolved is not None and resolved != name:
                    out.add(resolved)
    return out


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the package's modules it imports."""
    return {name: frozenset(imports_of(name)) for name in modules()}


def strongly_connected(g: dict[str, frozenset[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan, iterative):
    each is a set of modules that import each other, directly or through the others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in g:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(g[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def a_cycle(g: dict[str, frozenset[str]], component: list[str]) -> list[str]:
    """One cycle through a strongly connected component, as a path that ends where it starts."""
    members = set(component)
    start = component[0]
    # breadth-first from start's successors back to start, inside the component
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(g[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if child not in previous:
                    previous[child] = node
                    nxt.append(child)
        frontier = nxt
    return component
