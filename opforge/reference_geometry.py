"""References of the geometric image ops (schemas/resize.yaml): torch.nn.functional.interpolate
over the last two dims of an image, and its autograd for the backward."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _interpolate(
    image: torch.Tensor, size: list[int], mode: str, align_corners: bool | None, antialias: bool
) -> torch.Tensor:
    lead = image.shape[:-2]
    x = image.reshape(-1, 1, *image.shape[-2:]) if image.dim() != 4 else image
    out = F.interpolate(
        x, size=list(size), mode=mode, align_corners=align_corners, antialias=antialias
    )
    return out.reshape(*lead, *out.shape[-2:]) if image.dim() != 4 else out


def resize(
    image: torch.Tensor,
    size: list[int],
    mode: str = "bilinear",
    align_corners: bool | None = None,
    antialias: bool = False,
) -> torch.Tensor:
    """F.interpolate over (..., H, W); uint8 images in float64, rounded and saturated (ATen's
    own uint8 kernels agree within 1)."""
    if image.dtype == torch.uint8:
        out = _interpolate(image.double(), size, mode, align_corners, antialias)
        return out.round().clamp(0, 255).to(torch.uint8)
    return _interpolate(image, size, mode, align_corners, antialias)


def resize_backward(
    grad_output: torch.Tensor,
    input_size: list[int],
    mode: str,
    align_corners: bool | None,
    antialias: bool,
) -> torch.Tensor:
    """The gradient of F.interpolate with respect to its input, by autograd."""
    x = torch.zeros(
        input_size, dtype=grad_output.dtype, device=grad_output.device, requires_grad=True
    )
    out = _interpolate(x, list(grad_output.shape[-2:]), mode, align_corners, antialias)
    (grad,) = torch.autograd.grad(out, x, grad_output)
    if grad.dim() == 4 and grad_output.is_contiguous(memory_format=torch.channels_last):
        return grad.contiguous(
            memory_format=torch.channels_last
        )  # the layout follows the gradient's
    return grad


def _homographies(M: torch.Tensor) -> torch.Tensor:
    """(B, 2, 3) affine or (B, 3, 3) matrices as (B, 3, 3) float64 homographies."""
    M = M.double()
    if M.shape[-2] == 2:
        last = torch.tensor([0.0, 0.0, 1.0], dtype=M.dtype, device=M.device).expand(
            M.shape[0], 1, 3
        )
        M = torch.cat([M, last], 1)
    return M


def _warp(
    image: torch.Tensor,
    M: torch.Tensor,
    dsize: list[int],
    mode: str,
    padding_mode: str,
    align_corners: bool,
) -> torch.Tensor:
    """F.grid_sample at M^-1 (x, y, 1) in pixel coordinates, computed in float64."""
    b, _, h, w = image.shape
    inv = torch.linalg.inv(_homographies(M)).expand(b, 3, 3)
    ys, xs = torch.meshgrid(
        torch.arange(dsize[0], dtype=torch.float64, device=image.device),
        torch.arange(dsize[1], dtype=torch.float64, device=image.device),
        indexing="ij",
    )
    pts = torch.stack([xs, ys, torch.ones_like(xs)], -1)
    src = torch.einsum("bij,hwj->bhwi", inv, pts)
    sx, sy = src[..., 0] / src[..., 2], src[..., 1] / src[..., 2]
    if align_corners:  # grid_sample's normalized coordinates for pixel centres
        gx, gy = sx * 2 / max(w - 1, 1) - 1, sy * 2 / max(h - 1, 1) - 1
    else:
        gx, gy = (2 * sx + 1) / w - 1, (2 * sy + 1) / h - 1
    grid = torch.stack([gx, gy], -1)
    out = F.grid_sample(
        image.double(), grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
    )
    return out.to(image.dtype)


def warp_affine(
    image: torch.Tensor,
    M: torch.Tensor,
    dsize: list[int],
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = True,
) -> torch.Tensor:
    return _warp(image, M, dsize, mode, padding_mode, align_corners)


# (M's shape says which: (B, 2, 3) affine, (B, 3, 3) a homography)
warp_perspective = warp_affine


def warp_image_backward(
    grad_output: torch.Tensor,
    M: torch.Tensor,
    input_size: list[int],
    mode: str,
    padding_mode: str,
    align_corners: bool,
) -> torch.Tensor:
    """The gradient of the warp with respect to the image, by autograd in float64."""
    x = torch.zeros(input_size, dtype=torch.float64, device=grad_output.device, requires_grad=True)
    out = _warp(x, M, list(grad_output.shape[-2:]), mode, padding_mode, align_corners)
    (grad,) = torch.autograd.grad(out, x, grad_output.double())
    return grad.to(grad_output.dtype)


def rotation_matrix2d(
    center: torch.Tensor, angle: torch.Tensor, scale: torch.Tensor
) -> torch.Tensor:
    """T(center) R(angle) S(scale) T(-center), rows 0 and 1; R = [[cos, sin], [-sin, cos]]."""
    a = torch.deg2rad(angle)
    cos, sin = torch.cos(a), torch.sin(a)
    rs = torch.stack(
        [
            torch.stack([cos * scale[:, 0], sin * scale[:, 1]], -1),
            torch.stack([-sin * scale[:, 0], cos * scale[:, 1]], -1),
        ],
        1,
    )
    shift = center - torch.einsum("bij,bj->bi", rs, center)
    return torch.cat([rs, shift.unsqueeze(-1)], -1)


def get_perspective_transform(points_src: torch.Tensor, points_dst: torch.Tensor) -> torch.Tensor:
    """The homography through the four correspondences, by a least-squares-free 8 x 8 solve
    in float64 (DLT with h33 = 1)."""
    s, d = points_src.double(), points_dst.double()
    rows = []
    for i in range(4):
        x, y, u, v = s[:, i, 0], s[:, i, 1], d[:, i, 0], d[:, i, 1]
        o, z = torch.ones_like(x), torch.zeros_like(x)
        rows.append(torch.stack([x, y, o, z, z, z, -u * x, -u * y], -1))
        rows.append(torch.stack([z, z, z, x, y, o, -v * x, -v * y], -1))
    A = torch.stack(rows, 1)
    rhs = torch.stack([d[:, i // 2, i % 2] for i in range(8)], 1)
    h = torch.linalg.solve(A, rhs)
    return torch.cat([h, torch.ones_like(h[:, :1])], 1).view(-1, 3, 3).to(points_src.dtype)


def torchvision_resize(
    image: torch.Tensor,
    size: list[int],
    mode: str = "bilinear",
    align_corners: bool | None = None,
    antialias: bool = False,
) -> torch.Tensor:
    """torchvision.transforms.v2.functional.resize with resize's arguments (what
    benchmarks/ops.py times it against; align_corners must be None or False)."""
    import torchvision.transforms.v2.functional as TF
    from torchvision.transforms import InterpolationMode

    assert not align_corners, "torchvision's resize has no align_corners"
    return TF.resize(image, list(size), interpolation=InterpolationMode(mode), antialias=antialias)
