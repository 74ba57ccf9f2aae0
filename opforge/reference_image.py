"""References of the filter and image ops (schemas/filter.yaml, schemas/image.yaml),
written with torch ops: filter2d as kornia.filters.filter2d computes it (pad, then a
depthwise conv2d), its backward op through autograd, and the histogram and to_tensor
as torch.bincount and torchvision's to_tensor define them. tests/ops/test_filter.py
and tests/ops/test_image.py check these against kornia, scipy and torchvision."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from opforge.reference import _masked, _vjp

_BORDERS = ("constant", "reflect", "replicate", "circular")


def filter2d(
    image: Tensor,
    kernel: Tensor,
    padding: str = "same",
    border_type: str = "reflect",
    normalized: bool = False,
    convolve: bool = False,
) -> Tensor:
    """kornia.filters.filter2d(image, kernel, border_type, normalized, padding,
    behaviour='conv' if convolve else 'corr'); the result in the image's memory format."""
    padding, border_type = padding.lower(), border_type.lower()
    assert padding in ("same", "valid") and border_type in _BORDERS
    b, c, h, w = image.shape
    k = kernel.flip((-2, -1)) if convolve else kernel
    if normalized:
        k = k / k.abs().sum(dim=(-2, -1), keepdim=True)
    kh, kw = k.shape[-2:]
    if padding == "valid":
        out_shape = (b, c, h - kh + 1, w - kw + 1)
    else:
        out_shape = (b, c, h, w)
    if math.prod(out_shape) == 0:
        # (conv2d takes no zero groups nor a kernel larger than the padded input; the
        # zero term keeps the result connected to both inputs for autograd)
        out = image.new_zeros(out_shape) + 0 * (image.sum() + k.sum())
        return out.contiguous(memory_format=_layout(image))
    x = image
    if padding == "same":
        # (the anchor is the tap before the middle of an even size: the larger pad after)
        top, left = (kh - 1) // 2, (kw - 1) // 2
        x = F.pad(x, [left, kw - 1 - left, top, kh - 1 - top], mode=border_type)
    # One group per plane: the [1, kH, kW] kernel repeated over every plane, or the
    # sample's kernel over its channels.
    weight = k.repeat_interleave(c, dim=0) if k.shape[0] == b else k.expand(b * c, kh, kw)
    out = F.conv2d(x.reshape(1, b * c, *x.shape[-2:]), weight[:, None], groups=b * c)
    out = out.reshape(b, c, *out.shape[-2:])
    return out.contiguous(memory_format=_layout(image))


def filter2d_backward(
    grad_output: Tensor,
    image: Tensor,
    kernel: Tensor,
    padding: str,
    border_type: str,
    normalized: bool,
    convolve: bool,
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, ...]:
    grads = _vjp(
        lambda x, k: (filter2d(x, k, padding, border_type, normalized, convolve),),
        [image, kernel],
        [grad_output],
    )
    grad_image = grads[0]
    if grad_image is not None:
        grad_image = grad_image.contiguous(memory_format=_layout(image))
    return _masked((grad_image, grads[1]), output_mask)


def _layout(t: Tensor) -> torch.memory_format:
    """The memory format ATen's conv2d gives a 4-D input's result."""
    if (
        t.dim() == 4
        and t.is_contiguous(memory_format=torch.channels_last)
        and not t.is_contiguous()
    ):
        return torch.channels_last
    return torch.contiguous_format


def histogram(image: Tensor) -> Tensor:
    """torch.bincount of each [H, W] plane of a uint8 image [..., H, W]: int64 [..., 256]."""
    planes = image.reshape(math.prod(image.shape[:-2]), image.shape[-2] * image.shape[-1])
    counts = [torch.bincount(p.long(), minlength=256) for p in planes]
    out = torch.stack(counts) if counts else image.new_zeros((0, 256), dtype=torch.int64)
    return out.reshape(*image.shape[:-2], 256)


def histogram_batched(image: Tensor) -> Tensor:
    """histogram in one torch.bincount over every plane (each plane's values offset by
    256 times its index): what the benchmark times against."""
    planes = image.reshape(math.prod(image.shape[:-2]), image.shape[-2] * image.shape[-1]).long()
    offsets = torch.arange(planes.shape[0], device=image.device)[:, None] * 256
    counts = torch.bincount((planes + offsets).flatten(), minlength=256 * planes.shape[0])
    return counts.reshape(*image.shape[:-2], 256)


def to_tensor(image: Tensor, *, dtype: torch.dtype | None = None) -> Tensor:
    """torchvision.transforms.functional.to_tensor of a uint8 HWC image (an [H, W] one
    gets one channel), batched over a leading dim: x.to(dtype).div(255), channels first.
    A true division on every device: by a 0-d tensor on the image's device, since ATen's
    CUDA division by a Python number multiplies by its reciprocal instead (which rounds
    126 of the 256 float32 values differently)."""
    dtype = torch.float32 if dtype is None else dtype
    if image.dim() == 2:
        image = image[..., None]
    chw = image.movedim(-1, -3).contiguous().to(dtype)
    return chw / torch.tensor(255, dtype=dtype, device=image.device)
