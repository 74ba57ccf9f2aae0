"""References of the box ops (schemas/boxes.yaml): torchvision's functions, with the
Faster R-CNN `legacy_plus_one` IoU and the backward ops built from torch ops through
autograd (so they are torchvision's gradients by construction)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torchvision
from torch import Tensor
from torchvision.models.detection._utils import BoxCoder

from opforge.reference import _masked, _vjp


def box_iou(boxes1: Tensor, boxes2: Tensor, legacy_plus_one: bool = False) -> Tensor:
    """torchvision.ops.box_iou; with legacy_plus_one, widths and heights are x2 - x1 + 1
    (Detectron's bbox_overlaps), for the areas and the intersection alike."""
    if not legacy_plus_one:
        return torchvision.ops.box_iou(boxes1, boxes2)
    area1 = (boxes1[:, 2] - boxes1[:, 0] + 1) * (boxes1[:, 3] - boxes1[:, 1] + 1)
    area2 = (boxes2[:, 2] - boxes2[:, 0] + 1) * (boxes2[:, 3] - boxes2[:, 1] + 1)
    lt = torch.max(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = (rb - lt + 1).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area1[:, None] + area2[None, :] - inter)


def box_iou_backward(
    grad_output: Tensor,
    boxes1: Tensor,
    boxes2: Tensor,
    legacy_plus_one: bool,
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, ...]:
    grads = _vjp(lambda a, b: (box_iou(a, b, legacy_plus_one),), [boxes1, boxes2], [grad_output])
    return _masked(grads, output_mask)


def generalized_box_iou_backward(
    grad_output: Tensor, boxes1: Tensor, boxes2: Tensor, output_mask: Sequence[bool]
) -> tuple[Tensor | None, ...]:
    grads = _vjp(
        lambda a, b: (torchvision.ops.generalized_box_iou(a, b),), [boxes1, boxes2], [grad_output]
    )
    return _masked(grads, output_mask)


_CLIP = math.log(1000.0 / 16)


def box_encode(
    reference_boxes: Tensor, proposals: Tensor, weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0)
) -> Tensor:
    """BoxCoder(weights).encode_single(reference_boxes, proposals)."""
    coder = BoxCoder(tuple(weights))  # type: ignore[arg-type]
    return coder.encode_single(reference_boxes, proposals)


def box_encode_backward(
    grad_output: Tensor,
    reference_boxes: Tensor,
    proposals: Tensor,
    weights: Sequence[float],
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, ...]:
    grads = _vjp(
        lambda r, p: (box_encode(r, p, weights),), [reference_boxes, proposals], [grad_output]
    )
    return _masked(grads, output_mask)


def box_decode(
    rel_codes: Tensor,
    boxes: Tensor,
    weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
    bbox_xform_clip: float = _CLIP,
) -> Tensor:
    """BoxCoder(weights, bbox_xform_clip).decode_single(rel_codes, boxes)."""
    coder = BoxCoder(tuple(weights), bbox_xform_clip)  # type: ignore[arg-type]
    return coder.decode_single(rel_codes, boxes)


def box_decode_backward(
    grad_output: Tensor,
    rel_codes: Tensor,
    boxes: Tensor,
    weights: Sequence[float],
    bbox_xform_clip: float,
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, ...]:
    grads = _vjp(
        lambda c, b: (box_decode(c, b, weights, bbox_xform_clip),),
        [rel_codes, boxes],
        [grad_output],
    )
    return _masked(grads, output_mask)


def clip_boxes_to_image_backward(grad_output: Tensor, boxes: Tensor, size: Sequence[int]) -> Tensor:
    (grad,) = _vjp(
        lambda b: (torchvision.ops.clip_boxes_to_image(b, tuple(size)),),
        [boxes],
        [grad_output],  # type: ignore[arg-type]
    )
    return grad
