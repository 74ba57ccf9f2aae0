"""Template contexts for the generated C++: kernel headers, per-op registration, library, bindings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from codegen import rules
from codegen.api import binding, cpp
from codegen.model import Argument, BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import BACKEND_KEYS, DTYPES, FLOATING_DTYPES, OpDecl

Context = dict[str, Any]


def sources(ops: Sequence[OpDecl]) -> str:
    return ", ".join(sorted({o.loc.path for o in ops}))


def _tensor_kind(a: Argument) -> str | None:
    t = a.type
    if t == BaseType(BaseTy.Tensor):
        return "tensor"
    if isinstance(t, OptionalType) and t.elem == BaseType(BaseTy.Tensor):
        return "optional"
    if isinstance(t, ListType) and t.elem == BaseType(BaseTy.Tensor):
        return "list"
    return None


def tensor_args(op: OpDecl) -> list[tuple[Argument, str]]:
    return [(a, k) for a in op.schema.arguments.flat_all if (k := _tensor_kind(a)) is not None]


def dtype_description(dtypes: Sequence[str]) -> str:
    kind = "a floating tensor" if set(dtypes) <= set(FLOATING_DTYPES) else "a tensor of dtype"
    return f"{kind} ({', '.join(dtypes)})"


def _checks(op: OpDecl, key: str) -> tuple[list[str], dict[str, str]]:
    """Statements run before the kernel, and argument renames (promoted copies)."""
    lines: list[str] = []
    renames: dict[str, str] = {}
    tensors = tensor_args(op)
    dtypes = ", ".join(f"at::ScalarType::{DTYPES[d]}" for d in op.dtypes)
    allowed = f'{{{dtypes}}}, "{dtype_description(op.dtypes)}"'
    ref = next((a.name for a, k in tensors if k == "tensor"), None)
    for a, _ in tensors:
        if key == "CPU":
            lines.append(
                f'opforge::check::device_type(kOp, "{a.name}", {a.name}, c10::DeviceType::CPU);'
            )
        elif ref is not None and a.name == ref:
            lines.append(
                f'opforge::check::device_type(kOp, "{a.name}", {a.name}, c10::DeviceType::CUDA);'
            )
        elif ref is not None:
            lines.append(f'opforge::check::same_device(kOp, "{a.name}", {a.name}, "{ref}", {ref});')
    promoted = op.dtype_rule.args if isinstance(op.dtype_rule, rules.Promote) else ()
    if promoted:
        names = ", ".join(promoted)
        label = "/".join(f"'{n}'" for n in promoted)
        lines.append(f"const at::ScalarType promoted = opforge::check::promote({{{names}}});")
        lines.append(f'opforge::check::dtype(kOp, "{label}", promoted, {allowed});')
        for n in promoted:
            lines.append(f"const at::Tensor {n}_p = {n}.to(promoted);")
            renames[n] = f"{n}_p"
    for a, _ in tensors:
        if a.name not in promoted:
            lines.append(f"opforge::check::dtype(kOp, \"'{a.name}'\", {a.name}, {allowed});")
    if key == "CUDA" and ref is not None:
        lines.append(f"const c10::DeviceGuard device_guard({ref}.device());")
    return lines, renames


def _same_device_checks(op: OpDecl) -> list[str]:
    """Meta kernels see mixed devices too (a meta tensor routes there); reject them likewise."""
    tensors = tensor_args(op)
    ref = next((a.name for a, k in tensors if k == "tensor"), None)
    return [
        f'opforge::check::same_device(kOp, "{a.name}", {a.name}, "{ref}", {ref});'
        for a, _ in tensors
        if ref is not None and a.name != ref
    ]


def _call_args(op: OpDecl, renames: dict[str, str]) -> str:
    return ", ".join(renames.get(a.name, a.name) for a in op.schema.arguments.flat_all)


def _meta_body(op: OpDecl) -> list[str]:
    """Statements of the generated Meta kernel for a rule-based `shape:`."""
    shape, dtype_rule = op.shape, op.dtype_rule
    first = tensor_args(op)[0][0].name
    if isinstance(dtype_rule, rules.Promote):
        dtype = f"opforge::check::promote({{{', '.join(dtype_rule.args)}}})"
    else:
        dtype = f"{dtype_rule.arg if isinstance(dtype_rule, rules.Like) else first}.scalar_type()"
    if isinstance(shape, rules.Like):
        sizes, options = f"{shape.arg}.sym_sizes()", shape.arg
    elif isinstance(shape, rules.Broadcast):
        pairs = ", ".join(f'{{"{a}", {a}.sym_sizes()}}' for a in shape.args)
        sizes, options = f"opforge::shape::broadcast<c10::SymInt>(kOp, {{{pairs}}})", shape.args[0]
    elif isinstance(shape, rules.Reduce):
        sizes = f'opforge::shape::reduce<c10::SymInt>(kOp, "{shape.dim}", {shape.arg}.sym_sizes(), {shape.dim}, {shape.keepdim})'
        options = shape.arg
    else:
        raise AssertionError(shape)
    return [f"return at::empty_symint({sizes}, {options}.options().dtype({dtype}));"]


def header(name: str, ops: Sequence[OpDecl]) -> Context:
    decls = []
    for op in ops:
        for key, kernel in op.dispatch:
            decls.append(
                {
                    "comment": f"{op.qualified} [{key}]",
                    "signature": cpp.signature(op.schema, kernel),
                }
            )
        if isinstance(op.shape, rules.MetaFunction):
            decls.append(
                {
                    "comment": f"{op.qualified} [Meta, shape rule]",
                    "signature": cpp.signature(op.schema, op.shape.name),
                }
            )
    return {"sources": sources(ops), "name": name, "decls": _unique(decls)}


def _unique(decls: list[Context]) -> list[Context]:
    seen: set[str] = set()
    return [d for d in decls if not (d["signature"] in seen or seen.add(d["signature"]))]  # type: ignore[func-returns-value]


def registration(name: str, ops: Sequence[OpDecl]) -> Context:
    """Per op name: checked backend wrappers and TORCH_LIBRARY_IMPL blocks for every key."""
    wrappers: list[Context] = []
    impls: dict[str, list[Context]] = {}
    for op in ops:
        for key, kernel in op.dispatch:
            target = f"opforge::{kernel}"
            if key in BACKEND_KEYS:
                lines, renames = _checks(op, key)
                fn = f"{op.cpp_id}_{key.lower()}_checked"
                wrappers.append(
                    {
                        "key": key,
                        "signature": cpp.signature(op.schema, fn),
                        "op_label": f"opforge.{op.name}",
                        "lines": lines,
                        "call": f"return opforge::{kernel}({_call_args(op, renames)});",
                    }
                )
                target = fn
            impls.setdefault(key, []).append({"qualified": op.qualified, "fn": target})
        if op.shape is not None and "Meta" not in op.keys:
            target = (
                f"opforge::{op.shape.name}"
                if isinstance(op.shape, rules.MetaFunction)
                else f"{op.cpp_id}_meta"
            )
            if not isinstance(op.shape, rules.MetaFunction):
                wrappers.append(
                    {
                        "key": "Meta",
                        "signature": cpp.signature(op.schema, target),
                        "op_label": f"opforge.{op.name}",
                        "lines": _same_device_checks(op),
                        "call": _meta_body(op)[0],
                    }
                )
            impls.setdefault("Meta", []).append({"qualified": op.qualified, "fn": target})
    blocks = [{"key": k, "cuda": k == "CUDA", "impls": v} for k, v in sorted(impls.items())]
    return {"sources": sources(ops), "name": name, "wrappers": wrappers, "blocks": blocks}


def library(ops: Sequence[OpDecl]) -> Context:
    defs = []
    for op in ops:
        tags = ", ".join(f"at::Tag::{t}" for t in op.tags)
        defs.append({"schema": str(op.schema), "tags": tags})
    return {"sources": sources(ops), "defs": defs}


def bindings(ops: Sequence[OpDecl]) -> Context:
    fns = []
    for op in ops:
        bound = [binding.bind(f"opforge.{op.name}", a) for a in op.schema.arguments.flat_all]
        fns.append(
            {
                "py_name": op.name,
                "qualified": op.qualified,
                "name": op.name,
                "overload": op.overload,
                "params": ", ".join(b.param for b in bound),
                "preludes": [b.prelude for b in bound if b.prelude],
                "exprs": ", ".join(b.expr for b in bound),
                "fn_type": cpp.function_type(op.schema),
                "return_type": cpp.return_type(op.schema).replace("at::Tensor&", "at::Tensor"),
                "arg_names": [b.name for b in bound],
                "doc": op.doc,
            }
        )
    return {"sources": sources(ops), "fns": fns}
