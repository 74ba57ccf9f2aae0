"""The kernels kind (Note [Op kinds] in dest/cpp.py): ops whose `dispatch:` names their
kernels, backend kernels or composites over ATen ops, each behind the generated checks, and
a Meta kernel from the entry's `shape:` rule."""

from __future__ import annotations

from codegen import rules
from codegen.api import cpp
from codegen.dest import checks
from codegen.dest.common import Context, Registered, Simulated, kernel_function, tensor_args
from codegen.opdecl import BACKEND_KEYS, OpDecl, kernel_name


def _kernel_call(op: OpDecl, kernel: str, renames: dict[str, str]) -> list[str]:
    args = ", ".join(renames.get(a.name, a.name) for a in op.schema.arguments.flat_all)
    return [f"return opforge::{kernel_name(kernel)}({args});"]


def _meta_return(op: OpDecl) -> str:
    """The return statement of the Meta kernel generated from a rule-based `shape:`."""
    shape, dtype_rule = op.shape, op.dtype_rule
    if isinstance(dtype_rule, rules.Promote):
        dtype = f"opforge::check::promote({{{', '.join(dtype_rule.args)}}})"
    else:
        dtype = f"{dtype_rule.arg if isinstance(dtype_rule, rules.Like) else checks.first_tensor(op)}.scalar_type()"
    if isinstance(shape, rules.Like):
        sizes, options = f"{shape.arg}.sym_sizes()", shape.arg
    elif isinstance(shape, rules.Same):
        sizes, options = f"{shape.args[0]}.sym_sizes()", shape.args[0]
    elif isinstance(shape, rules.Broadcast):
        pairs = ", ".join(f'{{"{a}", {a}.sym_sizes()}}' for a in shape.args)
        sizes, options = f"opforge::shape::broadcast<c10::SymInt>(kOp, {{{pairs}}})", shape.args[0]
    elif isinstance(shape, rules.Sizes):
        tensors = {a.name for a, _ in tensor_args(op)}
        dims = ", ".join(rules.size_expr_cpp(e, tensors) for e in shape.exprs)
        sizes = f"opforge::shape::checked_sizes(kOp, c10::SymDimVector{{{dims}}})"
        options = checks.first_tensor(op) or "self"
    elif isinstance(shape, rules.Reduce):
        sizes = f'opforge::shape::reduce<c10::SymInt>(kOp, "{shape.dim}", {shape.arg}.sym_sizes(), {shape.dim}, {shape.keepdim})'
        options = shape.arg
    else:
        raise AssertionError(shape)
    return f"return at::empty_symint({sizes}, {options}.options().dtype({dtype}));"


def declarations(op: OpDecl) -> list[Context]:
    return [
        {
            "comment": f"{op.qualified} [{k}]",
            "signature": cpp.signature(op.schema, kernel_name(kern)),
            "per_capability": False,
        }
        for k, kern in op.dispatch
    ]


def register(op: OpDecl, functional: OpDecl) -> Registered:
    part = Registered()
    for key, kernel in op.dispatch:
        target = f"opforge::{kernel_name(kernel)}"
        if key in BACKEND_KEYS or key == "CompositeExplicitAutograd":
            # A composite over ATen ops runs on every device, Meta included: the same
            # checks (devices agreeing, dtypes) before it.
            lines, renames = checks.checks_before_kernel(op, key)
            call = _kernel_call(op, kernel, renames)
            suffix = "composite" if key == "CompositeExplicitAutograd" else key.lower()
            target = f"{op.cpp_id}_{suffix}_checked"
            part.wrappers.append(kernel_function(op, key, target, lines + call))
        elif key == "CompositeImplicitAutograd":
            # Note [Composite errors] in opforge/core/composite_errors.h.
            target = f"{op.cpp_id}_composite_named"
            body = [
                "try {",
                *(f"  {line}" for line in _kernel_call(op, kernel, {})),
                "} catch (c10::Error& e) {",
                "  opforge::check::name_composite(e, kOp);",
                "  throw;",
                "}",
            ]
            part.wrappers.append(kernel_function(op, key, target, body))
        part.impls.append((key, target))
    if op.shape is not None and "Meta" not in op.keys:
        target = f"{op.cpp_id}_meta"
        lines = (
            checks.same_device_checks(op)
            + checks.same_shape_checks(op)
            + checks.same_dtype_checks(op)
            + checks.user_checks(op)
        )
        part.wrappers.append(kernel_function(op, "Meta", target, [*lines, _meta_return(op)]))
        part.impls.append(("Meta", target))
    return part


def simulate(op: OpDecl) -> Simulated:
    lines, renames = checks.checks_before_kernel(op, "CUDA", simulated=True)
    call = _kernel_call(op, dict(op.dispatch)["CUDA"], renames)
    fn = f"{op.cpp_id}_cuda_simulated"
    return Simulated([kernel_function(op, "CUDA", fn, lines + call)])
