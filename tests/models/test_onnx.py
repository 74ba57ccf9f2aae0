"""ONNX export (`torch.onnx.export(..., dynamo=True)`) with the ONNX forms the YAML names
(Note [ONNX forms] in opforge/onnx/__init__.py): every op with `onnx:` on the battery's
samples, and the two networks of opforge.models, run in onnxruntime and compared with
eager."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
from torch import nn

import opforge
from opforge import models
from opforge.onnx import Unsupported
from tests.ops import opdb

WITH_ONNX = [r["qualified"] for r in opforge.OP_TABLE if r["onnx"]]


class _Call(nn.Module):
    """One op call with its tensor arguments as the graph's inputs."""

    def __init__(self, fn: Any, call: opdb.Call) -> None:
        super().__init__()
        self.fn, self.call = fn, call

    def forward(self, *tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        args = [next(it) if isinstance(a, torch.Tensor) else a for a in self.call.args]
        return self.fn(*args, **self.call.kwargs)


def _export(model: nn.Module, inputs: tuple[torch.Tensor, ...], path: Path) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress lines
        program = torch.onnx.export(
            model,
            inputs,
            dynamo=True,
            custom_translation_table=opforge.onnx_translations(),
            optimize=False,
        )
    assert program is not None
    program.save(str(path))
    return path


def _run(path: Path, inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: t.numpy() for n, t in zip(names, inputs, strict=False)})


def test_ops_with_onnx_forms() -> None:
    assert {"relu", "conv2d", "conv2d_bias_act", "linear", "max_pool2d", "log_softmax"} <= {
        n.split(".")[0] for n in WITH_ONNX
    }


@pytest.mark.parametrize("name", WITH_ONNX)
def test_onnx_form_matches_eager(name: str, tmp_path: Path) -> None:
    """Each sample (float32, plain layout) exports and runs in onnxruntime with eager's
    result, or is refused at export by an Unsupported error naming the op; most samples
    export. (0-d and empty tensors are left out: onnxruntime's kernels do not take them
    all.)"""
    op = opdb.by_qualified(name)
    fn = getattr(getattr(torch.ops.opforge, op.name), op.overload or "default")
    exported = refused = 0
    for k, call in enumerate(opdb.calls(op, torch.float32, "cpu", variants=False)):
        tensors = tuple(a for a in call.args if isinstance(a, torch.Tensor))
        if any(t.dim() == 0 or t.numel() == 0 for t in tensors):
            continue
        tensors = tuple(t.contiguous() for t in tensors)
        model = _Call(fn, call).eval()
        try:
            path = _export(model, tensors, tmp_path / f"{k}.onnx")
        except Exception as e:  # the exporter wraps the translation's error
            assert "Unsupported" in repr(e) or isinstance(e, Unsupported), e
            assert f"opforge.{op.name}" in str(e), e
            refused += 1
            continue
        with torch.no_grad():
            want = model(*tensors)
        got = _run(path, tensors)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)
        exported += 1
    assert exported >= max(1, refused), (exported, refused)


class _Fused(nn.Module):
    """MobileNetBlocks' deployment form: BN folded into the convolutions (conv2d_bias_act).
    (The unfolded network's batch_norm writes its running statistics in place, and the
    ONNX exporter does not translate custom ops that mutate their inputs.)"""

    def __init__(self, model: models.MobileNetBlocks) -> None:
        super().__init__()
        self.run = model.fused()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x)


@pytest.mark.parametrize("name", ["mobilenet_folded", "sppnet"])
def test_networks_run_in_onnxruntime(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = models.SPPNet() if name == "sppnet" else _Fused(models.MobileNetBlocks().eval())
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    path = _export(model, (x,), tmp_path / "model.onnx")
    with torch.no_grad():
        want = model(x)
    (got,) = _run(path, (x,))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


def test_an_op_without_an_onnx_form_is_named() -> None:
    class Shuffle(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return opforge.channel_shuffle(x, 2)

    with pytest.raises(Exception, match="channel_shuffle"):
        _export(Shuffle().eval(), (torch.randn(1, 4, 3, 3),), Path("/nonexistent.onnx"))
