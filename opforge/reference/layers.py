"""References of layers, pooling, init, activations, reductions and softmax."""

from __future__ import annotations

import math
from collections.abc import Sequence

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
