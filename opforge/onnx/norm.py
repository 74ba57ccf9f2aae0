"""ONNX forms of the norms (Note [ONNX forms] in opforge/onnx/__init__.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onnxscript import opset18 as op

from opforge.onnx import Unsupported, first


def _fill(value: float, like: Any, shape: Any) -> Any:
    return op.Expand(op.CastLike(op.Constant(value_float=value), like), shape)


def _per_channel(v: Any, rank: int) -> Any:
    """A [C] vector shaped to broadcast over an (N, C, *) tensor of rank `rank`."""
    return op.Reshape(v, op.Constant(value_ints=[-1] + [1] * (rank - 2)))


def layer_norm(
    input: Any,
    normalized_shape: Sequence[int],
    weight: Any = None,
    bias: Any = None,
    eps: float = 1e-5,
) -> Any:
    dims = op.Constant(value_ints=[int(d) for d in normalized_shape])
    scale = weight if weight is not None else _fill(1.0, input, dims)
    args = (input, scale) if bias is None else (input, scale, bias)
    return first(op.LayerNormalization(*args, axis=-len(normalized_shape), epsilon=float(eps)))


def group_norm(
    input: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> Any:
    # (opset 18's GroupNormalization takes per-group scales, torch per-channel ones: decompose)
    rank = len(input.shape)
    grouped = op.Reshape(input, op.Constant(value_ints=[0, int(num_groups), -1]))
    mean = op.ReduceMean(grouped, op.Constant(value_ints=[2]), keepdims=1)
    centered = op.Sub(grouped, mean)
    var = op.ReduceMean(op.Mul(centered, centered), op.Constant(value_ints=[2]), keepdims=1)
    eps_c = op.CastLike(op.Constant(value_float=float(eps)), input)
    out = op.Reshape(op.Div(centered, op.Sqrt(op.Add(var, eps_c))), op.Shape(input))
    if weight is not None:
        out = op.Mul(out, _per_channel(weight, rank))
    if bias is not None:
        out = op.Add(out, _per_channel(bias, rank))
    return out


def local_response_norm(
    input: Any, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Any:
    if size % 2 == 0:
        # ONNX's LRN window is [c - (size-1)//2, c + size//2], torch's [c - size//2, ...]
        raise Unsupported(
            f"opforge.local_response_norm: 'size' {size} is even; ONNX's LRN window "
            "differs from torch's for even sizes"
        )
    # (onnxruntime's LRN takes (N, C, H, W): other ranks are viewed as (N, C, L, 1) and back)
    lrn = {"size": int(size), "alpha": float(alpha), "beta": float(beta), "bias": float(k)}
    if len(input.shape) == 4:
        return op.LRN(input, **lrn)
    flat = op.Reshape(input, op.Constant(value_ints=[0, 0, -1, 1]))
    return op.Reshape(op.LRN(flat, **lrn), op.Shape(input))
