"""The checks a generated wrapper runs before its kernel (devices, dtypes, shapes, the
entry's `checks:`), as C++ statements. Every op kind's emitter calls these; they import
no emitter (codegen/dest's layering: tests/codegen/test_imports.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from codegen import rules
from codegen.dest.common import dtype_description, shared_dtype_args, tensor_args
from codegen.opdecl import DTYPES, OpDecl


def first_tensor(op: OpDecl) -> str | None:
    """The tensor whose dtype picks the template instantiation and whose device the others match."""
    return next((a.name for a, k in shared_dtype_args(op) if k == "tensor"), None)


def allowed_dtypes(dtypes: Sequence[str]) -> str:
    listed = ", ".join(f"at::ScalarType::{DTYPES[d]}" for d in dtypes)
    return f'{{{listed}}}, "{dtype_description(dtypes)}"'


def device_checks(op: OpDecl, key: str, *, simulated: bool = False) -> list[str]:
    """The tensors' devices for a backend key (`simulated`: the CUDA kernel run by the CUDA
    simulator, on CPU tensors), or their agreement (Meta)."""
    ref = first_tensor(op)
    if key == "CPU" or simulated:
        return [
            f'opforge::check::device_type(kOp, "{a.name}", {a.name}, c10::DeviceType::CPU);'
            for a, _ in tensor_args(op)
        ]
    if key == "CUDA" and ref is not None:
        return [
            f'opforge::check::device_type(kOp, "{ref}", {ref}, c10::DeviceType::CUDA);',
            *same_device_checks(op),
        ]
    return same_device_checks(op)


def device_guard(op: OpDecl) -> list[str]:
    ref = first_tensor(op)
    return [] if ref is None else [f"const c10::DeviceGuard device_guard({ref}.device());"]


def dtype_checks(op: OpDecl, promoted_name: str = "promoted", *, declare: bool = True) -> list[str]:
    """Every tensor's dtype against the schema's, one dtype for those that share it, or
    the promoted dtype (declared as `promoted_name`, or assigned to it)."""
    lines: list[str] = []
    promoted = op.dtype_rule.args if isinstance(op.dtype_rule, rules.Promote) else ()
    if promoted:
        label = "/".join(f"'{n}'" for n in promoted)
        target = f"const at::ScalarType {promoted_name}" if declare else promoted_name
        lines.append(f"{target} = opforge::check::promote({{{', '.join(promoted)}}});")
        lines.append(
            f'opforge::check::dtype(kOp, "{label}", {promoted_name}, {allowed_dtypes(op.dtypes)});'
        )
    ref = first_tensor(op)
    for a, _ in tensor_args(op):
        if op.is_opmath(a.name) and ref is not None:
            lines.append(
                f'opforge::check::opmath_dtype(kOp, "{a.name}", {a.name}, "{ref}", {ref});'
            )
        elif a.name not in promoted:
            own = allowed_dtypes(op.dtypes_of(a.name))
            lines.append(f"opforge::check::dtype(kOp, \"'{a.name}'\", {a.name}, {own});")
    return lines + same_dtype_checks(op)


def user_checks(op: OpDecl) -> list[str]:
    """The entry's `checks:`, as TORCH_CHECKs whose message prints the named arguments."""
    lines = []
    for c in op.checks:
        pieces = re.split(r"\{(\w+)\}", c.message)
        parts = [json.dumps(p) if i % 2 == 0 else p for i, p in enumerate(pieces) if p or i % 2]
        lines.append(f'TORCH_CHECK({c.condition}, kOp, ": ", {", ".join(parts)});')
    return lines


def checks_before_kernel(
    op: OpDecl, key: str, *, simulated: bool = False
) -> tuple[list[str], dict[str, str]]:
    """Statements run before the kernel, and argument renames (promoted copies)."""
    renames: dict[str, str] = {}
    lines = device_checks(op, key, simulated=simulated) + dtype_checks(op)
    if isinstance(op.dtype_rule, rules.Promote):
        for n in op.dtype_rule.args:
            lines.append(f"const at::Tensor {n}_p = {n}.to(promoted);")
            renames[n] = f"{n}_p"
    lines += same_shape_checks(op) + user_checks(op)
    if key == "CUDA" and not simulated:
        lines += device_guard(op)
    return lines, renames


def dispatch_dtype(op: OpDecl) -> str:
    """The dtype a template kernel is instantiated for: the promoted one, else the first tensor's."""
    if isinstance(op.dtype_rule, rules.Promote):
        return "promoted"
    return f"{first_tensor(op)}.scalar_type()"


def same_dtype_checks(op: OpDecl) -> list[str]:
    """One dtype for all tensors unless promoted: template kernels take a single scalar type."""
    ref = first_tensor(op)
    if isinstance(op.dtype_rule, rules.Promote) or ref is None:
        return []
    return [
        f'opforge::check::same_dtype(kOp, "{a.name}", {a.name}, "{ref}", {ref});'
        for a, _ in shared_dtype_args(op)
        if a.name != ref
    ]


def same_shape_checks(op: OpDecl) -> list[str]:
    if not isinstance(op.shape, rules.Same):
        return []
    first, *rest = op.shape.args
    return [f'opforge::check::same_shape(kOp, "{n}", {n}, "{first}", {first});' for n in rest]


def same_device_checks(op: OpDecl) -> list[str]:
    """Meta kernels see mixed devices too (a meta tensor routes there); reject them likewise."""
    ref = first_tensor(op)
    return [
        f'opforge::check::same_device(kOp, "{a.name}", {a.name}, "{ref}", {ref});'
        for a, _ in tensor_args(op)
        if ref is not None and a.name != ref
    ]
