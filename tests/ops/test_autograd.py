"""Generated autograd: gradcheck (float64), gradgradcheck where the backward ops are
themselves differentiable, gradients against the reference's in float32, and the
clear error for inputs without a derivative formula."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge
from codegen.opdecl import OpDecl
from tests.ops import opdb


def _params(pred: Any) -> list[Any]:
    return [pytest.param(op, id=op.qualified) for op in opdb.functional_ops() if pred(op)]


def _float_inputs(call: opdb.Call) -> list[torch.Tensor]:
    return [t for t in call.tensors() if t.is_floating_point()]


def _requiring_grad(op: OpDecl, dtype: torch.dtype) -> list[opdb.Call]:
    out = []
    for call in opdb.calls(op, dtype, "cpu", variants=False):
        call = call.map_tensors(lambda t: t.detach().requires_grad_(t.is_floating_point()))
        out.append(call)
    return out


def _fn(op: OpDecl, call: opdb.Call, impl: Any) -> Any:
    """impl(*args) as a function of the call's float tensors only (what gradcheck varies)."""
    floats = _float_inputs(call)

    def run(*inputs: torch.Tensor) -> Any:
        swap = dict(zip(map(id, floats), inputs, strict=True))
        c = call.map_tensors(lambda t: swap.get(id(t), t))
        return impl(*c.args, **c.kwargs)

    return run


@pytest.mark.parametrize("op", _params(opdb.differentiable))
def test_gradcheck(op: OpDecl) -> None:
    for call in _requiring_grad(op, torch.float64):
        fn = _fn(op, call, getattr(opforge, op.name))
        assert torch.autograd.gradcheck(fn, tuple(_float_inputs(call))), call.label


@pytest.mark.parametrize("op", _params(opdb.double_differentiable))
def test_gradgradcheck(op: OpDecl) -> None:
    for call in _requiring_grad(op, torch.float64):
        fn = _fn(op, call, getattr(opforge, op.name))
        assert torch.autograd.gradgradcheck(fn, tuple(_float_inputs(call))), call.label


@pytest.mark.parametrize("op", _params(opdb.differentiable))
def test_gradients_match_reference_float32(op: OpDecl) -> None:
    gen = torch.Generator().manual_seed(7)
    for call in _requiring_grad(op, torch.float32):
        inputs = _float_inputs(call)
        # Ops like layer_norm_forward return several differentiable outputs: one grad each.
        ours = opdb.outputs(getattr(opforge, op.name)(*call.args, **call.kwargs))
        ref = opdb.outputs(opdb.reference(op)(*call.args, **call.kwargs))
        grad_out = [torch.randn(o.shape, generator=gen) for o in ours]
        got = torch.autograd.grad(ours, inputs, grad_out, allow_unused=True)
        expected = torch.autograd.grad(ref, inputs, grad_out, allow_unused=True)
        for g, e in zip(got, expected, strict=True):
            torch.testing.assert_close(
                g, e, atol=1e-5, rtol=1e-4, msg=lambda m, c=call: f"{c.label}: {m}"
            )


@pytest.mark.parametrize("op", _params(lambda o: not opdb.differentiable(o)))
def test_backward_through_non_differentiable_op_is_a_clear_error(op: OpDecl) -> None:
    call = _requiring_grad(op, torch.float64)[0]
    out = getattr(opforge, op.name)(*call.args, **call.kwargs)
    first = next(a.name for a in op.schema.arguments.flat_all if str(a.type) == "Tensor")
    with pytest.raises(
        RuntimeError, match=rf"opforge\.{op.name} is not differentiable with respect to '{first}'"
    ):
        sum(t.sum() for t in opdb.outputs(out)).backward()


@pytest.mark.parametrize("op", _params(opdb.differentiable))
def test_compiled_backward_matches_eager(op: OpDecl) -> None:
    torch._dynamo.reset()
    call = _requiring_grad(op, torch.float32)[0]
    inputs = _float_inputs(call)
    fn = _fn(op, call, getattr(opforge, op.name))

    def loss(*xs: torch.Tensor) -> torch.Tensor:
        return sum((o * 1.5).sum() for o in opdb.outputs(fn(*xs)))

    compiled = torch.compile(loss, fullgraph=True, dynamic=True, backend="aot_eager")
    expected = torch.autograd.grad(loss(*inputs), inputs)
    got = torch.autograd.grad(compiled(*inputs), inputs)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)
