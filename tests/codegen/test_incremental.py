"""Editing one op's YAML entry rewrites only that op's generated files (plus the Python
wrappers and docs where the edit shows there); every other file keeps its mtime."""

from __future__ import annotations

import shutil
from pathlib import Path

from codegen import gen, parse

ROOT = Path(__file__).resolve().parents[2]


def _generate(schemas: Path, out: Path) -> list[str]:
    return gen.write(out, gen.render_all(parse.load(schemas)))


def _mtimes(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


def test_editing_one_entry_touches_only_its_files(tmp_path: Path) -> None:
    schemas, out = tmp_path / "schemas", tmp_path / "generated"
    shutil.copytree(ROOT / "schemas", schemas)
    _generate(schemas, out)
    before = _mtimes(out)
    yaml = schemas / "activation.yaml"

    # A doc edit: only Python wrappers and the reference doc (nothing to recompile).
    yaml.write_text(
        yaml.read_text().replace("Rectified linear unit", "Rectified linear unit (edited)")
    )
    assert sorted(_generate(schemas, out)) == ["docs/operators.md", "python/_ops.py"]

    # A derivative edit: that op's translation unit only.
    yaml.write_text(
        yaml.read_text().replace(
            "self: relu_backward(grad, result)", "self: relu_backward(grad, result) * 1"
        )
    )
    assert _generate(schemas, out) == ["csrc/ops/relu.cpp"]

    # A new argument: the op's header, unit and (a pointwise op) CPU kernel, the schema lists
    # (the library's and the CUDA simulator's), the bindings, Python and docs.
    yaml.write_text(
        yaml.read_text().replace(
            "- func: relu(Tensor self)", "- func: relu(Tensor self, *, bool fast=False)"
        )
    )
    changed = set(_generate(schemas, out))
    assert changed == {
        "include/opforge/ops/relu.h",
        "csrc/ops/relu.cpp",
        "csrc/kernels/relu_cpu.cpp",
        "csrc/library.cpp",
        "csrc/cuda_sim/activation.cpp",
        "csrc/bindings.cpp",
        "python/_ops.py",
        "python/_ops.pyi",
        "docs/operators.md",
    }
    after = _mtimes(out)
    untouched = {f for f in before if f not in changed}
    assert untouched and all(after[f] == before[f] for f in untouched)
