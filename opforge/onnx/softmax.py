"""ONNX forms of softmax and log_softmax (Note [ONNX forms] in opforge/onnx/__init__.py)."""

from __future__ import annotations

from typing import Any

from onnxscript import opset18 as op


def softmax(self: Any, dim: int) -> Any:
    return op.Softmax(self, axis=int(dim))


def log_softmax(self: Any, dim: int) -> Any:
    return op.LogSoftmax(self, axis=int(dim))
