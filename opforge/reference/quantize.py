"""References of quantization, observers and pruning."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from opforge.reference._common import _decomposed


def fake_quantize_per_tensor_affine_backward(
    grad_output: Tensor,
    self: Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
) -> Tensor:
    # torch's straight-through mask: its backward of ones.
    with torch.enable_grad():
        x = self.detach().requires_grad_()
        y = torch.fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max)
        (mask,) = torch.autograd.grad(y, x, torch.ones_like(y))
    dtype = torch.promote_types(grad_output.dtype, self.dtype)
    return grad_output.to(dtype) * mask.to(dtype)


def fake_quantize_per_channel_affine_backward(
    grad_output: Tensor,
    self: Tensor,
    scale: Tensor,
    zero_point: Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
) -> Tensor:
    with torch.enable_grad():
        x = self.detach().requires_grad_()
        y = torch.fake_quantize_per_channel_affine(x, scale, zero_point, axis, quant_min, quant_max)
        (mask,) = torch.autograd.grad(y, x, torch.ones_like(y))
    return grad_output * mask


def fake_quantize_learnable_per_tensor_affine(
    self: Tensor,
    scale: Tensor,
    zero_point: Tensor,
    quant_min: int,
    quant_max: int,
    grad_factor: float = 1.0,
) -> Tensor:
    # ATen takes a scale and zero point of shape [1] only; opforge takes any one-value shape.
    return torch._fake_quantize_learnable_per_tensor_affine(
        self, scale.reshape(-1), zero_point.reshape(-1), quant_min, quant_max, grad_factor
    )


def _learnable_gradients(
    forward: Any, grad: Tensor, self: Tensor, scale: Tensor, zero_point: Tensor, *args: Any
) -> tuple[Tensor, Tensor, Tensor]:
    """ATen's gradients of a learnable fake quantization (its autograd backward). For an
    empty self ATen's backward returns scale and zero_point themselves as their gradients;
    the sums over no elements are 0."""
    if self.numel() == 0:
        return torch.zeros_like(self), torch.zeros_like(scale), torch.zeros_like(zero_point)
    with torch.enable_grad():
        x, s, z = (t.detach().requires_grad_() for t in (self, scale, zero_point))
        y = forward(x, s.reshape(-1), z.reshape(-1), *args)
        gx, gs, gz = torch.autograd.grad(y, (x, s, z), grad)
    return gx, gs.reshape(scale.shape), gz.reshape(zero_point.shape)


def fake_quantize_learnable_per_tensor_affine_backward(
    grad: Tensor,
    self: Tensor,
    scale: Tensor,
    zero_point: Tensor,
    quant_min: int,
    quant_max: int,
    grad_factor: float = 1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    return _learnable_gradients(
        fake_quantize_learnable_per_tensor_affine,
        grad, self, scale, zero_point, quant_min, quant_max, grad_factor,
    )  # fmt: skip


def fake_quantize_learnable_per_channel_affine_backward(
    grad: Tensor,
    self: Tensor,
    scale: Tensor,
    zero_point: Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
    grad_factor: float = 1.0,
) -> tuple[Tensor, Tensor, Tensor]:
    return _learnable_gradients(
        torch._fake_quantize_learnable_per_channel_affine,
        grad, self, scale, zero_point, axis, quant_min, quant_max, grad_factor,
    )  # fmt: skip


def _like_input(result: Tensor, input: Tensor) -> Tensor:
    """The per-channel references permute and permute back: give the result input's layout."""
    memory_format = (
        torch.channels_last
        if input.dim() == 4
        and input.is_contiguous(memory_format=torch.channels_last)
        and not input.is_contiguous()
        else torch.contiguous_format
    )
    return result.contiguous(memory_format=memory_format)


def quantize_per_tensor(
    input: Tensor, scale: float, zero_point: int, quant_min: int, quant_max: int, dtype: torch.dtype
) -> Tensor:
    return _decomposed().quantize_per_tensor(input, scale, zero_point, quant_min, quant_max, dtype)  # type: ignore[no-any-return]


def dequantize_per_tensor(
    input: Tensor,
    scale: float,
    zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    *,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    return _decomposed().dequantize_per_tensor(  # type: ignore[no-any-return]
        input, scale, zero_point, quant_min, quant_max, dtype, out_dtype=out_dtype
    )


def quantize_per_channel(
    input: Tensor,
    scales: Tensor,
    zero_points: Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> Tensor:
    axis = axis % input.dim()
    out = _decomposed().quantize_per_channel(
        input, scales, zero_points, axis, quant_min, quant_max, dtype
    )
    return _like_input(out, input)


def dequantize_per_channel(
    input: Tensor,
    scales: Tensor,
    zero_points: Tensor | None,
    axis: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    *,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    axis = axis % input.dim()
    out = _decomposed().dequantize_per_channel(
        input, scales, zero_points, axis, quant_min, quant_max, dtype, out_dtype=out_dtype
    )
    return _like_input(out, input)


def choose_qparams(
    min_val: Tensor,
    max_val: Tensor,
    quant_min: int,
    quant_max: int,
    symmetric: bool = False,
    eps: float = torch.finfo(torch.float32).eps,
) -> tuple[Tensor, Tensor]:
    from torch.ao.quantization.utils import determine_qparams

    unsigned = quant_min >= 0
    full = (quant_min, quant_max) in ((0, 255), (0, 65535))
    scale, zero_point = determine_qparams(
        min_val,
        max_val,
        quant_min,
        quant_max,
        torch.quint8 if unsigned else torch.qint8,
        torch.tensor([eps], dtype=torch.float32),
        has_customized_qrange=not full,
        qscheme=torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine,
    )
    if symmetric and (quant_min, quant_max) == (0, 65535):
        zero_point = torch.full_like(zero_point, 2**15)  # the observers' uint16 rule
    return (
        scale.to(torch.float32).reshape(min_val.shape),
        zero_point.to(torch.int32).reshape(min_val.shape),
    )


def minmax_observer_update_(
    min_val: Tensor,
    max_val: Tensor,
    x: Tensor,
    averaging_constant: float | None = None,
    ch_axis: int | None = None,
) -> None:
    from torch.ao.quantization import observer

    if ch_axis is None:
        obs: Any = (
            observer.MinMaxObserver()
            if averaging_constant is None
            else observer.MovingAverageMinMaxObserver(averaging_constant=averaging_constant)
        )
        shape: tuple[int, ...] = ()
    else:
        obs = (
            observer.PerChannelMinMaxObserver(ch_axis=ch_axis)
            if averaging_constant is None
            else observer.MovingAveragePerChannelMinMaxObserver(
                averaging_constant=averaging_constant, ch_axis=ch_axis
            )
        )
        shape = tuple(min_val.shape)
    obs.min_val = min_val.detach().clone().reshape(shape)
    obs.max_val = max_val.detach().clone().reshape(shape)
    obs(x)
    min_val.copy_(obs.min_val.reshape(min_val.shape))
    max_val.copy_(obs.max_val.reshape(max_val.shape))


def bfloat16_truncate(self: Tensor) -> Tensor:
    """The upper 16 bits of each float32 (a bit mask, exactly representable in bfloat16)."""
    truncated = (self.view(torch.int32) & -65536).view(torch.float32)
    return torch.where(self.isnan(), float("nan"), truncated).to(torch.bfloat16)


def _prune_smallest(magnitudes: Tensor, amount: float | int) -> Tensor:
    """The keep-mask (float64, on the CPU) of 1-D `magnitudes` with torch.nn.utils.prune's
    count of pruned entries (`amount`: a fraction, rounded half to even, or a count) of the
    smallest. Ties are broken by position, not by torch.topk's order (which differs between
    devices): of equal magnitudes the lower index is kept; NaN is the largest."""
    from torch.nn.utils import prune

    prune._validate_pruning_amount_init(amount)
    n = magnitudes.numel()
    prune._validate_pruning_amount(amount, n)
    count = prune._compute_nparams_toprune(amount, n)
    values = magnitudes.detach().double().cpu().tolist()
    order = sorted(range(n), key=lambda i: (math.isnan(values[i]), values[i], -i))
    mask = torch.ones(n, dtype=torch.float64)
    mask[order[:count]] = 0.0
    return mask


def magnitude_prune_mask(weight: Tensor, amount: float | int) -> Tensor:
    """torch.nn.utils.prune.L1Unstructured's mask, its ties broken by position (see
    _prune_smallest; tests/ops/test_prune.py compares with torch's on tie-free weights)."""
    w = weight.contiguous()
    return _prune_smallest(w.abs().reshape(-1), amount).reshape(w.shape).to(w)


def random_prune_mask(
    weight: Tensor, amount: float | int, *, generator: torch.Generator | None = None
) -> Tensor:
    """The deterministic amounts of random_unstructured (none or all pruned)."""
    from torch.nn.utils import prune

    w = weight.contiguous()
    return prune.RandomUnstructured(amount).compute_mask(w, torch.ones_like(w))


def global_magnitude_prune_masks(weights: list[Tensor], amount: float | int) -> list[Tensor]:
    """torch.nn.utils.prune.global_unstructured(L1Unstructured)'s masks: the magnitudes of
    every weight ranked together, ties broken by position (see _prune_smallest)."""
    flat = [w.detach().contiguous().abs().reshape(-1).double().cpu() for w in weights]
    mask = _prune_smallest(torch.cat(flat) if flat else torch.zeros(0), amount)
    masks = []
    for w, piece in zip(weights, mask.split([f.numel() for f in flat]), strict=True):
        masks.append(piece.reshape(w.shape).to(w))
    return masks


def channel_norm(weight: Tensor, p: float, dim: int) -> Tensor:
    dim = dim % weight.dim()
    others = [d for d in range(weight.dim()) if d != dim]
    if not others:  # a 1-D weight: each slice is one element
        return weight.abs()
    return torch.linalg.vector_norm(weight, ord=p, dim=others)


def ln_structured_mask(weight: Tensor, amount: float, n: float, dim: int) -> Tensor:
    """torch.nn.utils.prune's mask, on the float64 weight (tie-free norms: the op ranks
    unrounded norms)."""
    from torch.nn.utils import prune

    method = prune.LnStructured(amount, n, dim=dim)
    wide = weight.double()
    return method.compute_mask(wide, torch.ones_like(wide)).to(weight.dtype)  # type: ignore[no-any-return]
