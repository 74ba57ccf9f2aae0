"""ONNX forms of the activations and add (Note [ONNX forms] in opforge/onnx/__init__.py)."""

from __future__ import annotations

import math
from typing import Any

from onnxscript import opset18 as op

from opforge.onnx import Unsupported


def _c(value: float, like: Any) -> Any:
    """A scalar constant in the dtype of `like`."""
    return op.CastLike(op.Constant(value_float=value), like)


def relu(self: Any) -> Any:
    return op.Relu(self)


def gelu(self: Any, approximate: str = "none") -> Any:
    half = op.Mul(_c(0.5, self), self)
    if approximate == "none":
        return op.Mul(half, op.Add(_c(1.0, self), op.Erf(op.Div(self, _c(math.sqrt(2), self)))))
    if approximate == "tanh":
        cube = op.Mul(op.Mul(self, self), self)
        inner = op.Mul(
            _c(math.sqrt(2 / math.pi), self), op.Add(self, op.Mul(_c(0.044715, self), cube))
        )
        return op.Mul(half, op.Add(_c(1.0, self), op.Tanh(inner)))
    raise Unsupported(f"opforge.gelu: approximate='{approximate}' has no ONNX form")


def leaky_relu(self: Any, negative_slope: float = 0.01) -> Any:
    return op.LeakyRelu(self, alpha=float(negative_slope))


def elu(self: Any, alpha: float = 1.0) -> Any:
    return op.Elu(self, alpha=float(alpha))


def softplus(self: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    # torch's: x where beta * x > threshold (linear there), else log1p(exp(beta x)) / beta
    scaled = op.Mul(self, _c(float(beta), self))
    soft = op.Div(op.Softplus(scaled), _c(float(beta), self))
    return op.Where(op.Greater(scaled, _c(float(threshold), self)), self, soft)


def sigmoid(self: Any) -> Any:
    return op.Sigmoid(self)


def tanh(self: Any) -> Any:
    return op.Tanh(self)


def silu(self: Any) -> Any:
    return op.Mul(self, op.Sigmoid(self))


def hardsigmoid(self: Any) -> Any:
    return op.HardSigmoid(self, alpha=1.0 / 6.0, beta=0.5)


def hardswish(self: Any) -> Any:
    return op.HardSwish(self)


def add(self: Any, other: Any, alpha: float = 1) -> Any:
    if alpha != 1:
        other = op.Mul(other, op.CastLike(op.Constant(value_float=float(alpha)), other))
    return op.Add(self, other)


def add_relu(self: Any, other: Any, alpha: float = 1) -> Any:
    return op.Relu(add(self, other, alpha))


ACTIVATIONS = {
    "none": lambda x: x,
    "relu": relu,
    "silu": silu,
    "hardswish": hardswish,
    "gelu": gelu,
}
