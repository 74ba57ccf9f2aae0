"""Pooling ops beyond the generated battery: configurations swept against ATen (values and
indices), NaN and tie handling, layouts, and every argument rule."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import opforge
from opforge import reference

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]

# (kernel_size, stride, padding, dilation, ceil_mode)
MAX_CONFIGS = [
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 2), (), (0, 0), (1, 1), False),
    ((2, 3), (1, 2), (1, 0), (2, 1), True),
    ((3, 2), (3, 1), (0, 1), (1, 3), False),
    ((5, 5), (1, 1), (2, 2), (1, 1), False),
    ((1, 1), (2, 2), (0, 0), (1, 1), True),
    ((4, 4), (3, 3), (2, 1), (1, 1), True),
]
SHAPES = [(2, 3, 9, 11), (1, 2, 5, 4), (3, 8, 8)]


def _input(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: str,
    seed: int = 0,
    channels_last: bool = False,
) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)
    return x.contiguous(memory_format=torch.channels_last) if channels_last and x.dim() == 4 else x


def _same(got: Any, expected: Any, **tol: Any) -> None:
    """Values and, for 4-D results, the layout (channels_last kept as ATen keeps it)."""
    torch.testing.assert_close(got, expected, **tol)
    for g, e in zip(
        got if isinstance(got, tuple) else (got,),
        expected if isinstance(expected, tuple) else (expected,),
        strict=True,
    ):
        cl = torch.channels_last
        assert g.is_contiguous(memory_format=cl) == e.is_contiguous(memory_format=cl)


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("device", DEVICES)
def test_max_pool2d_sweep_matches_aten(device: str, channels_last: bool) -> None:
    for shape, (k, s, p, d, ceil) in itertools.product(SHAPES, MAX_CONFIGS):
        x = _input(shape, torch.float32, device, channels_last=channels_last)
        try:
            expected = F.max_pool2d(x, k, s or None, p, d, ceil, return_indices=True)
        except RuntimeError:
            with pytest.raises(RuntimeError, match=r"opforge\.max_pool2d_with_indices: "):
                opforge.max_pool2d_with_indices(x, k, s, p, d, ceil)
            continue
        got = opforge.max_pool2d_with_indices(x, k, s, p, d, ceil)
        _same(got, expected, atol=0, rtol=0, msg=str((shape, k, s, p, d)))
        g = torch.randn_like(got[0])
        _same(
            opforge.max_pool2d_backward(g, x, got[1], k, s, p, d, ceil),
            reference.max_pool2d_backward(g, x, got[1], k, s, p, d, ceil),
        )


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("device", DEVICES)
def test_avg_pool2d_sweep_matches_aten(device: str, channels_last: bool) -> None:
    configs = [(k, s, p, ceil) for k, s, p, _, ceil in MAX_CONFIGS]
    for shape, (k, s, p, ceil), include, div in itertools.product(
        SHAPES, configs, (True, False), (None, 3, -2)
    ):
        x = _input(shape, torch.float64, device, channels_last=channels_last)
        args: tuple[Any, ...] = (k, s or None, p, ceil, include, div)
        expected = F.avg_pool2d(x, *args)
        _same(opforge.avg_pool2d(x, k, s, p, ceil, include, div), expected)
        g = torch.randn_like(expected)
        torch.testing.assert_close(
            opforge.avg_pool2d_backward(g, x, k, s, p, ceil, include, div),
            reference.avg_pool2d_backward(g, x, k, s, p, ceil, include, div),
        )


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_pooling_sweep_matches_aten(device: str, channels_last: bool) -> None:
    for (h, w), (oh, ow) in itertools.product(
        [(7, 7), (5, 9), (3, 2), (1, 1)], [(1, 1), (2, 3), (4, 4), (7, 5)]
    ):
        x = _input((2, 3, h, w), torch.float64, device, channels_last=channels_last)
        _same(opforge.adaptive_avg_pool2d(x, [oh, ow]), F.adaptive_avg_pool2d(x, (oh, ow)))
        g = torch.randn(2, 3, oh, ow, dtype=x.dtype, device=device)
        _same(
            opforge.adaptive_avg_pool2d_backward(g, x),
            reference.adaptive_avg_pool2d_backward(g, x),
        )
        values, indices = opforge.adaptive_max_pool2d_with_indices(x, [oh, ow])
        _same(
            opforge.adaptive_max_pool2d_backward(g, x, indices),
            reference.adaptive_max_pool2d_backward(g, x, indices),
        )
        _same(
            opforge.adaptive_max_pool2d_with_indices(x, [oh, ow]),
            F.adaptive_max_pool2d(x, (oh, ow), return_indices=True),
        )


def _special_input(device: str, dtype: torch.dtype) -> torch.Tensor:
    """Ties, -inf windows and NaN, where the choice of index is torch's (first max, last NaN)."""
    nan, inf = float("nan"), float("inf")
    x = torch.tensor(
        [
            [1.0, 1.0, 2.0, 2.0, -inf, -inf],
            [1.0, nan, 2.0, 0.5, -inf, -inf],
            [nan, 3.0, nan, 0.0, -0.0, 0.0],
            [3.0, 3.0, 7.0, -0.0, 0.0, -0.0],
            [-inf, -inf, 5.0, 5.0, nan, nan],
        ],
        dtype=torch.float64,
    )
    return x.expand(2, 2, 5, 6).to(dtype=dtype, device=device).contiguous()


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_max_pooling_ties_inf_and_nan_match_aten(
    device: str, dtype: torch.dtype, channels_last: bool
) -> None:
    x = _special_input(device, dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    for k, s, p, d, ceil in MAX_CONFIGS[:5]:
        expected = F.max_pool2d(x.float(), k, s or None, p, d, ceil, return_indices=True)
        out, ind = opforge.max_pool2d_with_indices(x, k, s, p, d, ceil)
        torch.testing.assert_close(out, expected[0].to(dtype), equal_nan=True)
        torch.testing.assert_close(ind, expected[1])
    for size in [(1, 1), (2, 2), (3, 4), (6, 7)]:
        expected = F.adaptive_max_pool2d(x.float(), size, return_indices=True)
        out, ind = opforge.adaptive_max_pool2d_with_indices(x, size)
        torch.testing.assert_close(out, expected[0].to(dtype), equal_nan=True)
        torch.testing.assert_close(ind, expected[1])


@pytest.mark.parametrize("device", DEVICES)
def test_layouts_give_the_same_result(device: str) -> None:
    x = _input((2, 4, 9, 10), torch.float32, device)
    channels_last = x.to(memory_format=torch.channels_last)
    strided = _input((2, 4, 18, 10), torch.float32, device)[:, :, ::2]
    for t in (channels_last, strided):
        torch.testing.assert_close(
            opforge.max_pool2d(t, 3, 2, 1), F.max_pool2d(t, 3, 2, 1), atol=0, rtol=0
        )
        torch.testing.assert_close(opforge.avg_pool2d(t, 3, 2, 1), F.avg_pool2d(t, 3, 2, 1))
        torch.testing.assert_close(opforge.adaptive_avg_pool2d(t, 3), F.adaptive_avg_pool2d(t, 3))
        torch.testing.assert_close(
            opforge.spatial_pyramid_pool(t), reference.spatial_pyramid_pool(t), atol=0, rtol=0
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_spatial_pyramid_pool_small_inputs_and_many_levels(device: str, mode: str) -> None:
    # Inputs smaller than a level repeat elements across bins; more than eight
    # levels take several backward launches on CUDA.
    for shape, levels in [
        ((2, 3, 3, 3), [4, 2, 1]),
        ((1, 2, 1, 1), [3, 1]),
        ((2, 2, 5, 3), list(range(1, 11))),
        ((0, 2, 4, 4), [2, 1]),
    ]:
        x = _input(shape, torch.float64, device).requires_grad_()
        out = opforge.spatial_pyramid_pool(x, levels, mode)
        expected = reference.spatial_pyramid_pool(x, levels, mode)
        torch.testing.assert_close(out, expected)
        g = torch.randn_like(out)
        (got,) = torch.autograd.grad(out, x, g)
        (want,) = torch.autograd.grad(expected, x, g)
        torch.testing.assert_close(got, want)


def test_unbatched_and_empty_batch() -> None:
    x = _input((3, 7, 6), torch.float64, "cpu").requires_grad_()
    torch.testing.assert_close(opforge.max_pool2d(x, 3, 2), F.max_pool2d(x, 3, 2))
    torch.testing.assert_close(opforge.avg_pool2d(x, 3, 2), F.avg_pool2d(x, 3, 2))
    torch.testing.assert_close(opforge.adaptive_avg_pool2d(x, 4), F.adaptive_avg_pool2d(x, 4))
    torch.testing.assert_close(opforge.adaptive_max_pool2d(x, 4), F.adaptive_max_pool2d(x, 4))
    for fn in (
        lambda t: opforge.max_pool2d(t, 3, 2),
        lambda t: opforge.avg_pool2d(t, 3, 2, 1),
        lambda t: opforge.adaptive_avg_pool2d(t, [2, 3]),
        lambda t: opforge.adaptive_max_pool2d(t, [4, 2]),
    ):
        assert torch.autograd.gradcheck(fn, (x,))
    empty = torch.randn(0, 2, 5, 5)
    assert opforge.max_pool2d(empty, 2).shape == (0, 2, 2, 2)
    assert opforge.spatial_pyramid_pool(empty).shape == (0, 42)


BAD_WINDOWS = [
    ({"kernel_size": [0, 3]}, r"'kernel_size' must be positive, got \[0, 3\]"),
    ({"kernel_size": [1, 2, 3]}, r"'kernel_size' must be one int or two ints, got \[1, 2, 3\]"),
    ({"kernel_size": 3, "stride": [2, 0]}, r"'stride' must be positive, got \[2, 0\]"),
    ({"kernel_size": 3, "stride": [1, 1, 1]}, r"'stride' must be one int or two ints"),
    ({"kernel_size": 3, "padding": -1}, r"'padding' must be non-negative, got \[-1, -1\]"),
    ({"kernel_size": 3, "padding": 2}, r"'padding' should be at most half of 'kernel_size', got"),
    ({"kernel_size": [4, 2], "padding": [2, 2]}, r"'padding' should be at most half"),
    ({"kernel_size": 9}, r"the window does not fit the input of size \[1, 2, 8, 8\]"),
]


def test_max_pool2d_bad_arguments() -> None:
    x = torch.randn(1, 2, 8, 8)
    for kwargs, message in [
        *BAD_WINDOWS,
        ({"kernel_size": 3, "dilation": [0, 1]}, r"'dilation' must be positive, got \[0, 1\]"),
        ({"kernel_size": 3, "dilation": 4}, r"the window does not fit"),
    ]:
        for fn in (opforge.max_pool2d, opforge.max_pool2d_with_indices):
            with pytest.raises(RuntimeError, match=r"opforge\.max_pool2d_with_indices: " + message):
                fn(x, **kwargs)
            with pytest.raises(RuntimeError, match=r"opforge\.max_pool2d_with_indices: " + message):
                fn(x.to("meta"), **kwargs)


def test_avg_pool2d_bad_arguments() -> None:
    x = torch.randn(1, 2, 8, 8)
    g = torch.randn(1, 2, 4, 4)
    cases = [
        *BAD_WINDOWS,
        ({"kernel_size": 2, "divisor_override": 0}, r"'divisor_override' must not be zero"),
    ]
    for kwargs, message in cases:
        with pytest.raises(RuntimeError, match=r"opforge\.avg_pool2d: " + message):
            opforge.avg_pool2d(x, **kwargs)
        with pytest.raises(RuntimeError, match=r"opforge\.avg_pool2d: " + message):
            opforge.avg_pool2d(x.to("meta"), **kwargs)
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.avg_pool2d_backward: expected 'grad_output' of size \[1, 2, 4, 4\]",
    ):
        opforge.avg_pool2d_backward(torch.randn(1, 2, 3, 4), x, [2, 2], [], [0, 0], False, True)
    with pytest.raises(RuntimeError, match=r"opforge\.avg_pool2d_backward: 'divisor_override'"):
        opforge.avg_pool2d_backward(g, x, [2, 2], [], [0, 0], False, True, 0)


def test_wrong_rank_and_empty_dims() -> None:
    rank = r"expected 'self' of shape \(C, H, W\) or \(N, C, H, W\) with non-zero C, H and W"
    for bad in (torch.randn(8, 8), torch.randn(1, 1, 1, 8, 8), torch.randn(1, 0, 8, 8)):
        for name, call in [
            ("max_pool2d_with_indices", lambda t: opforge.max_pool2d(t, 2)),
            ("avg_pool2d", lambda t: opforge.avg_pool2d(t, 2)),
            ("adaptive_avg_pool2d", lambda t: opforge.adaptive_avg_pool2d(t, 2)),
            ("adaptive_max_pool2d_with_indices", lambda t: opforge.adaptive_max_pool2d(t, 2)),
        ]:
            with pytest.raises(RuntimeError, match=rf"opforge\.{name}: {rank}, got"):
                call(bad)
    for bad in (torch.randn(2, 8, 8), torch.randn(1, 2, 0, 8)):
        with pytest.raises(
            RuntimeError,
            match=r"opforge\.spatial_pyramid_pool: expected 'self' of shape \(N, C, H, W\)",
        ):
            opforge.spatial_pyramid_pool(bad)


def test_adaptive_bad_output_size() -> None:
    x = torch.randn(1, 2, 8, 8)
    for size in ([0, 2], [3, -1], 0):
        for name, call in [
            ("adaptive_avg_pool2d", opforge.adaptive_avg_pool2d),
            ("adaptive_max_pool2d_with_indices", opforge.adaptive_max_pool2d),
        ]:
            with pytest.raises(
                RuntimeError, match=rf"opforge\.{name}: 'output_size' must be positive"
            ):
                call(x, size)
            with pytest.raises(
                RuntimeError, match=rf"opforge\.{name}: 'output_size' must be positive"
            ):
                call(x.to("meta"), size)
    with pytest.raises(
        RuntimeError, match=r"opforge\.adaptive_avg_pool2d: 'output_size' must be two ints"
    ):
        opforge.adaptive_avg_pool2d(x, [1, 2, 3])
    with pytest.raises(  # one element is not a pair (as ATen's; a Python int is), and the
        # composite's error names it too (Note [Composite errors])
        RuntimeError,
        match=r"opforge\.adaptive_max_pool2d_with_indices: 'output_size' must be two ints, "
        r"got \[3\] \(in opforge\.adaptive_max_pool2d\)",
    ):
        opforge.adaptive_max_pool2d(x, [3])
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.adaptive_avg_pool2d_backward: expected 'grad_output' with the leading dims",
    ):
        opforge.adaptive_avg_pool2d_backward(torch.randn(1, 3, 2, 2), x)


def test_spatial_pyramid_pool_bad_arguments() -> None:
    x = torch.randn(1, 2, 8, 8)
    op = r"opforge\.spatial_pyramid_pool: "
    with pytest.raises(RuntimeError, match=op + r"'levels' must not be empty"):
        opforge.spatial_pyramid_pool(x, [])
    for levels in ([4, 0, 1], [-2]):
        with pytest.raises(RuntimeError, match=op + r"'levels' must be positive"):
            opforge.spatial_pyramid_pool(x, levels)
        with pytest.raises(RuntimeError, match=op + r"'levels' must be positive"):
            opforge.spatial_pyramid_pool(x.to("meta"), levels)
    with pytest.raises(RuntimeError, match=op + r"'mode' must be 'max' or 'avg', got 'sum'"):
        opforge.spatial_pyramid_pool(x, mode="sum")
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.spatial_pyramid_pool_backward: expected 'grad_output' of size \[1, 42\]",
    ):
        opforge.spatial_pyramid_pool_backward(torch.randn(1, 41), x, [4, 2, 1], "max")
