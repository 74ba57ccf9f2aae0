"""References of convolution and integer GEMM (conv.yaml, int_gemm.yaml)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from opforge.reference._common import _masked


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


def repvgg_fuse(
    weight3x3: Tensor,
    bn3_weight: Tensor,
    bn3_bias: Tensor,
    bn3_mean: Tensor,
    bn3_var: Tensor,
    weight1x1: Tensor | None = None,
    bn1_weight: Tensor | None = None,
    bn1_bias: Tensor | None = None,
    bn1_mean: Tensor | None = None,
    bn1_var: Tensor | None = None,
    bnid_weight: Tensor | None = None,
    bnid_bias: Tensor | None = None,
    bnid_mean: Tensor | None = None,
    bnid_var: Tensor | None = None,
    eps: float = 1e-5,
    groups: int = 1,
) -> tuple[Tensor, Tensor]:
    """RepVGG re-parameterization (schemas/conv.yaml, repvgg_fuse): each branch's kernel
    scaled by t = gamma / sqrt(var + eps) with bias beta - mean * t, the 1x1 kernel added at
    the 3x3 centre, the identity as a 1x1 kernel with 1 at input channel o % (I / groups) of
    output channel o. Computed in float for float16/bfloat16, as the kernels."""
    dtype = weight3x3.dtype
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def fold(
        kernel: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor
    ) -> tuple[Tensor, Tensor]:
        gamma, beta, mean, var = (v.to(compute) for v in (gamma, beta, mean, var))
        t = gamma / torch.sqrt(var + eps)
        return kernel.to(compute) * t.reshape(-1, 1, 1, 1), beta - mean * t

    with torch.no_grad():
        # The product keeps weight3x3's layout; the other branches add in place.
        weight, bias = fold(weight3x3, bn3_weight, bn3_bias, bn3_mean, bn3_var)
        if weight1x1 is not None:
            assert bn1_weight is not None and bn1_bias is not None
            assert bn1_mean is not None and bn1_var is not None
            k1, b1 = fold(weight1x1, bn1_weight, bn1_bias, bn1_mean, bn1_var)
            weight[:, :, 1:2, 1:2] += k1
            bias = bias + b1
        if bnid_weight is not None:
            assert bnid_bias is not None and bnid_mean is not None and bnid_var is not None
            out_channels, in_per_group = weight3x3.shape[:2]
            identity = torch.zeros(
                out_channels, in_per_group, 1, 1, dtype=compute, device=weight3x3.device
            )
            o = torch.arange(out_channels, device=weight3x3.device)
            identity[o, o % in_per_group] = 1
            kid, bid = fold(identity, bnid_weight, bnid_bias, bnid_mean, bnid_var)
            weight[:, :, 1:2, 1:2] += kid
            bias = bias + bid
    return weight.to(dtype), bias.to(dtype)


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
