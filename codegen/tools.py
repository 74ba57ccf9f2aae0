"""`list`, `explain` and `new`: the add-an-op workflow on the command line."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from codegen.api import cpp, python
from codegen.dest import structured
from codegen.diagnostics import did_you_mean
from codegen.model import Argument, FunctionSchema, SchemaError
from codegen.opdecl import (
    BACKEND_KEYS,
    DISPATCH_KEYS,
    FLOATING_DTYPES,
    OpDecl,
    kernel_name,
)


def autograd_kind(op: OpDecl) -> str:
    if (op.pointwise or op.structured) and op.variant_of is not None:
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
    return f"rule {op.shape}"


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
            "autocast": o.autocast or "-",
            # torch.export needs the fake kernel every op has; data-dependent output sizes
            # export as unbacked symbols
            "export": "unbacked" if o.data_dependent else "yes",
            "vmap": o.batch_rule.kind if o.batch_rule is not None else "fallback",
            "sharding": o.sharding or (o.batch_rule.kind if o.batch_rule is not None else "-"),
            "onnx": o.onnx.rsplit(".", 1)[-1] if o.onnx is not None else "-",
            "jvp": "yes" if o.jvp else "-",
            "bench": o.bench is not None,
            "schema": str(o.schema),
            "declared_in": str(o.loc),
        }
        for o in ops
    ]


def list_ops(ops: Sequence[OpDecl], fmt: str) -> str:
    rows = op_rows(ops)
    if fmt == "json":
        return json.dumps(rows, indent=2)
    head = (
        f"{'op':18s} {'keys':38s} {'autograd':23s} {'meta':32s} {'autocast':8s} "
        f"{'export':8s} {'vmap':11s} {'sharding':11s} {'onnx':8s} {'jvp':4s} dtypes"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        keys = ",".join(r["keys"])  # type: ignore[arg-type]
        dtypes = ",".join(r["dtypes"])  # type: ignore[arg-type]
        lines.append(
            f"{r['op']:18s} {keys:38s} {r['autograd']!s:23s} {r['meta']!s:32s} "
            f"{r['autocast']!s:8s} {r['export']!s:8s} {r['vmap']!s:11s} {r['sharding']!s:11s} "
            f"{r['onnx']!s:8s} {r['jvp']!s:4s} {dtypes}"
        )
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
        if op.structured is not None and op.variant_of is None:
            st = op.structured
            out.append(
                f"  implement     [Meta] template <typename Int> structured::result<Int, "
                f"{len(op.schema.returns)}, {st.plan}> {st.meta}(const char* op, ...);"
            )
            out.append(f"                in kernels/include/{st.header}")
            for key in op.keys:
                declaration = structured.kernel_signature(op, key).declaration(" ")
                out.append(f"  implement     [{key}] {declaration};")
                out.append(f"                in {structured.kernel_file(st.source, key)}")
        for key, kernel in op.dispatch if op.pointwise is None and op.structured is None else ():
            sig = cpp.signature(op.schema, kernel_name(kernel))
            out.append(f"  implement     [{key}] {sig};")
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
        extra = ["Functionalize (generated)"] if op.variant_of is not None else []
        return [*op.keys, "Meta (generated)", "Autograd (generated)", *extra]
    keys = list(op.keys) or ["CompositeImplicitAutograd"]
    if op.shape is not None and "Meta" not in keys:
        keys.append("Meta (generated)")
    if set(op.keys) & {*BACKEND_KEYS, "CompositeExplicitAutograd"}:
        keys.append("Autograd (generated)")
    return keys


_PLAN_STUB = """
// {qualified}: what its kernels loop over, filled by {meta} (generated by
// `python -m codegen new`; add the sizes and parameters the kernels need).
struct {plan} {{
  int64_t numel = 0;
}};
"""
_META_STUB = """
// {qualified}: generated by `python -m codegen new`. Check every argument here
// (TORCH_CHECK(cond, op, ": ...'arg'...")), say each output's sizes and dtype,
// and fill the plan for concrete sizes. Runs on Meta/fake tensors too.
template <typename Int>
structured::result<Int, {n}, {plan}> {meta}(const char* op, {params}) {{
  structured::result<Int, {n}, {plan}> r{{{{{outputs}}}}};
  if constexpr (structured::concrete<Int>) {{
    r.plan.numel = {first}.numel();
  }}
  return r;
}}
"""
_CPU_STUB = """
// {qualified}: generated by `python -m codegen new`; replace the body. The
// outputs, then the tensor arguments (contiguous), then the plan; the meta
// function has checked everything.
template <typename scalar_t>
{signature} {{
  TORCH_CHECK(false, "opforge.{name}: the CPU kernel is not implemented yet");
}}
"""
_CUDA_STUB = """
// {qualified}: generated by `python -m codegen new`; replace the body with the
// launch of device code written here (no torch headers: the CUDA simulator
// builds this file as plain C++ too), e.g.
//   template <typename T>
//   __global__ void {name}_kernel(T* out, const T* in, int64_t n) {{ ... }}
//   OPFORGE_LAUNCH(blocks, threads, 0, stream, {name}_kernel<T>)(...);
//   return cudaGetLastError();
template <typename scalar_t>
{signature} {{
  return cudaErrorNotYetImplemented;
}}
"""

# Per file a new structured op touches: (path under kernels/, what a new file starts with, stub).
_STRUCTURED_FILES = {
    "plan": (
        "include/opforge/{family}/plan.h",
        "#pragma once\n// The plans of the structured ops of schemas/{family}.yaml (Note [Structured\n"
        "// ops] in opforge/core/structured.h). Torch-free, so the CUDA sources include it.\n"
        "#include <cstdint>\n\nnamespace opforge {{\n}}  // namespace opforge\n",
        _PLAN_STUB,
    ),
    "Meta": (
        "include/opforge/{family}/meta.h",
        "#pragma once\n// Meta functions of the structured ops of schemas/{family}.yaml (Note\n"
        "// [Structured ops] in opforge/core/structured.h).\n#include <opforge/{family}/plan.h>\n"
        "#include <opforge/core/structured.h>\n\nnamespace opforge {{\n}}  // namespace opforge\n",
        _META_STUB,
    ),
    "CPU": (
        "cpu/{family}.cpp",
        "// CPU kernels of the structured ops of schemas/{family}.yaml, compiled once per\n"
        "// CPU capability (Note [CPU capabilities] in opforge/core/cpu_capability.h).\n"
        "#include <opforge/core/cpu_capability.h>\n#include <opforge/{family}/plan.h>\n\n"
        "#include <c10/util/Exception.h>\n\n"
        "namespace opforge::OPFORGE_CPU_CAPABILITY {{\n}}  // namespace opforge::OPFORGE_CPU_CAPABILITY\n",
        _CPU_STUB,
    ),
    "CUDA": (
        "cuda/{family}.cu",
        "// CUDA kernels of the structured ops of schemas/{family}.yaml.\n"
        '#include "common.cuh"\n\n#include <opforge/{family}/plan.h>\n\n'
        "namespace opforge {{\n}}  // namespace opforge\n",
        _CUDA_STUB,
    ),
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
    """The YAML lines of a pointwise entry, and the functor stub appended to <family>/math.h."""
    tensors = [a.name for a in schema.arguments.flat_non_out if str(a.type) == "Tensor"]
    scalars = [a for a in schema.arguments.flat_non_out if str(a.type) in ("Scalar", "float")]
    functor = f"{name}_fn"
    header = root / "kernels" / "include" / "opforge" / family / "math.h"
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
    first = next((a.name for a in schema.arguments.positional if str(a.type) == "Tensor"), None)
    if not pointwise and (first is None or set(keys) - {"CPU", "CUDA"} or not keys):
        raise ValueError(
            "a new op is structured: it needs a first Tensor argument and --keys from CPU, CUDA "
            "(or pass --pointwise)"
        )
    touched: list[str] = []
    if pointwise:
        body, header = _new_pointwise(schema, name, family, root)
    else:
        body = [f"  structured: {{meta: {name}_meta, plan: {name}_plan, source: {family}}}"]
        if set(keys) != {"CPU", "CUDA"}:
            body += ["  dispatch:", *[f"    {k}: {name}_{k.lower()}<scalar_t>" for k in keys]]
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
    if not pointwise:
        assert first is not None
        touched += _new_structured(schema, name, family, keys, first, root)
    return touched


def _new_structured(
    schema: FunctionSchema, name: str, family: str, keys: Sequence[str], first: str, root: Path
) -> list[str]:
    """The plan, meta function and kernel stubs of a new structured op, each inserted before
    the closing namespace of its family's file (created when missing)."""
    outs = ", ".join(f"structured::like<Int>({first})" for _ in schema.returns)
    fields = {
        "qualified": str(schema.name),
        "name": name,
        "family": family,
        "plan": f"{name}_plan",
        "meta": f"{name}_meta",
        "n": len(schema.returns),
        "params": ", ".join(f"{t} {n}" for t, n in cpp.parameters(schema)),
        "outputs": outs,
        "first": first,
    }
    touched = []
    for part in ("plan", "Meta", *keys):
        where, prelude, stub = _STRUCTURED_FILES[part]
        if part in ("CPU", "CUDA"):
            kernel = f"{name}_{part.lower()}"
            fields["signature"] = structured.signature_of(schema, {}, f"{name}_plan", kernel, part)
        path = root / "kernels" / where.format(family=family)
        touched.append(_insert(path, stub.format(**fields), prelude.format(family=family), root))
    header = f"#include <opforge/ops/{name}.h>\n"
    cpu = root / "kernels" / "cpu" / f"{family}.cpp"
    text = cpu.read_text() if "CPU" in keys else header
    if header not in text:
        # The op's generated header: a kernel whose signature drifts fails to compile.
        plan = f"#include <opforge/{family}/plan.h>\n"
        cpu.write_text(text.replace(plan, header + plan) if plan in text else header + text)
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


def _insert(path: Path, stub: str, prelude: str, root: Path) -> str:
    """Insert a stub before the file's last `}  // namespace opforge` (CPU kernels:
    `opforge::OPFORGE_CPU_CAPABILITY`; a new file starts with `prelude`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else prelude
    closings = list(
        re.finditer(
            r"}\s*//\s*namespace opforge(::OPFORGE_CPU_CAPABILITY)?\s*$", text, re.MULTILINE
        )
    )
    if not closings:
        raise ValueError(f"{path} has no '}}  // namespace opforge' line to add the stub before")
    at = closings[-1].start()
    before = text[:at] if text[:at].endswith("\n\n") else text[:at] + "\n"
    path.write_text(before + stub.lstrip("\n") + "\n" + text[at:])
    return str(path.relative_to(root))
