"""Structured pruning (schemas/prune.yaml) against torch.nn.utils.prune: channel norms, the
masks of ln_structured for filters and channels, Python's rounding of the pruned count,
ties, and an example that prunes a conv net's filters and folds it into a smaller dense one."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.utils import prune

import opforge

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_channel_norm_matches_torch(dtype: torch.dtype, p: float, dim: int) -> None:
    w = torch.randn(16, 8, 3, 3, generator=torch.Generator().manual_seed(0)).to(dtype)
    others = [d for d in range(4) if d != dim % 4]
    want = torch.linalg.vector_norm(w.double(), ord=p, dim=others).to(dtype)
    tol = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(opforge.channel_norm(w, p, dim), want, **tol)


@pytest.mark.parametrize("amount", [0.0, 0.25, 0.5, 0.7, 1.0])
@pytest.mark.parametrize("n,dim", [(1.0, 0), (2.0, 1), (float("inf"), 0)])
def test_mask_matches_prune_ln_structured(amount: float, n: float, dim: int) -> None:
    conv = torch.nn.Conv2d(10, 12, 3)
    with torch.no_grad():
        conv.weight.copy_(
            torch.randn(conv.weight.shape, generator=torch.Generator().manual_seed(1))
        )
    want = prune.ln_structured(conv, "weight", amount=amount, n=n, dim=dim).weight_mask
    got = opforge.ln_structured_mask(conv.weight_orig, amount, n, dim)
    torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_pruned_count_rounds_half_to_even_and_ties_keep_lower_index() -> None:
    w = torch.ones(5, 2)  # every norm ties
    mask = opforge.ln_structured_mask(w, 0.5, 2.0, 0)  # round(2.5) = 2 pruned
    assert mask[:, 0].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert (
        opforge.ln_structured_mask(torch.ones(3, 2), 0.5, 2.0, 0)[:, 0].sum() == 1
    )  # round(1.5) = 2


def test_pruned_filters_fold_into_a_smaller_dense_model() -> None:
    """Filter pruning: drop conv1's filters of smallest L1 norm and conv2's matching input
    channels; the smaller dense net computes what the masked one does."""
    gen = torch.Generator().manual_seed(2)
    w1, b1 = torch.randn(16, 3, 3, 3, generator=gen), torch.randn(16, generator=gen)
    w2, b2 = torch.randn(8, 16, 3, 3, generator=gen), torch.randn(8, generator=gen)
    x = torch.randn(2, 3, 12, 12, generator=gen)
    mask = opforge.ln_structured_mask(w1, 0.5, 1.0, 0)
    kept = mask.flatten(1)[:, 0].bool()
    assert int(kept.sum()) == 8
    norms = opforge.channel_norm(w1, 1.0, 0)
    assert norms[kept].min() >= norms[~kept].max()
    masked = F.conv2d(F.relu(F.conv2d(x, w1 * mask, b1 * mask[:, 0, 0, 0])), w2, b2)
    small = F.conv2d(F.relu(F.conv2d(x, w1[kept], b1[kept])), w2[:, kept], b2)
    torch.testing.assert_close(small, masked)


def test_bad_arguments_name_op_and_argument() -> None:
    w = torch.randn(4, 3)
    with pytest.raises(IndexError, match=r"channel_norm: expected 'dim' in \[-2, 2\)"):
        opforge.channel_norm(w, 2.0, 2)
    with pytest.raises(RuntimeError, match=r"channel_norm: expected the norm's order > 0"):
        opforge.channel_norm(w, 0.0, 0)
    with pytest.raises(RuntimeError, match=r"ln_structured_mask: expected 'amount' in \[0, 1\]"):
        opforge.ln_structured_mask(w, 1.5, 2.0, 0)
    with pytest.raises(TypeError, match=r"ln_structured_mask.*'weight'"):
        opforge.ln_structured_mask(w.int(), 0.5, 2.0, 0)
