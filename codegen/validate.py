"""Rules that look across entries, run after every entry parsed on its own."""

from __future__ import annotations

import importlib

from codegen.diagnostics import Diagnostics
from codegen.opdecl import BACKEND_KEYS, OpDecl


def validate(ops: list[OpDecl], diags: Diagnostics) -> None:
    seen: dict[str, OpDecl] = {}
    for op in ops:
        first = seen.setdefault(op.qualified, op)
        if first is not op:
            diags.error(
                op.loc,
                f"operator '{op.qualified}' is declared twice (first at {first.loc})",
                "give one of them a different overload name, e.g. 'name.Tensor'",
            )
        _check_out_overload(op, diags)
        _check_meta(op, diags)


def _check_out_overload(op: OpDecl, diags: Diagnostics) -> None:
    outs = op.schema.arguments.out
    if not outs:
        return
    rets = op.schema.returns
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
