"""PyTorch call forms the dispatcher schema cannot express, taken by the Python wrappers
(`python:` in schemas/, Note [Python conveniences] in codegen/dest/py.py): numbers for
tensors, `dtype=`, None in an output size. Each compared with torch's answer, eagerly and
under torch.compile."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge

_DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
@pytest.mark.parametrize("other", [2, 2.5, -1.0, True])
@pytest.mark.parametrize("alpha", [1, 3])
def test_add_takes_a_number(dtype: torch.dtype, other: Any, alpha: int) -> None:
    x = (torch.arange(6).reshape(2, 3) - 2).to(dtype)
    expected = torch.add(x, other, alpha=alpha)
    got = opforge.add(x, other, alpha=alpha)
    assert got.dtype == expected.dtype  # int64 + 2.5 is float32, float16 + 2.5 float16
    torch.testing.assert_close(got, expected)
    # 0-dim self: the number still does not widen it (float16 stays float16)
    s = x[0, 0]
    assert opforge.add(s, other).dtype == torch.add(s, other).dtype


def test_add_number_in_place_out_and_compiled() -> None:
    x = torch.randn(4, 5)
    y = x.clone()
    opforge.add_(y, 1.5, alpha=2)
    torch.testing.assert_close(y, x + 3.0)
    out = torch.empty(4, 5)
    opforge.add(x, 2, out=out)
    torch.testing.assert_close(out, x + 2)
    compiled = torch.compile(lambda t: opforge.add(t, 0.5), fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x), x + 0.5)


def test_add_number_gradient() -> None:
    x = torch.randn(3, requires_grad=True)
    opforge.add(x, 2.0, alpha=-1).sum().backward()
    torch.testing.assert_close(x.grad, torch.ones(3))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_softmax_dtype(name: str, dtype: torch.dtype) -> None:
    x = torch.randn(3, 7, dtype=torch.float16, requires_grad=True)
    got = getattr(opforge, name)(x, 1, dtype=dtype)
    expected = getattr(torch, name)(x, 1, dtype=dtype)
    assert got.dtype == dtype
    torch.testing.assert_close(got, expected)
    # the gradient flows back through the cast, in the input's dtype
    (g,) = torch.autograd.grad(got.sum() + got[:, 0].sum(), x)
    (e,) = torch.autograd.grad(expected.sum() + expected[:, 0].sum(), x)
    assert g.dtype == torch.float16
    torch.testing.assert_close(g, e)
    compiled = torch.compile(
        lambda t: getattr(opforge, name)(t, -1, dtype=dtype), fullgraph=True, backend="eager"
    )
    torch.testing.assert_close(compiled(x.detach()), expected.detach())


def test_sum_dtype() -> None:
    x = torch.randn(4, 5, dtype=torch.float16)
    got = opforge.sum(x, [1], dtype=torch.float64)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, torch.sum(x, 1, dtype=torch.float64))


@pytest.mark.parametrize(
    "size", [(None, 3), (2, None), [None, None], (3, 3), 2], ids=lambda s: str(s)
)
@pytest.mark.parametrize("name", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
@pytest.mark.parametrize("shape", [(2, 3, 6, 5), (3, 6, 5)], ids=["batched", "unbatched"])
def test_adaptive_pool_none_keeps_the_input_size(name: str, size: Any, shape: Any) -> None:
    x = torch.randn(shape)
    got = getattr(opforge, name)(x, size)
    expected = getattr(torch.nn.functional, name)(x, size)
    torch.testing.assert_close(got, expected)


def test_adaptive_max_pool_with_indices_none() -> None:
    x = torch.randn(2, 3, 6, 5)
    values, indices = opforge.adaptive_max_pool2d_with_indices(x, (None, 2))
    expected, expected_indices = torch.nn.functional.adaptive_max_pool2d(
        x, (None, 2), return_indices=True
    )
    torch.testing.assert_close(values, expected)
    torch.testing.assert_close(indices, expected_indices)
