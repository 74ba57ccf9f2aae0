"""The integer matrix products (schemas/int_gemm.yaml): int8_mm against an exact matmul and
torch._int_mm, quantized_linear against its definition and within one LSB of torch's
dequantize -> linear -> quantize, a quantized MLP close to its float model, and the errors."""

from __future__ import annotations

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
