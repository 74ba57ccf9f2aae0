"""Shapes that force every launch branch of the CUDA kernels (warp vs block rows,
column kernels, split reductions, 32-bit vs 64-bit index plans, GEMM tile edges,
partial warps), run by the CUDA simulator against the CPU operators. The
simulator's grid cap (opforge._cuda_sim.max_blocks) makes every grid-stride loop
go round several times even on these small inputs."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.cuda_sim.check import IN_ONE_WORKER, ON_GPU, agree, cuda_op, sim_only

pytestmark = [pytest.mark.cuda_sim, IN_ONE_WORKER]

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def rand(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 17 * len(shape) + sum(shape))
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(dtype)


@sim_only
def test_grid_cap_is_small(cuda_sim: Any) -> None:
    assert cuda_sim.max_blocks <= 8


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "shape,dim",
    [((4, 3), 1), ((5, 1000), 1), ((3, 3000), 1), ((2, 5, 7), 0), ((2, 5, 7), 1), ((33, 2), -1)],
    ids=["warp-3", "warp-1000", "block-3000", "columns-dim0", "columns-dim1", "rows-33x2"],
)
def test_softmax_family(
    cuda_sim: Any, name: str, shape: tuple[int, ...], dim: int, dtype: torch.dtype
) -> None:
    x = rand(*shape, dtype=dtype)
    y = agree(name, [x, dim])
    grad = rand(*shape, dtype=dtype, seed=1)
    agree(f"{name}_backward", [grad, y, dim])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((8, 50000), [-1]),  # split rows: partial sums in a workspace, then a second pass
        ((300, 100), [-1]),
        ((64, 2000, 3), [1]),  # reduced dim not innermost: permuted / column kernel
        ((9000, 5, 3), [1]),
        ((7, 6), None),
        ((4, 5, 6), [0, 2]),  # reduced dims not one run: gathered into rows
        ((3, 0, 4), [1]),  # nothing to sum: zeros
    ],
    ids=["split", "rows", "permuted", "columns", "all", "two-dims", "empty-reduced"],
)
def test_sum(
    cuda_sim: Any, shape: tuple[int, ...], dim: list[int] | None, dtype: torch.dtype
) -> None:
    x = rand(*shape, dtype=dtype)
    tol = {"atol": 1e-3, "rtol": 1e-4} if dtype == torch.float32 else None
    if dtype == torch.float16:
        tol = {"atol": 0.5, "rtol": 5e-3}
    agree("sum", [x, dim], label=str(shape), tol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16])
def test_add_plans(cuda_sim: Any, dtype: torch.dtype) -> None:
    def t(*shape: int) -> torch.Tensor:
        return rand(*shape).mul(10).to(dtype)

    agree("add", [t(1000), t(1000)], {"alpha": 2}, overload="Tensor", label="contiguous")
    agree("add", [t(5, 1, 7), t(1, 6, 1)], overload="Tensor", label="broadcast")
    agree("add", [t(40, 30).t(), t(30, 40)], overload="Tensor", label="transposed")
    # Nine dims that do not merge: every other dim broadcast.
    a = t(2, 1, 3, 1, 2, 1, 3, 1, 2)
    b = t(1, 2, 1, 3, 1, 2, 1, 3, 1)
    agree("add", [a, b.transpose(0, 8)[:1] if False else b], overload="Tensor", label="9-dim")


@sim_only
@pytest.mark.parametrize("limit", [1000, 4095])
def test_pointwise_plans_split_at_the_32bit_index_limit(cuda_sim: Any, limit: int) -> None:
    # The GPU splits a plan whose indices or offsets pass 2**31 - 1; the simulator, with the
    # limit lowered, splits these (halves of the outermost dim, size-1 dims dropped).
    cuda_sim.set_index_limit(limit)
    try:
        x, y = rand(4099), rand(4099, seed=1)
        agree("add", [x, y], overload="Tensor", label="flat")
        agree("relu", [rand(3, 700, 5).transpose(0, 2)], label="strided")
        agree("add", [rand(9, 1, 611), rand(1, 7, 1, seed=2)], overload="Tensor", label="broadcast")
        agree("add_relu", [rand(1, 1, 5000), rand(5000, seed=3)], label="size-1 dims")
        # One operand's offsets pass the limit while the output's elements do not.
        wide = rand(30, 200)[:, ::50]
        agree("relu", [wide], label="wide strides")
    finally:
        cuda_sim.set_index_limit(2**31 - 1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_backward_many_rows(cuda_sim: Any, dtype: torch.dtype) -> None:
    x = rand(130, 3, 40, dtype=dtype)
    w, b = rand(3, 40, dtype=dtype, seed=1), rand(3, 40, dtype=dtype, seed=2)
    y, mean, rstd = agree("layer_norm_forward", [x, [3, 40], w, b, 1e-5])
    grad = rand(130, 3, 40, dtype=dtype, seed=3)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else None
    agree("layer_norm_backward", [grad, x, [3, 40], mean, rstd, [True, True, True], w], tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_norms_of_empty_groups(cuda_sim: Any, dtype: torch.dtype) -> None:
    """Rows of no elements: mean 0 and rstd NaN, as torch (equal_nan compare). Groups of
    no elements are an error, as in torch (the shared meta check)."""
    agree("layer_norm_forward", [rand(3, 0, dtype=dtype), [0], None, None, 1e-5])
    with pytest.raises(RuntimeError, match="expected 'input' to have spatial elements"):
        torch.ops.opforge.group_norm_forward(rand(2, 4, 0, dtype=dtype), 2, None, None, 1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("hw", [(3, 5), (24, 24)], ids=["hw<32", "hw>=512"])
def test_batch_and_group_norm(cuda_sim: Any, hw: tuple[int, int], dtype: torch.dtype) -> None:
    n, c = 3, 6
    x = rand(n, c, *hw, dtype=dtype)
    w, b = rand(c, dtype=dtype, seed=1), rand(c, dtype=dtype, seed=2)
    grad = rand(n, c, *hw, dtype=dtype, seed=3)
    tol = {"atol": 2e-4, "rtol": 1e-4} if dtype == torch.float32 else None
    mean, var = torch.zeros(c, dtype=dtype), torch.ones(c, dtype=dtype)

    def running(args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
        return args[3:5]

    _, save_mean, save_invstd = agree(
        "batch_norm_forward", [x, w, b, mean, var, True, 0.1, 1e-5], written=running, tol=tol
    )
    agree(
        "batch_norm_backward",
        [grad, x, save_mean, save_invstd, True, [True, True, True], w],
        tol=tol,
    )
    agree("batch_norm_forward", [x, w, b, mean, var, False, 0.1, 1e-5], written=running, tol=tol)
    _, gmean, grstd = agree("group_norm_forward", [x, 3, w, b, 1e-5], tol=tol)
    agree("group_norm_backward", [grad, x, 3, gmean, grstd, [True, True, True], w], tol=tol)


CONV_CASES = [
    # (N, C, H, W), (O, C/groups, kh, kw), stride, padding, dilation, groups
    ((2, 5, 9, 7), (67, 5, 3, 3), 1, 1, 1, 1),  # O and N*OH*OW not multiples of 64; C*kh*kw = 45
    ((1, 3, 11, 10), (5, 3, 2, 3), 2, (0, 1), 1, 1),
    ((2, 4, 12, 12), (6, 2, 3, 3), 1, 2, 2, 2),  # groups 2, dilation 2
    ((1, 32, 8, 8), (32, 1, 3, 3), 1, 1, 1, 32),  # depthwise
    ((2, 8, 9, 9), (16, 1, 3, 3), 2, 1, 1, 8),  # depthwise, multiplier 2, stride 2
    ((1, 64, 5, 5), (64, 2, 1, 1), 1, 0, 1, 32),  # groups 32, 1x1
]


def _pair(v: Any) -> list[int]:
    return [v, v] if isinstance(v, int) else list(v)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=[f"conv{i}" for i in range(len(CONV_CASES))])
def test_conv2d(cuda_sim: Any, case: tuple[Any, ...], dtype: torch.dtype) -> None:
    xs, ws, stride, padding, dilation, groups = case
    x, w, b = (
        rand(*xs, dtype=dtype),
        rand(*ws, dtype=dtype, seed=1),
        rand(ws[0], dtype=dtype, seed=2),
    )
    # torch.ops takes lists for SymInt[2] (as for aten.conv2d): no single ints.
    conv_args = [_pair(stride), _pair(padding), _pair(dilation), groups]
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else None
    y = agree("conv2d", [x, w, b, *conv_args], tol=tol)
    agree("conv2d_bias_act", [x, w, b, *conv_args, "silu"], tol=tol)
    grad = rand(*y.shape, dtype=dtype, seed=3)
    agree("conv2d_backward", [grad, x, w, *conv_args, [True, True, True]], tol=tol)
    agree("conv2d_backward", [grad, x, w, *conv_args, [False, True, False]], tol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_conv_transpose2d_output_padding(cuda_sim: Any, dtype: torch.dtype) -> None:
    x, w = rand(2, 4, 5, 6, dtype=dtype), rand(4, 3, 3, 3, dtype=dtype, seed=1)
    b = rand(6, dtype=dtype, seed=2)
    args = [[2, 2], [1, 1], [1, 1], 2, [1, 1]]  # stride, padding, output_padding, groups, dilation
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else None
    y = agree("conv_transpose2d", [x, w, b, *args], tol=tol)
    grad = rand(*y.shape, dtype=dtype, seed=3)
    agree("conv_transpose2d_backward", [grad, x, w, *args, [True, True, True]], tol=tol)
    # Zero-size input planes with a non-empty output (the bias alone), and an empty batch.
    empty_planes = [[2, 2], [0, 0], [1, 1], 2, [1, 1]]
    agree("conv_transpose2d", [rand(1, 4, 0, 3, dtype=dtype), w, b, *empty_planes], tol=tol)
    agree("conv_transpose2d", [rand(0, 4, 5, 6, dtype=dtype), w, b, *args], tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_fold_conv_bn(cuda_sim: Any, dtype: torch.dtype) -> None:
    w = rand(9, 4, 3, 3, dtype=dtype)
    gamma, beta, mean = (
        rand(9, dtype=dtype, seed=1),
        rand(9, dtype=dtype, seed=2),
        rand(9, dtype=dtype, seed=3),
    )
    var = rand(9, dtype=dtype, seed=4).abs() + 0.5
    agree("fold_conv_bn", [w, rand(9, dtype=dtype, seed=5), gamma, beta, mean, var, 1e-5])
    agree("fold_conv_bn", [w, None, gamma, beta, mean, var, 1e-5])


@pytest.mark.parametrize("dtype", FLOATS)
def test_repvgg_fuse(cuda_sim: Any, dtype: torch.dtype) -> None:
    # 24 * 12 * 9 weights: the grid-stride loop goes round several times.
    def bn(seed: int) -> list[torch.Tensor]:
        gamma, beta, mean = (rand(24, dtype=dtype, seed=seed + i) for i in range(3))
        return [gamma, beta, mean, rand(24, dtype=dtype, seed=seed + 3).abs() + 0.5]

    w3, w1 = rand(24, 12, 3, 3, dtype=dtype), rand(24, 12, 1, 1, dtype=dtype, seed=1)
    none = [None] * 4
    agree("repvgg_fuse", [w3, *bn(10), w1, *bn(20), *bn(30), 1e-5, 2])
    agree("repvgg_fuse", [w3, *bn(10), None, *none, *bn(30), 1e-3, 2])
    agree("repvgg_fuse", [w3, *bn(10), w1, *bn(20), *none, 1e-5, 1])


@pytest.mark.parametrize("dtype", FLOATS)
def test_pooling(cuda_sim: Any, dtype: torch.dtype) -> None:
    x = rand(2, 3, 13, 11, dtype=dtype)
    out, idx = agree("max_pool2d_with_indices", [x, [3, 2], [2, 2], [1, 1], [2, 1], True])
    agree(
        "max_pool2d_backward",
        [rand(*out.shape, dtype=dtype, seed=1), x, idx, [3, 2], [2, 2], [1, 1], [2, 1], True],
    )
    y = agree("avg_pool2d", [x, [3, 3], [2, 2], [1, 1], True, False, None])
    agree(
        "avg_pool2d_backward",
        [rand(*y.shape, dtype=dtype, seed=2), x, [3, 3], [2, 2], [1, 1], True, False, None],
    )
    agree("avg_pool2d", [x, [2, 2], [1, 1], [0, 0], False, True, 3])
    a = agree("adaptive_avg_pool2d", [x, [5, 4]])
    agree("adaptive_avg_pool2d_backward", [rand(*a.shape, dtype=dtype, seed=3), x])
    m, mi = agree("adaptive_max_pool2d_with_indices", [x, [4, 5]])
    agree("adaptive_max_pool2d_backward", [rand(*m.shape, dtype=dtype, seed=4), x, mi])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_spatial_pyramid_pool_nine_levels(cuda_sim: Any, mode: str, dtype: torch.dtype) -> None:
    levels = [9, 8, 7, 6, 5, 4, 3, 2, 1]
    x = rand(2, 3, 7, 11, dtype=dtype)  # smaller than the largest levels
    y = agree("spatial_pyramid_pool", [x, levels, mode])
    agree("spatial_pyramid_pool_backward", [rand(*y.shape, dtype=dtype, seed=1), x, levels, mode])


@sim_only
def test_random_ops_under_graph_capture_read_philox_through_pointers(cuda_sim: Any) -> None:
    # A captured GPU kernel reads its seed and offset from device memory; the simulator,
    # pretending a capture, passes them the same way: the same numbers as the CPU's.
    x = rand(3000)
    cuda_sim.set_capturing(True)
    try:
        for p in (0.3, 0.9):
            cpu = torch.ops.opforge.dropout_forward(x, p, True, torch.Generator().manual_seed(9))
            sim = torch.ops.opforge_cuda_sim.dropout_forward(
                x, p, True, torch.Generator().manual_seed(9)
            )
            torch.testing.assert_close(sim, cpu)
        w = torch.empty(40, 50)
        cpu_w = torch.ops.opforge.normal(w, 0.0, 1.0, torch.Generator().manual_seed(4))
        sim_w = torch.ops.opforge_cuda_sim.normal(w, 0.0, 1.0, torch.Generator().manual_seed(4))
        torch.testing.assert_close(sim_w, cpu_w)
    finally:
        cuda_sim.set_capturing(False)


@sim_only  # the GPU draws from the CUDA generator
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_dropout_same_mask_as_cpu(cuda_sim: Any, n: int, dtype: torch.dtype) -> None:
    x = rand(n, dtype=dtype)
    for p in (0.0, 0.3, 1.0):
        cpu = torch.ops.opforge.dropout_forward(x, p, True, torch.Generator().manual_seed(5))
        sim = torch.ops.opforge_cuda_sim.dropout_forward(
            x, p, True, torch.Generator().manual_seed(5)
        )
        torch.testing.assert_close(sim, cpu)
        agree(
            "dropout_backward",
            [rand(n, dtype=dtype, seed=1), cpu[1], 1.0 / (1 - p) if p < 1 else 0.0],
        )
    agree("dropout_forward", [x, 0.5, False, None])


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", [0, 5, 8])
def test_embedding(cuda_sim: Any, dim: int, dtype: torch.dtype, index_dtype: torch.dtype) -> None:
    w = rand(11, dim, dtype=dtype)
    idx = torch.tensor([[0, 3, 10], [3, 3, 7]], dtype=index_dtype)
    agree("embedding", [w, idx, 3])
    grad = rand(2, 3, dim, dtype=dtype, seed=1)
    agree("embedding_backward", [grad, idx, 11, 3])
    agree("embedding_backward", [grad, idx, 11, -1])
    if not ON_GPU:  # the GPU asserts on the device (Note [Plan services])
        bad = torch.tensor([0, 11], dtype=index_dtype)
        with pytest.raises(IndexError, match="indices"):
            cuda_op("embedding")(w, bad, -1)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8]
)
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_channel_shuffle_odd_offsets(cuda_sim: Any, offset: int, dtype: torch.dtype) -> None:
    storage = (torch.arange(offset + 2 * 6 * 5 * 3) % 100).to(dtype)
    x = storage[offset:].view(2, 6, 5, 3)
    for groups in (1, 2, 3, 6):
        agree("channel_shuffle", [x, groups], label=f"groups={groups}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_prelu_shared_and_per_channel(cuda_sim: Any, dtype: torch.dtype) -> None:
    x = rand(3, 5, 7, 9, dtype=dtype)
    grad = rand(3, 5, 7, 9, dtype=dtype, seed=1)
    tol = {"atol": 1e-3, "rtol": 1e-4} if dtype == torch.float32 else None
    for w in (rand(1, dtype=dtype, seed=2), rand(5, dtype=dtype, seed=3)):
        agree("prelu", [x, w])
        agree("prelu_backward", [grad, x, w], tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_local_response_norm(cuda_sim: Any, dtype: torch.dtype) -> None:
    x = rand(2, 7, 4, 5, dtype=dtype)
    agree("local_response_norm", [x, 3, 1e-2, 0.75, 2.0])
    agree(
        "local_response_norm_backward",
        [rand(2, 7, 4, 5, dtype=dtype, seed=1), x, 4, 1e-2, 0.75, 2.0],
    )


@sim_only
def test_embedding_under_graph_capture_asserts_on_the_device(cuda_sim: Any) -> None:
    # No blocking readback of the error flag while a CUDA graph is captured.
    w = rand(5, 3)
    cuda_sim.set_capturing(True)
    try:
        torch.testing.assert_close(
            torch.ops.opforge_cuda_sim.embedding(w, torch.tensor([0, 4]), -1), w[[0, 4]]
        )
        with pytest.raises(torch.AcceleratorError, match="device-side assert triggered"):
            torch.ops.opforge_cuda_sim.embedding(w, torch.tensor([0, 7]), -1)
        with pytest.raises(torch.AcceleratorError, match="device-side assert triggered"):
            torch.ops.opforge_cuda_sim.embedding_backward(rand(2, 3), torch.tensor([-1, 2]), 5, -1)
    finally:
        cuda_sim.set_capturing(False)


def test_embedding_backward_is_flagged_nondeterministic(cuda_sim: Any) -> None:
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(
            RuntimeError, match="embedding_backward .CUDA. does not have a deterministic"
        ):
            cuda_op("embedding_backward")(rand(2, 3), torch.tensor([1, 2]), 5, -1)
    finally:
        torch.use_deterministic_algorithms(False)


@sim_only  # the GPU draws from the CUDA generator
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_init_fills_same_values_as_cpu(cuda_sim: Any, n: int, dtype: torch.dtype) -> None:
    # Both kernels compute element i from (seed, offset, i) alone (opforge/init/math.h):
    # the same random words, so uniform values are equal bit for bit; normal and
    # trunc_normal agree to rounding in float (the CPU's vectorized log, cosine and
    # erfinv, kernels/cpu/init.cpp), a unit in the last place after a 16-bit cast.
    x = torch.empty(n, 3, dtype=dtype)
    exact = {"atol": 0, "rtol": 0}
    rounding = {
        torch.float64: exact,  # (computed in double, with init/math.h's functions on both)
        torch.float32: {"atol": 1e-6, "rtol": 1e-5},
    }.get(dtype, {"atol": 2e-3, "rtol": 1e-2})
    for name, args, tol in (
        ("uniform", [-1.0, 2.0], exact),
        ("normal", [0.5, 2.0], rounding),
        ("trunc_normal", [0.0, 1.0, -0.5, 1.5], rounding),
    ):
        cpu = getattr(torch.ops.opforge, name)(x, *args, torch.Generator().manual_seed(3))
        sim = getattr(torch.ops.opforge_cuda_sim, name)(x, *args, torch.Generator().manual_seed(3))
        torch.testing.assert_close(sim, cpu, **tol)
    agree("constant", [x, -0.75])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "shape,ch_axis", [((40_000,), None), ((3, 20_000), 0), ((7, 5, 6), 1), ((2, 9000, 3), -1)]
)
def test_observer_split_reductions(
    cuda_sim: Any, shape: tuple[int, ...], ch_axis: int | None, dtype: torch.dtype
) -> None:
    # Over 16384 elements per channel the CUDA reduction splits each channel across
    # blocks (observer_splits) and merges their partials in a second launch.
    x = rand(*shape, dtype=dtype)
    x.view(-1)[len(x.view(-1)) // 2] = 40.0
    channels = 1 if ch_axis is None else shape[ch_axis]
    stats = [torch.full((channels,), float("inf")), torch.full((channels,), -float("inf"))]
    if ch_axis is None:
        stats = [s.reshape(()) for s in stats]
    pick = lambda args, kwargs: args[:2]  # noqa: E731
    for c in (None, 0.25):
        agree("minmax_observer_update_", [*stats, x, c, ch_axis], written=pick, label=f"c={c}")
    scale_zp = agree("choose_qparams", [stats[0] - 1, stats[1] + 1, -128, 127])
    assert scale_zp[0].dtype == torch.float32


@pytest.mark.parametrize("case", CONV_CASES, ids=[f"conv{i}" for i in range(len(CONV_CASES))])
def test_quantized_conv2d_implicit_gemm(cuda_sim: Any, case: tuple[Any, ...]) -> None:
    # The implicit GEMM's tiles over output pixels, im2col rows and channels, one
    # batch per group (the grid's z), against the CPU's direct convolution.
    xs, ws, stride, padding, dilation, groups = case
    g = torch.Generator().manual_seed(5)
    xq = torch.randint(0, 256, xs, generator=g, dtype=torch.uint8)
    wq = torch.randint(-128, 128, ws, generator=g, dtype=torch.int8)
    scales = torch.rand(ws[0], generator=g) * 0.01 + 0.001
    zps = torch.randint(-2, 3, (ws[0],), generator=g, dtype=torch.int32)
    bias = torch.randn(ws[0], generator=g)
    conv_args = [_pair(stride), _pair(padding), _pair(dilation), groups]
    layer = [xq, 0.02, 128, wq, scales, zps, bias, 0.05, 0, 0, 255, torch.uint8]
    agree("quantized_conv2d", [*layer, *conv_args])


@pytest.mark.parametrize(
    "shape,axis", [((40_000,), None), ((3, 20_000), 0), ((2, 9000, 3), 2), ((5, 3), 1)]
)
def test_learnable_fake_quantize_split_sums(
    cuda_sim: Any, shape: tuple[int, ...], axis: int | None
) -> None:
    # Over 16384 elements per channel the scale and zero point sums split into
    # shares, one block each, added in a second launch.
    x = rand(*shape)
    grad = rand(*shape, seed=1)
    channels = 1 if axis is None else shape[axis]
    scale = torch.rand(channels, generator=torch.Generator().manual_seed(2)) * 0.2 + 0.1
    zero_point = torch.full((channels,), 2.5)
    tol = {"atol": 1e-3, "rtol": 1e-5}  # float64 sums of float32 terms, in other orders
    if axis is None:
        agree("fake_quantize_learnable_per_tensor_affine", [x, scale, zero_point, 0, 15, 1.0])
        agree(
            "fake_quantize_learnable_per_tensor_affine_backward",
            [grad, x, scale, zero_point, 0, 15, 0.5],
            tol=tol,
        )
    else:
        args = [scale, zero_point, axis, -8, 7]
        agree("fake_quantize_learnable_per_channel_affine", [x, *args, 1.0])
        agree("fake_quantize_learnable_per_channel_affine_backward", [grad, x, *args, 0.5], tol=tol)


@pytest.mark.parametrize("norm_type", [2.0, float("inf"), 3.0])
def test_clip_grad_norm_many_tables(cuda_sim: Any, norm_type: float) -> None:
    # 60 tensors (more than a table holds) of up to 500 elements (many 8-element chunks
    # in the simulated build): partials folded per launch into each tensor's value.
    grads = [rand(1 + (7 * i) % 500, seed=i) for i in range(60)]
    pick = lambda args, kwargs: [args[0]]  # noqa: E731
    agree(
        "clip_grad_norm_", [grads, 0.5, norm_type], written=pick, tol={"atol": 1e-6, "rtol": 1e-6}
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("case", ["random", "ties", "zeros"])
def test_magnitude_prune_mask_radix_select(cuda_sim: Any, dtype: torch.dtype, case: str) -> None:
    # 70000 elements (index bits over three bytes); heavy ties select the tie index too.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(70_000, generator=g, dtype=torch.float64)
    if case == "ties":
        x = torch.randint(-3, 4, (70_000,), generator=g).double() * 0.25
    elif case == "zeros":
        x[::3] = 0.0
        x[5] = -0.0
        x[7] = float("nan")
    for amount in (0.3, 0.5, 12345):
        agree("magnitude_prune_mask", [x.to(dtype), amount], label=f"{case}-{amount}")


@pytest.mark.parametrize("amount", [0.3, 777])
def test_random_prune_mask_same_as_cpu(cuda_sim: Any, amount: float) -> None:
    # One Philox word per element on both: the same seed, the same mask.
    w = rand(300, 40)
    cpu, sim = (
        torch.ops.opforge.random_prune_mask,
        torch.ops.opforge_cuda_sim.random_prune_mask,
    )
    a = cpu(w, amount, generator=torch.Generator().manual_seed(5))
    b = sim(w, amount, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    assert int((a == 0).sum()) == (777 if amount == 777 else round(0.3 * w.numel()))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 63, 64, 65, 200])  # one bitmask word, its edge, several tiles
def test_nms_bitmask_tiles(cuda_sim: Any, dtype: torch.dtype, n: int) -> None:
    g = torch.Generator().manual_seed(n)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * 50
    boxes = torch.cat([xy, xy + torch.rand(n, 2, generator=g, dtype=torch.float64) * 20], 1)
    scores = torch.rand(n, generator=g, dtype=torch.float64)
    scores[::7] = scores[0]  # ties: the stable order
    boxes, scores = boxes.to(dtype), scores.to(dtype)
    for threshold in (0.0, 0.3, 0.7):
        agree("nms", [boxes, scores, threshold])
    idxs = torch.randint(0, 4, (n,), generator=g)
    agree("batched_nms", [boxes, scores, idxs, 0.2])
    agree("batched_nms", [boxes, scores, idxs.int(), 0.5])


def _roi_boxes(k: int, batch: int, size: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    corners = (torch.rand(k, 2, 2, generator=g, dtype=torch.float64) * 1.4 - 0.2) * size
    lo, hi = corners.min(1).values, corners.max(1).values
    b = torch.randint(0, batch, (k, 1), generator=g).double()
    return torch.cat([b, lo, hi], 1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("channels", [0, 5, 37])
def test_roi_ops(cuda_sim: Any, channels: int, dtype: torch.dtype) -> None:
    # Enough boxes x channels x bins that every grid-stride loop wraps; no channels: one
    # thread per box, which still checks the batch index.
    x = rand(2, channels, 11, 9, dtype=dtype)
    boxes = _roi_boxes(13, 2, 20.0, seed=channels).to(dtype)
    for mode in ("avg", "max"):
        for ratio, aligned in ((-1, False), (2, True)):
            args = [[3, 2], 0.5, ratio, aligned, mode]
            y = agree("roi_align", [x, boxes, *args], label=mode)
            grad = rand(*y.shape, dtype=dtype, seed=1)
            agree("roi_align_backward", [grad, boxes, list(x.shape), *args, x], label=mode)
    values, argmax = agree("roi_pool", [x, boxes, [4, 3], 0.5])
    agree(
        "roi_pool_backward",
        [rand(*values.shape, dtype=dtype, seed=2), boxes, argmax, list(x.shape)],
    )
    if not ON_GPU:  # the GPU asserts on the device (Note [Plan services])
        bad = boxes.clone()
        bad[3, 0] = 2
        with pytest.raises(IndexError, match="'boxes' out of range: 2"):
            cuda_op("roi_align")(x, bad, [3, 2], 0.5, -1, False, "avg")


def test_roi_backward_ops_are_flagged_nondeterministic(cuda_sim: Any) -> None:
    boxes = torch.tensor([[0.0, 1.0, 1.0, 3.0, 3.0]])
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(
            RuntimeError, match="roi_align_backward .CUDA. does not have a deterministic"
        ):
            cuda_op("roi_align_backward")(
                rand(1, 2, 2, 2), boxes, [1, 2, 4, 4], [2, 2], 1.0, -1, False, "avg"
            )
        with pytest.raises(
            RuntimeError, match="roi_pool_backward .CUDA. does not have a deterministic"
        ):
            argmax = torch.zeros(1, 2, 2, 2, dtype=torch.int64)
            cuda_op("roi_pool_backward")(rand(1, 2, 2, 2), boxes, argmax, [1, 2, 4, 4])
    finally:
        torch.use_deterministic_algorithms(False)


def _boxes(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    corner = torch.rand(n, 2, generator=g, dtype=torch.float64) * 20
    size = torch.rand(n, 2, generator=g, dtype=torch.float64) * 10 + 0.5
    return torch.cat([corner, corner + size], 1).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "n,m",
    [(3, 5), (2, 700), (300, 3), (70, 45), (0, 9), (9, 0)],
    ids=["short-rows", "long-rows", "many-rows", "partial-tiles", "no-rows", "no-columns"],
)
def test_box_pairs(cuda_sim: Any, n: int, m: int, dtype: torch.dtype) -> None:
    # Row kernel: 32 threads for short rows, 256 for long ones; column kernel: several
    # 32-box tiles per grid-stride loop, the last partial; empty sets on either side.
    b1, b2 = _boxes(n, dtype, 1), _boxes(m, dtype, 2)
    grad = rand(n, m, dtype=dtype, seed=3)
    for legacy in (False, True):
        agree("box_iou", [b1, b2, legacy])
        agree("box_iou_backward", [grad, b1, b2, legacy, [True, True]])
    agree("generalized_box_iou", [b1, b2])
    agree("generalized_box_iou_backward", [grad, b1, b2, [True, True]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_box_coding_many_boxes(cuda_sim: Any, dtype: torch.dtype) -> None:
    boxes, proposals = _boxes(1000, dtype, 4), _boxes(1000, dtype, 5)
    agree("box_encode", [boxes, proposals, [10.0, 10.0, 5.0, 5.0]])
    codes = rand(1000, 12, dtype=dtype, seed=6)
    agree("box_decode", [codes, boxes, [1.0, 1.0, 1.0, 1.0], 1.0])
    grad = rand(1000, 12, dtype=dtype)
    agree("box_decode_backward", [grad, codes, boxes, [1.0] * 4, 1.0, [True, True]])
    agree("clip_boxes_to_image", [boxes.reshape(10, 100, 4), [12, 15]])


def _image(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    return torch.rand(shape, generator=g, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("dtype", [*FLOATS, torch.uint8])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_color_per_image_sums_and_channel_groups(
    cuda_sim: Any, channels_last: bool, dtype: torch.dtype
) -> None:
    # adjust_contrast: images of more than one color::k_chunk (4096) pixels, so each
    # image's sum is several blocks' partial sums; normalize: 20 channels, two groups of
    # per-channel values (k_group = 16).
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    image = _image((2, 3, 70, 70), dtype, 1).contiguous(memory_format=fmt)
    agree("adjust_contrast", [image, 1.7])
    agree("adjust_contrast", [image[:, :1].contiguous(memory_format=fmt), 0.4])
    agree("adjust_hue", [image, 0.3])
    if dtype == torch.uint8:
        return
    grad = rand(2, 3, 70, 70, dtype=dtype, seed=2).contiguous(memory_format=fmt)
    agree("color_backward", [grad, image, "contrast", 1.7])
    many = _image((2, 20, 5, 6), dtype, 3).contiguous(memory_format=fmt)
    mean, std = [0.1 * c for c in range(20)], [0.5 + 0.05 * c for c in range(20)]
    agree("normalize", [many, mean, std])
