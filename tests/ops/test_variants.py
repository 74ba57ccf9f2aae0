"""Generated in-place and out= variants agree with their functional op and honour aliasing."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge
from codegen.opdecl import OpDecl
from tests.ops import opdb


def _params(kind: str) -> list[Any]:
    return [
        pytest.param(op, opdb.TORCH_DTYPES[d], id=f"{op.qualified}-{d}")
        for op in opdb.variant_ops()
        if op.generated_variant == kind
        for d in op.dtypes
    ]


def _functional(op: OpDecl) -> Any:
    assert op.variant_of is not None
    return getattr(opforge, opdb.by_qualified(op.variant_of).name)


@pytest.mark.parametrize("op,dtype", _params("inplace"))
def test_inplace_writes_into_self_and_matches_functional(op: OpDecl, dtype: torch.dtype) -> None:
    for call in opdb.calls(op, dtype, "cpu"):
        self_ = call.args[0]
        expected = _functional(op)(*call.args, **call.kwargs)
        if expected.shape != self_.shape:
            with pytest.raises(RuntimeError, match=rf"opforge\.{op.name}: result of shape"):
                getattr(opforge, op.name)(*call.args, **call.kwargs)
            continue
        ptr = self_.data_ptr()
        returned = getattr(opforge, op.name)(*call.args, **call.kwargs)
        assert returned is self_ or returned.data_ptr() == ptr
        assert self_.data_ptr() == ptr
        torch.testing.assert_close(self_, expected, **opdb.tolerances(dtype))


def _results(value: Any) -> tuple[torch.Tensor, ...]:
    return value if isinstance(value, tuple) else (value,)


def _out_arg(outs: tuple[torch.Tensor, ...]) -> Any:
    """`out=`: one tensor, or a tuple of them for an op of several results (as PyTorch)."""
    return outs[0] if len(outs) == 1 else outs


def _out_kwargs(op: OpDecl, outs: tuple[torch.Tensor, ...]) -> dict[str, torch.Tensor]:
    """The torch.ops spelling: each out= argument by its schema name."""
    return {a.name: t for a, t in zip(op.schema.arguments.out, outs, strict=True)}


@pytest.mark.parametrize("op,dtype", _params("out"))
def test_out_writes_into_out_and_matches_functional(op: OpDecl, dtype: torch.dtype) -> None:
    base = op.name
    for call in opdb.calls(op, dtype, "cpu"):
        expected = _results(_functional(op)(*call.args, **call.kwargs))
        for resized in (True, False):
            outs = tuple(torch.empty(0 if resized else e.shape, dtype=e.dtype) for e in expected)
            returned = _results(
                getattr(opforge, base)(*call.args, **call.kwargs, out=_out_arg(outs))
            )
            for r, o, e in zip(returned, outs, expected, strict=True):
                assert r.data_ptr() == o.data_ptr(), call.label
                assert o.shape == e.shape, call.label
                if resized and e.numel() > 0:
                    # Resized from empty: laid out as the functional op's result.
                    assert opdb.layout(o) == opdb.layout(e), call.label
                torch.testing.assert_close(o, e, **opdb.tolerances(dtype))
        outs = tuple(torch.empty(0, dtype=e.dtype) for e in expected)
        getattr(torch.ops.opforge, base).out(*call.args, **call.kwargs, **_out_kwargs(op, outs))
        torch.testing.assert_close(outs, expected, **opdb.tolerances(dtype))


@pytest.mark.parametrize("op,dtype", _params("out"))
def test_out_of_any_layout_or_aliasing_an_input(op: OpDecl, dtype: torch.dtype) -> None:
    """A strided `out`, and an `out` that is the input itself, still get the right values."""
    call = opdb.calls(op, dtype, "cpu", variants=False)[0]
    expected = _results(_functional(op)(*call.args, **call.kwargs))
    strided = tuple(torch.empty(*e.shape, 2, dtype=e.dtype)[..., 0] for e in expected)
    getattr(opforge, op.name)(*call.args, **call.kwargs, out=_out_arg(strided))
    torch.testing.assert_close(strided, expected, **opdb.tolerances(dtype))
    first = call.tensors()[0]
    if len(expected) == 1 and (first.shape, first.dtype) == (expected[0].shape, expected[0].dtype):
        aliased = call.clone()
        target = aliased.tensors()[0]
        getattr(opforge, op.name)(*aliased.args, **aliased.kwargs, out=target)
        torch.testing.assert_close(target, expected[0], **opdb.tolerances(dtype))


def _out_ops() -> list[Any]:
    ops = {p.values[0].qualified: p.values[0] for p in _params("out")}
    return [pytest.param(op, id=name) for name, op in ops.items()]


@pytest.mark.parametrize("op", _out_ops())
def test_out_variant_under_inductor_and_opcheck(op: OpDecl) -> None:
    torch._dynamo.reset()
    call = opdb.calls(op, torch.float32, "cpu", variants=False)[0]
    fn = getattr(opforge, op.name)
    expected = _results(_functional(op)(*call.args, **call.kwargs))

    def write(*args: Any, **kwargs: Any) -> Any:
        # Dynamo refuses to trace a resize of `out` (a graph break): give the result's shape.
        outs = tuple(torch.empty(e.shape, dtype=e.dtype) for e in expected)
        fn(*args, **kwargs, out=_out_arg(outs))
        return outs

    compiled = torch.compile(write, fullgraph=True, dynamic=True)
    with torch._inductor.config.patch(fx_graph_cache=False):
        torch.testing.assert_close(compiled(*call.args, **call.kwargs), expected)
    outs = tuple(torch.empty(e.shape, dtype=e.dtype) for e in expected)
    torch.library.opcheck(
        getattr(torch.ops.opforge, op.name).out,
        tuple(call.args),
        {**call.kwargs, **_out_kwargs(op, outs)},
    )


@pytest.mark.parametrize("op,dtype", [p for p in _params("out") if p.values[0].pointwise][:1])
def test_out_of_narrower_dtype_is_refused(op: OpDecl, dtype: torch.dtype) -> None:
    call = opdb.calls(op, torch.float32, "cpu", variants=False)[0]
    with pytest.raises(RuntimeError, match=r"can't be cast to the dtype of 'out'"):
        getattr(opforge, op.name)(*call.args, **call.kwargs, out=torch.empty(0, dtype=torch.bool))


def test_inplace_under_autograd_matches_functional() -> None:
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    y = x * 1
    opforge.relu_(y)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (x > 0).double())


def test_out_of_another_dtype_is_refused_by_structured_ops() -> None:
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"opforge\.softmax: expected 'out' to have dtype Float"):
        opforge.softmax(x, 1, out=torch.empty(0, dtype=torch.float64))


def test_out_of_several_results_takes_a_tuple() -> None:
    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(
        TypeError, match=r"opforge\.max_pool2d_with_indices: 'out' must be a tuple of 2"
    ):
        opforge.max_pool2d_with_indices(x, 2, out=torch.empty(0))
