"""roi_align and roi_pool (schemas/roi.yaml) against torchvision.ops, beyond the battery:
sampling grids, aligned boxes, spatial scales, boxes outside the image or degenerate, no
boxes, channel counts that split the CPU backward into several tasks, gradients,
channels_last inputs, argument errors and torch.compile."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torchvision.ops as tv

import opforge
from opforge import reference


def _case(
    shape: tuple[int, int, int, int], k: int, scale: float = 1.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """An input and k boxes in input coordinates / scale: over every image, partly
    outside (up to a third of the image), the last two degenerate (a point, a line)."""
    gen = torch.Generator().manual_seed(seed)
    n, _, h, w = shape
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    b = torch.randint(0, n, (k,), generator=gen).double()
    xs = (torch.rand(k, 2, generator=gen, dtype=torch.float64) * 1.66 - 0.33) * w / scale
    ys = (torch.rand(k, 2, generator=gen, dtype=torch.float64) * 1.66 - 0.33) * h / scale
    boxes = torch.stack(
        [b, xs.min(1).values, ys.min(1).values, xs.max(1).values, ys.max(1).values], 1
    )
    if k >= 2:
        boxes[-1, 3:] = boxes[-1, 1:3]
        boxes[-2, 3] = boxes[-2, 1]
    return x, boxes


SHAPES = [((2, 3, 12, 10), 7), ((3, 40, 9, 13), 11), ((1, 1, 5, 5), 3)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [-1, 0, 1, 2])
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
@pytest.mark.parametrize("shape,k", SHAPES)
def test_roi_align_matches_torchvision(
    shape: Any, k: int, scale: float, ratio: int, aligned: bool, dtype: torch.dtype
) -> None:
    x, boxes = _case(shape, k, scale, seed=k)
    x, boxes = x.to(dtype), boxes.to(dtype)
    for size in ([3, 2], 4):
        want = tv.roi_align(x, boxes, size, scale, ratio, aligned)
        got = opforge.roi_align(x, boxes, size, scale, ratio, aligned)
        torch.testing.assert_close(got, want)
        assert got.is_contiguous()


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("shape,k", SHAPES)
def test_roi_align_backward_matches_torchvision(shape: Any, k: int, aligned: bool) -> None:
    x, boxes = _case(shape, k, 0.5, seed=3)
    grads = []
    for fn in (tv.roi_align, opforge.roi_align):
        xi = x.clone().requires_grad_()
        out = fn(xi, boxes, [3, 3], 0.5, -1, aligned)
        out.backward(torch.linspace(-1, 2, out.numel(), dtype=out.dtype).view_as(out))
        grads.append(xi.grad)
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [-1, 2])
@pytest.mark.parametrize("shape,k", SHAPES)
def test_roi_align_max_matches_reference(shape: Any, k: int, ratio: int, aligned: bool) -> None:
    x, boxes = _case(shape, k, 0.5, seed=5)
    got = opforge.roi_align(x, boxes, [2, 3], 0.5, ratio, aligned, "max")
    torch.testing.assert_close(
        got, reference.roi_align(x, boxes, [2, 3], 0.5, ratio, aligned, "max")
    )


def test_roi_align_max_by_hand() -> None:
    # x(h, w) = w + 10 h is bilinear-exact, so a bin's maximum is its last sample's value.
    x = (torch.arange(6.0) + 10 * torch.arange(5.0)[:, None]).view(1, 1, 5, 6).double()
    boxes = torch.tensor([[0.0, 1.0, 0.0, 5.0, 4.0]], dtype=torch.float64)
    got = opforge.roi_align(x, boxes, [2, 2], 1.0, 2, False, "max")
    # Bins of 2x2 pixels sampled at offsets 0.5 and 1.5 (x from 1): the last at (y, x) + 1.5.
    want = torch.tensor([[2.5 + 15, 4.5 + 15], [2.5 + 35, 4.5 + 35]], dtype=torch.float64)
    torch.testing.assert_close(got.view(2, 2), want)
    avg = opforge.roi_align(x, boxes, [2, 2], 1.0, 2, False, "avg")
    torch.testing.assert_close(avg.view(2, 2), want - 5.5)  # the mean is half a pixel each way less


def test_roi_align_max_gradient_goes_to_the_first_of_equal_samples() -> None:
    x = torch.ones(1, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    boxes = torch.tensor([[0.0, 0.0, 0.0, 4.0, 4.0]], dtype=torch.float64)
    opforge.roi_align(x, boxes, [1, 1], 1.0, 2, False, "max").sum().backward()
    # Every sample is 1; the first, (y, x) = (1, 1), sits on a pixel: all its weight there.
    want = torch.zeros(4, 4, dtype=torch.float64)
    want[1, 1] = 1
    torch.testing.assert_close(x.grad.view(4, 4), want)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_gradcheck(mode: str, aligned: bool) -> None:
    x, boxes = _case((2, 3, 6, 7), 5, 0.5, seed=11)
    x.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: opforge.roi_align(t, boxes, [2, 3], 0.5, 2, aligned, mode), (x,)
    )


def test_roi_pool_gradcheck() -> None:
    x, boxes = _case((2, 3, 6, 7), 5, 0.5, seed=12)
    x.requires_grad_()
    assert torch.autograd.gradcheck(lambda t: opforge.roi_pool(t, boxes, [2, 3], 0.5)[0], (x,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
@pytest.mark.parametrize("shape,k", SHAPES)
def test_roi_pool_matches_torchvision(shape: Any, k: int, scale: float, dtype: torch.dtype) -> None:
    x, boxes = _case(shape, k, scale, seed=k + 1)
    x, boxes = x.to(dtype), boxes.to(dtype)
    for size in ([3, 2], 4):
        values, argmax = opforge.roi_pool(x, boxes, size, scale)
        torch.testing.assert_close(values, tv.roi_pool(x, boxes, size, scale))
        torch.testing.assert_close(argmax, reference.roi_pool(x, boxes, size, scale)[1])
    xs = [x.clone().requires_grad_() for _ in range(2)]
    tv.roi_pool(xs[0], boxes, [3, 3], scale).sum().backward()
    opforge.roi_pool(xs[1], boxes, [3, 3], scale)[0].sum().backward()
    torch.testing.assert_close(xs[1].grad, xs[0].grad)


def test_roi_pool_empty_bins() -> None:
    # A box right of the image: every bin is clipped away, 0 with argmax -1.
    x = torch.randn(1, 2, 4, 4)
    boxes = torch.tensor([[0.0, 6.0, 0.0, 9.0, 3.0]])
    values, argmax = opforge.roi_pool(x, boxes, 2)
    assert (values == 0).all() and (argmax == -1).all()
    torch.testing.assert_close(values, tv.roi_pool(x, boxes, 2))


@pytest.mark.parametrize("op", ["roi_align", "roi_pool"])
def test_no_boxes_and_no_channels(op: str) -> None:
    fn = getattr(opforge, op)
    for shape, k in (((2, 3, 5, 5), 0), ((2, 0, 5, 5), 3)):
        x, boxes = _case(shape, max(k, 1), seed=1)
        boxes = boxes[:k]
        x.requires_grad_()
        out = fn(x, boxes, [2, 2])
        values = out[0] if isinstance(out, tuple) else out
        assert values.shape == (k, shape[1], 2, 2)
        values.sum().backward()
        assert x.grad is not None and (x.grad == 0).all()


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_channels_last_input(mode: str) -> None:
    x, boxes = _case((2, 24, 9, 8), 6, seed=2)
    cl = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    xc = x.clone().requires_grad_()
    got, want = (opforge.roi_align(t, boxes, 3, 1.0, 2, True, mode) for t in (cl, xc))
    torch.testing.assert_close(got, want)
    assert got.is_contiguous()
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(cl.grad, xc.grad)
    torch.testing.assert_close(opforge.roi_pool(cl, boxes, 3), opforge.roi_pool(xc, boxes, 3))


def test_cpu_backward_is_deterministic() -> None:
    x, boxes = _case((2, 40, 10, 10), 64, seed=4)
    grad = torch.randn(64, 40, 3, 3)
    x, boxes = x.float(), boxes.float()
    runs = [
        opforge.roi_align_backward(grad, boxes, list(x.shape), [3, 3], 1.0, -1, False, "avg")
        for _ in range(3)
    ]
    assert all(torch.equal(r, runs[0]) for r in runs)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_accumulates_in_float(dtype: torch.dtype) -> None:
    x, boxes = _case((2, 20, 12, 12), 9, 0.5, seed=6)
    x, boxes = x.to(dtype), boxes.to(dtype)
    want = tv.roi_align(x.float(), boxes.float(), 3, 0.5, -1, True).to(dtype)
    torch.testing.assert_close(opforge.roi_align(x, boxes, 3, 0.5, -1, True), want)


def test_boxes_get_no_gradient() -> None:
    x, boxes = _case((1, 2, 5, 5), 3, seed=7)
    boxes.requires_grad_()
    x.requires_grad_()
    # As torchvision's: boxes computed from parameters (a detector's proposals) are
    # constants to roi_align; only the input gets a gradient.
    opforge.roi_align(x, boxes, 2).sum().backward()
    assert boxes.grad is None and x.grad is not None
    torch.testing.assert_close(x.grad, _grad_of(lambda t: tv.roi_align(t, boxes.detach(), 2), x))


def test_bad_arguments_name_op_and_argument() -> None:
    x, boxes = _case((2, 3, 5, 5), 3, seed=8)
    with pytest.raises(
        RuntimeError, match=r"opforge\.roi_align: expected 'boxes' of shape \[K, 5\]"
    ):
        opforge.roi_align(x, boxes[:, :4], 2)
    with pytest.raises(RuntimeError, match=r"opforge\.roi_pool: expected 'input' to be 4-D"):
        opforge.roi_pool(x[0], boxes, 2)
    with pytest.raises(
        RuntimeError, match=r"opforge\.roi_align: 'output_size' must be two positive"
    ):
        opforge.roi_align(x, boxes, [0, 2])
    with pytest.raises(
        ValueError,
        match=r"opforge\.roi_align: pool_mode must be one of 'avg', 'max', got 'mx'; did you mean 'max'",
    ):
        opforge.roi_align(x, boxes, 2, pool_mode="mx")
    with pytest.raises(TypeError, match=r"opforge\.roi_align: .*'boxes'"):
        opforge.roi_align(x, boxes.float(), 2)
    bad = boxes.clone()
    bad[1, 0] = 2
    for fn in (opforge.roi_align, opforge.roi_pool):
        with pytest.raises(IndexError, match=r"'boxes' out of range: 2 is not in \[0, 2\)"):
            fn(x, bad, 2)
    with pytest.raises(IndexError, match=r"opforge\.roi_align_backward: 'boxes' out of range: -1"):
        bad[1, 0] = -1.5
        opforge.roi_align_backward(
            torch.randn(3, 3, 2, 2, dtype=x.dtype), bad, [2, 3, 5, 5], 2, 1.0, -1, False, "avg"
        )
    with pytest.raises(
        RuntimeError, match=r"opforge\.roi_align_backward: pool_mode 'max' needs 'input'"
    ):
        opforge.roi_align_backward(
            torch.randn(3, 3, 2, 2, dtype=x.dtype), boxes, [2, 3, 5, 5], 2, 1.0, -1, False, "max"
        )


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_compile_fullgraph(mode: str) -> None:
    torch._dynamo.reset()
    x, boxes = _case((2, 3, 8, 8), 5, seed=9)

    def f(t: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (
            opforge.roi_align(t, b, [2, 2], 0.5, 2, True, mode) + opforge.roi_pool(t, b, 2, 0.5)[0]
        )

    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x, boxes), f(x, boxes))


def _grad_of(fn: Any, x: torch.Tensor) -> torch.Tensor:
    leaf = x.detach().requires_grad_()
    fn(leaf).sum().backward()
    assert leaf.grad is not None
    return leaf.grad
