"""Affine quantization to integer tensors (schemas/quantize_affine.yaml) and the observers
(schemas/observer.yaml) against torch.ops.quantized_decomposed and torch.ao.quantization:
exact agreement on and between the grid points (ties round half to even), every quantized
dtype, the observers' statistics over several batches, their qparams rules, a calibrate /
quantize / dequantize pipeline under torch.compile, and the argument errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.ao.quantization import observer

import opforge
from opforge import reference

INPUT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# (quantized dtype, quant_min, quant_max, scale, zero_point)
RANGES = [
    (torch.int8, -128, 127, 0.05, 0),
    (torch.uint8, 0, 255, 0.02, 128),
    (torch.int8, -8, 7, 0.0375, -3),
    (torch.int16, -32768, 32767, 0.001, 5),
    (torch.int32, -(2**31), 2**31 - 1, 1e-4, 7),
]


def _inputs(scale: float, dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4000, generator=gen, dtype=torch.float64) * 200 * scale
    ties = (torch.arange(-40, 40, dtype=torch.float64) + 0.5) * scale  # half-way points
    grid = torch.arange(-40, 40, dtype=torch.float64) * scale
    far = torch.tensor([0.0, -0.0, 1e6, -1e6], dtype=torch.float64)
    return torch.cat([x, ties, grid, far]).to(dtype)


@pytest.mark.parametrize("input_dtype", INPUT_DTYPES)
@pytest.mark.parametrize("dtype,quant_min,quant_max,scale,zero_point", RANGES)
def test_quantize_per_tensor_matches_decomposed(
    input_dtype: torch.dtype,
    dtype: torch.dtype,
    quant_min: int,
    quant_max: int,
    scale: float,
    zero_point: int,
) -> None:
    x = _inputs(scale, input_dtype)
    args = (scale, zero_point, quant_min, quant_max, dtype)
    got = opforge.quantize_per_tensor(x, *args)
    assert got.dtype == dtype
    want = reference.quantize_per_tensor(x, *args)
    # Past int32's range torch's float-to-int32 cast is undefined (it wraps on x86); ours saturates.
    beyond = x.double() / scale >= 2**31
    assert (got[beyond] == quant_max).all()
    torch.testing.assert_close(got[~beyond], want[~beyond], atol=0, rtol=0)


def test_quantize_nan_gives_quant_min() -> None:
    x = torch.tensor([float("nan"), float("inf"), -float("inf")])
    got = opforge.quantize_per_tensor(x, 0.1, 3, -8, 7, torch.int8)
    assert got.tolist() == [-8, 7, -8]


@pytest.mark.parametrize("out_dtype", [None, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("dtype,quant_min,quant_max,scale,zero_point", RANGES)
def test_dequantize_per_tensor_matches_decomposed(
    out_dtype: torch.dtype | None,
    dtype: torch.dtype,
    quant_min: int,
    quant_max: int,
    scale: float,
    zero_point: int,
) -> None:
    gen = torch.Generator().manual_seed(1)
    low, high = max(quant_min, -(2**20)), min(quant_max, 2**20)
    q = torch.randint(low, high + 1, (3000,), generator=gen).to(dtype)
    args = (scale, zero_point, quant_min, quant_max, dtype)
    got = opforge.dequantize_per_tensor(q, *args, out_dtype=out_dtype)
    assert got.dtype == (out_dtype or torch.float32)
    want = reference.dequantize_per_tensor(q, *args, out_dtype=out_dtype)
    torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("scales_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("zero_points_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_per_channel_round_trip_matches_decomposed(
    scales_dtype: torch.dtype, zero_points_dtype: torch.dtype, axis: int
) -> None:
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(6, 5, 7, generator=gen) * 3
    channels = x.shape[axis]
    scales = (torch.rand(channels, generator=gen) * 0.05 + 0.01).to(scales_dtype)
    zero_points = torch.randint(-20, 20, (channels,), generator=gen).to(zero_points_dtype)
    args = (scales, zero_points, axis, -128, 127, torch.int8)
    q = opforge.quantize_per_channel(x, *args)
    torch.testing.assert_close(q, reference.quantize_per_channel(x, *args), atol=0, rtol=0)
    back = opforge.dequantize_per_channel(q, *args)
    torch.testing.assert_close(back, reference.dequantize_per_channel(q, *args), atol=0, rtol=0)
    # Within half a step of the input where nothing was clamped.
    shape = [1] * x.dim()
    shape[axis] = channels
    step = scales.to(torch.float32).reshape(shape).expand_as(x)
    inside = (q > -128) & (q < 127)
    assert ((back - x).abs()[inside] <= step[inside] / 2 + 1e-6).all()


def test_dequantize_per_channel_without_zero_points() -> None:
    q = torch.randint(-128, 128, (4, 3), dtype=torch.int8)
    scales = torch.tensor([0.1, 0.2, 0.3])
    got = opforge.dequantize_per_channel(q, scales, None, 1, -128, 127, torch.int8)
    torch.testing.assert_close(got, q.float() * scales, atol=0, rtol=0)


def _observed(
    batches: list[torch.Tensor], averaging_constant: float | None, ch_axis: int | None
) -> tuple[torch.Tensor, torch.Tensor, Any]:
    if ch_axis is None:
        shape: tuple[int, ...] = ()
        obs: Any = (
            observer.MinMaxObserver()
            if averaging_constant is None
            else observer.MovingAverageMinMaxObserver(averaging_constant=averaging_constant)
        )
    else:
        shape = (batches[0].shape[ch_axis],)
        obs = (
            observer.PerChannelMinMaxObserver(ch_axis=ch_axis)
            if averaging_constant is None
            else observer.MovingAveragePerChannelMinMaxObserver(
                averaging_constant=averaging_constant, ch_axis=ch_axis
            )
        )
    min_val = torch.full(shape, float("inf"))
    max_val = torch.full(shape, -float("inf"))
    for x in batches:
        opforge.minmax_observer_update_(min_val, max_val, x, averaging_constant, ch_axis)
        obs(x)
    return min_val, max_val, obs


@pytest.mark.parametrize("averaging_constant", [None, 0.01, 0.5])
@pytest.mark.parametrize("ch_axis", [None, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_observer_matches_torch_over_batches(
    averaging_constant: float | None, ch_axis: int | None, dtype: torch.dtype
) -> None:
    gen = torch.Generator().manual_seed(3)
    batches = [(torch.randn(8, 4, 5, 5, generator=gen) * (i + 1)).to(dtype) for i in range(4)]
    if ch_axis is not None and averaging_constant is not None:
        # torch's per-channel moving average starts from empty buffers, not (inf, -inf):
        # start both from the first batch's extremes.
        first = batches[0].transpose(0, 1).flatten(1).float()
        min_val, max_val = first.amin(1), first.amax(1)
        obs = observer.MovingAveragePerChannelMinMaxObserver(
            averaging_constant=averaging_constant, ch_axis=ch_axis
        )
        obs(batches[0])
        for x in batches[1:]:
            opforge.minmax_observer_update_(min_val, max_val, x, averaging_constant, ch_axis)
            obs(x)
    else:
        min_val, max_val, obs = _observed(batches, averaging_constant, ch_axis)
    torch.testing.assert_close(min_val, obs.min_val, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(max_val, obs.max_val, atol=1e-6, rtol=1e-6)
    scale, zero_point = opforge.choose_qparams(min_val, max_val, 0, 255)
    want_scale, want_zp = obs.calculate_qparams()
    torch.testing.assert_close(scale, want_scale.reshape(scale.shape), atol=0, rtol=0)
    torch.testing.assert_close(zero_point, want_zp.to(torch.int32).reshape(scale.shape))


def test_observer_large_batch_uses_every_thread_chunk() -> None:
    x = torch.randn(300_000)
    x[123_456] = 50.0
    x[250_001] = -60.0
    min_val, max_val = torch.tensor(float("inf")), torch.tensor(-float("inf"))
    opforge.minmax_observer_update_(min_val, max_val, x)
    assert (min_val.item(), max_val.item()) == (-60.0, 50.0)


def test_observer_nan_propagates_and_empty_batch_changes_nothing() -> None:
    min_val, max_val = torch.tensor(-1.0), torch.tensor(1.0)
    opforge.minmax_observer_update_(min_val, max_val, torch.empty(0, 3))
    assert (min_val.item(), max_val.item()) == (-1.0, 1.0)
    opforge.minmax_observer_update_(min_val, max_val, torch.tensor([0.0, float("nan")]))
    assert min_val.isnan() and max_val.isnan()
    # A NaN in the vector lanes (not the scalar tail) of a long row, at a lane's edge.
    for where in (0, 15, 16, 1000):
        x = torch.randn(1027)
        x[where] = float("nan")
        min_val, max_val = torch.tensor(-1.0), torch.tensor(1.0)
        opforge.minmax_observer_update_(min_val, max_val, x)
        assert min_val.isnan() and max_val.isnan(), where


@pytest.mark.parametrize(
    "quant_min,quant_max,symmetric,want_zero_point",
    [(0, 255, True, 128), (-128, 127, True, 0), (0, 15, True, 7), (0, 65535, True, 32768)],
)
def test_choose_qparams_symmetric_zero_points(
    quant_min: int, quant_max: int, symmetric: bool, want_zero_point: int
) -> None:
    scale, zero_point = opforge.choose_qparams(
        torch.tensor([-2.0, -1.0]), torch.tensor([1.0, 3.0]), quant_min, quant_max, symmetric
    )
    assert zero_point.tolist() == [want_zero_point] * 2
    levels = (quant_max - quant_min) / 2
    torch.testing.assert_close(scale, torch.tensor([2.0 / levels, 3.0 / levels]))


def test_choose_qparams_unobserved_and_eps() -> None:
    inf = float("inf")
    scale, zero_point = opforge.choose_qparams(
        torch.tensor([inf, 0.0, -1.0]), torch.tensor([-inf, 0.0, 2.0]), -128, 127
    )
    assert scale[0].item() == 1.0 and zero_point[0].item() == 0  # nothing observed
    assert scale[1].item() == torch.finfo(torch.float32).eps  # an all-zero range
    assert scale.dtype == torch.float32 and zero_point.dtype == torch.int32


def test_ptq_pipeline_compiles() -> None:
    """Calibrate, choose qparams, quantize and dequantize, under torch.compile(fullgraph)."""

    def calibrate_and_quantize(x: torch.Tensor, stats: torch.Tensor) -> torch.Tensor:
        min_val, max_val = stats[0].clone(), stats[1].clone()
        opforge.minmax_observer_update_(min_val, max_val, x)
        scale, zero_point = opforge.choose_qparams(min_val, max_val, -128, 127)
        q = opforge.quantize_per_channel(
            x, scale.reshape(1).expand(x.shape[1]), zero_point.reshape(1).expand(x.shape[1]),
            1, -128, 127, torch.int8,
        )  # fmt: skip
        return opforge.dequantize_per_channel(
            q, scale.reshape(1).expand(x.shape[1]), zero_point.reshape(1).expand(x.shape[1]),
            1, -128, 127, torch.int8,
        )  # fmt: skip

    torch._dynamo.reset()
    x = torch.randn(4, 6)
    stats = torch.tensor([float("inf"), -float("inf")])
    eager = calibrate_and_quantize(x, stats)
    compiled = torch.compile(calibrate_and_quantize, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, stats), eager, atol=0, rtol=0)
    assert (eager - x).abs().max() <= (x.max() - x.min()) / 255 / 2 + 1e-6


def _raises(exc: type[Exception], match: str, fn: Any, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_bad_arguments_name_op_and_argument() -> None:
    x = torch.randn(4, 3)
    q = torch.zeros(4, 3, dtype=torch.int8)
    s = torch.ones(3)
    z = torch.zeros(3, dtype=torch.int32)
    _raises(
        TypeError,
        r"quantize_per_tensor.*'dtype'",
        opforge.quantize_per_tensor,
        x,
        0.1,
        0,
        0,
        255,
        torch.float32,
    )
    _raises(
        RuntimeError,
        r"quantize_per_tensor.*range of uint8",
        opforge.quantize_per_tensor,
        x,
        0.1,
        0,
        -1,
        255,
        torch.uint8,
    )
    _raises(
        RuntimeError,
        r"quantize_per_tensor.*quant_min <= quant_max",
        opforge.quantize_per_tensor,
        x,
        0.1,
        0,
        5,
        1,
        torch.int8,
    )
    _raises(
        RuntimeError,
        r"quantize_per_tensor.*'scale' > 0",
        opforge.quantize_per_tensor,
        x,
        0.0,
        0,
        -128,
        127,
        torch.int8,
    )
    _raises(
        TypeError,
        r"quantize_per_tensor.*'input'",
        opforge.quantize_per_tensor,
        x.double(),
        0.1,
        0,
        -128,
        127,
        torch.int8,
    )
    _raises(
        TypeError,
        r"dequantize_per_tensor.*'input'.*int8",
        opforge.dequantize_per_tensor,
        q,
        0.1,
        0,
        0,
        255,
        torch.uint8,
    )
    _raises(
        TypeError,
        r"dequantize_per_tensor.*'out_dtype'",
        opforge.dequantize_per_tensor,
        q,
        0.1,
        0,
        -128,
        127,
        torch.int8,
        out_dtype=torch.int32,
    )
    _raises(
        IndexError,
        r"quantize_per_channel.*'axis'",
        opforge.quantize_per_channel,
        x,
        s,
        z,
        2,
        -128,
        127,
        torch.int8,
    )
    _raises(
        RuntimeError,
        r"quantize_per_channel.*'scales'.*3",
        opforge.quantize_per_channel,
        x,
        torch.ones(4),
        z,
        1,
        -128,
        127,
        torch.int8,
    )
    _raises(
        RuntimeError,
        r"dequantize_per_channel.*'zero_points'",
        opforge.dequantize_per_channel,
        q,
        s,
        torch.zeros(2, dtype=torch.int32),
        1,
        -128,
        127,
        torch.int8,
    )
    _raises(
        TypeError,
        r"quantize_per_channel.*'zero_points'",
        opforge.quantize_per_channel,
        x,
        s,
        z.float(),
        1,
        -128,
        127,
        torch.int8,
    )
    _raises(
        RuntimeError,
        r"choose_qparams.*min_val <= max_val",
        opforge.choose_qparams,
        torch.tensor([1.0]),
        torch.tensor([0.0]),
        0,
        255,
    )
    _raises(
        RuntimeError,
        r"choose_qparams.*'max_val'",
        opforge.choose_qparams,
        torch.zeros(2),
        torch.zeros(3),
        0,
        255,
    )
    m, M = torch.zeros(3), torch.zeros(3)
    _raises(
        RuntimeError,
        r"minmax_observer_update_.*one element",
        opforge.minmax_observer_update_,
        m,
        M,
        x,
    )
    _raises(
        RuntimeError,
        r"minmax_observer_update_.*x.size\(ch_axis\) = 4",
        opforge.minmax_observer_update_,
        m,
        M,
        x,
        None,
        0,
    )
    _raises(
        IndexError,
        r"minmax_observer_update_.*'ch_axis'",
        opforge.minmax_observer_update_,
        m,
        M,
        x,
        None,
        2,
    )
    _raises(
        RuntimeError,
        r"minmax_observer_update_.*'averaging_constant'",
        opforge.minmax_observer_update_,
        m,
        M,
        x,
        1.5,
        1,
    )
    _raises(
        TypeError,
        r"minmax_observer_update_.*'min_val'",
        opforge.minmax_observer_update_,
        m.double(),
        M,
        x,
        None,
        1,
    )


def test_bfloat16_truncate_is_the_upper_half_of_each_float() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.cat(
        [
            torch.randn(5000, generator=gen)
            * 10.0 ** torch.randint(-30, 30, (5000,), generator=gen),
            torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 3.4e38, -3.4e38, 1e-45, 1e-40]),
        ]
    )
    got = opforge.bfloat16_truncate(x)
    assert got.dtype == torch.bfloat16
    expected = (x.view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)
    assert torch.equal(
        got.view(torch.int16), expected.view(torch.int16)
    )  # bit for bit, signs of 0 too
    # Toward zero, by less than one bfloat16 step (rounding would overflow 3.4e38 to inf).
    finite = x.isfinite()
    assert (got.float()[finite].abs() <= x[finite].abs()).all()
    assert got[x == 3.4e38].isfinite().all()
    # A NaN stays NaN, even one whose payload lies only in the low 16 bits.
    nan_low_payload = torch.tensor([0x7F800001], dtype=torch.int32).view(torch.float32)
    assert opforge.bfloat16_truncate(nan_low_payload).isnan().all()
    with pytest.raises(TypeError, match=r"bfloat16_truncate.*'self'"):
        opforge.bfloat16_truncate(x.double())
