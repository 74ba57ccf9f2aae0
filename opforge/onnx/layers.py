"""ONNX forms of convolution, linear and dropout (Note [ONNX forms] in opforge/onnx/__init__.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnxscript import opset18 as op

from opforge.onnx import Unsupported, batched
from opforge.onnx.activation import ACTIVATIONS


def _pair(v: int | Sequence[int]) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v] * (2 // len(v))


def conv2d(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
) -> Any:
    pad = _pair(padding)
    attrs = {
        "strides": _pair(stride),
        "pads": pad + pad,
        "dilations": _pair(dilation),
        "group": int(groups),
    }
    return batched(
        input, lambda x: op.Conv(*((x, weight) if bias is None else (x, weight, bias)), **attrs)
    )


def conv2d_bias_act(
    input: Any,
    weight: Any,
    bias: Any = None,
    stride: Sequence[int] = (1, 1),
    padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    activation: str = "relu",
) -> Any:
    if activation not in ACTIVATIONS:
        raise Unsupported(f"opforge.conv2d_bias_act: activation '{activation}' has no ONNX form")
    return ACTIVATIONS[activation](conv2d(input, weight, bias, stride, padding, dilation, groups))


def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    out = op.MatMul(input, op.Transpose(weight, perm=[1, 0]))
    return out if bias is None else op.Add(out, bias)


def dropout(input: Any, p: float = 0.5, train: bool = True, generator: Any = None) -> Any:
    if train and p == 1:
        # zeros even where the input is inf or NaN, as the kernel writes them
        return op.Expand(op.CastLike(op.Constant(value_float=0.0), input), op.Shape(input))
    if train and p > 0:
        raise Unsupported(
            "opforge.dropout: 'train' with 0 < p < 1 draws a random mask, which has no "
            "ONNX form here; export the model in eval mode"
        )
    return op.Identity(input)
