"""Reference implementations of opforge's backward ops, in terms of ATen.

Tests and the demo compare each opforge op against its `reference:`; forward ops
name torch functions directly, backward ops name these.
"""

from __future__ import annotations

import warnings
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
    return grad_input, grad_weight, grad_bias


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
