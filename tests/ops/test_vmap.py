"""torch.func.vmap over opforge ops (Note [Batching rules] in opforge/_vmap.py): ops with a
batching rule (pointwise ops, and `batch:` in the YAML: conv, pooling, norms, softmax,
linear) run once on the whole batch, with no per-sample fallback, and match the per-sample
results, batched along any dimension and broadcast against unbatched arguments."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import opforge
from tests.ops import opdb


def _with_rule(*kinds: str) -> list[str]:
    return [
        r["qualified"]
        for r in opforge.OP_TABLE
        if r["batching"] is not None and r["batching"]["kind"] in kinds
    ]


POINTWISE = _with_rule("pointwise")
BATCH_RULES = _with_rule("leading", "any_leading", "all_but")


def _no_fallback(fn):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*batching rule.*")
        return fn()


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_ops_have_batching_rules(name: str) -> None:
    # (functorch warns about its fallback once per op and process: check the kernel itself)
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"opforge::{name}", "FuncTorchBatched")
    op = opdb.by_qualified(name)
    (call,) = opdb.calls(op, torch.float64, "cpu", variants=False)[:1]
    fn = getattr(opforge, op.name)
    tensors = [i for i, a in enumerate(call.args) if isinstance(a, torch.Tensor)]
    # Batch the first tensor argument along a new dimension 1 of 3 samples.
    i = tensors[0]
    batch = torch.stack([call.args[i] * (k + 1) for k in range(3)], dim=min(1, call.args[i].dim()))
    in_dims = tuple(min(1, call.args[i].dim()) if j == i else None for j in range(len(call.args)))

    def one(x: torch.Tensor) -> torch.Tensor:
        args = list(call.args)
        args[i] = x
        return fn(*args, **call.kwargs)

    got = _no_fallback(lambda: torch.func.vmap(one, in_dims=in_dims[i])(batch))
    expected = torch.stack([one(batch.select(in_dims[i], k)) for k in range(3)])
    torch.testing.assert_close(got, expected)


def test_broadcasting_against_an_unbatched_argument_of_higher_rank() -> None:
    x = torch.randn(4, 5)  # batched over dim 0: samples of shape [5]
    y = torch.randn(2, 5)  # unbatched, rank 2: each sample's result is [2, 5]
    got = _no_fallback(lambda: torch.func.vmap(lambda a: opforge.add(a, y))(x))
    torch.testing.assert_close(got, torch.stack([s + y for s in x]))


def test_per_sample_gradients() -> None:
    """vmap(grad(f)): the per-sample gradients of a small opforge model."""
    w = torch.randn(3, 5, dtype=torch.float64)
    x = torch.randn(8, 5, dtype=torch.float64)

    def loss(w: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
        return opforge.tanh(opforge.silu(sample) * w).sum()

    got = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(w, x)
    expected = torch.stack([torch.func.grad(loss)(w, s) for s in x])
    torch.testing.assert_close(got, expected)


def test_the_yaml_batch_rules_cover_the_layers() -> None:
    assert {"conv2d", "linear", "softmax", "layer_norm", "max_pool2d", "group_norm"} <= {
        n.split(".")[0] for n in BATCH_RULES
    }


def _check_batched_like_per_sample(
    fn: Callable[..., Any], call: opdb.Call, i: int, batch: torch.Tensor, at: int
) -> None:
    def one(x: torch.Tensor) -> Any:
        return fn(*call.args[:i], x, *call.args[i + 1 :], **call.kwargs)

    got = _no_fallback(lambda: torch.func.vmap(one, in_dims=at)(batch))
    per_sample = [one(batch.select(at, k)) for k in range(batch.shape[at])]
    if isinstance(got, tuple):
        for g, *e in zip(got, *per_sample, strict=True):
            torch.testing.assert_close(g, torch.stack(e))
    else:
        torch.testing.assert_close(got, torch.stack(per_sample))


@pytest.mark.parametrize("name", BATCH_RULES)
def test_batch_rules_match_per_sample_calls(name: str) -> None:
    """Every sample of the battery, batched (3 samples) along the rule's tensor argument at
    dimension 0 and at its last dimension: one call, the per-sample results."""
    op = opdb.by_qualified(name)
    row = next(r for r in opforge.OP_TABLE if r["qualified"] == name)
    fn = getattr(getattr(torch.ops.opforge, op.name), op.overload or "default")
    arg = row["batching"]["arg"] if row["batching"]["kind"] != "all_but" else None
    for call in opdb.calls(op, torch.float64, "cpu", variants=False):
        i = call.names.index(arg) if arg is not None else 0
        x = call.args[i]
        if isinstance(x, torch.Tensor) and x.numel() > 0:
            for at in (0, x.dim()):
                batch = torch.stack([x * (k + 1) for k in range(3)], dim=at)
                _check_batched_like_per_sample(fn, call, i, batch, at)


def test_per_sample_weights_run_sample_by_sample() -> None:
    x = torch.randn(4, 2, 3, 6, 6, dtype=torch.float64)
    w = torch.randn(4, 5, 3, 3, 3, dtype=torch.float64)
    got = torch.func.vmap(lambda a, b: opforge.conv2d(a, b, padding=1))(x, w)
    expected = torch.stack([F.conv2d(a, b, padding=1) for a, b in zip(x, w, strict=True)])
    torch.testing.assert_close(got, expected)


# (the backward ops of conv and pooling run through functorch's per-sample fallback: their
# weight gradients sum over the batch, which no fold into N preserves)
@pytest.mark.filterwarnings("ignore:There is a performance drop")
def test_per_sample_gradients_of_a_conv_net() -> None:
    w1 = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    w2 = torch.randn(10, 4, dtype=torch.float64)
    x = torch.randn(6, 3, 8, 8, dtype=torch.float64)

    def loss(w1: torch.Tensor, w2: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
        h = opforge.max_pool2d(opforge.relu(opforge.conv2d(sample, w1, padding=1)), [2, 2])
        h = opforge.adaptive_avg_pool2d(h, [1, 1]).flatten()
        return opforge.log_softmax(opforge.linear(h, w2), 0)[3]

    got = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))(w1, w2, x)
    for k, s in enumerate(x):
        for g, e in zip(got, torch.func.grad(loss, argnums=(0, 1))(w1, w2, s), strict=True):
            torch.testing.assert_close(g[k], e)
