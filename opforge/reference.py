"""Reference implementations of opforge's backward ops, in terms of ATen.

Tests and the demo compare each opforge op against its `reference:`; forward ops
name torch functions directly, backward ops name these.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor


def relu_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    return torch.ops.aten.threshold_backward(grad_output, output, 0)


def gelu_backward(grad_output: Tensor, self: Tensor, *, approximate: str = "none") -> Tensor:
    return torch.ops.aten.gelu_backward(grad_output, self, approximate=approximate)


def softmax_backward(grad_output: Tensor, output: Tensor, dim: int) -> Tensor:
    return torch.ops.aten._softmax_backward_data(grad_output, output, dim, output.dtype)


def log_softmax_backward(grad_output: Tensor, output: Tensor, dim: int) -> Tensor:
    return torch.ops.aten._log_softmax_backward_data(grad_output, output, dim, output.dtype)


def sum_backward(
    grad_output: Tensor,
    sizes: Sequence[int],
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
) -> Tensor:
    grad = grad_output
    if not keepdim and dim is not None and grad.dim() < len(sizes):
        dims = [dim] if isinstance(dim, int) else list(dim)
        for d in sorted(x % len(sizes) for x in dims):
            grad = grad.unsqueeze(d)
    return grad.expand(list(sizes))


def add_relu(self: Tensor, other: Tensor, *, alpha: float = 1) -> Tensor:
    return torch.relu(torch.add(self, other, alpha=alpha))


def leaky_relu_backward(grad_output: Tensor, self: Tensor, negative_slope: float) -> Tensor:
    return torch.ops.aten.leaky_relu_backward(grad_output, self, negative_slope, False)


def elu_backward(grad_output: Tensor, self: Tensor, alpha: float) -> Tensor:
    return torch.ops.aten.elu_backward(grad_output, alpha, 1, 1, False, self)


def softplus_backward(grad_output: Tensor, self: Tensor, beta: float, threshold: float) -> Tensor:
    return torch.ops.aten.softplus_backward(grad_output, self, beta, threshold)


def sigmoid_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    return torch.ops.aten.sigmoid_backward(grad_output, output)


def tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    return torch.ops.aten.tanh_backward(grad_output, output)


def silu_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return torch.ops.aten.silu_backward(grad_output, self)


def hardsigmoid_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return torch.ops.aten.hardsigmoid_backward(grad_output, self)


def hardswish_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return torch.ops.aten.hardswish_backward(grad_output, self)


def prelu_backward(grad_output: Tensor, self: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    x = self.detach().requires_grad_()
    w = weight.detach().requires_grad_()
    with torch.enable_grad():
        y = torch.nn.functional.prelu(x, w)
    grad_self, grad_weight = torch.autograd.grad(y, (x, w), grad_output)
    return grad_self, grad_weight


# --- layers (schemas/layers.yaml) ---------------------------------------------------------------


def linear_backward(
    grad_output: Tensor, input: Tensor, weight: Tensor, output_mask: Sequence[bool]
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    out_features, in_features = weight.shape
    rows = math.prod(input.shape[:-1])
    g = grad_output.reshape(rows, out_features)
    x = input.reshape(rows, in_features)
    return (
        (g @ weight).reshape(input.shape) if output_mask[0] else None,
        g.T @ x if output_mask[1] else None,
        g.sum(0) if output_mask[2] else None,
    )


def linear_double_backward(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    output_mask: Sequence[bool],
    grad_grad_input: Tensor | None = None,
    grad_grad_weight: Tensor | None = None,
    grad_grad_bias: Tensor | None = None,
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    # linear_backward is bilinear: differentiate <grads, outputs> through torch's autograd,
    # keeping the graph so that this reference is differentiable itself.
    with torch.enable_grad():
        g, x, w = (
            t if t.requires_grad else t.detach().requires_grad_()
            for t in (grad_output, input, weight)
        )
        outs = linear_backward(g, x, w, [True, True, True])
        total = g.sum() * 0
        for o, gg in zip(outs, (grad_grad_input, grad_grad_weight, grad_grad_bias), strict=True):
            if o is not None and gg is not None:
                total = total + (o * gg).sum()
        grads = torch.autograd.grad(
            total, (g, x, w), create_graph=True, allow_unused=True, materialize_grads=True
        )
    return tuple(gr if m else None for gr, m in zip(grads, output_mask, strict=True))  # type: ignore[return-value]


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1) -> Tensor:
    # opforge's argument order and padding convention (-1: none) -> torch's.
    return torch.nn.functional.embedding(
        indices, weight, padding_idx=None if padding_idx == -1 else padding_idx
    )


def embedding_backward(
    grad_output: Tensor, indices: Tensor, num_weights: int, padding_idx: int = -1
) -> Tensor:
    grad: Tensor = torch.ops.aten.embedding_dense_backward(
        grad_output, indices, num_weights, padding_idx, False
    )
    return grad


# --- pooling (schemas/pooling.yaml) ---


def max_pool2d_with_indices(
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] | int = 0,
    dilation: Sequence[int] | int = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    out, indices = torch.ops.aten.max_pool2d_with_indices(
        self, kernel_size, stride, padding, dilation, ceil_mode
    )
    return out, indices


def avg_pool2d_backward(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None = None,
) -> Tensor:
    return torch.ops.aten.avg_pool2d_backward(
        grad_output,
        self,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def adaptive_avg_pool2d_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    return torch.ops.aten._adaptive_avg_pool2d_backward(grad_output, self)


def adaptive_max_pool2d_with_indices(
    self: Tensor, output_size: Sequence[int] | int
) -> tuple[Tensor, Tensor]:
    out, indices = torch.nn.functional.adaptive_max_pool2d(self, output_size, return_indices=True)
    return out, indices


def spatial_pyramid_pool(
    self: Tensor, levels: Sequence[int] = (4, 2, 1), mode: str = "max"
) -> Tensor:
    pool = {
        "max": torch.nn.functional.adaptive_max_pool2d,
        "avg": torch.nn.functional.adaptive_avg_pool2d,
    }[mode]
    return torch.cat([pool(self, n).flatten(1) for n in levels], 1)


def spatial_pyramid_pool_backward(
    grad_output: Tensor, self: Tensor, levels: Sequence[int], mode: str
) -> Tensor:
    x = self.detach().requires_grad_()
    with torch.enable_grad():
        y = spatial_pyramid_pool(x, levels, mode)
    (grad,) = torch.autograd.grad(y, (x,), grad_output)
    return grad


# ---- norm family (schemas/norm.yaml) ---------------------------------------------------------
# The backward references are the formulas of Note [Norm backward coefficients] written with
# differentiable torch ops, mean and rstd being independent inputs: autograd through them gives
# the partial derivatives the double backward ops must match.


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


def _masked(values: tuple[Tensor, ...], mask: Sequence[bool]) -> tuple[Tensor | None, ...]:
    return tuple(v if m else None for v, m in zip(values, mask, strict=True))


def _vjp(
    fn: Callable[..., tuple[Tensor, ...]],
    inputs: Sequence[Tensor],
    cotangents: Sequence[Tensor | None],
) -> tuple[Tensor, ...]:
    """Gradients of sum(<cotangent, fn(*inputs)>) with respect to every input (zeros where
    unused), differentiable again when the inputs require grad."""
    with torch.enable_grad():
        ins = [t if t.requires_grad else t.detach().requires_grad_() for t in inputs]
        outs = fn(*ins)
        pairs = [(o, c) for o, c in zip(outs, cotangents, strict=True) if c is not None]
        if not pairs:
            return tuple(torch.zeros_like(t) for t in inputs)
        grads = torch.autograd.grad(
            [o for o, _ in pairs],
            ins,
            [c for _, c in pairs],
            create_graph=True,
            allow_unused=True,
        )
    return tuple(
        torch.zeros_like(t) if g is None else g for g, t in zip(grads, inputs, strict=True)
    )


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


# dropout's random masks have no exact reference: these cover the calls without randomness
# (the battery's samples); tests/ops/test_layers.py checks the random ones.
def dropout(
    input: Tensor, p: float = 0.5, train: bool = True, *, generator: torch.Generator | None = None
) -> Tensor:
    return dropout_forward(input, p, train, generator)[0]


def dropout_forward(
    input: Tensor, p: float, train: bool, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    if not train or p == 0:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    if p == 1:
        return input * 0, torch.zeros_like(input, dtype=torch.bool)
    raise NotImplementedError("dropout with 0 < p < 1 is random: see tests/ops/test_layers.py")


def dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    grad: Tensor = torch.ops.aten.native_dropout_backward(grad_output, mask, scale)
    return grad


def max_pool2d_backward(
    grad_output: Tensor,
    self: Tensor,
    indices: Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] | int = 0,
    dilation: Sequence[int] | int = 1,
    ceil_mode: bool = False,
) -> Tensor:
    return torch.ops.aten.max_pool2d_with_indices_backward(
        grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices
    )


def adaptive_max_pool2d_backward(grad_output: Tensor, self: Tensor, indices: Tensor) -> Tensor:
    return torch.ops.aten.adaptive_max_pool2d_backward(grad_output, self, indices)


# --- conv family (schemas/conv.yaml) ---


def conv2d_backward(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    unbatched = input.dim() == 3
    grad_input, grad_weight, grad_bias = torch.ops.aten.convolution_backward(
        grad_output.unsqueeze(0) if unbatched else grad_output,
        input.unsqueeze(0) if unbatched else input,
        weight,
        [weight.shape[0]],
        list(stride),
        list(padding),
        list(dilation),
        False,
        [0, 0],
        groups,
        list(output_mask),
    )
    if unbatched and grad_input is not None:
        grad_input = grad_input.squeeze(0)
    # ATen may compute an output the mask leaves out (the weight gradient with the bias's).
    return _masked((grad_input, grad_weight, grad_bias), output_mask)


def conv2d_padding(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str = "valid",
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    with warnings.catch_warnings():
        # PyTorch's performance note about even kernels with padding='same', not an error.
        warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")
        return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv2d_double_backward(
    grad_grad_input: Tensor | None,
    grad_grad_weight: Tensor | None,
    grad_grad_bias: Tensor | None,
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    """ATen's double backward of conv2d, through torch.autograd (differentiable again)."""
    with torch.enable_grad():
        primals = [
            t if t.requires_grad else t.detach().requires_grad_()
            for t in (grad_output, input, weight)
        ]
        gy, x, w = primals
        b = torch.zeros(w.shape[0], dtype=w.dtype, device=w.device, requires_grad=True)
        y = torch.nn.functional.conv2d(x, w, b, list(stride), list(padding), list(dilation), groups)
        first = torch.autograd.grad(y, (x, w, b), gy, create_graph=True)
        pairs = [
            (f, g)
            for f, g in zip(first, (grad_grad_input, grad_grad_weight, grad_grad_bias), strict=True)
            if g is not None
        ]
        got = torch.autograd.grad(
            [f for f, _ in pairs],
            primals,
            [g for _, g in pairs],
            allow_unused=True,
            create_graph=True,
        )
    return tuple(  # type: ignore[return-value]
        (g if g is not None else torch.zeros_like(p)) if m else None
        for g, p, m in zip(got, primals, output_mask, strict=True)
    )


_CONV_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "none": lambda t: t,
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "hardswish": torch.nn.functional.hardswish,
    "gelu": torch.nn.functional.gelu,
}


def conv2d_bias_act(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    activation: str = "relu",
) -> Tensor:
    y = torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return _CONV_ACTIVATIONS[activation](y)


def fold_conv_bn(
    conv_weight: Tensor,
    conv_bias: Tensor | None,
    bn_weight: Tensor,
    bn_bias: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    eps: float,
) -> tuple[Tensor, Tensor]:
    weight, bias = torch.nn.utils.fusion.fuse_conv_bn_weights(
        conv_weight, conv_bias, running_mean, running_var, eps, bn_weight, bn_bias
    )
    return weight.detach(), bias.detach()


def conv_transpose2d_backward(
    grad_output: Tensor,
    input: Tensor,
    weight: Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    groups: int,
    dilation: Sequence[int],
    output_mask: Sequence[bool],
) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
    unbatched = input.dim() == 3
    grad_input, grad_weight, grad_bias = torch.ops.aten.convolution_backward(
        grad_output.unsqueeze(0) if unbatched else grad_output,
        input.unsqueeze(0) if unbatched else input,
        weight,
        [weight.shape[1] * groups],
        list(stride),
        list(padding),
        list(dilation),
        True,
        list(output_padding),
        groups,
        list(output_mask),
    )
    if unbatched and grad_input is not None:
        grad_input = grad_input.squeeze(0)
    # ATen may compute an output the mask leaves out (the weight gradient with the bias's).
    return _masked((grad_input, grad_weight, grad_bias), output_mask)


# Losses: torch.nn.functional's signatures put the deprecated size_average and
# reduce before `reduction`, so the forward references pass it by keyword, and
# the backward references differentiate the forward (schemas/loss.yaml).


def mse_loss(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return torch.nn.functional.mse_loss(self, target, reduction=reduction)


def l1_loss(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return torch.nn.functional.l1_loss(self, target, reduction=reduction)


def smooth_l1_loss(
    self: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    return torch.nn.functional.smooth_l1_loss(self, target, reduction=reduction, beta=beta)


def binary_cross_entropy(
    self: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    return torch.nn.functional.binary_cross_entropy(self, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return torch.nn.functional.binary_cross_entropy_with_logits(
        self, target, weight, reduction=reduction, pos_weight=pos_weight
    )


def kl_div(
    self: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False
) -> Tensor:
    with warnings.catch_warnings():  # torch warns that 'mean' is not the true KL divergence
        warnings.simplefilter("ignore")
        return torch.nn.functional.kl_div(self, target, reduction=reduction, log_target=log_target)


def sigmoid_focal_loss(
    self: Tensor, target: Tensor, alpha: float = 0.25, gamma: float = 2.0, reduction: str = "none"
) -> Tensor:
    """torchvision.ops.sigmoid_focal_loss (a test dependency, imported on first use)."""
    from torchvision.ops import sigmoid_focal_loss as focal

    return focal(self, target, alpha=alpha, gamma=gamma, reduction=reduction)


def _loss_grad(
    forward: Callable[..., Tensor],
    grad_output: Tensor,
    inputs: Sequence[Tensor],
    wrt: int,
    *rest: Any,
) -> Tensor:
    """d <grad_output, forward(*inputs, *rest)> / d inputs[wrt]."""
    grads = _vjp(lambda *ins: (forward(*ins, *rest),), inputs, [grad_output])
    return grads[wrt]


def mse_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: str) -> Tensor:
    return _loss_grad(mse_loss, grad_output, [self, target], 0, reduction)


def l1_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: str) -> Tensor:
    return _loss_grad(l1_loss, grad_output, [self, target], 0, reduction)


def huber_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, delta: float
) -> Tensor:
    return _loss_grad(
        torch.nn.functional.huber_loss, grad_output, [self, target], 0, reduction, delta
    )


def smooth_l1_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, beta: float
) -> Tensor:
    return _loss_grad(smooth_l1_loss, grad_output, [self, target], 0, reduction, beta)


def binary_cross_entropy_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return torch.ops.aten.binary_cross_entropy_backward(
        grad_output, self, target, weight, _REDUCTIONS[reduction]
    )


def binary_cross_entropy_with_logits_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(
        binary_cross_entropy_with_logits,
        grad_output,
        [self, target],
        0,
        weight,
        pos_weight,
        reduction,
    )


def binary_cross_entropy_target_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(binary_cross_entropy, grad_output, [self, target], 1, weight, reduction)


def binary_cross_entropy_with_logits_target_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(
        binary_cross_entropy_with_logits,
        grad_output,
        [self, target],
        1,
        weight,
        pos_weight,
        reduction,
    )


def kl_div_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, log_target: bool
) -> Tensor:
    # + self * 0: the gradient does not depend on self, and a None would not compare.
    return _loss_grad(kl_div, grad_output, [self, target], 0, reduction, log_target) + self * 0


def kl_div_target_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, log_target: bool
) -> Tensor:
    return _loss_grad(kl_div, grad_output, [self, target], 1, reduction, log_target)


def sigmoid_focal_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, alpha: float, gamma: float, reduction: str
) -> Tensor:
    return _loss_grad(sigmoid_focal_loss, grad_output, [self, target], 0, alpha, gamma, reduction)


def sigmoid_focal_loss_target_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, alpha: float, gamma: float, reduction: str
) -> Tensor:
    return _loss_grad(sigmoid_focal_loss, grad_output, [self, target], 1, alpha, gamma, reduction)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def cross_entropy(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    return torch.nn.functional.cross_entropy(
        self,
        target,
        weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def nll_loss(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    return torch.nn.functional.nll_loss(
        self, target, weight, ignore_index=ignore_index, reduction=reduction
    )


def _target_weights(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> Tensor:
    """w[target] per position, 0 where the target is ignore_index."""
    classes = self.shape[0 if self.dim() == 1 else 1]
    w = weight if weight is not None else torch.ones(classes, dtype=self.dtype, device=self.device)
    ignored = target == ignore_index
    picked = (
        w[target.masked_fill(ignored, 0)]
        if classes > 0
        else torch.zeros_like(target, dtype=w.dtype)
    )
    return torch.where(ignored, torch.zeros_like(picked), picked)


def cross_entropy_forward(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, label_smoothing: float
) -> tuple[Tensor, Tensor]:
    loss = cross_entropy(self, target, weight, ignore_index, "none", label_smoothing)
    return loss, _target_weights(self, target, weight, ignore_index)


def nll_loss_forward(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> tuple[Tensor, Tensor]:
    loss = nll_loss(self, target, weight, ignore_index, "none")
    return loss, _target_weights(self, target, weight, ignore_index)


def cross_entropy_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    label_smoothing: float,
) -> Tensor:
    return _loss_grad(
        cross_entropy, grad_output, [self], 0, target, weight, ignore_index, "none", label_smoothing
    )


def nll_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> Tensor:
    """-w[t] grad_output scattered to each position's target class (ATen's own nll_loss
    backward needs a contiguous grad_output)."""
    class_dim = 0 if self.dim() == 1 else 1
    scaled = -_target_weights(self, target, weight, ignore_index) * grad_output
    index = target.masked_fill(target == ignore_index, 0).unsqueeze(class_dim)
    # self * 0: zero gradients in self, as the op's (a gradient of None would not compare).
    return (self * 0).scatter(class_dim, index, scaled.unsqueeze(class_dim).to(self.dtype))


def distillation_loss(
    s_logits: Tensor, t_logits: Tensor, target: Tensor, T: float = 1.0, alpha: float = 0.5
) -> Tensor:
    """CE(s, target) + alpha T^2 kl_div(log_softmax(s / T), softmax(t / T), 'batchmean')."""
    F = torch.nn.functional
    soft = F.kl_div(
        F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1), reduction="batchmean"
    )
    return F.cross_entropy(s_logits, target) + alpha * T * T * soft


def cross_entropy_double_backward(
    grad_grad_input: Tensor,
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    label_smoothing: float,
) -> tuple[Tensor, Tensor]:
    def backward(g: Tensor, s: Tensor) -> tuple[Tensor]:
        return (cross_entropy_backward(g, s, target, weight, ignore_index, label_smoothing),)

    g, s = _vjp(backward, [grad_output, self], [grad_grad_input])
    return g, s


# The initialization fills are random: these cover the calls without randomness (the
# battery's samples: zero-width ranges, std 0, empty tensors); tests/ops/test_init.py
# checks the distributions. Each returns a new tensor like `tensor`, as the functional ops.
def _deterministic_fill(tensor: Tensor, value: float | None, what: str) -> Tensor:
    if tensor.numel() == 0:
        return tensor.clone()
    if value is None:
        raise NotImplementedError(f"{what} is random: see tests/ops/test_init.py")
    return torch.full_like(tensor, value)


def uniform(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return _deterministic_fill(tensor, a if a == b else None, "uniform with a < b")


def normal(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return _deterministic_fill(tensor, mean if std == 0 else None, "normal with std > 0")


def trunc_normal(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    value = min(max(mean, a), b) if std == 0 else None
    return _deterministic_fill(tensor, value, "trunc_normal with std > 0")


def constant(tensor: Tensor, val: float) -> Tensor:
    return torch.full_like(tensor, val)


def kaiming_uniform(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
) -> Tensor:
    return _deterministic_fill(tensor, None, "kaiming_uniform")


def kaiming_normal(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
) -> Tensor:
    return _deterministic_fill(tensor, None, "kaiming_normal")


def xavier_uniform(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return _deterministic_fill(tensor, None, "xavier_uniform")


def xavier_normal(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return _deterministic_fill(tensor, None, "xavier_normal")


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


# --- Affine quantization and observers ------------------------------------------------------
# quantized_decomposed's ops (registered by importing the module) and torch.ao.quantization's
# observer rules; results as plain tensors in the op's layout.


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


def clip_grad_norm_(grads: list[Tensor], max_norm: float, norm_type: float = 2.0) -> Tensor:
    """torch.nn.utils.clip_grad_norm_ over parameters whose .grad are `grads` (scaled in place)."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.empty_like(g))
        p.grad = g
        params.append(p)
    return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, foreach=False)


def _decomposed() -> Any:
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers the ops)

    return torch.ops.quantized_decomposed


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


def int8_mm(self: Tensor, mat2: Tensor) -> Tensor:
    # Exact in float64 (|sums| < 2^53), on any device.
    return (self.double() @ mat2.double()).to(torch.int32)


def quantized_linear(
    input: Tensor,
    input_scale: float,
    input_zero_point: int,
    weight: Tensor,
    weight_scales: Tensor,
    weight_zero_points: Tensor,
    bias: Tensor | None,
    output_scale: float,
    output_zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
) -> Tensor:
    """The op's definition in float64: exact integer accumulators, one requantization."""
    x = input.double().reshape(-1, input.shape[-1]) - input_zero_point
    w = weight.double() - weight_zero_points.double()[:, None]
    v = (x @ w.T) * (input_scale * weight_scales.double())
    if bias is not None:
        v = v + bias.double()
    q = torch.clamp(torch.round(v / output_scale) + output_zero_point, quant_min, quant_max)
    return q.to(dtype).reshape(*input.shape[:-1], weight.shape[0])


def quantized_conv2d(
    input: Tensor,
    input_scale: float,
    input_zero_point: int,
    weight: Tensor,
    weight_scales: Tensor,
    weight_zero_points: Tensor,
    bias: Tensor | None,
    output_scale: float,
    output_zero_point: int,
    quant_min: int,
    quant_max: int,
    dtype: torch.dtype,
    stride: int | list[int] = 1,
    padding: int | list[int] = 0,
    dilation: int | list[int] = 1,
    groups: int = 1,
) -> Tensor:
    """The op's definition in float64: a convolution of the zero-point-shifted integers
    (exact: every partial sum is an integer below 2^53), one requantization."""
    x = input.double() - input_zero_point
    w = weight.double() - weight_zero_points.double()[:, None, None, None]
    acc = torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups)
    channel = (-1, 1, 1)
    v = acc * (input_scale * weight_scales.double()).reshape(channel)
    if bias is not None:
        v = v + bias.double().reshape(channel)
    q = torch.clamp(torch.round(v / output_scale) + output_zero_point, quant_min, quant_max)
    return q.to(dtype)


# --- Pruning --------------------------------------------------------------------------------


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


# --- Optimizer steps -----------------------------------------------------------------------
# References of the fused multi-tensor steps: torch.optim's single-tensor (foreach=False)
# math, one tensor at a time, mutating the given lists and returning None. A fused kernel
# reads each element once, computes in the opmath type and writes each state once, so for
# bfloat16/float16 tensors these compute in float32 and round once per state write, the
# rest of the update reading the stored (rounded) state as torch does (torch also rounds
# every intermediate: 16-bit trajectories agree only loosely). The arithmetic otherwise
# follows torch's order (lerp for the first moments, sqrt then add eps, ...), so float32
# results match torch.optim bit for bit.


def _opmath(t: Tensor) -> Tensor:
    """t widened to the type a kernel computes in: float32 for the 16-bit floats."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


def _store(state: Tensor, value: Tensor) -> Tensor:
    """Writes value into state; returns what was stored, widened, for the rest of the update."""
    state.copy_(value)
    return _opmath(state)


def _step_grad(param: Tensor, grad: Tensor, weight_decay: float, maximize: bool) -> Tensor:
    """The gradient the update uses: negated to maximize, plus L2 weight decay (opmath)."""
    g = _opmath(grad)
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g.add(_opmath(param), alpha=weight_decay)
    return g


def sgd_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    momentum_buffers: Sequence[Tensor],
    *,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
    is_first_step: bool = False,
) -> None:
    """torch.optim.SGD's step; momentum_buffers (empty without momentum) are allocated by the
    caller, and on is_first_step they are set to the gradient, as torch's fresh buffer is."""
    for i, (param, grad) in enumerate(zip(params, grads, strict=True)):
        g = _step_grad(param, grad, weight_decay, maximize)
        if momentum != 0:
            buf = momentum_buffers[i]
            b = g if is_first_step else _opmath(buf).mul(momentum).add(g, alpha=1 - dampening)
            b = _store(buf, b)
            g = g.add(b, alpha=momentum) if nesterov else b
        param.copy_(_opmath(param).add(g, alpha=-lr))


def _adam_step(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
) -> None:
    """Adam (L2 decay in the gradient) or AdamW (decoupled decay of the parameter)."""
    for i, param in enumerate(params):
        p = _opmath(param)
        g = _step_grad(param, grads[i], 0.0 if decoupled else weight_decay, maximize)
        if decoupled and weight_decay != 0:
            p = p.mul(1 - lr * weight_decay)
        m = _store(exp_avgs[i], _opmath(exp_avgs[i]).lerp(g, 1 - beta1))
        v = _opmath(exp_avg_sqs[i]).mul(beta2).addcmul(g, g, value=1 - beta2)
        v = _store(exp_avg_sqs[i], v)
        step = float(state_steps[i])  # already incremented by the caller
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if amsgrad:
            v_max = _store(max_exp_avg_sqs[i], torch.maximum(_opmath(max_exp_avg_sqs[i]), v))
            denom = (v_max.sqrt() / bias_correction2_sqrt).add(eps)
        else:
            denom = (v.sqrt() / bias_correction2_sqrt).add(eps)
        param.copy_(p.addcdiv(m, denom, value=-step_size))


def adam_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
) -> None:
    """torch.optim.Adam's step; state_steps hold the count after this step's increment."""
    _adam_step(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
        lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
        amsgrad=amsgrad, maximize=maximize, decoupled=False,
    )  # fmt: skip


def adamw_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
) -> None:
    """torch.optim.AdamW's step: p *= 1 - lr * weight_decay before the Adam update."""
    _adam_step(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
        lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
        amsgrad=amsgrad, maximize=maximize, decoupled=True,
    )  # fmt: skip


def adagrad_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    state_sums: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    lr_decay: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """torch.optim.Adagrad's dense step; state_steps already incremented."""
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps, strict=True):
        g = _step_grad(param, grad, weight_decay, maximize)
        clr = lr / (1 + (float(step_t) - 1) * lr_decay)
        s = _store(state_sum, _opmath(state_sum).addcmul(g, g, value=1))
        param.copy_(_opmath(param).addcdiv(g, s.sqrt().add(eps), value=-clr))


def rmsprop_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    square_avgs: Sequence[Tensor],
    grad_avgs: Sequence[Tensor],
    momentum_buffers: Sequence[Tensor],
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    centered: bool,
    maximize: bool,
    eps_in_sqrt: bool = False,
) -> None:
    """torch.optim.RMSprop's step (grad_avgs only when centered, momentum_buffers only when
    momentum > 0); eps_in_sqrt puts eps under the square root, as TensorFlow does."""
    for i, param in enumerate(params):
        g = _step_grad(param, grads[i], weight_decay, maximize)
        sq = _opmath(square_avgs[i]).mul(alpha).addcmul(g, g, value=1 - alpha)
        var = sq = _store(square_avgs[i], sq)
        if centered:
            grad_avg = _store(grad_avgs[i], _opmath(grad_avgs[i]).lerp(g, 1 - alpha))
            var = sq.addcmul(grad_avg, grad_avg, value=-1)
        avg = var.add(eps).sqrt() if eps_in_sqrt else var.sqrt().add(eps)
        if momentum > 0:
            buf = _opmath(momentum_buffers[i]).mul(momentum).addcdiv(g, avg)
            buf = _store(momentum_buffers[i], buf)
            param.copy_(_opmath(param).add(buf, alpha=-lr))
        else:
            param.copy_(_opmath(param).addcdiv(g, avg, value=-lr))


def adadelta_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    square_avgs: Sequence[Tensor],
    acc_deltas: Sequence[Tensor],
    *,
    lr: float,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """torch.optim.Adadelta's step."""
    for param, grad, square_avg, acc_delta in zip(
        params, grads, square_avgs, acc_deltas, strict=True
    ):
        g = _step_grad(param, grad, weight_decay, maximize)
        sq = _store(square_avg, _opmath(square_avg).mul(rho).addcmul(g, g, value=1 - rho))
        acc = _opmath(acc_delta)
        delta = acc.add(eps).sqrt().div(sq.add(eps).sqrt()).mul(g)
        acc_delta.copy_(acc.mul(rho).addcmul(delta, delta, value=1 - rho))
        param.copy_(_opmath(param).add(delta, alpha=-lr))


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


# --- RoI ops (schemas/roi.yaml): roi_align's 'avg' mode and roi_pool's values are
# torchvision.ops' (a test dependency, imported on first use); roi_align's 'max' mode
# (mmcv's pool_mode='max', which cannot be installed here) and roi_pool's argmax are
# written out below in torch ops, with the kernels' arithmetic in the boxes' dtype.


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
