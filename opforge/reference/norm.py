"""References of the norm family (schemas/norm.yaml)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from opforge.reference._common import _masked, _vjp


def _norm_input_grad(
    grad_out: Tensor,
    xhat: Tensor,
    rstd: Tensor,
    weight: Tensor | None,
    dims: Sequence[int],
    grad_mean: Tensor | None,
    grad_rstd: Tensor | None,
) -> Tensor:
    a = grad_out if weight is None else grad_out * weight
    n = 1
    for d in dims:
        n *= xhat.shape[d]
    dx = rstd * (a - a.mean(dims, keepdim=True) - xhat * (a * xhat).mean(dims, keepdim=True))
    if grad_mean is not None:
        dx = dx + grad_mean / n
    if grad_rstd is not None:
        dx = dx - grad_rstd * rstd * rstd * xhat / n
    return dx


def _sum_over(t: Tensor, dims: Sequence[int]) -> Tensor:
    return t.sum(tuple(dims)) if dims else t


def layer_norm_forward(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> tuple[Tensor, Tensor, Tensor]:
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    rstd = torch.rsqrt((input - mean).square().mean(dims, keepdim=True) + eps)
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def layer_norm_backward(
    grad_out: Tensor,
    input: Tensor,
    normalized_shape: Sequence[int],
    mean: Tensor,
    rstd: Tensor,
    output_mask: Sequence[bool],
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_rstd: Tensor | None = None,
) -> tuple[Tensor | None, ...]:
    axis = input.dim() - len(normalized_shape)
    dims = tuple(range(axis, input.dim()))
    xhat = (input - mean) * rstd
    dx = _norm_input_grad(grad_out, xhat, rstd, weight, dims, grad_mean, grad_rstd)
    lead = tuple(range(axis))
    return _masked((dx, _sum_over(grad_out * xhat, lead), _sum_over(grad_out, lead)), output_mask)


def layer_norm_double_backward(
    grad_grad_input: Tensor,
    grad_out: Tensor,
    input: Tensor,
    normalized_shape: Sequence[int],
    mean: Tensor,
    rstd: Tensor,
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_rstd: Tensor | None = None,
    grad_grad_weight: Tensor | None = None,
    grad_grad_bias: Tensor | None = None,
) -> tuple[Tensor, ...]:
    w = weight if weight is not None else input.new_ones(list(normalized_shape))
    gm = grad_mean if grad_mean is not None else torch.zeros_like(mean)
    gr = grad_rstd if grad_rstd is not None else torch.zeros_like(rstd)

    def backward(*t: Tensor) -> tuple[Tensor, ...]:
        out = layer_norm_backward(
            t[0], t[1], normalized_shape, t[2], t[3], [True] * 3, t[4], t[5], t[6]
        )
        return tuple(o for o in out if o is not None)

    cot = (grad_grad_input, grad_grad_weight, grad_grad_bias)
    return _vjp(backward, (grad_out, input, mean, rstd, w, gm, gr), cot)


def _group_views(input: Tensor, num_groups: int) -> tuple[list[int], list[int], list[int]]:
    """[N, G, C/G, HxW] for the input, [N, G, 1, 1] for statistics, [1, G, C/G, 1] for weights."""
    n, c = input.shape[0], input.shape[1]
    hw = 1
    for s in input.shape[2:]:
        hw *= s
    d = c // num_groups
    return [n, num_groups, d, hw], [n, num_groups, 1, 1], [1, num_groups, d, 1]


def group_norm_forward(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> tuple[Tensor, Tensor, Tensor]:
    xv, sv, wv = _group_views(input, num_groups)
    x = input.reshape(xv)
    mean = x.mean((2, 3), keepdim=True)
    rstd = torch.rsqrt((x - mean).square().mean((2, 3), keepdim=True) + eps)
    out = (x - mean) * rstd
    if weight is not None:
        out = out * weight.reshape(wv)
    if bias is not None:
        out = out + bias.reshape(wv)
    stat = sv[:2]
    return out.reshape(input.shape), mean.reshape(stat), rstd.reshape(stat)


def group_norm_backward(
    grad_out: Tensor,
    input: Tensor,
    num_groups: int,
    mean: Tensor,
    rstd: Tensor,
    output_mask: Sequence[bool],
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_rstd: Tensor | None = None,
) -> tuple[Tensor | None, ...]:
    xv, sv, wv = _group_views(input, num_groups)
    g = grad_out.reshape(xv)
    r = rstd.reshape(sv)
    xhat = (input.reshape(xv) - mean.reshape(sv)) * r
    w = None if weight is None else weight.reshape(wv)
    gm = None if grad_mean is None else grad_mean.reshape(sv)
    gr = None if grad_rstd is None else grad_rstd.reshape(sv)
    dx = _norm_input_grad(g, xhat, r, w, (2, 3), gm, gr).reshape(input.shape)
    c = input.shape[1]
    dw = (g * xhat).sum((0, 3)).reshape(c)
    return _masked((dx, dw, g.sum((0, 3)).reshape(c)), output_mask)


def group_norm_double_backward(
    grad_grad_input: Tensor,
    grad_out: Tensor,
    input: Tensor,
    num_groups: int,
    mean: Tensor,
    rstd: Tensor,
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_rstd: Tensor | None = None,
    grad_grad_weight: Tensor | None = None,
    grad_grad_bias: Tensor | None = None,
) -> tuple[Tensor, ...]:
    w = weight if weight is not None else input.new_ones(input.shape[1])
    gm = grad_mean if grad_mean is not None else torch.zeros_like(mean)
    gr = grad_rstd if grad_rstd is not None else torch.zeros_like(rstd)

    def backward(*t: Tensor) -> tuple[Tensor, ...]:
        out = group_norm_backward(t[0], t[1], num_groups, t[2], t[3], [True] * 3, t[4], t[5], t[6])
        return tuple(o for o in out if o is not None)

    cot = (grad_grad_input, grad_grad_weight, grad_grad_bias)
    return _vjp(backward, (grad_out, input, mean, rstd, w, gm, gr), cot)


def local_response_norm_backward(
    grad_output: Tensor, input: Tensor, size: int, alpha: float, beta: float, k: float
) -> Tensor:
    x = input.detach().requires_grad_()
    with torch.enable_grad():
        y = torch.nn.functional.local_response_norm(x, size, alpha, beta, k)
    (grad,) = torch.autograd.grad(y, x, grad_output)
    return grad


def batch_norm(
    input: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """torch.nn.functional.batch_norm with the arguments in ATen's order."""
    return torch.nn.functional.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def _channel_views(input: Tensor) -> tuple[list[int], list[int]]:
    """[N, C, HxW] for the input, [1, C, 1] for per-channel tensors."""
    hw = 1
    for s in input.shape[2:]:
        hw *= s
    return [input.shape[0], input.shape[1], hw], [1, input.shape[1], 1]


def batch_norm_forward(
    input: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> tuple[Tensor, Tensor, Tensor]:
    xv, cv = _channel_views(input)
    x = input.reshape(xv)
    if training:
        mean = x.mean((0, 2))
        var = (x - mean.reshape(cv)).square().mean((0, 2))
        n = xv[0] * xv[2]
        with torch.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(momentum * mean)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(momentum * n / (n - 1) * var)
    else:
        assert running_mean is not None and running_var is not None
        # Constants in eval mode; opforge's outputs still hang off its autograd node (every
        # floating output does), so tie these to the input with a zero term for autograd.grad.
        zero = input.sum() * 0
        mean, var = running_mean + zero, running_var + zero
    invstd = torch.rsqrt(var + eps)
    out = (x - mean.reshape(cv)) * invstd.reshape(cv)
    if weight is not None:
        out = out * weight.reshape(cv)
    if bias is not None:
        out = out + bias.reshape(cv)
    return out.reshape(input.shape), mean, invstd


def batch_norm_backward(
    grad_out: Tensor,
    input: Tensor,
    save_mean: Tensor,
    save_invstd: Tensor,
    training: bool,
    output_mask: Sequence[bool],
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_invstd: Tensor | None = None,
) -> tuple[Tensor | None, ...]:
    xv, cv = _channel_views(input)
    g = grad_out.reshape(xv)
    r = save_invstd.reshape(cv)
    xhat = (input.reshape(xv) - save_mean.reshape(cv)) * r
    w = None if weight is None else weight.reshape(cv)
    if training:
        gm = None if grad_mean is None else grad_mean.reshape(cv)
        gi = None if grad_invstd is None else grad_invstd.reshape(cv)
        dx = _norm_input_grad(g, xhat, r, w, (0, 2), gm, gi)
    else:
        dx = g * r if w is None else g * w * r
    return _masked((dx.reshape(input.shape), (g * xhat).sum((0, 2)), g.sum((0, 2))), output_mask)


def batch_norm_double_backward(
    grad_grad_input: Tensor,
    grad_out: Tensor,
    input: Tensor,
    save_mean: Tensor,
    save_invstd: Tensor,
    training: bool,
    weight: Tensor | None = None,
    grad_mean: Tensor | None = None,
    grad_invstd: Tensor | None = None,
    grad_grad_weight: Tensor | None = None,
    grad_grad_bias: Tensor | None = None,
) -> tuple[Tensor, ...]:
    w = weight if weight is not None else input.new_ones(input.shape[1])
    gm = grad_mean if grad_mean is not None else torch.zeros_like(save_mean)
    gi = grad_invstd if grad_invstd is not None else torch.zeros_like(save_invstd)

    def backward(*t: Tensor) -> tuple[Tensor, ...]:
        out = batch_norm_backward(t[0], t[1], t[2], t[3], training, [True] * 3, t[4], t[5], t[6])
        return tuple(o for o in out if o is not None)

    cot = (grad_grad_input, grad_grad_weight, grad_grad_bias)
    return _vjp(backward, (grad_out, input, save_mean, save_invstd, w, gm, gi), cot)
