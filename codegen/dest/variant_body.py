"""The variant-body kind (Note [Op kinds] in dest/cpp.py): an in-place or out= variant of
an op with no kernels of its own, a CompositeImplicitAutograd body that calls the functional
op and copies its result into the written tensors."""

from __future__ import annotations

from codegen.dest.common import Context, Registered, Simulated, kernel_function
from codegen.opdecl import OpDecl


def _variant_body(op: OpDecl, functional: OpDecl) -> list[str]:
    """The CompositeImplicitAutograd body of a generated in-place or out= variant."""
    f_args = ", ".join(a.name for a in functional.schema.arguments.flat_all)
    call = f"opforge::ops::{functional.api_name}({f_args})"
    # An op without autograd writes as under torch.no_grad (a parameter, for torch.nn.init).
    no_grad = ["const at::NoGradGuard no_grad;"] if functional.without_autograd else []
    if op.generated_variant == "inplace":
        target = op.schema.arguments.positional[0].name
        return [
            *no_grad,
            f"const at::Tensor result = {call};",
            f'opforge::check::writable_result(kOp, "{target}", {target}, result);',
            f"{target}.copy_(result);",
            f"return {target};",
        ]
    outs = [a.name for a in op.schema.arguments.out]
    if len(outs) == 1:
        return [
            *no_grad,
            f"const at::Tensor result = {call};",
            f'opforge::check::resize_out(kOp, "{outs[0]}", {outs[0]}, result);',
            f"{outs[0]}.copy_(result);",
            f"return {outs[0]};",
        ]
    lines = [*no_grad, f"const auto result = {call};"]
    for i, o in enumerate(outs):
        lines += [
            f'opforge::check::resize_out(kOp, "{o}", {o}, std::get<{i}>(result));',
            f"{o}.copy_(std::get<{i}>(result));",
        ]
    lines.append(f"return std::forward_as_tuple({', '.join(outs)});")
    return lines


def declarations(op: OpDecl) -> list[Context]:
    return []  # no kernels to implement


def register(op: OpDecl, functional: OpDecl) -> Registered:
    fn = f"{op.cpp_id}_composite"
    body = _variant_body(op, functional)
    return Registered(
        [kernel_function(op, "Composite", fn, body)], [("CompositeImplicitAutograd", fn)]
    )


def simulate(op: OpDecl) -> Simulated:
    raise AssertionError(f"{op.qualified}: a variant body runs its functional op's kernels")
