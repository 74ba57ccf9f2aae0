"""Long reductions against float64: rows of 10^6 float32 elements (sum, softmax,
log_softmax, layer_norm, group_norm, linear and conv2d dot products, avg pooling of a
whole plane) and rows of 10^5 in
float16/bfloat16 (computed in float, rounded once). A kernel that accumulates in the
input's precision, or sequentially without blocking, is off by orders of magnitude more
than the bound: opforge's error must stay within twice ATen's own (float32 ATen on the
same input) plus a few ulps of the result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import opforge

Case = tuple[Callable[..., Any], Callable[..., Any]]


def _planes(x: torch.Tensor) -> torch.Tensor:
    """Rows of x as (rows, n // 9, 3, 3) 3x3 planes."""
    return x[:, : x.shape[1] // 9 * 9].reshape(x.shape[0], -1, 3, 3)


_CASES: dict[str, Case] = {
    "sum": (lambda x: opforge.sum(x, [-1]), lambda x: torch.sum(x, -1)),
    "softmax": (lambda x: opforge.softmax(x, -1), lambda x: torch.softmax(x, -1)),
    "log_softmax": (lambda x: opforge.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1)),
    "layer_norm": (
        lambda x: opforge.layer_norm(x, [x.shape[-1]]),
        lambda x: torch.nn.functional.layer_norm(x, [x.shape[-1]]),
    ),
    "group_norm": (
        lambda x: opforge.group_norm(x.reshape(1, 4, -1), 2),
        lambda x: torch.nn.functional.group_norm(x.reshape(1, 4, -1), 2),
    ),
    # dot products of length n: a linear's in_features, a convolution's C_in * kH * kW
    "linear": (
        lambda x: opforge.linear(x, x.flip(-1)),
        lambda x: torch.nn.functional.linear(x, x.flip(-1)),
    ),
    # (3x3 kernels over n / 9 channels; n = 10^6 takes the 999999 leading elements)
    "conv2d": (
        lambda x: opforge.conv2d(_planes(x), _planes(x[:1])),
        lambda x: torch.nn.functional.conv2d(_planes(x), _planes(x[:1])),
    ),
    "avg_pool2d": (
        lambda x: opforge.adaptive_avg_pool2d(x.reshape(1, 1, 1000, -1), [1, 1]),
        lambda x: torch.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 1000, -1), [1, 1]),
    ),
}


def _error(got: torch.Tensor, exact: torch.Tensor) -> float:
    return float((got.double() - exact).abs().max())


@pytest.mark.parametrize("name", list(_CASES))
@pytest.mark.parametrize(
    ("dtype", "n"),
    [(torch.float32, 10**6), (torch.float16, 10**5), (torch.bfloat16, 10**5)],
    ids=["float32", "float16", "bfloat16"],
)
def test_long_rows_against_float64(name: str, dtype: torch.dtype, n: int) -> None:
    ours, aten = _CASES[name]
    gen = torch.Generator().manual_seed(0)
    # a positive mean: sums grow with n, as a naive accumulator's error does
    x = (torch.rand(2, n, generator=gen, dtype=torch.float64) * 4 - 1).to(dtype)
    exact = aten(x.double())
    got = ours(x)
    assert got.dtype == dtype
    # ATen's float32 answer, rounded once to dtype: the bar (float16 ATen may itself
    # accumulate differently)
    bar = _error(aten(x.float()).to(dtype), exact)
    ulps = 4 * torch.finfo(dtype).eps * float(exact.abs().max())
    assert _error(got, exact) <= 2 * bar + ulps, (
        f"{name} {dtype}: error {_error(got, exact):.3g}, ATen's {bar:.3g}, {ulps=:.3g}"
    )
