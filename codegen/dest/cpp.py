"""Template contexts for the generated C++: kernel headers, per-op registration, library, bindings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codegen import formulas
from codegen.api import binding, cpp
from codegen.dest import autocast, kernels, pointwise, structured, variant_body
from codegen.dest.autograd import autograd
from codegen.dest.common import sources, tensor_args
from codegen.opdecl import OPMATH, Kernels, OpDecl, Pointwise, Structured, VariantBody

Context = dict[str, Any]


# Note [Op kinds]: every op is one kind (OpDecl.kind: pointwise, structured, a variant
# body, or kernels named under `dispatch:`), and each kind's module offers the same three
# functions: declarations(op) (the kernels to implement, for the op's header),
# register(op, functional) (its generated functions and TORCH_LIBRARY_IMPL entries) and
# simulate(op) (its CUDA simulator registration). The emitters below loop over ops and
# ask the op's kind module; no emitter branches on the kind.
_KIND_MODULES: dict[type, Any] = {
    Pointwise: pointwise,
    Structured: structured,
    VariantBody: variant_body,
    Kernels: kernels,
}


def kind_module(op: OpDecl) -> Any:
    return _KIND_MODULES[type(op.kind)]


def _needs_autograd_kernel(op: OpDecl) -> bool:
    """Backend and explicit-composite ops get an Autograd kernel (CompositeImplicit decomposes)."""
    keys = set(op.keys)
    return bool(tensor_args(op)) and bool(keys & {"CPU", "CUDA", "CompositeExplicitAutograd"})


def header(name: str, ops: Sequence[OpDecl]) -> Context:
    decls: list[Context] = []
    seen: set[cpp.Signature] = set()
    for op in ops:
        for d in kind_module(op).declarations(op):
            if d["signature"] not in seen:  # composites may share one kernel
                seen.add(d["signature"])
                decls.append(d)
    api = [
        {"qualified": o.qualified, "signature": cpp.signature(o.schema, o.api_name)} for o in ops
    ]
    includes = {o.structured.header for o in ops if o.structured is not None}
    if any(own == (OPMATH,) for o in ops for _, own in o.arg_dtypes):
        includes.add("opforge/math/opmath.h")  # an `[opmath]` tensor's element type
    if any(d["per_capability"] for d in decls):
        includes.add("opforge/core/cpu_capability.h")
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
        functional = by_qualified[op.variant_of] if op.variant_of else op
        part = kind_module(op).register(op, functional)
        cast = autocast.register(op)  # Note [Autocast]
        part.wrappers += cast.wrappers
        part.impls += cast.impls
        wrappers += part.wrappers
        for key, fn in part.impls:
            impls.setdefault(key, []).append({"qualified": op.qualified, "fn": fn})
        meta_steps += part.meta_steps
        cuda_kernels += part.cuda_kernels
        if op.variant_of is None:  # variants differentiate through their functional op
            add_autograd(op)
    # A block `Meta@opforge_bounds` registers into the bounds namespace (Note
    # [Data-dependent lengths] in kernels/include/opforge/core/length_report.h).
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
        # Note [Composite errors] in opforge/core/composite_errors.h.
        "composites": any(k == "CompositeImplicitAutograd" for op in ops for k, _ in op.dispatch),
        # Note [Call sequence] in opforge/core/structured_call.h.
        "call_sequence": any(op.structured is not None or op.pointwise is not None for op in ops),
        "cuda_kernels": cuda_kernels,
        "functor_headers": sorted({k["header"] for k in cuda_kernels}),
        "structured_cuda": structured.cuda_declarations(ops),
        "autocast": any(op.autocast is not None for op in ops),
        # (a unit's variants sit beside their functional op: Note [Forward-mode AD])
        "forward_ad": any(op.jvp for op in ops),
    }


def _formula_headers(ops: Sequence[OpDecl], index: Index, own: str) -> list[str]:
    """Headers of the opforge ops that derivative formulas call."""
    stems = index.stem_of_api
    words = {c for op in ops for d in (*op.derivatives, *op.jvp) for c in formulas.calls(d.formula)}
    return sorted({stems[w] for w in words if w in stems} - {own})


def library(ops: Sequence[OpDecl]) -> Context:
    # pt2_compliant_tag on every op: each passes opcheck in the battery (schema, fake kernel,
    # autograd registration), which is what the tag promises torch.compile and export.
    defs = [
        {
            "schema": str(op.schema),
            "tags": ", ".join(f"at::Tag::{t}" for t in (*op.tags, "pt2_compliant_tag")),
        }
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
        part = kind_module(op).simulate(op)
        defs.append({"schema": str(op.schema)})
        wrappers += part.wrappers
        impls.append(
            {"qualified": op.qualified, "fn": part.wrappers[-1]["fn"], "lists": part.lists}
        )
        steps += part.meta_steps
        cuda_kernels += part.cuda_kernels
    # The module links none of _C: the kernels' calls of opforge::ops::* need their own copy.
    return {
        "sources": sources(ops),
        "headers": sorted({o.file_stem for o in ops}),
        "api": [_api(o) for o in ops],
        "defs": defs,
        "wrappers": wrappers,
        "impls": impls,
        "meta_steps": steps,
        # Note [Call sequence] in opforge/core/structured_call.h.
        "call_sequence": any(op.structured is not None or op.pointwise is not None for op in ops),
        "cuda_kernels": cuda_kernels,
        "functor_headers": sorted({k["header"] for k in cuda_kernels}),
        "structured_cuda": structured.cuda_declarations(simulated),
        "lists": any(op.lists is not None and op.structured is not None for op in simulated),
    }
