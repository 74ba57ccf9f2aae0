"""The tiny two-stage detector of opforge.detection: end to end against the same computation in
torch.nn.functional + torchvision.ops, and through torch.export with nms's unbacked length."""

from __future__ import annotations

import torch

from opforge.detection import TinyTwoStageDetector, reference_forward


def synthetic_image(seed: int = 0, size: tuple[int, int] = (64, 96)) -> torch.Tensor:
    """Noise with a few bright rectangles, float64."""
    g = torch.Generator().manual_seed(seed)
    image = torch.rand(1, 3, *size, generator=g, dtype=torch.float64) * 0.1
    for _ in range(4):
        y, x = (int(torch.randint(0, s - 16, (1,), generator=g)) for s in size)
        image[..., y : y + 16, x : x + 24] += torch.rand(3, 1, 1, generator=g, dtype=torch.float64)
    return image


def make_model() -> TinyTwoStageDetector:
    torch.manual_seed(0)
    return TinyTwoStageDetector().double().eval()


def test_detector_matches_torchvision_pipeline() -> None:
    model = make_model()
    for seed in range(3):
        image = synthetic_image(seed)
        with torch.no_grad():
            boxes, logits = model(image)
            ref_boxes, ref_logits = reference_forward(model, image)
        assert 0 < boxes.shape[0] <= model.pre_nms
        torch.testing.assert_close(boxes, ref_boxes)
        torch.testing.assert_close(logits, ref_logits)
        h, w = image.shape[-2:]
        assert (boxes[:, 0::2] >= 0).all() and (boxes[:, 0::2] <= w).all()
        assert (boxes[:, 1::2] >= 0).all() and (boxes[:, 1::2] <= h).all()


def test_detector_classifier_trains() -> None:
    model = make_model()
    image = synthetic_image(1)
    _, logits = model(image)
    target = torch.zeros(logits.shape[0], dtype=torch.long)
    torch.nn.functional.cross_entropy(logits, target).backward()
    assert model.classifier.grad is not None and model.classifier.grad.abs().sum() > 0
    assert model.backbone[0].grad is not None and model.backbone[0].grad.abs().sum() > 0


def test_detector_exports_with_an_unbacked_proposal_count() -> None:
    model = make_model()
    image = synthetic_image(2)
    program = torch.export.export(model, (image,))
    kept = [n for n in program.graph.nodes if n.target is torch.ops.opforge.nms.default]
    assert len(kept) == 1 and not kept[0].meta["val"].shape[0].node.has_hint()
    for seed in (2, 5):
        other = synthetic_image(seed)
        with torch.no_grad():
            got, want = program.module()(other), model(other)
        torch.testing.assert_close(got, want)
