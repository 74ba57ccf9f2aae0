"""The integer matrix products (schemas/int_gemm.yaml): int8_mm against an exact matmul and
torch._int_mm, quantized_linear and quantized_conv2d against their definitions and within one
LSB of torch's dequantize -> linear / conv2d -> quantize, a quantized MLP close to its float
model, and the errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge
from opforge import reference


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 24, 9), (33, 128, 64), (4, 1000, 3), (0, 5, 2)])
def test_int8_mm_exact(m: int, k: int, n: int) -> None:
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (m, k), generator=gen, dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), generator=gen, dtype=torch.int8)
    got = opforge.int8_mm(a, b)
    assert got.dtype == torch.int32
    torch.testing.assert_close(got, (a.long() @ b.long()).int(), atol=0, rtol=0)
    if m > 16 and k % 8 == 0 and n % 8 == 0:
        torch.testing.assert_close(got, torch._int_mm(a, b), atol=0, rtol=0)


def test_int8_mm_extremes_and_transposed_inputs() -> None:
    a = torch.full((3, 512), -128, dtype=torch.int8)
    b = torch.full((3, 512), -128, dtype=torch.int8).T  # non-contiguous
    assert (opforge.int8_mm(a, b) == 512 * 128 * 128).all()


def _quantized_layer(
    gen: torch.Generator, in_features: int, out_features: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    w = torch.randn(out_features, in_features, generator=gen) * 0.2
    bias = torch.randn(out_features, generator=gen) * 0.1
    w_scales = (w.abs().amax(1) / 127.5).float()
    w_zps = torch.zeros(out_features, dtype=torch.int64)
    wq = opforge.quantize_per_channel(w, w_scales, w_zps, 0, -128, 127, torch.int8)
    return w, bias, wq, w_scales, w_zps


@pytest.mark.parametrize(
    "input_dtype,qmin,qmax,zp", [(torch.uint8, 0, 255, 128), (torch.int8, -128, 127, 0)]
)
def test_quantized_linear_within_one_lsb_of_torch(
    input_dtype: torch.dtype, qmin: int, qmax: int, zp: int
) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 10, 64, generator=gen)
    x_scale = float(x.abs().max()) / 127.0
    xq = opforge.quantize_per_tensor(x, x_scale, zp, qmin, qmax, input_dtype)
    w, bias, wq, w_scales, w_zps = _quantized_layer(gen, 64, 24)
    out_scale, out_zp = 0.02, 3
    args = (xq, x_scale, zp, wq, w_scales, w_zps, bias, out_scale, out_zp, -128, 127, torch.int8)
    got = opforge.quantized_linear(*args)
    torch.testing.assert_close(got, reference.quantized_linear(*args), atol=0, rtol=0)
    # torch.ao's reference decomposition: dequantize, float linear, quantize.
    d = reference._decomposed()
    x_f = d.dequantize_per_tensor(xq, x_scale, zp, qmin, qmax, input_dtype)
    w_f = d.dequantize_per_channel(wq, w_scales, w_zps, 0, -128, 127, torch.int8)
    y = torch.nn.functional.linear(x_f, w_f, bias)
    want = d.quantize_per_tensor(y, out_scale, out_zp, -128, 127, torch.int8)
    assert (got.int() - want.int()).abs().max() <= 1
    assert got.shape == (3, 10, 24)


def test_quantized_mlp_close_to_float() -> None:
    """Post-training quantization of a two-layer MLP: calibrate with the observer, run in int8."""
    gen = torch.Generator().manual_seed(2)
    w1, b1, w1q, s1, z1 = _quantized_layer(gen, 32, 48)
    w2, b2, w2q, s2, z2 = _quantized_layer(gen, 48, 10)
    x = torch.randn(256, 32, generator=gen)
    hidden = torch.relu(x @ w1.T + b1)
    y = hidden @ w2.T + b2

    def qparams(t: torch.Tensor) -> tuple[float, int]:
        lo, hi = torch.tensor(float("inf")), torch.tensor(-float("inf"))
        opforge.minmax_observer_update_(lo, hi, t)
        scale, zp = opforge.choose_qparams(lo, hi, -128, 127)
        return float(scale), int(zp)

    (sx, zx), (sh, zh), (sy, zy) = qparams(x), qparams(hidden), qparams(y)
    xq = opforge.quantize_per_tensor(x, sx, zx, -128, 127, torch.int8)
    hq = opforge.quantized_linear(
        xq, sx, zx, w1q, s1, z1, b1, sh, zh, zh, 127, torch.int8
    )  # fused relu: clamp at zh
    yq = opforge.quantized_linear(hq, sh, zh, w2q, s2, z2, b2, sy, zy, -128, 127, torch.int8)
    y_int8 = opforge.dequantize_per_tensor(yq, sy, zy, -128, 127, torch.int8)
    rel = (y_int8 - y).norm() / y.norm()
    assert rel < 0.03, f"relative error {rel:.4f}"
    assert (y_int8.argmax(1) == y.argmax(1)).float().mean() > 0.9


# (input shape, weight shape, stride, padding, dilation, groups): dense, strided and dilated,
# grouped, depthwise, pointwise, unbatched, padding wider than the kernel's reach.
_CONV_CASES = [
    ((2, 3, 9, 8), (8, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 11, 10), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((2, 16, 8, 8), (16, 1, 3, 3), 2, 1, 1, 16),
    ((3, 32, 5, 5), (24, 32, 1, 1), 1, 0, 1, 1),
    ((5, 7, 6), (4, 5, 3, 3), 1, 1, 1, 1),
    ((1, 2, 4, 4), (3, 2, 2, 2), 3, 3, 1, 1),
]


def _quantized_conv_args(
    case: tuple[Any, ...], input_dtype: torch.dtype, seed: int = 3
) -> tuple[tuple[Any, ...], tuple[Any, ...], torch.Tensor, torch.Tensor]:
    x_shape, w_shape, stride, padding, dilation, groups = case
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(x_shape, generator=gen)
    w = torch.randn(w_shape, generator=gen) * 0.3
    bias = torch.randn(w_shape[0], generator=gen) * 0.1
    qmin, qmax, zp = (0, 255, 120) if input_dtype == torch.uint8 else (-128, 127, 0)
    x_scale = float(x.abs().max()) / 127.0
    xq = opforge.quantize_per_tensor(x, x_scale, zp, qmin, qmax, input_dtype)
    w_scales = (w.flatten(1).abs().amax(1) / 127.5).float()
    w_zps = torch.zeros(w_shape[0], dtype=torch.int64)
    wq = opforge.quantize_per_channel(w, w_scales, w_zps, 0, -128, 127, torch.int8)
    layer = (xq, x_scale, zp, wq, w_scales, w_zps, bias, 0.03, -5, -128, 127, torch.int8)
    conv = (stride, padding, dilation, groups)
    return layer, conv, x, w


@pytest.mark.parametrize("case", _CONV_CASES)
@pytest.mark.parametrize("input_dtype", [torch.uint8, torch.int8])
def test_quantized_conv2d_within_one_lsb_of_torch(
    case: tuple[Any, ...], input_dtype: torch.dtype
) -> None:
    layer, conv, _, _ = _quantized_conv_args(case, input_dtype)
    got = opforge.quantized_conv2d(*layer, *conv)
    torch.testing.assert_close(got, reference.quantized_conv2d(*layer, *conv), atol=0, rtol=0)
    # torch.ao's reference decomposition: dequantize, float conv2d, quantize.
    d = reference._decomposed()
    xq, x_scale, zp, wq, w_scales, w_zps, bias, out_scale, out_zp, qmin, qmax, _ = layer
    in_range = (0, 255) if input_dtype == torch.uint8 else (-128, 127)
    x_f = d.dequantize_per_tensor(xq, x_scale, zp, *in_range, input_dtype)
    w_f = d.dequantize_per_channel(wq, w_scales, w_zps, 0, -128, 127, torch.int8)
    y = torch.nn.functional.conv2d(x_f, w_f, bias, *conv)
    want = d.quantize_per_tensor(y, out_scale, out_zp, qmin, qmax, torch.int8)
    assert got.shape == want.shape
    assert (got.int() - want.int()).abs().max() <= 1


def test_quantized_conv2d_layouts_and_fused_relu() -> None:
    layer, conv, _, _ = _quantized_conv_args(_CONV_CASES[0], torch.uint8)
    want = opforge.quantized_conv2d(*layer, *conv)
    xq = layer[0]
    # A channels_last input gives a channels_last result with the same values, as conv2d.
    cl = opforge.quantized_conv2d(
        xq.contiguous(memory_format=torch.channels_last), *layer[1:], *conv
    )
    assert cl.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(cl, want, atol=0, rtol=0)
    strided = torch.zeros(*xq.shape[:-1], 2 * xq.shape[-1], dtype=xq.dtype)[..., ::2]
    strided.copy_(xq)
    torch.testing.assert_close(opforge.quantized_conv2d(strided, *layer[1:], *conv), want)
    # The output range as the ReLU: zero point = quant_min clamps negative results to 0.
    relu = list(layer)
    relu[8:11] = [0, 0, 255]
    relu[11] = torch.uint8
    y = opforge.dequantize_per_tensor(
        opforge.quantized_conv2d(*relu, *conv), layer[7], 0, 0, 255, torch.uint8
    )
    assert y.min() == 0 and y.max() > 0


def test_bad_arguments_name_op_and_argument() -> None:
    a = torch.zeros(3, 4, dtype=torch.int8)
    with pytest.raises(
        RuntimeError, match=r"int8_mm: 'self' and 'mat2' shapes cannot be multiplied"
    ):
        opforge.int8_mm(a, a)
    with pytest.raises(TypeError, match=r"int8_mm.*'self'"):
        opforge.int8_mm(a.float(), a.T.float())
    x = torch.zeros(2, 4, dtype=torch.uint8)
    w = torch.zeros(5, 4, dtype=torch.int8)
    s, z = torch.ones(5), torch.zeros(5, dtype=torch.int32)
    ok = (x, 0.1, 0, w, s, z, None, 0.1, 0, -128, 127, torch.int8)
    assert opforge.quantized_linear(*ok).shape == (2, 5)
    with pytest.raises(
        RuntimeError, match=r"quantized_linear: expected input.size\(-1\) == weight.size\(1\)"
    ):
        opforge.quantized_linear(
            x, 0.1, 0, w.T.contiguous(), s, z, None, 0.1, 0, -128, 127, torch.int8
        )
    with pytest.raises(
        RuntimeError, match=r"quantized_linear: expected 'bias' of weight.size\(0\) = 5"
    ):
        opforge.quantized_linear(x, 0.1, 0, w, s, z, torch.ones(4), 0.1, 0, -128, 127, torch.int8)
    with pytest.raises(TypeError, match=r"quantized_linear.*'dtype'"):
        opforge.quantized_linear(x, 0.1, 0, w, s, z, None, 0.1, 0, -128, 127, torch.int32)
    with pytest.raises(RuntimeError, match=r"quantized_linear.*'output_scale' > 0"):
        opforge.quantized_linear(x, 0.1, 0, w, s, z, None, 0.0, 0, -128, 127, torch.int8)


def test_quantized_conv2d_bad_arguments() -> None:
    layer, conv, _, _ = _quantized_conv_args(_CONV_CASES[0], torch.uint8)
    xq, wq = layer[0], layer[3]
    with pytest.raises(
        RuntimeError, match=r"quantized_conv2d: expected 'input' to have 6 channels"
    ):
        opforge.quantized_conv2d(xq, *layer[1:], 1, 1, 1, 2)
    with pytest.raises(RuntimeError, match=r"quantized_conv2d: expected 'weight_scales' of weight"):
        opforge.quantized_conv2d(*layer[:4], layer[4][:3], *layer[5:], *conv)
    with pytest.raises(RuntimeError, match=r"quantized_conv2d: 'stride' must be positive"):
        opforge.quantized_conv2d(*layer, 0, 1, 1, 1)
    with pytest.raises(TypeError, match=r"quantized_conv2d.*'weight'"):
        opforge.quantized_conv2d(*layer[:3], wq.float(), *layer[4:], *conv)
    with pytest.raises(
        RuntimeError, match=r"quantized_conv2d.*'input_zero_point' in \[-255, 255\]"
    ):
        opforge.quantized_conv2d(xq, layer[1], 300, *layer[3:], *conv)
