"""nms and batched_nms against torchvision: random valid boxes, degenerate, identical and
nested boxes, tied and NaN scores, empty inputs; their data-dependent length under
torch.compile and torch.export (Note [Data-dependent lengths]); argument errors."""

from __future__ import annotations

import pytest
import torch
import torchvision

import opforge
from opforge import reference

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def random_boxes(n: int, seed: int = 0, size: float = 100.0) -> torch.Tensor:
    """Valid boxes (x1 <= x2, y1 <= y2) of every overlap, in float64."""
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g, dtype=torch.float64) * size
    wh = torch.rand(n, 2, generator=g, dtype=torch.float64) * size / 3
    return torch.cat([xy, xy + wh], dim=1)


def random_scores(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).double() / max(n, 1)


@pytest.mark.parametrize("n", [0, 1, 7, 64, 65, 300])
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_nms_matches_torchvision(n: int, threshold: float) -> None:
    boxes, scores = random_boxes(n, seed=n), random_scores(n, seed=n + 1)
    for dtype in (torch.float32, torch.float64):
        b, s = boxes.to(dtype), scores.to(dtype)
        torch.testing.assert_close(
            opforge.nms(b, s, threshold), torchvision.ops.nms(b, s, threshold)
        )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nms_16_bit_as_widened(dtype: torch.dtype) -> None:
    boxes, scores = random_boxes(200, seed=3).to(dtype), random_scores(200).to(dtype)
    got = opforge.nms(boxes, scores, 0.4)
    torch.testing.assert_close(got, reference.nms(boxes, scores, 0.4))
    assert got.dtype == torch.int64


def test_nms_special_boxes() -> None:
    boxes = torch.tensor(
        [
            [0.0, 0.0, 10.0, 10.0],
            [0.0, 0.0, 10.0, 10.0],  # identical: IoU 1
            [2.0, 2.0, 8.0, 8.0],  # nested: IoU 0.36
            [5.0, 5.0, 5.0, 5.0],  # a point: IoU 0 with everything, 0/0 with itself
            [5.0, 5.0, 5.0, 5.0],
            [20.0, 20.0, 30.0, 30.0],  # disjoint
            [10.0, 0.0, 20.0, 10.0],  # touching: IoU 0
        ]
    )
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    for threshold in (0.0, 0.3, 0.36, 0.5, 0.99):
        torch.testing.assert_close(
            opforge.nms(boxes, scores, threshold), torchvision.ops.nms(boxes, scores, threshold)
        )
    assert opforge.nms(boxes, scores, 0.5).tolist() == [0, 2, 3, 4, 5, 6]


def test_nms_ties_keep_index_order_and_nan_comes_first() -> None:
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60], [0, 0, 10, 10]])
    # Equal scores: the lower index is taken first and suppresses the later one.
    assert opforge.nms(boxes, torch.tensor([0.5, 0.5, 0.5, 0.5]), 0.5).tolist() == [0, 2]
    # A NaN score sorts first (as torch.sort descending): box 1 suppresses boxes 0 and 3 (IoU 0.68).
    scores = torch.tensor([0.5, float("nan"), 0.9, 0.5])
    assert opforge.nms(boxes, scores, 0.5).tolist() == [1, 2]
    assert opforge.nms(boxes, scores, 0.7).tolist() == [1, 2, 0]
    torch.testing.assert_close(opforge.nms(boxes, scores, 0.5), reference.nms(boxes, scores, 0.5))


def test_nms_non_contiguous_inputs() -> None:
    boxes = random_boxes(50, seed=5).t().contiguous().t()
    scores = random_scores(100)[::2]
    assert not boxes.is_contiguous() and not scores.is_contiguous()
    torch.testing.assert_close(
        opforge.nms(boxes, scores, 0.4),
        torchvision.ops.nms(boxes.contiguous(), scores.contiguous(), 0.4),
    )


@pytest.mark.parametrize("idxs_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("n,categories", [(0, 1), (1, 1), (80, 1), (200, 5), (300, 300)])
def test_batched_nms_matches_torchvision(n: int, categories: int, idxs_dtype: torch.dtype) -> None:
    boxes, scores = random_boxes(n, seed=n), random_scores(n, seed=n + 7)
    idxs = torch.randint(0, categories, (n,), generator=torch.Generator().manual_seed(n))
    got = opforge.batched_nms(boxes, scores, idxs.to(idxs_dtype), 0.3)
    torch.testing.assert_close(got, torchvision.ops.batched_nms(boxes, scores, idxs, 0.3))
    torch.testing.assert_close(got, reference.batched_nms(boxes, scores, idxs, 0.3))


def test_batched_nms_is_exact_where_offsets_round() -> None:
    # torchvision's coordinate trick adds category * (max + 1) to the boxes, which rounds
    # away the boxes' differences in float16; per category, the boxes below do not overlap.
    boxes = torch.tensor([[0.0, 0, 1, 1], [1.5, 0, 2.5, 1], [0.0, 0, 1, 1]], dtype=torch.float16)
    scores = torch.tensor([0.9, 0.8, 0.7], dtype=torch.float16)
    idxs = torch.tensor([3000, 3000, 2999])
    assert opforge.batched_nms(boxes, scores, idxs, 0.5).tolist() == [0, 1, 2]


def test_nms_has_a_data_dependent_length_under_compile() -> None:
    def keep_boxes(boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return boxes[opforge.nms(boxes, scores, 0.5)] * 2

    compiled = torch.compile(keep_boxes, fullgraph=True, dynamic=True)
    for n in (30, 47):
        boxes, scores = random_boxes(n, seed=n).float(), random_scores(n).float()
        torch.testing.assert_close(compiled(boxes, scores), keep_boxes(boxes, scores))


def test_batched_nms_exports_with_an_unbacked_length() -> None:
    class Detect(torch.nn.Module):
        def forward(
            self, boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor
        ) -> torch.Tensor:
            keep = torch.ops.opforge.batched_nms(boxes, scores, idxs, 0.5)
            return boxes[keep]

    n = torch.export.Dim("n", min=2)
    boxes, scores = random_boxes(40).float(), random_scores(40).float()
    idxs = torch.arange(40) % 3
    program = torch.export.export(
        Detect(), (boxes, scores, idxs), dynamic_shapes=({0: n}, {0: n}, {0: n})
    )
    length = next(
        node.meta["val"].shape[0]
        for node in program.graph.nodes
        if node.target is torch.ops.opforge.batched_nms.default
    )
    assert isinstance(length, torch.SymInt) and not length.node.has_hint()
    for m in (40, 9):
        b, s, i = random_boxes(m, seed=m).float(), random_scores(m).float(), torch.arange(m) % 3
        torch.testing.assert_close(program.module()(b, s, i), Detect()(b, s, i))


def test_nms_fake_kernel_checks_arguments() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv()):
        out = torch.ops.opforge.nms(torch.empty(10, 4), torch.empty(10), 0.5)
        assert out.dtype == torch.int64 and out.dim() == 1
        with pytest.raises(RuntimeError, match=r"opforge.nms: expected 'boxes' to have 4 columns"):
            torch.ops.opforge.nms(torch.empty(10, 5), torch.empty(10), 0.5)


@pytest.mark.parametrize(
    "args,match",
    [
        ((torch.rand(5, 3), torch.rand(5)), r"opforge.nms: expected 'boxes' to have 4 columns"),
        ((torch.rand(5), torch.rand(5)), r"opforge.nms: expected 'boxes' to be a 2-D tensor"),
        ((torch.rand(5, 4), torch.rand(5, 1)), r"opforge.nms: expected 'scores' to be a 1-D"),
        ((torch.rand(5, 4), torch.rand(4)), r"opforge.nms: expected 'scores' to have one score"),
        ((torch.rand(5, 4), torch.rand(5).double()), r"opforge.nms: .*'scores'"),
        ((torch.randint(0, 9, (5, 4)), torch.rand(5)), r"opforge.nms: .*'boxes'"),
    ],
)
def test_nms_bad_arguments(args: tuple[torch.Tensor, torch.Tensor], match: str) -> None:
    with pytest.raises((RuntimeError, TypeError), match=match):
        opforge.nms(*args, 0.5)


def test_batched_nms_bad_idxs() -> None:
    boxes, scores = torch.rand(5, 4), torch.rand(5)
    with pytest.raises(RuntimeError, match=r"opforge.batched_nms: expected 'idxs' to be a 1-D"):
        opforge.batched_nms(boxes, scores, torch.zeros(4, dtype=torch.long), 0.5)
    with pytest.raises((RuntimeError, TypeError), match=r"opforge.batched_nms: .*'idxs'"):
        opforge.batched_nms(boxes, scores, torch.zeros(5), 0.5)
