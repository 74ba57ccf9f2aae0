"""A tiny two-stage detector (Faster R-CNN's pipeline, CATALOG2 section 6) from opforge ops only.

Stage one: a strided conv backbone, a region proposal head (objectness and box deltas per
anchor), the Faster R-CNN base anchors (`generate_anchors`) tiled over the feature map
(`grid_anchors`), the deltas decoded (`box_decode`) and clipped to the image
(`clip_boxes_to_image`), the best `pre_nms` proposals by objectness, then `nms`. Stage two:
`roi_align` of the kept proposals on the feature map and a classification head.

The number of proposals `nms` keeps depends on the data, so under `torch.export` it is an
unbacked size that flows through `roi_align` and the head (Note [Data-dependent lengths] in
kernels/include/opforge/core/length_report.h). `reference_forward` computes the same with
torch.nn.functional and torchvision.ops, for the tests and the demo.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

import opforge


def random_boxes(
    shape: list[int],
    low: float,
    high: float,
    dtype: torch.dtype,
    device: str | torch.device,
    gen: torch.Generator,
    *,
    noncontiguous: bool = False,
) -> torch.Tensor:
    """Valid boxes (x1, y1, x2, y2), shape [..., 4]: corners uniform in [low, high), widths
    and heights in [(high - low) / 16, (high - low) / 2) (positive, so box coding's logs
    and quotients are finite); non-contiguous ones are every other box of a larger set."""
    assert shape and shape[-1] == 4, f"boxes need shape [..., 4], got {shape}"
    lead = shape[:-1] + [2] if noncontiguous else shape[:-1]
    span = high - low
    corner = torch.rand([*lead, 2], generator=gen, dtype=torch.float64) * span + low
    size = (torch.rand([*lead, 2], generator=gen, dtype=torch.float64) * 7 + 1) * span / 16
    boxes = torch.cat([corner, corner + size], dim=-1)
    if noncontiguous:
        boxes = boxes[..., 0, :]
    return boxes.to(dtype=dtype, device=device)


def _weight(c_out: int, c_in: int, k: int) -> nn.Parameter:
    w = torch.empty(c_out, c_in, k, k)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    return nn.Parameter(w)


class TinyTwoStageDetector(nn.Module):
    """Backbone (3 conv-ReLU-maxpool stages, stride 8), RPN, NMS, RoI Align 7x7, classifier.
    `forward(image [1, 3, H, W])` returns the kept proposals [K, 4] (x1, y1, x2, y2 in image
    pixels) and their class logits [K, num_classes]."""

    stride = 8

    def __init__(
        self,
        num_classes: int = 4,
        channels: int = 16,
        pre_nms: int = 120,
        iou_threshold: float = 0.6,
        anchor_scales: tuple[float, ...] = (0.5, 1.0, 2.0),
    ) -> None:
        super().__init__()
        self.pre_nms, self.iou_threshold = pre_nms, iou_threshold
        widths = [3, channels, channels]
        self.backbone = nn.ParameterList(_weight(channels, c, 3) for c in widths)
        self.backbone_bias = nn.ParameterList(nn.Parameter(torch.zeros(channels)) for _ in widths)
        anchors = opforge.generate_anchors(self.stride, [0.5, 1.0, 2.0], list(anchor_scales))
        self.register_buffer("base_anchors", anchors)
        a = anchors.shape[0]
        self.rpn_conv = _weight(channels, channels, 3)
        self.rpn_objectness = _weight(a, channels, 1)
        self.rpn_deltas = nn.Parameter(_weight(4 * a, channels, 1).detach() * 0.1)
        self.fc = nn.Parameter(torch.randn(64, channels * 49) / math.sqrt(channels * 49))
        self.classifier = nn.Parameter(torch.randn(num_classes, 64) / 8)

    def features(self, image: Tensor) -> Tensor:
        x = image
        for w, b in zip(self.backbone, self.backbone_bias, strict=True):
            x = opforge.relu(opforge.conv2d(x, w, b, padding=1))
            x = opforge.max_pool2d(x, 2, 2)
        return x

    def proposals(self, image: Tensor, feature: Tensor) -> tuple[Tensor, Tensor]:
        """All decoded, clipped anchors' boxes [H * W * A, 4] and objectness [H * W * A]."""
        h, w = feature.shape[-2:]
        t = opforge.relu(opforge.conv2d(feature, self.rpn_conv, padding=1))
        # (h, w, a) order, as grid_anchors'.
        objectness = opforge.conv2d(t, self.rpn_objectness).permute(0, 2, 3, 1).reshape(-1)
        deltas = opforge.conv2d(t, self.rpn_deltas).permute(0, 2, 3, 1).reshape(-1, 4)
        anchors = opforge.grid_anchors(self.base_anchors, h, w, self.stride)
        boxes = opforge.box_decode(deltas, anchors)
        return opforge.clip_boxes_to_image(boxes, list(image.shape[-2:])), objectness

    def forward(self, image: Tensor) -> tuple[Tensor, Tensor]:
        feature = self.features(image)
        boxes, objectness = self.proposals(image, feature)
        top = torch.topk(objectness, min(self.pre_nms, objectness.numel())).indices
        boxes, objectness = boxes[top], objectness[top]
        kept = boxes[opforge.nms(boxes, objectness, self.iou_threshold)]
        rois = torch.cat([kept.new_zeros(kept.shape[0], 1), kept], dim=1)
        pooled = opforge.roi_align(feature, rois, [7, 7], 1.0 / self.stride, 2, True)
        hidden = opforge.relu(opforge.linear(pooled.flatten(1), self.fc))
        return kept, opforge.linear(hidden, self.classifier)


def reference_forward(model: TinyTwoStageDetector, image: Tensor) -> tuple[Tensor, Tensor]:
    """The same computation with torch.nn.functional and torchvision.ops."""
    import torchvision
    from torch.nn import functional as F
    from torchvision.models.detection._utils import BoxCoder

    x = image
    for w, b in zip(model.backbone, model.backbone_bias, strict=True):
        x = F.max_pool2d(F.relu(F.conv2d(x, w, b, padding=1)), 2, 2)
    h, w = x.shape[-2:]
    t = F.relu(F.conv2d(x, model.rpn_conv, padding=1))
    objectness = F.conv2d(t, model.rpn_objectness).permute(0, 2, 3, 1).reshape(-1)
    deltas = F.conv2d(t, model.rpn_deltas).permute(0, 2, 3, 1).reshape(-1, 4)
    ys, xs = torch.meshgrid(
        torch.arange(h) * model.stride, torch.arange(w) * model.stride, indexing="ij"
    )
    shifts = torch.stack([xs, ys, xs, ys], -1).reshape(-1, 1, 4).to(image)
    anchors = (shifts + model.base_anchors.reshape(1, -1, 4)).reshape(-1, 4)
    boxes = BoxCoder((1.0, 1.0, 1.0, 1.0)).decode_single(deltas, anchors)
    boxes = torchvision.ops.clip_boxes_to_image(boxes, tuple(image.shape[-2:]))
    top = torch.topk(objectness, min(model.pre_nms, objectness.numel())).indices
    boxes, objectness = boxes[top], objectness[top]
    kept = boxes[torchvision.ops.nms(boxes, objectness, model.iou_threshold)]
    rois = torch.cat([kept.new_zeros(kept.shape[0], 1), kept], dim=1)
    pooled = torchvision.ops.roi_align(x, rois, [7, 7], 1.0 / model.stride, 2, True)
    hidden = F.relu(F.linear(pooled.flatten(1), model.fc))
    return kept, F.linear(hidden, model.classifier)
