"""`list`, `explain` and `new`: the add-an-op workflow on the command line."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from codegen import rules
from codegen.api import cpp, python
from codegen.dest import structured
from codegen.diagnostics import did_you_mean
from codegen.model import Argument, FunctionSchema, SchemaError
from codegen.opdecl import (
    BACKEND_KEYS,
    DISPATCH_KEYS,
    FLOATING_DTYPES,
    OpDecl,
    is_template,
    kernel_name,
)


def autograd_kind(op: OpDecl) -> str:
    if op.pointwise is not None and op.variant_of is not None:
        return "through the functional op"
    if op.variant_of is not None or op.keys == ("CompositeImplicitAutograd",):
        return "composite"
    return "formulas" if op.derivatives else "none (backward raises)"


def meta_kind(op: OpDecl) -> str:
    if op.pointwise is not None:
        return "pointwise meta step"
    if op.structured is not None:
        return f"structured {op.structured.meta}"
    if op.shape is None:
        return (
            "composite"
            if op.variant_of or "CompositeImplicitAutograd" in op.keys
            else "Meta kernel"
        )
    return "hand-written" if isinstance(op.shape, rules.MetaFunction) else f"rule {op.shape}"


def op_rows(ops: Sequence[OpDecl]) -> list[dict[str, object]]:
    return [
        {
            "op": o.qualified,
            "keys": registered_keys(o)
            if o.pointwise
            else list(o.keys) or ["CompositeImplicitAutograd (generated)"],
            "dtypes": list(o.dtypes),
            "autograd": autograd_kind(o),
            "meta": meta_kind(o),
            "schema": str(o.schema),
            "declared_in": str(o.loc),
        }
        for o in ops
    ]


def list_ops(ops: Sequence[OpDecl], fmt: str) -> str:
    rows = op_rows(ops)
    if fmt == "json":
        return json.dumps(rows, indent=2)
    head = f"{'op':18s} {'keys':38s} {'autograd':23s} {'meta':32s} dtypes"
    lines = [head, "-" * len(head)]
    for r in rows:
        keys = ",".join(r["keys"])  # type: ignore[arg-type]
        dtypes = ",".join(r["dtypes"])  # type: ignore[arg-type]
        lines.append(f"{r['op']:18s} {keys:38s} {r['autograd']!s:23s} {r['meta']!s:32s} {dtypes}")
    return "\n".join(lines)


def explain(ops: Sequence[OpDecl], name: str) -> str:
    matches = [o for o in ops if o.name == name or o.qualified == name]
    if not matches:
        hint = did_you_mean(name, {o.name for o in ops})
        raise KeyError(f"no operator '{name}'" + (f"; {hint}" if hint else ""))
    out: list[str] = []
    for op in matches:
        out += [f"{op.qualified}: {op.schema}", f"  declared in   {op.loc}"]
        if op.pointwise is not None:
            for fn in op.pointwise.functors:
                out.append(
                    f"  implement     struct opforge::math::{fn.name} "
                    f"(template over T) in kernels/include/{op.pointwise.header}"
                )
            out.append(
                f"                applied as {op.pointwise} to the tensor arguments; "
                "kernels, Meta and variants are generated"
            )
        if op.structured is not None:
            st = op.structured
            out.append(
                f"  implement     [Meta] template <typename Int> structured::result<Int, "
                f"{len(op.schema.returns)}, {st.plan}> {st.meta}(const char* op, ...);"
            )
            out.append(f"                in kernels/include/{st.header}")
            for key in op.keys:
                out.append(
                    f"  implement     [{key}] template <typename scalar_t> "
                    f"{structured.kernel_signature(op, key)};"
                )
                out.append(f"                in {structured.kernel_file(st.source, key)}")
        for key, kernel in op.dispatch if op.pointwise is None and op.structured is None else ():
            sig = cpp.signature(op.schema, kernel_name(kernel))
            if is_template(kernel):
                out.append(f"  implement     [{key}] template <typename scalar_t> {sig};")
                out.append(
                    f"                then end the file with OPFORGE_INSTANTIATE_{kernel_name(kernel)}"
                )
            else:
                out.append(f"  implement     [{key}] {sig};")
        if isinstance(op.shape, rules.MetaFunction):
            out.append(
                f"  implement     [Meta] {cpp.signature(op.schema, op.shape.name)};  (kernels/meta/)"
            )
        out += [
            f"  C++ API       {cpp.signature(op.schema, 'opforge::ops::' + op.api_name)}",
            f"  Python        opforge.{op.name}({python.parameters(op.schema)}) -> {python.return_hint(op.schema)}",
            f"                torch.ops.opforge.{op.name}.{op.overload or 'default'}",
            f"  keys          {', '.join(registered_keys(op))}",
            f"  autograd      {autograd_kind(op)}",
            f"  meta          {meta_kind(op)}",
            f"  generated     generated/include/opforge/ops/{op.file_stem}.h, "
            f"generated/csrc/ops/{op.file_stem}.cpp, generated/python/_ops.py",
        ]
    return "\n".join(out)


def registered_keys(op: OpDecl) -> list[str]:
    if op.pointwise is not None:
        extra = ["Functionalize"] if op.variant_of is not None else []
        return ["CPU", "CUDA", "Meta", "Autograd", *extra]
    if op.structured is not None:
        return [*op.keys, "Meta (generated)", "Autograd (generated)"]
    keys = list(op.keys) or ["CompositeImplicitAutograd"]
    if op.shape is not None and "Meta" not in keys:
        keys.append("Meta (generated)")
    if set(op.keys) & {*BACKEND_KEYS, "CompositeExplicitAutograd"}:
        keys.append("Autograd (generated)")
    return keys


_CPU_STUB = """
// {qualified}: generated by `python -m codegen new`; replace the body.
template <typename scalar_t>
{signature} {{
  TORCH_CHECK(false, "opforge.{name}: the CPU kernel is not implemented yet");
}}

OPFORGE_INSTANTIATE_{kernel}
"""
_CUDA_ENTRY_STUB = """
// {qualified}: generated by `python -m codegen new`; allocate the output, take
// opforge::cuda::current_stream() ("host.h") and call a launcher from {family}.cu
// inside OPFORGE_CUDA_CHECK(...).
template <typename scalar_t>
{signature} {{
  TORCH_CHECK(false, "opforge.{name}: the CUDA kernel is not implemented yet");
}}

OPFORGE_INSTANTIATE_{kernel}
"""
_CUDA_KERNEL_STUB = """
// {qualified}: device code for {kernel} (no torch headers here: it compiles in
// about a second, and the CUDA simulator builds it as plain C++, see README.md).
// template <typename T>
// __global__ void {name}_kernel(T* out, const T* in, int64_t n) {{ ... }}
// launched as OPFORGE_LAUNCH(blocks, threads, 0, stream, {name}_kernel<T>)(out, in, n);
"""

# Per dispatch key: (kernels/ subfolder, file suffix, stub) for each file a new op touches.
_STUBS = {
    "CPU": [("cpu", ".cpp", _CPU_STUB)],
    "CUDA": [("cuda", ".cpp", _CUDA_ENTRY_STUB), ("cuda", ".cu", _CUDA_KERNEL_STUB)],
}


_FUNCTOR_STUB = """
namespace opforge::math {{

// {qualified}: generated by `python -m codegen new --pointwise`; the scalar math
// of the op, applied to {arity} element by element (the CPU and CUDA kernels
// are generated around it). Compute in acc_t (float for half/bfloat16); write
// piecewise functions with select_ (functions.h) so the CPU loops vectorize.
template <typename T>
struct {functor} {{
  using acc_t = opmath_t<T>;{fields}
  C10_HOST_DEVICE T operator()({params}) const {{
    return cast_to<T>({body});
  }}
}};

}}  // namespace opforge::math
"""


def _new_pointwise(
    schema: FunctionSchema, name: str, family: str, root: Path
) -> tuple[list[str], str]:
    """The YAML lines of a pointwise entry, and the functor stub appended to math/<family>.h."""
    tensors = [a.name for a in schema.arguments.flat_non_out if str(a.type) == "Tensor"]
    scalars = [a for a in schema.arguments.flat_non_out if str(a.type) in ("Scalar", "float")]
    functor = f"{name}_fn"
    header = root / "kernels" / "include" / "opforge" / "math" / f"{family}.h"
    stub = _FUNCTOR_STUB.format(
        qualified=str(schema.name),
        arity=", ".join(tensors),
        functor=functor,
        fields="".join(f"\n  acc_t {a.name};" for a in scalars),
        params=", ".join(f"T {t}" for t in tensors),
        body=" + ".join(f"cast_to<acc_t>({t})" for t in tensors) + "  /* TODO: the op's math */",
    )
    if not header.exists():
        header.parent.mkdir(parents=True, exist_ok=True)
        header.write_text(
            f"#pragma once\n// Scalar math of the `pointwise:` entries in schemas/{family}.yaml.\n"
            "#include <opforge/math/functions.h>\n#include <opforge/math/opmath.h>\n"
        )
    with header.open("a") as f:
        f.write(stub)
    return [f"  pointwise: {functor}({', '.join(a.name for a in scalars)})"], str(
        header.relative_to(root)
    )


def new_op(
    name: str,
    family: str,
    keys: Sequence[str],
    func: str | None,
    reference: str | None,
    root: Path,
    pointwise: bool = False,
) -> list[str]:
    """Append a YAML skeleton and kernel stubs (or, `pointwise`, a functor stub) for a new op;
    returns the files touched."""
    func = func or f"{name}(Tensor self) -> Tensor"
    try:
        schema = FunctionSchema.parse(func)
    except SchemaError as e:
        raise ValueError(f"bad --func: {e}") from None
    if schema.name.name != name:
        raise ValueError(f"--func declares '{schema.name.name}', not '{name}'")
    for key in keys:
        if key not in DISPATCH_KEYS:
            raise ValueError(
                f"unknown dispatch key '{key}'; {did_you_mean(key, DISPATCH_KEYS) or ''}".rstrip(
                    "; "
                )
            )
    schemas = root / "schemas"
    if not schemas.is_dir():
        raise ValueError(f"no schemas/ folder under {root}; run from the checkout or pass --root")
    for path in schemas.glob("*.yaml"):
        for line in path.read_text().splitlines():
            if line.strip().startswith(("- func:", "func:")) and line.split("func:")[
                1
            ].strip().split("(")[0] in (
                name,
                str(schema.name),
            ):
                raise ValueError(
                    f"operator '{name}' already exists in {path}; `new` never overwrites an op"
                )
    first = next((a.name for a in schema.arguments.positional if str(a.type) == "Tensor"), "self")
    kernels = {} if pointwise else {k: f"{name}_{k.lower()}" for k in keys}
    touched: list[str] = []
    if pointwise:
        body, header = _new_pointwise(schema, name, family, root)
    else:
        body = [
            "  dispatch:",
            *[f"    {k}: {kern}<scalar_t>" for k, kern in kernels.items()],
            f"  shape: like({first})",
        ]
    lines = [
        "",
        f"- func: {func}",
        f'  doc: "TODO - one line on what {name} computes."',
        *body,
        f"  dtypes: [{', '.join(FLOATING_DTYPES)}]",
        f"  reference: {reference or 'torch.' + name}",
        "  samples:",
        "    - {"
        + ", ".join(_sample_value(a) for a in schema.arguments.flat_non_out if _sample_value(a))
        + "}",
    ]
    yaml_path = schemas / f"{family}.yaml"
    touched.insert(0, str(yaml_path.relative_to(root)))
    if pointwise:
        touched.append(header)
    with yaml_path.open("a") as f:
        if not yaml_path.exists() or yaml_path.stat().st_size == 0:
            f.write(f"# {family} operators.\n")
        f.write("\n".join(lines) + "\n")
    fields = {"qualified": str(schema.name), "name": name, "family": family}
    for key, kern in kernels.items():
        fields |= {"kernel": kern, "signature": cpp.signature(schema, kern)}
        for folder, suffix, stub in _STUBS.get(key, ()):
            path = root / "kernels" / folder / f"{family}{suffix}"
            touched.append(_append(path, name, stub.format(**fields), root))
    return touched


def _sample_value(a: Argument) -> str:
    """A sample value for every argument a call needs (tensors by shape), so `check` passes."""
    t = str(a.type)
    if t == "Tensor":
        return f"{a.name}: [4, 5]"
    if a.default is not None or a.type.is_nullable():
        return ""
    return f"{a.name}: " + {
        "Scalar": "0.5",
        "float": "0.5",
        "int": "1",
        "bool": "false",
        "str": "none",
    }.get(t.rstrip("[]0123456789"), "1")


def _append(path: Path, op: str, stub: str, root: Path) -> str:
    """Append a stub; a new .cpp starts with the op's generated header and namespace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".cpp":
        include = f"#include <opforge/ops/{op}.h>\n"
        text = (
            path.read_text()
            if path.exists()
            else "#include <c10/util/Exception.h>\n\nnamespace opforge {\n}  // namespace opforge\n"
        )
        if include not in text:
            text = include + text
        closings = list(re.finditer(r"}\s*//\s*namespace opforge\s*$", text, re.MULTILINE))
        if not closings:
            raise ValueError(
                f"{path} has no '}}  // namespace opforge' line to add the stub before"
            )
        at = closings[-1].start()
        text = text[:at] + stub.lstrip("\n") + "\n" + text[at:]
        path.write_text(text)
    else:
        with path.open("a") as f:
            f.write(stub)
    return str(path.relative_to(root))
