"""Model-level proof: networks built from opforge ops (opforge.models) match the same
layers from torch.nn (opforge.model_twins) forward, backward, over 20 SGD steps, under
torch.compile, and after folding BN into the convolutions for deployment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from opforge import model_twins, models

TIGHT = {"atol": 1e-10, "rtol": 1e-9}  # float64


def _batch(dtype: torch.dtype, size: int = 32, n: int = 4) -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, size, size, generator=gen, dtype=dtype)
    return x, torch.randint(0, 10, (n,), generator=gen)


def _mobilenet(dtype: torch.dtype) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    ours = models.MobileNetBlocks().to(dtype)
    return ours, model_twins.mobilenet_twin(ours)


def _sppnet(dtype: torch.dtype) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    ours = models.SPPNet().to(dtype)
    return ours, model_twins.SPPNetTwin(ours)


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _run(model: nn.Module, x: Tensor, seed: int) -> Tensor:
    """A forward pass; SPP-Net's dropout draws from a generator seeded with `seed`."""
    if isinstance(model, (models.SPPNet, model_twins.SPPNetTwin)):
        return model(x, generator=_seeded(seed))  # type: ignore[no-any-return]
    return model(x)  # type: ignore[no-any-return]


def _loss(model: nn.Module, x: Tensor, y: Tensor, seed: int) -> Tensor:
    out = _run(model, x, seed)
    if isinstance(model, (models.SPPNet, model_twins.SPPNetTwin)):
        return torch.nn.functional.nll_loss(out, y)  # the net ends in log_softmax
    return torch.nn.functional.cross_entropy(out, y)


def _in_layer_order(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """Parameters in the order the torch.nn twin holds them (the head comes last)."""
    named = list(model.named_parameters())
    head = [(n, p) for n, p in named if n.startswith("fc_")]
    return [(n, p) for n, p in named if not n.startswith("fc_")] + head


MODELS = [pytest.param(_mobilenet, id="mobilenet"), pytest.param(_sppnet, id="sppnet")]


@pytest.mark.parametrize("build", MODELS)
def test_forward_and_gradients_match_torch_nn(build: Callable[..., Any]) -> None:
    ours, twin = build(torch.float64)
    x, y = _batch(torch.float64)
    x_ours, x_twin = x.clone().requires_grad_(), x.clone().requires_grad_()
    loss_ours, loss_twin = _loss(ours, x_ours, y, 1), _loss(twin, x_twin, y, 1)
    torch.testing.assert_close(_run(ours, x, 1), _run(twin, x, 1), **TIGHT)
    loss_ours.backward()
    loss_twin.backward()
    torch.testing.assert_close(x_ours.grad, x_twin.grad, **TIGHT)
    for (name, p), q in zip(_in_layer_order(ours), twin.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, **TIGHT, msg=lambda m, n=name: f"{n}: {m}")
    # BN running statistics were updated identically (training mode).
    stats = [[b for b in m.buffers() if b.is_floating_point()] for m in (ours, twin)]
    torch.testing.assert_close(stats[0], stats[1], **TIGHT)


@pytest.mark.parametrize("build", MODELS)
def test_sgd_loss_curves_match(build: Callable[..., Any]) -> None:
    ours, twin = build(torch.float64)
    x, y = _batch(torch.float64)
    curves: list[list[float]] = []
    for model in (ours, twin):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        curve = []
        for step in range(20):
            opt.zero_grad()
            loss = _loss(model, x, y, seed=100 + step)
            loss.backward()
            opt.step()
            curve.append(loss.item())
        curves.append(curve)
    assert curves[0][-1] < curves[0][0], "training does not reduce the loss"
    torch.testing.assert_close(curves[0], curves[1], atol=1e-8, rtol=1e-7)


@pytest.mark.parametrize("build", MODELS)
def test_compiled_fullgraph_matches_eager(build: Callable[..., Any]) -> None:
    torch._dynamo.reset()
    ours, _ = build(torch.float32)
    ours.eval()
    x, _ = _batch(torch.float32)
    compiled = torch.compile(ours, fullgraph=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), ours(x), atol=1e-5, rtol=1e-4)


def test_compiled_training_step_matches_eager() -> None:
    torch._dynamo.reset()
    ours, _ = _mobilenet(torch.float32)
    x, y = _batch(torch.float32)
    eager_loss = _loss(ours, x, y, 0)
    eager_grads = torch.autograd.grad(eager_loss, list(ours.parameters()))
    compiled = torch.compile(lambda x: ours(x), fullgraph=True, backend="aot_eager")
    loss = torch.nn.functional.cross_entropy(compiled(x), y)
    grads = torch.autograd.grad(loss, list(ours.parameters()))
    torch.testing.assert_close(loss, eager_loss, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(grads, eager_grads, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_folded_conv_bias_act_matches_unfused_eval(dtype: torch.dtype) -> None:
    ours, _ = _mobilenet(dtype)
    x, y = _batch(dtype)
    # A few training steps first, so the running statistics are not the identity.
    opt = torch.optim.SGD(ours.parameters(), lr=0.05)
    for step in range(3):
        opt.zero_grad()
        _loss(ours, x, y, step).backward()
        opt.step()
    ours.eval()
    with torch.no_grad():
        tol = TIGHT if dtype == torch.float64 else {"atol": 1e-4, "rtol": 1e-4}
        torch.testing.assert_close(ours.fused()(x), ours(x), **tol)


def test_sppnet_takes_any_input_size() -> None:
    ours, twin = _sppnet(torch.float64)
    ours.eval()
    twin.eval()
    for size in (7, 13, 32, 45):  # 7: the pooled map (3x3) is smaller than level 4
        x = torch.randn(2, 3, size, size, dtype=torch.float64)
        out = ours(x)
        assert out.shape == (2, 10)
        torch.testing.assert_close(out, twin(x), **TIGHT)


@pytest.mark.parametrize("name", ["ResNet18", "MobileNetV2"])
def test_benchmark_networks_compute_what_aten_computes(name: str) -> None:
    """benchmarks/models.py times one network over opforge's ops and over ATen's: both
    must compute the same thing (eval and training mode), or the ratio means nothing."""
    from benchmarks import models as bench

    ours, aten = bench.network_pair(getattr(bench, name))
    x = torch.randn(2, 3, 48, 48, generator=torch.Generator().manual_seed(0))
    for training in (False, True):
        ours.train(training)
        aten.train(training)
        torch.testing.assert_close(ours(x), aten(x), atol=1e-4, rtol=1e-4)
