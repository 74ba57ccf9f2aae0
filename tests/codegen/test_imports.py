"""The generator's modules import in one direction: no import cycle in codegen/, at module
level or inside functions (a cycle hides behind a function-level import just as well)."""

from __future__ import annotations

import ast
from pathlib import Path

CODEGEN = Path(__file__).resolve().parents[2] / "codegen"


def _module_name(path: Path) -> str:
    parts = path.relative_to(CODEGEN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """codegen module -> the codegen modules it imports anywhere in its body."""
    modules = {_module_name(p): p for p in CODEGEN.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from codegen.dest import cpp` names a module, `from codegen.opdecl import X`
                # a module's member
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            else:
                continue
            found = [t for t in targets if t in modules and t != name]
            # a package import (`codegen.dest`) counts only when no submodule was named
            graph[name] |= {t for t in found if not any(f.startswith(t + ".") for f in found)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_codegen_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_check_emitters_and_the_model_import_no_emitter() -> None:
    """The layers: the model (opdecl, model, rules) imports no generator stage, and the
    check emitters (dest.checks, dest.common) no op-kind or top-level emitter."""
    graph = import_graph()
    emitters = {m for m in graph if m.startswith("codegen.dest.")} - {
        "codegen.dest.checks",
        "codegen.dest.common",
    }
    for low in ("codegen.opdecl", "codegen.model", "codegen.rules"):
        assert not {m for m in graph[low] if m.startswith("codegen.dest") or m == "codegen.parse"}
    for low in ("codegen.dest.checks", "codegen.dest.common"):
        assert not graph[low] & emitters, low
