"""Fake quantization (schemas/quantize.yaml) against torch.fake_quantize_per_tensor_affine:
values on and between the grid points (ties round half to even), clamping, special values,
the straight-through gradient, every dtype, and the argument errors."""

from __future__ import annotations

import pytest
import torch

import opforge

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

QPARAMS = [
    (0.1, 0, -128, 127),
    (0.02, 10, 0, 255),
    (1.0, 0, 0, 1),
    (0.0375, -3, -8, 7),
    (3.0, 5, -(2**31), 2**31 - 1),
]


def _inputs(scale: float, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4000, generator=gen, dtype=torch.float64) * 200 * scale
    # Exact half-way points and grid points (ties go to the even integer).
    ties = (torch.arange(-40, 40, dtype=torch.float64) + 0.5) * scale
    grid = torch.arange(-40, 40, dtype=torch.float64) * scale
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e30])
    return torch.cat([x, ties, grid, specials.double()]).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scale,zero_point,quant_min,quant_max", QPARAMS)
def test_matches_torch(
    scale: float, zero_point: int, quant_min: int, quant_max: int, dtype: torch.dtype
) -> None:
    x = _inputs(scale, dtype)
    args = (scale, zero_point, quant_min, quant_max)
    torch.testing.assert_close(
        opforge.fake_quantize_per_tensor_affine(x, *args),
        torch.fake_quantize_per_tensor_affine(x, *args),
        atol=0,
        rtol=0,
        equal_nan=True,
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scale,zero_point,quant_min,quant_max", QPARAMS)
def test_straight_through_gradient_matches_torch(
    scale: float, zero_point: int, quant_min: int, quant_max: int, dtype: torch.dtype
) -> None:
    args = (scale, zero_point, quant_min, quant_max)
    x = _inputs(scale, dtype).requires_grad_()
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    (ours,) = torch.autograd.grad(opforge.fake_quantize_per_tensor_affine(x, *args), x, g)
    (ref,) = torch.autograd.grad(torch.fake_quantize_per_tensor_affine(x, *args), x, g)
    torch.testing.assert_close(ours, ref, atol=0, rtol=0)


def test_layouts_and_out() -> None:
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last) * 3
    y = opforge.fake_quantize_per_tensor_affine(x, 0.05, 0, -128, 127)
    assert y.is_contiguous(memory_format=torch.channels_last)
    t = torch.randn(6, 8).t()
    out = torch.empty(8, 6)
    opforge.fake_quantize_per_tensor_affine(t, 0.05, 3, -128, 127, out=out)
    assert torch.equal(out, torch.fake_quantize_per_tensor_affine(t, 0.05, 3, -128, 127))


def test_trains_under_compile() -> None:
    w = torch.randn(16, 8, requires_grad=True)

    def loss(w: torch.Tensor) -> torch.Tensor:
        return opforge.fake_quantize_per_tensor_affine(w, 0.1, 0, -8, 7).square().sum()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    (expected,) = torch.autograd.grad(loss(w), w)
    (got,) = torch.autograd.grad(compiled(w), w)
    torch.testing.assert_close(got, expected)


def test_bad_arguments() -> None:
    x = torch.randn(5)
    op = opforge.fake_quantize_per_tensor_affine
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.fake_quantize_per_tensor_affine: expected quant_min <= quant_max",
    ):
        op(x, 0.1, 0, 5, 4)
    with pytest.raises(
        RuntimeError,
        match=r"expected 'zero_point' in \[quant_min, quant_max\] = \[-128, 127\], got 300",
    ):
        op(x, 0.1, 300, -128, 127)
    with pytest.raises(RuntimeError, match=r"expected 'scale' > 0, got 0"):
        op(x, 0.0, 0, -128, 127)
    with pytest.raises(
        TypeError, match=r"opforge\.fake_quantize_per_tensor_affine: expected a floating tensor"
    ):
        op(torch.ones(3, dtype=torch.int32), 0.1, 0, -128, 127)
