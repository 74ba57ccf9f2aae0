"""Template context for an op's C++ autograd kernel, built from its `derivatives:` formulas.

The kernel runs the op below autograd, then hands opforge's autograd runtime
(kernels/include/opforge/core/autograd.h) the tensor inputs, the outputs, what the
formulas need saved and a backward lambda holding the formulas. A tensor input
without a formula raises "opforge.<op> is not differentiable with respect to
<arg>" when a gradient is requested for it, unless its formula is
`non_differentiable` (then it gets none). See Note [Generated autograd].

Note [Forward-mode AD]: an op with `jvp:` formulas also propagates tangents
(torch.func.jvp, torch.autograd.forward_ad): when an input carries one, the kernel
evaluates each formula on the inputs' tangents `<arg>_t` (zeros for an input without one,
nullopt for an absent optional) and attaches the result to its output as that output's
tangent (level 0, the level both APIs use), outside the below-autograd guard so that the
tangent is itself differentiable. An op without formulas raises NotImplementedError
naming it, as ATen ops without forward derivatives do, rather than return no tangent.
"""

from __future__ import annotations

from typing import Any

from codegen import formulas
from codegen.api import cpp
from codegen.dest.common import tensor_args
from codegen.opdecl import OpDecl

Context = dict[str, Any]

# dispatcher C++ type -> (captured copy, statement giving the formula a value of the argument's name)
_CAPTURE: dict[str, tuple[str, str]] = {
    "c10::string_view": ("std::string({n})", "const std::string& {n} = {n}_c;"),
    "at::IntArrayRef": ("{n}.vec()", "const at::IntArrayRef {n}({n}_c);"),
    "c10::SymIntArrayRef": ("{n}.vec()", "const c10::SymIntArrayRef {n}({n}_c);"),
    # float[]: an ArrayRef captured as is would dangle by the time backward runs.
    "at::ArrayRef<double>": ("{n}.vec()", "const at::ArrayRef<double> {n}({n}_c);"),
    "at::OptionalIntArrayRef": (
        "{n}.has_value() ? std::optional<std::vector<int64_t>>({n}->vec()) : std::nullopt",
        "const at::OptionalIntArrayRef {n} = {n}_c ? at::OptionalIntArrayRef(*{n}_c) : at::OptionalIntArrayRef();",
    ),
    "std::optional<c10::string_view>": (
        "{n}.has_value() ? std::optional<std::string>(std::string(*{n})) : std::nullopt",
        "const std::optional<c10::string_view> {n} = {n}_c ? std::optional<c10::string_view>(*{n}_c) : std::nullopt;",
    ),
}


def autograd(op: OpDecl, api: frozenset[str]) -> Context:
    schema = op.schema
    used = {n for d in op.derivatives for n in formulas.names(d.formula)}
    n_out = len(schema.returns)
    result_names = ["result"] if n_out == 1 else [f"result{i}" for i in range(n_out)]
    tensors = tensor_args(op)
    tensor_names = [a.name for a, _ in tensors]
    saved_inputs = [(a.name, kind) for a, kind in tensors if a.name in used]
    saved_outputs = [(i, r) for i, r in enumerate(result_names) if r in used]
    captures, restores = [], []
    for a in schema.arguments.flat_all:
        if a.name in used and a.name not in tensor_names:
            ctype = cpp.argument_type(a)
            capture, restore = _CAPTURE.get(ctype, ("{n}", "const auto& {n} = {n}_c;"))
            captures.append(f"{a.name}_c = {capture.format(n=a.name)}")
            restores.append(restore.format(n=a.name))
    unpack = []
    for i, (name, kind) in enumerate(saved_inputs):
        if kind == "optional":
            unpack.append(
                f"const std::optional<at::Tensor> {name} = saved[{i}].defined() ? "
                f"std::optional<at::Tensor>(saved[{i}]) : std::nullopt;"
            )
        else:
            unpack.append(f"const at::Tensor& {name} = saved[{i}];")
    for j, (_, r) in enumerate(saved_outputs):
        unpack.append(f"const at::Tensor& {r} = saved[{len(saved_inputs) + j}];")
    return {
        "kernel": f"{op.cpp_id}_autograd",
        "signature": cpp.signature(schema, f"{op.cpp_id}_autograd"),
        "api": f"opforge::ops::{op.api_name}",
        "call_args": ", ".join(a.name for a in schema.arguments.flat_all),
        "label": f"opforge.{op.name}",
        "single": n_out == 1,
        "without_autograd": op.without_autograd,
        "n_out": n_out,
        "inputs": ", ".join(tensor_names),
        "saved_inputs": ", ".join(
            n if k == "tensor" else f"{n}.value_or(at::Tensor())" for n, k in saved_inputs
        ),
        "saved_outputs": ", ".join(str(i) for i, _ in saved_outputs),
        "captures": ", ".join(captures),
        "restores": restores,
        "unpack": unpack,
        "n_inputs": len(tensor_names),
        "mutated": [(a.name, kind) for a, kind in tensors if a.is_write],
        "differentiable_outputs": ", ".join(
            "true" if op.output_differentiable(i) else "false" for i in range(n_out)
        ),
        "grads": _grad_lines(op, tensor_names, api),
        "jvp": _jvp_lines(op, [(a.name, kind) for a, kind in tensors], result_names, api),
    }


def _jvp_lines(
    op: OpDecl, tensors: list[tuple[str, str]], result_names: list[str], api: frozenset[str]
) -> list[str]:
    """The statements that set the outputs' tangents (Note [Forward-mode AD])."""
    if not op.jvp:
        return []
    used = {n for d in op.jvp for n in formulas.names(d.formula)}
    primals = {n for n, _ in tensors if n in used}
    lines = [
        f"const auto {n}_p = opforge::autograd::primal({n});" for n, _ in tensors if n in primals
    ]
    lines += [
        f"const auto {n}_t = opforge::autograd::tangent({n});"
        for n, _ in tensors
        if f"{n}_t" in used
    ]
    if len(result_names) > 1:
        lines += [
            f"[[maybe_unused]] const at::Tensor& {r} = std::get<{i}>(result);"
            for i, r in enumerate(result_names)
        ]
    # Every formula first, then the tangents: a formula reads the outputs as primals.
    sets = []
    for k, d in enumerate(op.jvp):
        formula = formulas.qualify_calls(
            formulas.rename(d.formula, {n: f"{n}_p" for n in primals}), api
        )
        lines.append(f"const auto tangent{k} = {formula};")
        if len(d.inputs) == 1:
            sets.append(f"opforge::autograd::set_tangent({d.inputs[0]}, tangent{k});")
        else:
            sets += [
                f"opforge::autograd::set_tangent({r}, std::get<{i}>(tangent{k}));"
                for i, r in enumerate(d.inputs)
            ]
    return lines + sets


def _grad_lines(op: OpDecl, tensor_names: list[str], api: frozenset[str]) -> list[str]:
    position = {n: i for i, n in enumerate(tensor_names)}
    lines = []
    for d in op.derivatives:
        formula = formulas.qualify_calls(d.formula, api)
        if len(d.inputs) == 1:
            i = position[d.inputs[0]]
            lines.append(f"if (needs[{i}]) {{\n      grad_inputs[{i}] = {formula};\n    }}")
        else:
            mask = ", ".join(f"needs[{position[n]}]" for n in d.inputs)
            targets = ", ".join(f"grad_inputs[{position[n]}]" for n in d.inputs)
            lines.append(
                f"if ({' || '.join(f'needs[{position[n]}]' for n in d.inputs)}) {{\n"
                f"      [[maybe_unused]] const std::array<bool, {len(d.inputs)}> grad_input_mask = {{{mask}}};\n"
                f"      std::tie({targets}) = {formula};\n    }}"
            )
    for n in tensor_names:
        if n not in op.differentiable_inputs and n not in op.non_differentiable:
            lines.append(
                f"TORCH_CHECK(!needs[{position[n]}], \"opforge.{op.name} is not differentiable with respect to '{n}'\");"
            )
    return lines
