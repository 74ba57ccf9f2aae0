"""The Autograd and Functionalize kernels of generated in-place / out= variants with real
kernels (pointwise and structured ops): both differentiate or functionalize through the
functional op followed by copy_, after `prepare` (the op's meta step at SymInt sizes and the
checks or resizing of the written tensors) has run.
"""

from __future__ import annotations

from codegen.opdecl import OpDecl


def targets(op: OpDecl) -> list[str]:
    """The tensors a variant writes into: `self` in place, the `out` arguments for out=."""
    args = op.schema.arguments
    if op.generated_variant == "inplace":
        return [args.positional[0].name]
    return [a.name for a in args.out]


def _returned(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"std::forward_as_tuple({', '.join(names)})"


def copy_from_functional(op: OpDecl, call: str) -> list[str]:
    """Write the functional op's result (`call`) into op's targets and return them."""
    names = targets(op)
    if len(names) == 1:
        return [f"return {names[0]}.copy_({call});"]
    lines = [f"const auto result = {call};"]
    lines += [f"{n}.copy_(std::get<{i}>(result));" for i, n in enumerate(names)]
    return [*lines, f"return {_returned(names)};"]


def _functional_call(op: OpDecl, f: OpDecl, *, clone_target: bool) -> str:
    written = set(targets(op)) if clone_target else set()
    args = ", ".join(
        f"{a.name}.clone()" if a.name in written else a.name
        for a in f.schema.arguments.flat_non_out
    )
    return f"opforge::ops::{f.api_name}({args})"


def autograd_body(op: OpDecl, f: OpDecl, inputs: list[str], prepare: list[str]) -> list[str]:
    """Differentiable through the functional op and copy_ when a gradient is needed, else the
    kernel below autograd (and a version bump of what it wrote). An op without autograd
    always writes below autograd, as under torch.no_grad."""
    lines = []
    if not f.without_autograd:
        # The functional op gets a copy of a tensor written in place, so what it saves stays
        # intact.
        call = _functional_call(op, f, clone_target=True)
        needs = f"opforge::autograd::any_requires_grad({{{', '.join(inputs)}}})"
        if f.jvp:  # a tangent too: copy_ carries the functional op's (Note [Forward-mode AD])
            needs += f" || opforge::autograd::any_tangent({{{', '.join(inputs)}}})"
        else:
            lines.append(
                f'opforge::autograd::reject_forward_ad("opforge.{op.name}", {{{", ".join(inputs)}}});'
            )
        lines.append(f"if ({needs}) {{")
        lines += ["  " + line for line in [*prepare, *copy_from_functional(op, call)]]
        lines.append("}")
    all_args = ", ".join(a.name for a in op.schema.arguments.flat_all)
    lines += [
        "{",
        "  at::AutoDispatchBelowADInplaceOrView below_autograd;",
        f"  opforge::ops::{op.api_name}({all_args});",
        "}",
    ]
    lines += [f"{n}.unsafeGetTensorImpl()->bump_version();" for n in targets(op)]
    return [*lines, f"return {_returned(targets(op))};"]


def functionalize_body(op: OpDecl, f: OpDecl, prepare: list[str]) -> list[str]:
    """Functionalization (torch.compile, torch.export): the functional op, then copy_."""
    return [*prepare, *copy_from_functional(op, _functional_call(op, f, clone_target=False))]


def returned(op: OpDecl) -> str:
    """`return out;` or `return std::forward_as_tuple(out0, out1);`."""
    return f"return {_returned(targets(op))};"
