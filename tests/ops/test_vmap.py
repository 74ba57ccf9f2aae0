"""torch.func.vmap over opforge ops (Note [Batching rules] in opforge/_vmap.py): pointwise
ops run once on the whole batch, with no per-sample fallback, and match the per-sample
results, batched along any dimension and broadcast against unbatched arguments."""

from __future__ import annotations

import warnings

import pytest
import torch

import opforge
from tests.ops import opdb

POINTWISE = [r["qualified"] for r in opforge.OP_TABLE if r["batching"] == "pointwise"]


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
