"""References of the color ops (schemas/color.yaml): torchvision's adjust_hue written out of
place (torchvision's own writes its HSV views in place, so autograd cannot run through it), and
color_backward as autograd through the forward references (torchvision's and kornia's
functions), so its gradients are theirs by construction."""

from __future__ import annotations

from collections.abc import Callable

import kornia.color
import torch
import torchvision.transforms.v2.functional as TF
from torch import Tensor

from opforge.reference import _vjp

# torchvision's hsv -> rgb table: the (r, g, b) rows pick among (v, p, q, t) by sextant.
_SEXTANTS = [[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]]


def _rgb_to_hsv(image: Tensor) -> Tensor:
    """torchvision's _rgb_to_hsv (hue in turns), out of place."""
    r, g, _ = image.unbind(dim=-3)
    minc, maxc = torch.aminmax(image, dim=-3)
    eqc = maxc == minc
    ones = torch.ones_like(maxc)
    channels_range = maxc - minc
    s = channels_range / torch.where(eqc, ones, maxc)
    divisor = torch.where(eqc, ones, channels_range).unsqueeze(-3)
    rc, gc, bc = ((maxc.unsqueeze(-3) - image) / divisor).unbind(dim=-3)
    maxc_neq_r = maxc != r
    maxc_eq_g = maxc == g
    hg = (rc + 2.0 - bc) * (maxc_eq_g & maxc_neq_r)
    hr = (bc - gc) * ~maxc_neq_r
    hb = (gc + 4.0 - rc) * (maxc_neq_r & ~maxc_eq_g)
    h = torch.fmod((hr + hg + hb) * (1.0 / 6.0) + 1.0, 1.0)
    return torch.stack((h, s, maxc), dim=-3)


def _hsv_to_rgb(image: Tensor) -> Tensor:
    """torchvision's _hsv_to_rgb, out of place."""
    h, s, v = image.unbind(dim=-3)
    h6 = h * 6
    i = torch.floor(h6)
    f = h6 - i
    sextant = i.to(torch.int32).remainder(6).long()
    sxf = s * f
    one_minus_s = 1.0 - s
    q = ((1.0 - sxf) * v).clamp(0.0, 1.0)
    t = ((sxf + one_minus_s) * v).clamp(0.0, 1.0)
    p = (one_minus_s * v).clamp(0.0, 1.0)
    vpqt = torch.stack((v, p, q, t), dim=-3)
    select = torch.tensor(_SEXTANTS, dtype=torch.long, device=image.device)[:, sextant]
    return vpqt.gather(-3, select.movedim(0, -3))


def adjust_hue(image: Tensor, hue_factor: float) -> Tensor:
    """torchvision.transforms.v2.functional.adjust_hue, differentiable: the same operations
    out of place, in float32 for float16/bfloat16 (as torchvision) and in float64 for float64
    (torchvision rounds it through float32); uint8 images go to torchvision itself."""
    if not image.is_floating_point():
        return TF.adjust_hue(image, hue_factor)
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if image.shape[-3] == 1 or image.numel() == 0:
        return image.clone()
    work = image.float() if image.dtype in (torch.float16, torch.bfloat16) else image
    hsv = _rgb_to_hsv(work)
    h, s, v = hsv.unbind(dim=-3)
    h = torch.remainder(h + hue_factor, 1.0)
    return _hsv_to_rgb(torch.stack((h, s, v), dim=-3)).to(image.dtype)


def _forward(mode: str, factor: float, channels: int) -> Callable[[Tensor], Tensor]:
    ops: dict[str, Callable[[Tensor], Tensor]] = {
        "grayscale": lambda x: TF.rgb_to_grayscale(x, channels),
        "rgb_to_hsv": lambda x: kornia.color.rgb_to_hsv(x, factor),
        "hsv_to_rgb": kornia.color.hsv_to_rgb,
        "rgb_to_xyz": kornia.color.rgb_to_xyz,
        "brightness": lambda x: TF.adjust_brightness(x, factor),
        "contrast": lambda x: TF.adjust_contrast(x, factor),
        "saturation": lambda x: TF.adjust_saturation(x, factor),
        "hue": lambda x: adjust_hue(x, factor),
    }
    return ops[mode]


def color_backward(grad_output: Tensor, image: Tensor, mode: str, factor: float = 0.0) -> Tensor:
    """The gradient of the color op `mode` at `image`, by autograd through its reference; laid
    out as `image` (channels_last stays channels_last)."""
    fn = _forward(mode, factor, grad_output.shape[-3])
    (grad,) = _vjp(lambda x: (fn(x),), [image], [grad_output])
    channels_last = (
        image.dim() == 4
        and image.is_contiguous(memory_format=torch.channels_last)
        and not image.is_contiguous()
    )
    return grad.contiguous(
        memory_format=torch.channels_last if channels_last else torch.contiguous_format
    )
