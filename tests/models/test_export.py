"""Deployment of networks built from opforge ops: torch.export with a dynamic batch (and
its save/load round trip), AOTInductor's compiled package, and torch.compile without
recompiles when only sizes change. The opforge ops stay opforge ops in the exported graph
and the compiled artefact calls them through the dispatcher, so a deployment loads the
opforge extension (`import opforge`) before running either."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from opforge import models

NETWORKS = {"mobilenet": models.MobileNetBlocks, "sppnet": models.SPPNet}


def _model(name: str) -> nn.Module:
    torch.manual_seed(0)
    return NETWORKS[name]().eval()


def _images(n: int, seed: int, size: int = 32) -> torch.Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _opforge_ops(program: torch.export.ExportedProgram) -> set[str]:
    return {
        n.target.name()
        for n in program.graph.nodes
        if isinstance(n.target, torch._ops.OpOverload) and n.target.namespace == "opforge"
    }


def _matches_eager(run: Callable[[torch.Tensor], torch.Tensor], model: nn.Module) -> None:
    for n, seed in ((1, 1), (7, 2)):
        x = _images(n, seed)
        with torch.no_grad():
            torch.testing.assert_close(run(x), model(x))


@pytest.mark.parametrize("name", NETWORKS)
def test_export_with_a_dynamic_batch_and_round_trip(name: str, tmp_path: Path) -> None:
    model = _model(name)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(model, (_images(4, 0),), dynamic_shapes=({0: batch},))
    assert "opforge::conv2d" in _opforge_ops(program) or "opforge::conv2d_bias_act" in _opforge_ops(
        program
    )
    _matches_eager(program.module(), model)
    torch.export.save(program, tmp_path / "model.pt2")
    loaded = torch.export.load(tmp_path / "model.pt2")
    assert _opforge_ops(loaded) == _opforge_ops(program)
    _matches_eager(loaded.module(), model)


def test_aot_inductor_package_runs_opforge_ops(tmp_path: Path) -> None:
    """One small network through AOTInductor (a C++ compile of the wrapper: ~10 s)."""
    model = _model("mobilenet")
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(model, (_images(4, 0),), dynamic_shapes=({0: batch},))
    path = torch._inductor.aoti_compile_and_package(
        program, package_path=str(tmp_path / "model.pt2")
    )
    compiled = torch._inductor.aoti_load_package(path)
    _matches_eager(compiled, model)


def test_compile_dynamic_does_not_recompile_for_new_sizes() -> None:
    from torch._dynamo.testing import CompileCounter

    model = _model("mobilenet")
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, dynamic=True)
    for n, size, seed in ((2, 32, 0), (3, 40, 1), (5, 48, 2)):
        x = _images(n, seed, size)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x))
    assert counter.frame_count == 1


def test_torchvision_resnet18_routed_to_opforge_exports() -> None:
    """An unchanged torchvision model exported under opforge.patch(): its conv, BN, ReLU,
    pooling and linear calls become opforge ops in the program, which matches ATen's eager
    model on other batch sizes."""
    import torchvision

    import opforge

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    batch = torch.export.Dim("batch", min=1, max=16)
    with opforge.patch():
        program = torch.export.export(model, (_images(2, 0, 64),), dynamic_shapes=({0: batch},))
    assert {"opforge::conv2d", "opforge::batch_norm", "opforge::linear"} <= _opforge_ops(program)
    for n, seed in ((1, 1), (3, 2)):
        x = _images(n, seed, 64)
        with torch.no_grad():
            torch.testing.assert_close(program.module()(x), model(x), atol=1e-4, rtol=1e-4)
