"""References of detection: anchors, boxes, nms, roi."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """torchvision's nms (its IoU arithmetic, in float32 for 16-bit boxes, exact widening) over
    opforge's score order: a stable sort, NaN first (torchvision leaves ties unordered)."""
    import torchvision

    if boxes.dtype in (torch.float16, torch.bfloat16):
        boxes = boxes.float()
    order = torch.sort(scores.float(), descending=True, stable=True).indices
    rank = torch.arange(order.numel(), 0, -1, dtype=boxes.dtype, device=boxes.device)
    return order[torchvision.ops.nms(boxes[order], rank, iou_threshold)]


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """nms per category (as torchvision's per-category path), merged in the score order."""
    kept = [
        torch.nonzero(idxs == c).flatten()[nms(boxes[idxs == c], scores[idxs == c], iou_threshold)]
        for c in torch.unique(idxs)
    ]
    keep = torch.cat(kept).sort().values if kept else idxs.new_empty(0, dtype=torch.long)
    return keep[torch.sort(scores[keep].float(), descending=True, stable=True).indices]


def generate_anchors(
    base_size: int = 16,
    ratios: Sequence[float] = (0.5, 1.0, 2.0),
    scales: Sequence[float] = (8.0, 16.0, 32.0),
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> Tensor:
    """The Faster R-CNN repository's generate_anchors.py, step by step in float64 (its
    _whctrs / _ratio_enum / _scale_enum / _mkanchors), ratio-major."""
    base = torch.tensor([0.0, 0.0, base_size - 1.0, base_size - 1.0], dtype=torch.float64)

    def whctrs(a: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        w, h = a[..., 2] - a[..., 0] + 1, a[..., 3] - a[..., 1] + 1
        return w, h, a[..., 0] + 0.5 * (w - 1), a[..., 1] + 0.5 * (h - 1)

    def mkanchors(ws: Tensor, hs: Tensor, x: Tensor, y: Tensor) -> Tensor:
        return torch.stack(
            [x - 0.5 * (ws - 1), y - 0.5 * (hs - 1), x + 0.5 * (ws - 1), y + 0.5 * (hs - 1)], -1
        )

    w, h, x, y = whctrs(base)
    r = torch.tensor(list(ratios), dtype=torch.float64)
    ws = torch.round(torch.sqrt(w * h / r))  # torch.round is half to even, as numpy's
    ratio_anchors = mkanchors(ws, torch.round(ws * r), x, y)
    s = torch.tensor(list(scales), dtype=torch.float64)
    rows = []
    for a in ratio_anchors:
        aw, ah, ax, ay = whctrs(a)
        rows.append(mkanchors(aw * s, ah * s, ax, ay))
    out = torch.cat(rows) if rows else torch.empty(0, 4, dtype=torch.float64)
    return out.reshape(-1, 4).to(dtype=dtype or torch.get_default_dtype(), device=device)


def grid_anchors(base_anchors: Tensor, feat_h: int, feat_w: int, stride: int) -> Tensor:
    """torchvision's AnchorGenerator.grid_anchors for one level: shifts (x, y, x, y) per cell in
    row order, plus every base anchor."""
    ys, xs = torch.meshgrid(
        torch.arange(feat_h, dtype=torch.float64, device=base_anchors.device) * stride,
        torch.arange(feat_w, dtype=torch.float64, device=base_anchors.device) * stride,
        indexing="ij",
    )
    shifts = torch.stack([xs, ys, xs, ys], -1).reshape(-1, 1, 4)
    out = shifts + base_anchors.double().reshape(1, -1, 4)
    return out.reshape(-1, 4).to(base_anchors)


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _lerp_axis(coords: Tensor, size: int) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Bilinear neighbours (lo, hi), weights (w_lo, w_hi) and validity along one axis:
    a coordinate more than a pixel outside reads nothing; one within clamps to the border."""
    valid = (coords >= -1) & (coords <= size)
    y = coords.clamp(min=0)
    lo = y.floor().long()
    edge = lo >= size - 1
    lo = torch.where(edge, torch.full_like(lo, size - 1), lo)
    hi = torch.where(edge, lo, lo + 1)
    y = torch.where(edge, lo.to(y.dtype), y)
    frac = y - lo.to(y.dtype)
    zero = torch.zeros_like(lo)
    return torch.where(valid, lo, zero), torch.where(valid, hi, zero), 1 - frac, frac, valid


def _align_samples(
    image: Tensor,
    box: Tensor,
    out: tuple[int, int],
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
) -> Tensor | None:
    """(C, oh, ow, samples) bilinear values of one box's bins over `image` (C, H, W), or
    None when its bins have no samples (a backwards aligned box)."""
    dt = box.dtype
    _, height, width = image.shape
    scale = torch.tensor(spatial_scale, dtype=dt)
    offset = torch.tensor(0.5 if aligned else 0.0, dtype=dt)
    x1, y1, x2, y2 = (box[i] * scale - offset for i in range(1, 5))
    w, h = x2 - x1, y2 - y1
    if not aligned:  # the legacy box: at least 1x1
        w, h = w.clamp(min=1), h.clamp(min=1)
    bin_h, bin_w = h / out[0], w / out[1]
    gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(bin_h.item()))
    gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(bin_w.item()))
    if gh <= 0 or gw <= 0 or height == 0 or width == 0:
        return None

    def axis(start: Tensor, bin_size: Tensor, bins: int, grid: int) -> Tensor:
        b = torch.arange(bins, dtype=dt, device=box.device).repeat_interleave(grid)
        i = torch.arange(grid, dtype=dt, device=box.device).repeat(bins)
        return start + b * bin_size + (i + 0.5) * bin_size / grid

    ylo, yhi, hy, ly, vy = _lerp_axis(axis(y1, bin_h, out[0], gh), height)
    xlo, xhi, hx, lx, vx = _lerp_axis(axis(x1, bin_w, out[1], gw), width)
    rows_lo, rows_hi = image[:, ylo], image[:, yhi]  # (C, Sy, W)
    value = (
        hy[:, None] * hx[None, :] * rows_lo[:, :, xlo]
        + hy[:, None] * lx[None, :] * rows_lo[:, :, xhi]
        + ly[:, None] * hx[None, :] * rows_hi[:, :, xlo]
        + ly[:, None] * lx[None, :] * rows_hi[:, :, xhi]
    )
    value = torch.where(vy[:, None] & vx[None, :], value, torch.zeros_like(value))
    c = image.shape[0]
    value = value.reshape(c, out[0], gh, out[1], gw).permute(0, 1, 3, 2, 4)
    return value.reshape(c, out[0], out[1], gh * gw)


def roi_align(
    input: Tensor,
    boxes: Tensor,
    output_size: int | Sequence[int],
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
    aligned: bool = False,
    pool_mode: str = "avg",
) -> Tensor:
    """torchvision.ops.roi_align ('avg'), or the maximum of each bin's samples ('max': NaN
    propagates, the first of equal samples wins; 0 for a bin without samples)."""
    if pool_mode == "avg":
        from torchvision.ops import roi_align as tv_roi_align

        return tv_roi_align(input, boxes, list(_pair(output_size)), spatial_scale,
                            sampling_ratio, aligned)  # fmt: skip
    out = _pair(output_size)
    n, c = input.shape[:2]
    results = []
    for box in boxes:
        values = _align_samples(input[int(box[0].item())], box, out, spatial_scale,
                                sampling_ratio, aligned)  # fmt: skip
        if values is None:
            results.append(input.new_zeros(c, *out))
        else:
            results.append(values.max(dim=-1).values)
    # (contiguous whatever the input's layout, as torchvision's 'avg' result)
    return torch.stack(results).contiguous() if results else input.new_zeros(0, c, *out)


def roi_align_backward(
    grad_output: Tensor,
    boxes: Tensor,
    input_size: Sequence[int],
    output_size: int | Sequence[int],
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
    pool_mode: str,
    input: Tensor | None = None,
) -> Tensor:
    x = input if input is not None else grad_output.new_zeros(list(input_size))
    x = x.detach().requires_grad_()
    with torch.enable_grad():
        out = roi_align(x, boxes.detach(), output_size, spatial_scale, sampling_ratio, aligned,
                        pool_mode)  # fmt: skip
    (grad,) = torch.autograd.grad(out, x, grad_output, allow_unused=True)
    return grad if grad is not None else torch.zeros_like(x)


def _round_half_away(v: float) -> int:
    """std::round: halves away from zero (torch.round rounds them to even)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def roi_pool(
    input: Tensor, boxes: Tensor, output_size: int | Sequence[int], spatial_scale: float = 1.0
) -> tuple[Tensor, Tensor]:
    """torchvision.ops.roi_pool's values and, per output, the flat index h * W + w of the
    maximum (-1 for an empty bin, or for a bin whose every value is NaN or below -FLT_MAX,
    which torchvision's strict comparison from -FLT_MAX never takes)."""
    oh, ow = _pair(output_size)
    n, c, height, width = input.shape
    dt = boxes.dtype
    scale = torch.tensor(spatial_scale, dtype=dt)
    lowest = torch.finfo(torch.float32).min
    values, argmax = [], []
    for box in boxes:
        image = input[int(box[0].item())]
        x1, y1, x2, y2 = (_round_half_away((box[i] * scale).item()) for i in range(1, 5))
        h, w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bin_h, bin_w = torch.tensor(h, dtype=dt) / oh, torch.tensor(w, dtype=dt) / ow

        def span(i: int, bin_size: Tensor, start: int, size: int) -> tuple[int, int]:
            lo = int((i * bin_size).floor().item()) + start
            hi = int(((i + 1) * bin_size).ceil().item()) + start
            return min(max(lo, 0), size), min(max(hi, 0), size)

        v = input.new_zeros(c, oh, ow)
        a = torch.full((c, oh, ow), -1, dtype=torch.int64, device=input.device)
        for ph in range(oh):
            h0, h1 = span(ph, bin_h, y1, height)
            for pw in range(ow):
                w0, w1 = span(pw, bin_w, x1, width)
                if h1 <= h0 or w1 <= w0:
                    continue
                region = image[:, h0:h1, w0:w1].reshape(c, -1)
                candidates = torch.where(region > lowest, region, float("-inf"))
                i = candidates.detach().max(dim=1).indices
                found = candidates.gather(1, i[:, None]).squeeze(1) > lowest
                taken = region.gather(1, i[:, None]).squeeze(1)
                v[:, ph, pw] = torch.where(found, taken, torch.full_like(taken, lowest))
                pixel = (h0 + i // (w1 - w0)) * width + w0 + i % (w1 - w0)
                a[:, ph, pw] = torch.where(found, pixel, -1)
        values.append(v)
        argmax.append(a)
    if not values:
        empty = input.new_zeros(0, c, oh, ow)
        return empty, empty.long()
    return torch.stack(values), torch.stack(argmax).to(input.device)


def roi_pool_backward(
    grad_output: Tensor, boxes: Tensor, argmax: Tensor, input_size: Sequence[int]
) -> Tensor:
    n, c, height, width = (int(s) for s in input_size)
    grad = grad_output.new_zeros(n, c, height * width)
    for k, box in enumerate(boxes):
        a = argmax[k].reshape(c, -1)
        valid = (a >= 0) & (a < height * width)
        g = torch.where(valid, grad_output[k].reshape(c, -1), 0)
        if height * width > 0:
            b = int(box[0].item())
            grad[b] = grad[b].scatter_add(1, a.clamp(0, height * width - 1), g)
    return grad.view(n, c, height, width)
