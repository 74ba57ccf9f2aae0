"""ONNX forms of the 2-D pools and the spatial pyramid pool (Note [ONNX forms] in
opforge/onnx/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from onnxscript import opset18 as op

from opforge.onnx import Unsupported, batched, first, static_dims


def _pair(v: Sequence[int]) -> list[int]:
    return [int(x) for x in v] * (2 // len(v)) if len(v) else []


def max_pool2d(
    self: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0, 0),
    dilation: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> Any:
    kernel, pad = _pair(kernel_size), _pair(padding)
    return batched(
        self,
        lambda x: first(
            op.MaxPool(
                x,
                kernel_shape=kernel,
                strides=_pair(stride) or kernel,
                pads=pad + pad,
                dilations=_pair(dilation),
                ceil_mode=int(ceil_mode),
            )
        ),
    )


def avg_pool2d(
    self: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    if divisor_override is not None:
        raise Unsupported("opforge.avg_pool2d: 'divisor_override' has no ONNX form")
    kernel, pad = _pair(kernel_size), _pair(padding)
    return batched(
        self,
        lambda x: op.AveragePool(
            x,
            kernel_shape=kernel,
            strides=_pair(stride) or kernel,
            pads=pad + pad,
            ceil_mode=int(ceil_mode),
            count_include_pad=int(count_include_pad),
        ),
    )


def _adaptive(
    op_name: str, self: Any, output_size: Sequence[int], reduce: Callable[..., Any]
) -> Any:
    """Adaptive pooling as torch bins it: output cell (i, j) reduces rows
    [floor(i H / oh), ceil((i + 1) H / oh)) and the same for columns; one Slice and one
    reduction per cell (the sizes must be static)."""
    rank = len(self.shape)
    h, w = static_dims(op_name, self, [rank - 2, rank - 1])
    oh, ow = (int(s) for s in _pair(output_size))
    axes = op.Constant(value_ints=[rank - 2, rank - 1])
    rows = []
    for i in range(oh):
        cells = []
        for j in range(ow):
            starts = op.Constant(value_ints=[i * h // oh, j * w // ow])
            ends = op.Constant(value_ints=[-((-(i + 1) * h) // oh), -((-(j + 1) * w) // ow)])
            cells.append(reduce(op.Slice(self, starts, ends, axes), axes, keepdims=1))
        rows.append(op.Concat(*cells, axis=-1))
    return op.Concat(*rows, axis=-2)


def adaptive_avg_pool2d(self: Any, output_size: Sequence[int]) -> Any:
    if [int(s) for s in _pair(output_size)] == [1, 1]:
        return (
            op.GlobalAveragePool(self)
            if len(self.shape) == 4
            else _adaptive("adaptive_avg_pool2d", self, output_size, op.ReduceMean)
        )
    return _adaptive("adaptive_avg_pool2d", self, output_size, op.ReduceMean)


def adaptive_max_pool2d(self: Any, output_size: Sequence[int]) -> Any:
    return _adaptive("adaptive_max_pool2d", self, output_size, op.ReduceMax)


def spatial_pyramid_pool(self: Any, levels: Sequence[int] = (4, 2, 1), mode: str = "max") -> Any:
    reduce = {"max": op.ReduceMax, "avg": op.ReduceMean}.get(mode)
    if reduce is None:
        raise Unsupported(f"opforge.spatial_pyramid_pool: mode '{mode}' has no ONNX form")
    pooled = [
        op.Flatten(_adaptive("spatial_pyramid_pool", self, [n, n], reduce), axis=1) for n in levels
    ]
    return op.Concat(*pooled, axis=1)
