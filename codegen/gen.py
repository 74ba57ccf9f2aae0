"""model -> rendered files: the whole `generated/` tree as {relative path: text}."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

import jinja2

from codegen.dest import cpp, pointwise, py, structured
from codegen.opdecl import OpDecl

TEMPLATES = Path(__file__).parent / "templates"


@functools.cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["pyrepr"] = python_literal
    return env


def python_literal(value: Any) -> str:
    """repr() that stays valid Python for YAML's non-finite floats (`.inf`, `.nan`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, (list, tuple)):
        items = [python_literal(v) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    return repr(value)


def _render(template: str, context: dict[str, Any]) -> str:
    return _env().get_template(template).render(**context)


def render_all(ops: Sequence[OpDecl]) -> dict[str, str]:
    """Every generated file, keyed by its path relative to the output folder."""
    files: dict[str, str] = {}
    ops = sorted(ops, key=lambda o: (o.file_stem, o.name, o.overload))
    by_name = [(stem, list(g)) for stem, g in groupby(ops, key=lambda o: o.file_stem)]
    index = cpp.Index.of(ops)
    per_op: list[tuple[str, str, Callable[[str, Sequence[OpDecl]], dict[str, Any]]]] = [
        ("include/opforge/ops/{}.h", "kernel_header.h.j2", cpp.header),
        ("csrc/ops/{}.cpp", "op_registration.cpp.j2", lambda n, g: cpp.registration(n, g, index)),
    ]
    for name, group in by_name:
        for pattern, template, dest in per_op:
            files[pattern.format(name)] = _render(template, dest(name, group))
    for op in ops:
        if op.pointwise is not None and op.variant_of is None:
            unit = pointwise.kernel_unit(op)
            for path, template in pointwise.unit_names(op).items():
                files[path] = _render(template, unit)
    for path, unit in structured.units(ops).items():
        files[path] = _render("structured_kernels.j2", unit)
    # The CUDA simulator's registrations, a unit per family (Note [Build groups]).
    for family in sorted({o.family for o in ops}):
        members = [o for o in ops if o.family == family]
        files[f"csrc/cuda_sim/{family}.cpp"] = _render("cuda_sim.cpp.j2", cpp.cuda_sim(members))
    whole: list[tuple[str, str, Callable[[Sequence[OpDecl]], dict[str, Any]]]] = [
        ("csrc/library.cpp", "library.cpp.j2", cpp.library),
        ("csrc/bindings.cpp", "bindings.cpp.j2", cpp.bindings),
        ("python/_ops.py", "ops.py.j2", py.wrappers),
        ("python/_ops.pyi", "ops.pyi.j2", py.wrappers),
        ("docs/operators.md", "operators.md.j2", py.docs),
        ("sources.cmake", "sources.cmake.j2", py.cmake),
    ]
    for path, template, whole_dest in whole:
        files[path] = _render(template, whole_dest(ops))
    return files


def _existing(out: Path) -> set[str]:
    if not out.is_dir():
        return set()
    return {
        str(p.relative_to(out))
        for p in out.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def stale(out: Path, files: dict[str, str]) -> list[str]:
    """Paths that `write` would change: differing, missing, or no longer generated."""
    problems = []
    for rel, text in sorted(files.items()):
        path = out / rel
        if not path.exists():
            problems.append(f"{rel} (missing)")
        elif path.read_text() != text:
            problems.append(f"{rel} (out of date)")
    problems += [f"{rel} (no longer generated)" for rel in sorted(_existing(out) - set(files))]
    return problems


def write(out: Path, files: dict[str, str]) -> list[str]:
    """Write files whose content changed (so mtimes and rebuilds stay minimal); prune orphans."""
    changed = []
    for rel, text in sorted(files.items()):
        path = out / rel
        if path.exists() and path.read_text() == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        changed.append(rel)
    for rel in sorted(_existing(out) - set(files)):
        (out / rel).unlink()
        changed.append(f"{rel} (removed)")
    return changed
