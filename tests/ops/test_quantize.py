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


def _channel_qparams(c: int, quant_min: int, quant_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(c)
    scale = torch.rand(c, generator=gen) * 0.2 + 0.01
    zero_point = torch.randint(quant_min, quant_max + 1, (c,), generator=gen, dtype=torch.int32)
    return scale, zero_point


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape,axis", [((4, 3, 5, 6), 1), ((8, 5), 0), ((2, 3, 7), 2), ((6,), 0), ((3, 4, 0), 1)]
)
def test_per_channel_matches_torch(shape: tuple[int, ...], axis: int, dtype: torch.dtype) -> None:
    quant_min, quant_max = -128, 127
    scale, zero_point = _channel_qparams(shape[axis], quant_min, quant_max)
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(2)) * 10).to(dtype)
    # +inf and values past int64 are left out: ATen's per-channel kernel casts them to int64
    # (undefined; quant_min on x86), opforge saturates them to quant_max as per-tensor does.
    x.view(-1)[:2] = torch.tensor([float("nan"), -float("inf")])[: x.numel()].to(dtype)
    args = (scale, zero_point, axis, quant_min, quant_max)
    xr = x.clone().requires_grad_()
    xo = x.clone().requires_grad_()
    ours = opforge.fake_quantize_per_channel_affine(xo, *args)
    ref = torch.fake_quantize_per_channel_affine(xr, *args)
    torch.testing.assert_close(ours, ref, atol=0, rtol=0, equal_nan=True)
    g = torch.randn(shape, generator=torch.Generator().manual_seed(3)).to(dtype)
    (go,) = torch.autograd.grad(ours, xo, g)
    (gr,) = torch.autograd.grad(ref, xr, g)
    torch.testing.assert_close(go, gr, atol=0, rtol=0)


def test_per_channel_channels_last_and_strided() -> None:
    scale, zero_point = _channel_qparams(3, 0, 255)
    x = (torch.randn(2, 3, 4, 5) * 5).to(memory_format=torch.channels_last)
    y = opforge.fake_quantize_per_channel_affine(x, scale, zero_point, 1, 0, 255)
    assert y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(
        y, torch.fake_quantize_per_channel_affine(x, scale, zero_point, 1, 0, 255)
    )
    t = torch.randn(3, 8).t()  # channels along dim 1 of a transposed view
    torch.testing.assert_close(
        opforge.fake_quantize_per_channel_affine(t, scale, zero_point, 1, 0, 255),
        torch.fake_quantize_per_channel_affine(t, scale, zero_point, 1, 0, 255),
    )


def test_per_channel_bad_arguments() -> None:
    x = torch.randn(2, 3, 4)
    scale, zero_point = _channel_qparams(3, -128, 127)
    op = opforge.fake_quantize_per_channel_affine
    with pytest.raises(
        IndexError, match=r"opforge\.fake_quantize_per_channel_affine: expected 'axis' in \[0, 3\)"
    ):
        op(x, scale, zero_point, 3, -128, 127)
    with pytest.raises(
        RuntimeError, match=r"expected 'scale' and 'zero_point' of self\.size\(axis\) = 3 values"
    ):
        op(x, scale[:2], zero_point[:2], 1, -128, 127)
    with pytest.raises(
        RuntimeError, match=r"expected every 'zero_point' in \[quant_min, quant_max\] = \[0, 7\]"
    ):
        op(x, scale, torch.tensor([0, 3, 9], dtype=torch.int32), 1, 0, 7)
    with pytest.raises(TypeError, match=r"dtype \(int32\) for 'zero_point'"):
        op(x, scale, zero_point.float(), 1, -128, 127)
    with pytest.raises(TypeError, match=r"\(float32\) for 'scale', got float64"):
        op(x, scale.double(), zero_point, 1, -128, 127)


def test_per_channel_saturates_like_per_tensor() -> None:
    scale, zero_point = torch.tensor([0.1]), torch.tensor([3], dtype=torch.int32)
    x = torch.tensor([[float("inf"), 1e30, -1e30, -float("inf")]]).t()
    y = opforge.fake_quantize_per_channel_affine(x, scale, zero_point, 1, -128, 127)
    expected = torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
