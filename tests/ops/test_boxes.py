"""The box ops (schemas/boxes.yaml) against torchvision on larger random sets than the
battery's, with the special configurations mixed in, their gradients against torchvision's
autograd, legacy_plus_one against a loop over pairs, the argument checks and torch.compile."""

from __future__ import annotations

import math

import pytest
import torch
import torchvision
from torchvision.models.detection._utils import BoxCoder

import opforge

FLOATS = [torch.float32, torch.float64]


def random_boxes(n: int, seed: int, degenerate: float = 0.0) -> torch.Tensor:
    """Valid float64 boxes, a fraction `degenerate` of them with zero width or height."""
    g = torch.Generator().manual_seed(seed)
    corner = torch.rand(n, 2, generator=g, dtype=torch.float64) * 50
    size = torch.rand(n, 2, generator=g, dtype=torch.float64) * 30
    zero = torch.rand(n, 2, generator=g, dtype=torch.float64) < degenerate
    return torch.cat([corner, corner + size.masked_fill(zero, 0.0)], 1)


def special_boxes() -> tuple[torch.Tensor, torch.Tensor]:
    """Identical, nested, disjoint, touching, partly overlapping and zero-area boxes."""
    b1 = torch.tensor(
        [[0, 0, 4, 4], [1, 1, 3, 5], [2, 2, 2, 6], [10, 10, 20, 30]], dtype=torch.float64
    )
    b2 = torch.tensor(
        [[0, 0, 4, 4], [1, 1, 2, 2], [4, 0, 6, 4], [5, 5, 7, 8], [2, -1, 5, 3], [1, 1, 1, 1]],
        dtype=torch.float64,
    )
    return b1, b2


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou"])
def test_pairwise_matches_torchvision(name: str, dtype: torch.dtype) -> None:
    ours, theirs = getattr(opforge, name), getattr(torchvision.ops, name)
    s1, s2 = special_boxes()
    b1 = torch.cat([random_boxes(60, 0, degenerate=0.1), s1]).to(dtype)
    b2 = torch.cat([random_boxes(130, 1, degenerate=0.1), s2, s1]).to(dtype)
    # (pairs of zero-area boxes are 0 / 0 = NaN on both sides)
    torch.testing.assert_close(ours(b1, b2), theirs(b1, b2), equal_nan=True)
    torch.testing.assert_close(ours(b2, b1), theirs(b2, b1), equal_nan=True)
    assert ours(b1, b2).isnan().any() and not ours(b1, b2).isnan().all()
    for a, b in ((b1[:0], b2), (b1, b2[:0]), (b1[:0], b2[:0])):  # empty sets
        assert ours(a, b).shape == (a.shape[0], b.shape[0])


def test_iou_values_of_special_pairs() -> None:
    b1, b2 = special_boxes()
    iou = opforge.box_iou(b1, b2)
    assert iou[0, 0] == 1.0  # identical
    assert iou[0, 1] == 1 / 16  # nested: the inner box's area over the outer's
    assert iou[0, 2] == 0.0 and iou[0, 3] == 0.0  # touching, disjoint
    assert iou[0, 5] == 0.0  # a point inside: no area
    # Two zero-area boxes: 0 / 0 = NaN, as torchvision gives.
    point = torch.tensor([[1.0, 1.0, 1.0, 1.0]])
    assert opforge.box_iou(point, point).isnan().all()
    assert torchvision.ops.box_iou(point, point).isnan().all()
    assert opforge.generalized_box_iou(point, point).isnan().all()
    assert torchvision.ops.generalized_box_iou(point, point).isnan().all()


def _legacy_iou_loop(b1: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """Detectron's bbox_overlaps, pair by pair in float64: inclusive pixel coordinates."""
    out = torch.zeros(len(b1), len(b2), dtype=torch.float64)
    for i, (ax1, ay1, ax2, ay2) in enumerate(b1.tolist()):
        for j, (bx1, by1, bx2, by2) in enumerate(b2.tolist()):
            iw = min(ax2, bx2) - max(ax1, bx1) + 1
            ih = min(ay2, by2) - max(ay1, by1) + 1
            if iw > 0 and ih > 0:
                union = (
                    (ax2 - ax1 + 1) * (ay2 - ay1 + 1) + (bx2 - bx1 + 1) * (by2 - by1 + 1) - iw * ih
                )
                out[i, j] = iw * ih / union
    return out


def test_legacy_plus_one_matches_a_loop() -> None:
    s1, s2 = special_boxes()
    b1 = torch.cat([random_boxes(15, 2).round(), s1])
    b2 = torch.cat([random_boxes(20, 3).round(), s2])
    torch.testing.assert_close(
        opforge.box_iou(b1, b2, legacy_plus_one=True), _legacy_iou_loop(b1, b2)
    )
    # Zero-area boxes are one pixel wide under the +1 convention: no NaN.
    point = torch.tensor([[1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    assert opforge.box_iou(point, point, legacy_plus_one=True).item() == 1.0


def _grads(fn, *inputs: torch.Tensor, seed: int = 0) -> tuple[torch.Tensor, ...]:  # type: ignore[no-untyped-def]
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    return torch.autograd.grad(out, leaves, g)


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou"])
def test_pairwise_gradients_match_torchvision(name: str) -> None:
    s1, s2 = special_boxes()
    # Ties (identical, nested boxes) and touching ones: torch's rules at the kinks.
    b1 = torch.cat([random_boxes(40, 4), s1[:2]])
    b2 = torch.cat([random_boxes(70, 5), s2[:5], s1[:2]])
    ours = _grads(getattr(opforge, name), b1, b2)
    theirs = _grads(getattr(torchvision.ops, name), b1, b2)
    torch.testing.assert_close(ours, theirs)


def test_pairwise_backward_is_deterministic() -> None:
    b1, b2 = random_boxes(50, 6), random_boxes(3000, 7)
    first = _grads(opforge.box_iou, b1.float(), b2.float())
    again = _grads(opforge.box_iou, b1.float(), b2.float())
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))


def test_double_backward_is_a_clear_error() -> None:
    b1 = random_boxes(4, 8).requires_grad_()
    b2 = random_boxes(5, 9)
    (g,) = torch.autograd.grad(opforge.box_iou(b1, b2).sum(), b1, create_graph=True)
    with pytest.raises(RuntimeError, match="opforge.box_iou_backward is not differentiable"):
        g.sum().backward()


WEIGHTS = [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)]


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_box_coding_matches_box_coder(weights: tuple[float, ...], dtype: torch.dtype) -> None:
    coder = BoxCoder(weights)
    gt = (random_boxes(200, 10) + torch.tensor([0, 0, 0.5, 0.5])).to(dtype)
    proposals = (random_boxes(200, 11) + torch.tensor([0, 0, 0.5, 0.5])).to(dtype)
    codes = opforge.box_encode(gt, proposals, weights)
    torch.testing.assert_close(codes, coder.encode_single(gt, proposals))
    torch.testing.assert_close(opforge.box_decode(codes, proposals, weights), gt)  # a round trip
    # K = 3 boxes per row, codes beyond the clip.
    rel = torch.randn(200, 12, generator=torch.Generator().manual_seed(12), dtype=dtype) * 4
    torch.testing.assert_close(
        opforge.box_decode(rel, proposals, weights), coder.decode_single(rel, proposals)
    )
    empty = gt[:0]
    assert opforge.box_encode(empty, empty).shape == (0, 4)
    assert opforge.box_decode(rel[:0], empty).shape == (0, 12)


@pytest.mark.parametrize("weights", WEIGHTS)
def test_box_coding_gradients_match_box_coder(weights: tuple[float, ...]) -> None:
    coder = BoxCoder(weights, bbox_xform_clip=1.0)
    gt = random_boxes(30, 13) + torch.tensor([0, 0, 0.5, 0.5])
    proposals = random_boxes(30, 14) + torch.tensor([0, 0, 0.5, 0.5])
    torch.testing.assert_close(
        _grads(lambda a, b: opforge.box_encode(a, b, weights), gt, proposals),
        _grads(coder.encode_single, gt, proposals),
    )
    rel = torch.randn(30, 8, generator=torch.Generator().manual_seed(15), dtype=torch.float64) * 3
    torch.testing.assert_close(
        _grads(lambda c, b: opforge.box_decode(c, b, weights, 1.0), rel, proposals),
        _grads(coder.decode_single, rel, proposals),
    )


def test_clip_boxes_matches_torchvision_with_gradient() -> None:
    boxes = (
        torch.randn(3, 50, 4, generator=torch.Generator().manual_seed(16), dtype=torch.float64) * 20
    )
    boxes[0, 0, 0] = 0.0  # on a bound: no gradient, as torch.clamp
    boxes[0, 0, 1] = float("nan")
    size = (12, 30)
    torch.testing.assert_close(
        opforge.clip_boxes_to_image(boxes, size),
        torchvision.ops.clip_boxes_to_image(boxes, size),
        equal_nan=True,
    )
    clean = boxes.nan_to_num()
    torch.testing.assert_close(
        _grads(lambda b: opforge.clip_boxes_to_image(b, size), clean),
        _grads(lambda b: torchvision.ops.clip_boxes_to_image(b, size), clean),
    )


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda: opforge.box_iou(torch.rand(3, 5), torch.rand(2, 4)),
            r"box_iou: expected 'boxes1' to be boxes \[N, 4\]",
        ),
        (
            lambda: opforge.box_iou(torch.rand(3, 4), torch.rand(4)),
            r"box_iou: expected 'boxes2' to be boxes \[N, 4\]",
        ),
        (
            lambda: opforge.generalized_box_iou(
                torch.rand(3, 4), torch.rand(2, 4, dtype=torch.float64)
            ),
            r"generalized_box_iou: .*'boxes2'",
        ),
        (
            lambda: opforge.box_encode(torch.rand(3, 4), torch.rand(3, 4), [1.0, 1.0, 1.0]),
            r"box_encode: expected 'weights' to have 4 entries",
        ),
        (
            lambda: opforge.box_encode(torch.rand(3, 4), torch.rand(2, 4)),
            r"box_encode: .*'proposals'",
        ),
        (
            lambda: opforge.box_decode(torch.rand(3, 6), torch.rand(3, 4)),
            r"box_decode: expected 'rel_codes' of shape \[N, 4K\]",
        ),
        (
            lambda: opforge.box_decode(torch.rand(3, 4), torch.rand(2, 4)),
            r"box_decode: .*as many rows",
        ),
        (
            lambda: opforge.clip_boxes_to_image(torch.rand(3, 5), [2, 2]),
            r"clip_boxes_to_image: .*'boxes'",
        ),
        (
            lambda: opforge.box_iou_backward(
                torch.rand(3, 3), torch.rand(3, 4), torch.rand(2, 4), False, [True, True]
            ),
            r"box_iou_backward: expected 'grad_output' of shape \[3, 2\]",
        ),
    ],
)
def test_bad_arguments_name_op_and_argument(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((RuntimeError, TypeError), match=message):
        call()


def test_bad_arguments_fail_on_meta_too() -> None:
    with pytest.raises(RuntimeError, match="'boxes1'"):
        opforge.box_iou(torch.rand(3, 5, device="meta"), torch.rand(2, 4, device="meta"))


def test_compiled_detection_step_matches_eager() -> None:
    """A GIoU loss and the decode of an RPN head's codes, compiled as one graph."""
    torch._dynamo.reset()

    def step(codes: torch.Tensor, anchors: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
        boxes = opforge.clip_boxes_to_image(opforge.box_decode(codes, anchors), [60, 80])
        giou = opforge.generalized_box_iou(boxes, gt)
        return (1 - giou).sum() + opforge.box_iou(boxes, gt, legacy_plus_one=True).sum()

    codes = torch.randn(20, 4, generator=torch.Generator().manual_seed(17)) * 0.2
    anchors, gt = random_boxes(20, 18).float() + 1, random_boxes(7, 19).float() + 1
    # aot_eager: one graph through the fake kernels and autograd, without Inductor's C++
    # compile of the surrounding arithmetic (17 s on 2 cores; Inductor runs in test_ops.py).
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    leaf = codes.clone().requires_grad_()
    eager_leaf = codes.clone().requires_grad_()
    got, expected = compiled(leaf, anchors, gt), step(eager_leaf, anchors, gt)
    torch.testing.assert_close(got, expected)
    got.backward()
    expected.backward()
    torch.testing.assert_close(leaf.grad, eager_leaf.grad)
    assert math.isfinite(got.item())
