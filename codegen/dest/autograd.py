"""Template context for an op's C++ autograd kernel, built from its `derivatives:` formulas.

The kernel is a torch::autograd::Function: forward re-dispatches below autograd
and saves exactly what the formulas name; backward evaluates each formula for
the inputs that need a gradient. A tensor input without a formula raises
"opforge.<op> is not differentiable with respect to <arg>" when a gradient is
requested for it. See Note [Generated autograd] in README.
"""

from __future__ import annotations

import re
from typing import Any

from codegen.api import cpp
from codegen.dest.common import tensor_args
from codegen.model import Argument
from codegen.opdecl import OpDecl

Context = dict[str, Any]
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")

# dispatcher C++ type -> (expression to store in an IValue, statement restoring a local of that name)
_SAVE: dict[str, tuple[str, str]] = {
    "int64_t": ("{n}", "const int64_t {n} = {iv}.toInt();"),
    "double": ("{n}", "const double {n} = {iv}.toDouble();"),
    "bool": ("{n}", "const bool {n} = {iv}.toBool();"),
    "c10::string_view": ("std::string({n})", "const std::string {n} = {iv}.toStringRef();"),
    "const at::Scalar&": ("{n}", "const at::Scalar {n} = {iv}.toScalar();"),
    "at::ScalarType": ("{n}", "const at::ScalarType {n} = {iv}.toScalarType();"),
    "c10::SymInt": ("{n}", "const c10::SymInt {n} = {iv}.toSymInt();"),
    "at::IntArrayRef": ("{n}.vec()", "const std::vector<int64_t> {n} = {iv}.toIntVector();"),
    "c10::SymIntArrayRef": (
        "{n}",
        "const std::vector<c10::SymInt> {n}_v = {iv}.toSymIntVector();\n"
        "    const c10::SymIntArrayRef {n}({n}_v);",
    ),
    "at::OptionalIntArrayRef": (
        "{n}.has_value() ? c10::IValue({n}->vec()) : c10::IValue()",
        "const auto {n}_v = {iv}.toOptional<std::vector<int64_t>>();\n"
        "    const at::OptionalIntArrayRef {n} = {n}_v ? at::OptionalIntArrayRef(*{n}_v) : at::OptionalIntArrayRef();",
    ),
    "std::optional<int64_t>": (
        "{n}.has_value() ? c10::IValue(*{n}) : c10::IValue()",
        "const auto {n} = {iv}.toOptional<int64_t>();",
    ),
    "std::optional<double>": (
        "{n}.has_value() ? c10::IValue(*{n}) : c10::IValue()",
        "const auto {n} = {iv}.toOptional<double>();",
    ),
}


def _uses(op: OpDecl) -> set[str]:
    return {w for d in op.derivatives for w in _WORD.findall(d.formula)}


def qualify_calls(formula: str, api: set[str]) -> str:
    """`gelu_backward(...)` -> `opforge::ops::gelu_backward(...)`: unqualified, argument-dependent
    lookup on at::Tensor would also find (and clash with) ATen's op of the same name."""
    return re.sub(
        r"(?<![\w.:])([A-Za-z_]\w*)(?=\s*\()",
        lambda m: f"opforge::ops::{m.group(1)}" if m.group(1) in api else m.group(1),
        formula,
    )


def autograd(op: OpDecl, api: set[str]) -> Context:
    schema = op.schema
    args = schema.arguments.flat_all
    used = _uses(op)
    n_out = len(schema.returns)
    result_names = ["result"] if n_out == 1 else [f"result{i}" for i in range(n_out)]
    tensors = {a.name: kind for a, kind in tensor_args(op)}
    saved_tensors = [a.name for a in args if a.name in used and a.name in tensors]
    saved_results = [(i, r) for i, r in enumerate(result_names) if r in used]
    save_values, restore_values = [], []
    for a in args:
        if a.name in used and a.name not in tensors:
            ctype = cpp.argument_type(a)
            store, restore = _SAVE[ctype]
            save_values.append(f'ctx->saved_data["{a.name}"] = {store.format(n=a.name)};')
            restore_values.append(restore.format(n=a.name, iv=f'ctx->saved_data["{a.name}"]'))
    has_optional = [a.name for a in args if tensors.get(a.name) == "optional"]
    needs = _needs_lines(args, tensors)
    grads = _grad_lines(op, args, tensors, api)
    forward_args = ", ".join(f"{t} {n}" for t, n in cpp.parameters(schema))
    return {
        "struct": f"{op.cpp_id}_autograd",
        "kernel": f"{op.cpp_id}_autograd_kernel",
        "signature": cpp.signature(schema, f"{op.cpp_id}_autograd_kernel"),
        "forward_params": forward_args,
        "call_args": ", ".join(a.name for a in args),
        "api": f"opforge::ops::{op.api_name}",
        "single": n_out == 1,
        "return_type": cpp.return_type(schema),
        "n_out": n_out,
        "n_args": len(args),
        "saved_tensors": saved_tensors,
        "saved_results": saved_results,
        "optional_flags": has_optional,
        "save_values": save_values,
        "restore_values": restore_values,
        "needs": needs,
        "grads": grads,
        "uses_grads": "grads" in used,
        "uses_grad": "grad" in used,
        "qualified": op.qualified,
    }


def _needs_lines(args: tuple[Argument, ...], tensors: dict[str, str]) -> list[str]:
    """Map each tensor argument to its autograd edge (absent optionals have none)."""
    lines = ["size_t edge = 0;"]
    for a in args:
        kind = tensors.get(a.name)
        if kind == "tensor":
            lines.append(f"const bool need_{a.name} = ctx->needs_input_grad(edge++);")
        elif kind == "optional":
            lines.append(
                f'const bool need_{a.name} = ctx->saved_data["has_{a.name}"].toBool() && ctx->needs_input_grad(edge++);'
            )
    return lines


def _grad_lines(
    op: OpDecl, args: tuple[Argument, ...], tensors: dict[str, str], api: set[str]
) -> list[str]:
    position = {a.name: i for i, a in enumerate(args)}
    lines = []
    for d in op.derivatives:
        formula = qualify_calls(d.formula, api)
        need = " || ".join(f"need_{n}" for n in d.inputs)
        if len(d.inputs) == 1:
            n = d.inputs[0]
            lines.append(f"if (need_{n}) {{\n      grad_inputs[{position[n]}] = {formula};\n    }}")
        else:
            mask = ", ".join(f"need_{n}" for n in d.inputs)
            targets = ", ".join(f"grad_inputs[{position[n]}]" for n in d.inputs)
            lines.append(
                f"if ({need}) {{\n      [[maybe_unused]] const std::array<bool, {len(d.inputs)}> grad_input_mask = {{{mask}}};\n"
                f"      std::tie({targets}) = {formula};\n    }}"
            )
    for a in args:
        if a.name in tensors and a.name not in op.differentiable_inputs:
            lines.append(
                f"TORCH_CHECK(!need_{a.name}, \"opforge.{op.name} is not differentiable with respect to '{a.name}'\");"
            )
    return lines
