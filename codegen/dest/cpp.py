"""Template contexts for the generated C++: kernel headers, per-op registration, library, bindings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codegen import formulas, rules
from codegen.api import binding, cpp
from codegen.dest import checks, pointwise, structured
from codegen.dest.autograd import autograd
from codegen.dest.common import sources, tensor_args
from codegen.opdecl import BACKEND_KEYS, OPMATH, OpDecl, kernel_name

Context = dict[str, Any]


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


def _needs_autograd_kernel(op: OpDecl) -> bool:
    """Backend and explicit-composite ops get an Autograd kernel (CompositeImplicit decomposes)."""
    keys = set(op.keys)
    return bool(tensor_args(op)) and bool(keys & {"CPU", "CUDA", "CompositeExplicitAutograd"})


def header(name: str, ops: Sequence[OpDecl]) -> Context:
    decls: list[Context] = []
    seen: set[cpp.Signature] = set()
    for op in ops:
        if op.pointwise is not None:
            decls += [
                {
                    "comment": f"{op.qualified} [{k}]: generated, see Note [Pointwise engine]",
                    "signature": pointwise.kernel_signature(op, k),
                    # One copy per CPU capability (Note [CPU capabilities]).
                    "per_capability": k == "CPU",
                }
                for k, _ in op.dispatch
            ]
            continue
        if op.structured is not None:
            decls += (
                [
                    {
                        "comment": f"{op.qualified} [CPU]: see Note [Structured ops]",
                        "signature": structured.kernel_signature(op, "CPU"),
                        "per_capability": True,
                    }
                ]
                if "CPU" in op.keys and op.variant_of is None
                else []
            )
            continue
        entries = [(f"{op.qualified} [{k}]", kern) for k, kern in op.dispatch]
        for comment, kern in entries:
            sig = cpp.signature(op.schema, kernel_name(kern))
            if sig not in seen:
                seen.add(sig)
                decls.append({"comment": comment, "signature": sig, "per_capability": False})
    api = [
        {"qualified": o.qualified, "signature": cpp.signature(o.schema, o.api_name)} for o in ops
    ]
    includes = {o.structured.header for o in ops if o.structured is not None}
    if any(own == (OPMATH,) for o in ops for _, own in o.arg_dtypes):
        includes.add("opforge/math/opmath.h")  # an `[opmath]` tensor's element type
    if any(d["per_capability"] for d in decls):
        includes.add("opforge/cpu_capability.h")
    return {
        "sources": sources(ops),
        "name": name,
        "decls": decls,
        "api": api,
        "includes": sorted(includes),
    }


@dataclass(frozen=True)
class Index:
    """Lookups across all ops, built once per run (per-op renderers must not rescan every op)."""

    by_qualified: dict[str, OpDecl]
    api: frozenset[str]
    stem_of_api: dict[str, str]

    @staticmethod
    def of(ops: Sequence[OpDecl]) -> Index:
        return Index(
            {o.qualified: o for o in ops},
            frozenset(o.api_name for o in ops),
            {o.api_name: o.file_stem for o in ops},
        )


def _api(op: OpDecl) -> Context:
    """opforge::ops::<op>: the C++ API, a call through the dispatcher."""
    return {
        "signature": cpp.signature(op.schema, f"opforge::ops::{op.api_name}"),
        "name": op.name,
        "overload": op.overload,
        "fn_type": cpp.function_type(op.schema),
        "args": ", ".join(a.name for a in op.schema.arguments.flat_all),
    }


def registration(name: str, ops: Sequence[OpDecl], index: Index) -> Context:
    """Per op name: the C++ API, checked backend wrappers, Meta, autograd and variant kernels,
    and the TORCH_LIBRARY_IMPL blocks for every key."""
    by_qualified = index.by_qualified
    wrappers: list[Context] = []
    impls: dict[str, list[Context]] = {}
    autograds: list[Context] = []
    api = []
    meta_steps: list[Context] = []
    cuda_kernels: list[Context] = []

    def add_autograd(op: OpDecl) -> None:
        if _needs_autograd_kernel(op):
            ag = autograd(op, index.api)
            autograds.append(ag)
            impls.setdefault("Autograd", []).append({"qualified": op.qualified, "fn": ag["kernel"]})

    for op in ops:
        api.append(_api(op))
        label = f"opforge.{op.name}"
        if op.pointwise is not None:
            functional = by_qualified[op.variant_of] if op.variant_of else op
            if op.variant_of is None:
                meta_steps.append(pointwise.meta_step(op))
                cuda_kernels.append(pointwise.kernel_unit(op))
            pw_wrappers, pw_impls = pointwise.registration(op, functional)
            wrappers += pw_wrappers
            for key, fn in pw_impls:
                impls.setdefault(key, []).append({"qualified": op.qualified, "fn": fn})
            if op.variant_of is None:
                add_autograd(op)
            continue
        if op.structured is not None:
            functional = by_qualified[op.variant_of] if op.variant_of else op
            for w in structured.registration(op, functional):
                wrappers.append(w)
                block = w["block"] if "block" in w else w["key"]
                impls.setdefault(block, []).append({"qualified": op.qualified, "fn": w["fn"]})
            if op.variant_of is None:
                add_autograd(op)
            continue
        if op.variant_of is not None:
            fn = f"{op.cpp_id}_composite"
            body = _variant_body(op, by_qualified[op.variant_of])
            wrappers.append(
                {
                    "key": "Composite",
                    "signature": cpp.signature(op.schema, fn),
                    "op_label": label,
                    "lines": body[:-1],
                    "call": body[-1],
                }
            )
            impls.setdefault("CompositeImplicitAutograd", []).append(
                {"qualified": op.qualified, "fn": fn}
            )
            continue
        for key, kernel in op.dispatch:
            target = f"opforge::{kernel_name(kernel)}"
            if key in BACKEND_KEYS or key == "CompositeExplicitAutograd":
                # A composite over ATen ops runs on every device, Meta included: the same
                # checks (devices agreeing, dtypes) before it.
                lines, renames = checks.checks_before_kernel(op, key)
                call = _kernel_call(op, kernel, renames)
                suffix = "composite" if key == "CompositeExplicitAutograd" else key.lower()
                target = f"{op.cpp_id}_{suffix}_checked"
                wrappers.append(
                    {
                        "key": key,
                        "signature": cpp.signature(op.schema, target),
                        "op_label": label,
                        "lines": lines + call[:-1],
                        "call": call[-1],
                    }
                )
            impls.setdefault(key, []).append({"qualified": op.qualified, "fn": target})
        if op.shape is not None and "Meta" not in op.keys:
            target = f"{op.cpp_id}_meta"
            meta_call = _meta_return(op)
            wrappers.append(
                {
                    "key": "Meta",
                    "signature": cpp.signature(op.schema, target),
                    "op_label": label,
                    "lines": checks.same_device_checks(op)
                    + checks.same_shape_checks(op)
                    + checks.same_dtype_checks(op)
                    + checks.user_checks(op),
                    "call": meta_call,
                }
            )
            impls.setdefault("Meta", []).append({"qualified": op.qualified, "fn": target})
        add_autograd(op)
    # A block `Meta@opforge_bounds` registers into the bounds namespace (Note
    # [Data-dependent lengths] in kernels/include/opforge/length_report.h).
    blocks = [
        {
            "key": k.partition("@")[0],
            "namespace": k.partition("@")[2] or "opforge",
            "cuda": k == "CUDA",
            "impls": v,
        }
        for k, v in sorted(impls.items())
    ]
    return {
        "sources": sources(ops),
        "name": name,
        "wrappers": wrappers,
        "blocks": blocks,
        "autograds": autograds,
        "api": api,
        "includes": _formula_headers(ops, index, name),
        "meta_steps": meta_steps,
        "structured": bool(meta_steps),
        "losses": any(
            op.pointwise is not None and (op.pointwise.reduction or op.pointwise.if_none)
            for op in ops
        ),
        # Note [Call sequence] in opforge/structured_call.h.
        "call_sequence": any(op.structured is not None or op.pointwise is not None for op in ops),
        "cuda_kernels": cuda_kernels,
        "functor_headers": sorted({k["header"] for k in cuda_kernels}),
        "structured_cuda": structured.cuda_declarations(ops),
    }


def _formula_headers(ops: Sequence[OpDecl], index: Index, own: str) -> list[str]:
    """Headers of the opforge ops that derivative formulas call."""
    stems = index.stem_of_api
    words = {c for op in ops for d in op.derivatives for c in formulas.calls(d.formula)}
    return sorted({stems[w] for w in words if w in stems} - {own})


def library(ops: Sequence[OpDecl]) -> Context:
    defs = [
        {"schema": str(op.schema), "tags": ", ".join(f"at::Tag::{t}" for t in op.tags)}
        for op in ops
    ]
    bounds = [{"schema": str(op.schema)} for op in ops if op.data_dependent]
    return {"sources": sources(ops), "defs": defs, "bounds": bounds}


def bindings(ops: Sequence[OpDecl]) -> Context:
    fns = []
    for op in ops:
        bound = [binding.bind(f"opforge.{op.name}", a) for a in op.schema.arguments.flat_all]
        fns.append(
            {
                # Overloads of one name are told apart in Python (opforge/_ops.py), and
                # reach the fast path by their C++ API names (conv2d, conv2d_padding).
                "py_name": op.name if op.schema.arguments.out else op.api_name,
                "api": op.api_name,
                "params": ", ".join(b.param for b in bound),
                "preludes": [b.prelude for b in bound if b.prelude],
                "exprs": ", ".join(b.expr for b in bound),
                "return_type": cpp.return_type(op.schema, by_value=True),
                "arg_names": [b.name for b in bound],
                "doc": op.doc,
            }
        )
    return {"sources": sources(ops), "fns": fns, "headers": sorted({o.file_stem for o in ops})}


def cuda_sim(ops: Sequence[OpDecl]) -> Context:
    """The CUDA simulator's op namespace (see Note [CUDA simulation] in
    kernels/cuda/sim/runtime.cpp): every op with a CUDA kernel, defined again as
    opforge_cuda_sim::<op> whose CPU kernel is the CUDA entry point, with the
    CUDA wrapper's checks on CPU tensors."""
    simulated = [o for o in ops if o.variant_of is None and "CUDA" in o.keys]
    defs, wrappers, impls, steps, cuda_kernels = [], [], [], [], []
    for op in simulated:
        if op.pointwise is not None:
            steps.append(pointwise.meta_step(op))
            cuda_kernels.append(pointwise.kernel_unit(op))
            ws = pointwise.simulated_wrappers(op)
            defs.append({"schema": str(op.schema)})
            wrappers += ws
            impls.append({"qualified": op.qualified, "fn": ws[-1]["fn"]})
            continue
        if op.structured is not None:
            w = structured.simulated_wrapper(op)
            defs.append({"schema": str(op.schema)})
            wrappers.append(w)
            impls.append({"qualified": op.qualified, "fn": w["fn"], "lists": op.lists is not None})
            continue
        kernel = dict(op.dispatch)["CUDA"]
        lines, renames = checks.checks_before_kernel(op, "CUDA", simulated=True)
        call = _kernel_call(op, kernel, renames)
        fn = f"{op.cpp_id}_cuda_simulated"
        defs.append({"schema": str(op.schema)})
        wrappers.append(
            {
                "signature": cpp.signature(op.schema, fn),
                "op_label": f"opforge.{op.name}",
                "lines": lines + call[:-1],
                "call": call[-1],
            }
        )
        impls.append({"qualified": op.qualified, "fn": fn})
    # The module links none of _C: the kernels' calls of opforge::ops::* need their own copy.
    return {
        "sources": sources(ops),
        "headers": sorted({o.file_stem for o in ops}),
        "api": [_api(o) for o in ops],
        "defs": defs,
        "wrappers": wrappers,
        "impls": impls,
        "meta_steps": steps,
        # Note [Call sequence] in opforge/structured_call.h.
        "call_sequence": any(op.structured is not None or op.pointwise is not None for op in ops),
        "cuda_kernels": cuda_kernels,
        "functor_headers": sorted({k["header"] for k in cuda_kernels}),
        "structured_cuda": structured.cuda_declarations(simulated),
        "lists": any(op.lists is not None and op.structured is not None for op in simulated),
    }
