"""Rules that look across entries, run after every entry parsed on its own."""

from __future__ import annotations

import importlib

from codegen import formulas
from codegen.diagnostics import Diagnostics, did_you_mean
from codegen.opdecl import BACKEND_KEYS, OpDecl

# Identifiers a formula may use besides the op's arguments (see README, `derivatives`).
_FORMULA_NAMES = {"grad", "grads", "result", "grad_input_mask", "true", "false", "nullptr"}
_CPP_WORDS = {"static_cast", "double", "float", "int64_t", "bool", "auto", "std", "at", "c10"}


def validate(ops: list[OpDecl], diags: Diagnostics) -> None:
    seen: dict[str, OpDecl] = {}
    api = {o.api_name for o in ops}
    for op in ops:
        _check_formulas(op, api, diags)
        first = seen.setdefault(op.qualified, op)
        if first is not op:
            diags.error(
                op.loc,
                f"operator '{op.qualified}' is declared twice (first at {first.loc})",
                "give one of them a different overload name, e.g. 'name.Tensor'",
            )
        _check_out_overload(op, diags)
        _check_meta(op, diags)
        _check_tensor_lists(op, diags)


def _check_formulas(op: OpDecl, api: set[str], diags: Diagnostics) -> None:
    args = {a.name for a in op.schema.arguments.flat_all}
    if op.derivatives:
        for clash in sorted(args & (_FORMULA_NAMES | {"result0", "result1", "result2"})):
            diags.error(
                op.loc_of("derivatives"),
                f"argument '{clash}' of '{op.qualified}' clashes with the formula name '{clash}'",
                f"rename the argument, e.g. '{clash}_output'",
            )
    results = (
        {f"result{i}" for i in range(len(op.schema.returns))}
        if len(op.schema.returns) > 1
        else set()
    )
    allowed = args | _FORMULA_NAMES | results | _CPP_WORDS
    for d in op.derivatives:
        for name, call in formulas.tokens(d.formula):
            if call and name not in api and name not in _CPP_WORDS:
                diags.error(
                    d.loc,
                    f"formula for '{', '.join(d.inputs)}' calls '{name}', which is not an "
                    "opforge operator",
                    did_you_mean(name, api)
                    or "declare the backward op in schemas/, or call ATen as at::name(...)",
                )
            elif not call and name not in allowed:
                diags.error(
                    d.loc,
                    f"formula for '{', '.join(d.inputs)}' names '{name}', which is not an "
                    f"argument of '{op.qualified}'",
                    did_you_mean(name, allowed)
                    or f"available: {', '.join(sorted(args | {'grad', 'result'}))}",
                )


def _check_out_overload(op: OpDecl, diags: Diagnostics) -> None:
    outs = op.schema.arguments.out
    if not outs:
        return
    rets = op.schema.returns
    if not rets and all(str(o.type) == "Tensor[]" for o in outs):
        return  # PyTorch's convention: out= overloads writing into lists return ()
    if len(outs) != len(rets):
        diags.error(
            op.loc,
            f"'{op.qualified}' has {len(outs)} out argument(s) but returns {len(rets)} value(s)",
            "an out= overload returns exactly its out arguments, e.g. '-> Tensor(a!)'",
        )
        return
    for out, ret in zip(outs, rets, strict=True):
        if ret.annotation != out.annotation or ret.type != out.type:
            diags.error(
                op.loc,
                f"'{op.qualified}': return '{ret}' does not match out argument '{out}'",
                f"return it with the same alias annotation, e.g. '{out.type}({out.annotation.alias_set[0] if out.annotation else 'a'}!)'",
            )


def _check_tensor_lists(op: OpDecl, diags: Diagnostics) -> None:
    """The generated autograd records Tensor and Tensor? inputs only; a list would get no gradient."""
    if not set(op.keys) & {*BACKEND_KEYS, "CompositeExplicitAutograd"}:
        return
    for a in op.schema.arguments.flat_non_out:
        if "Tensor" in str(a.type) and "[]" in str(a.type):
            diags.error(
                op.loc,
                f"'{op.qualified}': argument '{a.name}' is a tensor list, which generated "
                "autograd does not support yet",
                "use CompositeImplicitAutograd, or separate Tensor arguments",
            )


def _check_meta(op: OpDecl, diags: Diagnostics) -> None:
    has_backend = any(k in BACKEND_KEYS for k in op.keys)
    if has_backend and op.shape is None and "Meta" not in op.keys:
        diags.error(
            op.loc_of("dispatch"),
            f"'{op.qualified}' has backend kernels but no 'shape:' rule or Meta kernel",
            "torch.compile and opcheck need one; e.g. 'shape: like(self)'",
        )


def validate_references(ops: list[OpDecl], diags: Diagnostics) -> None:
    """Import every `reference` (slow: imports torch), so only `check` runs it."""
    for op in ops:
        if op.reference is None:
            continue
        module_name, _, attr = op.reference.rpartition(".")
        try:
            module = importlib.import_module(module_name)
            getattr(module, attr)
        except (ImportError, AttributeError) as e:
            diags.error(
                op.loc_of("reference"),
                f"reference '{op.reference}' of '{op.qualified}' cannot be imported: {e}",
                "name an importable function, e.g. torch.nn.functional.relu",
            )
