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


@pytest.mark.parametrize("op,dtype", _params("out"))
def test_out_writes_into_out_and_matches_functional(op: OpDecl, dtype: torch.dtype) -> None:
    base = op.name
    for call in opdb.calls(op, dtype, "cpu"):
        expected = _functional(op)(*call.args, **call.kwargs)
        for out in (torch.empty(0, dtype=dtype), torch.empty(expected.shape, dtype=dtype)):
            returned = getattr(opforge, base)(*call.args, **call.kwargs, out=out)
            assert returned.data_ptr() == out.data_ptr()
            assert out.shape == expected.shape
            torch.testing.assert_close(out, expected, **opdb.tolerances(dtype))
        via_ops = getattr(torch.ops.opforge, base).out
        out = torch.empty(0, dtype=dtype)
        via_ops(*call.args, **call.kwargs, out=out)
        torch.testing.assert_close(out, expected, **opdb.tolerances(dtype))


@pytest.mark.parametrize("op,dtype", _params("out")[:1])
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
