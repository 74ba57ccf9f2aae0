"""Generator speed on PyTorch's own operator set.

Every `func:` of the native_functions.yaml packaged in the installed torch
becomes a synthetic opforge entry (CPU dispatch, a hand-written meta function
as its shape rule); schemas the generator cannot map (e.g. Dimname, Storage
arguments) are counted and left out; entries with tensor-list inputs, which may not
have backend kernels yet, are declared CompositeImplicitAutograd. Then `python -m codegen gen` is timed on
the folder, cold (empty output) and again with nothing changed.

Run: `.venv/bin/python benchmarks/codegen_speed.py`. Target: cold < 4 s, rerun < 1 s
on a 2-core machine (torchgen takes about 12 s for the same set here).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from codegen.api import cpp
from codegen.model import FunctionSchema

ROOT = Path(__file__).resolve().parents[1]


def native_functions() -> list[str]:
    spec = importlib.util.find_spec("torchgen")
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [e["func"] for e in yaml.load(path.read_text(), Loader=loader)]


def write_schemas(funcs: list[str], folder: Path) -> tuple[int, int]:
    kept, skipped = [], 0
    for func in funcs:
        schema = FunctionSchema.parse(func)
        if cpp.check_supported(schema):
            skipped += 1
            continue
        ident = re.sub(r"\W", "_", str(schema.name))
        entry: dict[str, object] = {
            "func": func,
            "dispatch": {"CPU": f"{ident}_cpu"},
            "shape": f"{ident}_meta",
        }
        if any(
            "Tensor" in str(a.type) and "[]" in str(a.type) for a in schema.arguments.flat_non_out
        ):
            # Tensor-list inputs get no generated autograd yet, so the validator refuses backend
            # kernels for them: these entries are declared as composites instead.
            entry = {"func": func, "dispatch": {"CompositeImplicitAutograd": f"{ident}_composite"}}
        kept.append(yaml.safe_dump([entry], sort_keys=False, width=1000))
    for i in range(0, len(kept), 100):  # ~27 family files of 100 entries
        (folder / f"family{i // 100:02d}.yaml").write_text("\n".join(kept[i : i + 100]))
    return len(kept), skipped


def timed_gen(schemas: Path, out: Path) -> float:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "codegen", "gen", "--schemas", str(schemas), "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    funcs = native_functions()
    with tempfile.TemporaryDirectory() as tmp:
        schemas, out = Path(tmp) / "schemas", Path(tmp) / "generated"
        schemas.mkdir()
        kept, skipped = write_schemas(funcs, schemas)
        cold = timed_gen(schemas, out)
        warm = timed_gen(schemas, out)
        files = sum(1 for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    print(
        f"native_functions.yaml: {len(funcs)} funcs; {kept} generated, {skipped} skipped (unsupported types)"
    )
    print(f"python -m codegen gen, cold:      {cold:6.2f} s  ({files} files)   target < 4 s")
    print(f"python -m codegen gen, unchanged: {warm:6.2f} s                   target < 1 s")


if __name__ == "__main__":
    main()
