"""DistributedDataParallel over opforge models: 2 CPU processes (gloo, loopback), float64.

Each rank trains on half of every batch; DDP averages the gradients, so a few SGD steps must
give the losses and parameters of single-process training on the whole batch (1e-10).

BatchNorm: MobileNetBlocks normalizes with batch statistics in train mode, and DDP does not
synchronize them (opforge has no SyncBatchNorm): each rank normalizes with its own half's
statistics and keeps its own running statistics, as torch.nn.BatchNorm2d does under DDP.
So MobileNetBlocks is checked twice: in eval mode against the whole batch, and in train mode
against two single-process replicas, one per half, stepped with their averaged gradients
(DDP with broadcast_buffers=False; with the default True, DDP copies rank 0's running
statistics to every rank before each forward).

One spawn runs every case (spawning and importing torch dominate the time); each test reads
its case's outcome from both ranks.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel as DDP

import opforge
from opforge import models
from tests.distributed import ranks

WORLD = ranks.WORLD
STEPS = 3
TIGHT = {"atol": 1e-10, "rtol": 1e-10}


def _batches(image: int) -> list[tuple[Tensor, Tensor]]:
    gen = torch.Generator().manual_seed(0)
    return [
        (
            torch.randn(4, 3, image, image, generator=gen, dtype=torch.float64),
            torch.randint(0, 10, (4,), generator=gen),
        )
        for _ in range(STEPS)
    ]


def _loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    out = model(x)
    if isinstance(getattr(model, "module", model), models.SPPNet):
        return opforge.nll_loss(out, y)  # the net ends in log_softmax
    return opforge.cross_entropy(out, y)


def _close(a: Tensor, b: Tensor, what: str) -> None:
    torch.testing.assert_close(a, b, **TIGHT, msg=lambda m: f"{what}: {m}")


def _train_ddp(model: nn.Module, rank: int, batches: list[tuple[Tensor, Tensor]]) -> list[float]:
    """DDP training on this rank's half of each batch; returns the whole-batch losses (the
    mean of the ranks' losses: the halves are equal)."""
    ddp = DDP(model, broadcast_buffers=False)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        half = slice(rank * 2, rank * 2 + 2)
        opt.zero_grad()
        loss = _loss(ddp, x[half], y[half])
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(total.item() / WORLD)
    return losses


def _train_single(model: nn.Module, batches: list[tuple[Tensor, Tensor]]) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = _loss(model, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _check_whole_batch(model: nn.Module, rank: int, image: int) -> None:
    batches = _batches(image)
    reference = copy.deepcopy(model)
    losses = _train_ddp(model, rank, batches)
    expected = _train_single(reference, batches)
    _close(torch.tensor(losses), torch.tensor(expected), "losses")
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        _close(p, q, name)


def case_sppnet(rank: int) -> None:
    torch.manual_seed(0)
    _check_whole_batch(models.SPPNet(p=0.0).double(), rank, image=16)  # no dropout masks


def case_mobilenet_eval_bn(rank: int) -> None:
    """BN with running statistics: per-sample, so the halves add up to the whole batch."""
    torch.manual_seed(0)
    model = models.MobileNetBlocks().double()
    for layer in model.layers:  # non-trivial running statistics
        layer.running_mean.uniform_(-0.5, 0.5)
        layer.running_var.uniform_(0.5, 1.5)
    _check_whole_batch(model.eval(), rank, image=16)


def case_mobilenet_train_bn(rank: int) -> None:
    """BN with batch statistics: DDP equals per-rank replicas stepped with the averaged
    gradients; each rank's running statistics are its own replica's."""
    torch.manual_seed(0)
    model = models.MobileNetBlocks().double()
    replicas = [copy.deepcopy(model) for _ in range(WORLD)]
    batches = _batches(16)
    losses = _train_ddp(model, rank, batches)

    opts = [torch.optim.SGD(r.parameters(), lr=0.1) for r in replicas]
    expected = []
    for x, y in batches:
        per_rank = [
            _loss(r, x[2 * i : 2 * i + 2], y[2 * i : 2 * i + 2]) for i, r in enumerate(replicas)
        ]
        grads = [
            torch.autograd.grad(loss, list(r.parameters()))
            for loss, r in zip(per_rank, replicas, strict=True)
        ]
        for r, opt in zip(replicas, opts, strict=True):
            for p, *gs in zip(r.parameters(), *grads, strict=True):
                p.grad = sum(gs) / WORLD
            opt.step()
        expected.append(sum(loss.item() for loss in per_rank) / WORLD)
    _close(torch.tensor(losses), torch.tensor(expected), "losses")
    for name, p in model.named_parameters():
        _close(p, replicas[0].get_parameter(name), name)
    for name, b in model.named_buffers():
        _close(b, replicas[rank].get_buffer(name), f"rank {rank} {name}")
    other = replicas[1 - rank].layers[0].running_mean
    assert not torch.allclose(model.layers[0].running_mean, other), "BN stats are per rank"


def case_argument(rank: int) -> int:
    return rank


CASES = ranks.cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return ranks.run(__name__, tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize("case", CASES)
def test_ddp(outcomes: list[dict[str, Any]], case: str) -> None:
    ranks.check(outcomes, case)
