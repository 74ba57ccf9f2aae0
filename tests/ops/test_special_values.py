"""Every pointwise op, forward and backward, on special values against ATen: NaN, +-inf,
+-0.0, subnormals, the smallest normal and the largest finite values, alone and in every
pairing with its other tensor arguments.

ATen does not always agree with itself on these: its vectorized loops and scalar tails can
differ (elu_backward at NaN: NaN in the loop, grad passed through in the tail). Each case
runs at two lengths, the special values once and tiled past 4096 elements; an element
where ATen's two answers differ is one where ATen has no single answer, and opforge's
documented choice stands there (the functors' comments in kernels/include/opforge say
which). Everywhere else opforge must give ATen's answer, NaN for NaN.

In float16 and bfloat16 opforge computes in float32 and rounds once, where ATen may round
its intermediates (its 1e-12 epsilon in binary_cross_entropy_backward is 0 in float16,
2 (self - target) in mse_loss_backward overflows to inf): there an element also passes
when opforge gives the answer computed in float64, rounded to the dtype.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import torch

import opforge
from codegen.model import OptionalType
from codegen.opdecl import OpDecl
from tests.ops import opdb

_LONG = 4096 + 8  # past any vector width, with a scalar tail


def _specials(dtype: torch.dtype) -> list[float]:
    f = torch.finfo(dtype)
    subnormal = f.smallest_normal / 4
    return [
        *(float("nan"), float("inf"), -float("inf"), -0.0),
        *(subnormal, -subnormal, f.smallest_normal, f.max, -f.max),
    ]


_ORDINARY = [0.0, 1.0, -1.0, 0.5, -3.0]


def _probability(name: str) -> Callable[[dict[str, torch.Tensor]], torch.Tensor]:
    return lambda v: (v[name] >= 0) & (v[name] <= 1)


def _moderate(name: str) -> Callable[[dict[str, torch.Tensor]], torch.Tensor]:
    """NaN, or below half the largest finite value in magnitude."""
    return lambda v: v[name].isnan() | (v[name].abs() < torch.finfo(v[name].dtype).max / 2)


# Where opforge's answer is its own, by design, and the grid leaves those elements out:
# - binary_cross_entropy*: ATen raises for a probability outside [0, 1] (on CPU; CUDA
#   asserts); opforge gives NaN there, as documented in the op, rather than syncing on
#   the data.
# - *_with_logits* and sigmoid_focal_loss*: a target is a probability; outside [0, 1]
#   ATen's formula without pos_weight and opforge's single one round apart, and part
#   ways at an infinite target (inf - inf).
# - sigmoid_focal_loss*: at logits of +-inf or near +-max, ATen differentiates
#   torchvision's formula by autograd, whose product order multiplies the overflowed
#   cross entropy by an exact 0 (NaN at x = +max, a finite value at -max); opforge's
#   closed form gives the limits.
# - kl_div*: opforge's target gradient is 0 where the target is <= 0 (a zero-probability
#   target contributes nothing, tests/ops/test_losses.py), ATen's NaN at 0 (xlogy's
#   t / t) and 0 or NaN below; at a target of +inf or near max ATen's overflows
#   (grad * t / t), opforge's is grad (log t + 1 - x).
# - gelu: opforge gives gelu(+inf) = +inf and gelu(max) = max; ATen's vectorized erf
#   gives NaN at +inf, and its x * (1 + erf) / 2 order overflows at max.
_DOMAIN: dict[str, Callable[[dict[str, torch.Tensor]], torch.Tensor]] = {
    **dict.fromkeys(
        ["binary_cross_entropy", "binary_cross_entropy_backward"],
        lambda v: _probability("self")(v) & _probability("target")(v),
    ),
    "binary_cross_entropy_target_backward": lambda v: (
        _probability("self")(v) & _probability("target")(v)
    ),
    **dict.fromkeys(
        [
            "binary_cross_entropy_with_logits",
            "binary_cross_entropy_with_logits_backward",
            "binary_cross_entropy_with_logits_target_backward",
        ],
        _probability("target"),
    ),
    **dict.fromkeys(
        [
            "sigmoid_focal_loss",
            "sigmoid_focal_loss_backward",
            "sigmoid_focal_loss_target_backward",
        ],
        lambda v: _probability("target")(v) & _moderate("self")(v),
    ),
    "gelu": _moderate("self"),
    **dict.fromkeys(
        ["kl_div", "kl_div_backward", "kl_div_target_backward"],
        lambda v: _moderate("target")(v) & ~(v["target"] <= 0),
    ),
}


def _in_domain(op: OpDecl, values: dict[str, torch.Tensor]) -> torch.Tensor:
    """The elements compared. Besides _DOMAIN: an incoming gradient of +-inf or +-max
    (already an overflow) is left out: where ATen's formula multiplies it by an exact 0
    it gives NaN and opforge, whose formula may multiply in another order, may not. A
    NaN incoming gradient is compared (it must give NaN, or ATen's answer)."""
    keep = torch.ones(next(iter(values.values())).shape, dtype=torch.bool)
    if "grad_output" in values:
        g = values["grad_output"]
        keep &= g.isnan() | (g.abs() < torch.finfo(g.dtype).max)
    rule = _DOMAIN.get(op.name)
    return keep if rule is None else keep & rule(values)


def _pointwise_ops() -> list[Any]:
    return [
        pytest.param(op, opdb.TORCH_DTYPES[d], id=f"{op.qualified}-{d}")
        for op in opdb.functional_ops()
        if op.pointwise is not None and op.reference is not None
        for d in op.dtypes
        if opdb.TORCH_DTYPES[d].is_floating_point
    ]


def _value_args(op: OpDecl, dtype: torch.dtype) -> tuple[list[str], opdb.Call]:
    """The names of the floating tensor arguments, and the first sample's call with its
    optional tensors left out and `reduction` 'none' (an elementwise loss reduces nothing)."""
    call = opdb.calls(op, dtype, "cpu", variants=False)[0]
    tensors, replace = [], {}
    for a in op.schema.arguments.flat_non_out:
        if a.type.is_tensor_like():
            if isinstance(a.type, OptionalType):
                replace[a.name] = None
            else:
                tensors.append(a.name)
        elif a.name == "reduction":
            replace[a.name] = "none"
    call = _with(call, replace)
    if "reduction" in replace and "reduction" not in call.names:
        call.kwargs["reduction"] = "none"
    return tensors, call


def _with(call: opdb.Call, values: dict[str, Any]) -> opdb.Call:
    """call with the arguments named in values replaced."""
    args = [values.get(n, v) for n, v in zip(call.names, call.args, strict=True)]
    kwargs = {k: values.get(k, v) for k, v in call.kwargs.items()}
    return opdb.Call(args, kwargs, call.label, call.names)


def _grid(op: OpDecl, names: list[str], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """One element per combination of values across the tensor arguments with at most one
    special value among them (two at once, as a NaN grad_output times an infinite
    input, test formula order rather than the op)."""
    special = _specials(dtype)
    combos = [
        c
        for c in itertools.product(special + _ORDINARY, repeat=len(names))
        if sum(v not in _ORDINARY for v in c) <= 1  # (NaN is never in _ORDINARY)
    ]
    values = {
        name: torch.tensor([c[i] for c in combos], dtype=dtype) for i, name in enumerate(names)
    }
    keep = _in_domain(op, values)
    return {k: v[keep] for k, v in values.items()}


def _tiled(inputs: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], int]:
    n = next(iter(inputs.values())).numel()
    reps = -(-_LONG // n)
    return {k: v.repeat(reps) for k, v in inputs.items()}, reps


def _run(fn: Any, inputs: dict[str, torch.Tensor], call: opdb.Call, wrt: tuple[str, ...]) -> Any:
    """The op's result, or the gradients of its sum w.r.t. the inputs named in wrt (None
    where one has none); a raised error is returned, not thrown."""
    leaves = {k: v.clone().requires_grad_(k in wrt) for k, v in inputs.items()}
    try:
        c = _with(call, leaves)
        out = fn(*c.args, **c.kwargs)
        if not wrt:
            return out.detach()
        grads = torch.autograd.grad(
            out, [leaves[k] for k in wrt], torch.ones_like(out), allow_unused=True
        )
        return [None if g is None else g.detach() for g in grads]
    except (RuntimeError, ValueError) as e:
        return e


def _consistent(short: torch.Tensor, long: torch.Tensor, reps: int) -> torch.Tensor:
    """Where ATen's answer for an element is the same at both lengths."""
    rows = long[: reps * short.numel()].reshape(reps, -1)
    same = (rows == short) | (rows.isnan() & short.isnan())
    return same.all(dim=0)


def _compare(
    op: OpDecl,
    what: str,
    got: Any,
    expected: Any,
    got_long: Any,
    expected_long: Any,
    reps: int,
    inputs: dict[str, torch.Tensor],
    exact: Any = None,
) -> None:
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), f"{op.qualified} {what}: ATen raised {expected!r}"
        return
    assert not isinstance(got, Exception), f"{op.qualified} {what}: {got!r}"
    tol = opdb.tolerances(next(iter(inputs.values())).dtype, op)
    for i, (g, e, gl, el) in enumerate(
        zip(
            opdb.outputs(got),
            opdb.outputs(expected),
            opdb.outputs(got_long),
            opdb.outputs(expected_long),
            strict=True,
        )
    ):
        if e is None:
            continue
        assert g is not None, f"{op.qualified} {what}[{i}]: no gradient where ATen has one"
        keep = _consistent(e, el, reps)
        x = None if exact is None or isinstance(exact, Exception) else opdb.outputs(exact)[i]
        if x is not None:  # the float64 answer, rounded once, counts too (see the docstring)
            keep &= ~torch.isclose(g, x.to(g.dtype), **tol, equal_nan=True)
        for label, a, b, mask in (
            ("short", g, e, keep),
            ("long", gl, el, keep.repeat(reps)[: el.numel()]),
        ):
            torch.testing.assert_close(
                a[mask],
                b[mask],
                **tol,
                equal_nan=True,
                msg=lambda m, label=label, i=i, a=a, b=b, mask=mask: (
                    f"{op.qualified} {what}[{i}] ({label}): {m}\n"
                    + "\n".join(
                        f"  {', '.join(f'{k}={v[j].item()}' for k, v in inputs.items())}:"
                        f" opforge {a[j].item()}, ATen {b[j].item()}"
                        for j in (~torch.isclose(a, b, **tol, equal_nan=True) & mask)
                        .nonzero()
                        .flatten()[:8]
                        .tolist()
                        if j < next(iter(inputs.values())).numel()
                    )
                ),
            )


@pytest.mark.parametrize("op,dtype", _pointwise_ops())
@pytest.mark.parametrize("grad", [False, True], ids=["forward", "backward"])
def test_special_values_match_aten(op: OpDecl, dtype: torch.dtype, grad: bool) -> None:
    if grad and not opdb.differentiable(op):
        pytest.skip(f"{op.qualified} declares no derivative")
    if grad and op.name.endswith("_backward"):
        # Second derivatives at special values come down to the order of a formula's
        # products (NaN from inf * 0); the battery's gradgradcheck covers their values.
        pytest.skip(f"{op.qualified}: a second derivative")
    names, call = _value_args(op, dtype)
    # The inputs opforge differentiates (a loss's target may have no formula).
    wrt = tuple(n for n in names if any(n in d.inputs for d in op.derivatives)) if grad else ()
    inputs = _grid(op, names, dtype)
    long, reps = _tiled(inputs)
    ours, ref = getattr(opforge, op.name), opdb.reference(op)
    exact = None
    if dtype in (torch.float16, torch.bfloat16):
        exact = _run(ref, {k: v.double() for k, v in inputs.items()}, call, wrt)
    _compare(
        op,
        "gradient" if grad else "result",
        _run(ours, inputs, call, wrt),
        _run(ref, inputs, call, wrt),
        _run(ours, long, call, wrt),
        _run(ref, long, call, wrt),
        reps,
        inputs,
        exact,
    )
