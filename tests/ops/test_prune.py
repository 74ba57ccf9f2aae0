"""Pruning (schemas/prune.yaml) against torch.nn.utils.prune: channel norms, the masks of
ln_structured for filters and channels, Python's rounding of the pruned count, ties, an
example that prunes a conv net's filters and folds it into a smaller dense one, and the
unstructured magnitude masks of l1_unstructured and global_unstructured (fractions and
counts, ties, -0.0 and NaN, layouts, errors)."""

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


def _tie_free(
    shape: tuple[int, ...], dtype: torch.dtype = torch.float32, seed: int = 0
) -> torch.Tensor:
    """Distinct magnitudes (a permutation of 1..n, signs random), so torch.topk's tie order
    does not matter."""
    gen = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    mags = (torch.randperm(n, generator=gen) + 1).double() / n
    signs = torch.randint(0, 2, (n,), generator=gen) * 2 - 1
    return (mags * signs).reshape(shape).to(dtype)


@pytest.mark.parametrize("amount", [0.0, 0.3, 0.5, 0.99, 1.0, 7, 0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_magnitude_mask_matches_l1_unstructured(amount: float, dtype: torch.dtype) -> None:
    w = _tie_free((16, 8, 3, 3), dtype if dtype != torch.bfloat16 else torch.float32)
    if dtype == torch.bfloat16:  # 1152 magnitudes do not stay distinct in bfloat16
        w = _tie_free((6, 20), torch.bfloat16)
    mask = opforge.magnitude_prune_mask(w, amount)
    expected = prune.L1Unstructured(amount).compute_mask(w, torch.ones_like(w))
    assert mask.dtype == w.dtype and mask.shape == w.shape
    torch.testing.assert_close(mask, expected, atol=0, rtol=0)


def test_magnitude_mask_ties_specials_and_layouts() -> None:
    # Ties keep the lower index; -0.0 equals 0.0; NaN is the largest magnitude.
    w = torch.tensor([0.5, -0.0, 0.0, 0.5, float("nan"), -0.5, 2.0, 0.0])
    mask = opforge.magnitude_prune_mask(w, 4)
    assert mask.tolist() == [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert opforge.magnitude_prune_mask(w, 7).tolist() == [0.0] * 4 + [1.0] + [0.0] * 3
    # A non-contiguous weight ranks its logical order; the mask is contiguous.
    t = _tie_free((12, 10)).t()
    got = opforge.magnitude_prune_mask(t, 0.4)
    assert got.is_contiguous()
    torch.testing.assert_close(got, opforge.magnitude_prune_mask(t.contiguous(), 0.4))
    # Python's round, half to even: 0.5 * 5 = 2.5 prunes 2.
    assert opforge.magnitude_prune_mask(_tie_free((5,)), 0.5).sum() == 3


def test_global_masks_match_global_unstructured() -> None:
    weights = [
        _tie_free((8, 3, 3, 3), seed=1),
        _tie_free((20, 10), seed=2),
        _tie_free((7,), seed=3),
    ]
    # Scale the second so the global ranking differs from pruning each alone.
    weights[1] = weights[1] * 0.3
    for amount in (0.25, 0.6, 50):
        masks = opforge.global_magnitude_prune_masks(weights, amount)
        modules = []
        for w in weights:
            m = torch.nn.Module()
            m.weight = torch.nn.Parameter(w.clone())
            modules.append(m)
        prune.global_unstructured(
            [(m, "weight") for m in modules], pruning_method=prune.L1Unstructured, amount=amount
        )
        for got, m in zip(masks, modules, strict=True):
            torch.testing.assert_close(got, m.weight_mask, atol=0, rtol=0)
    assert opforge.global_magnitude_prune_masks([], 0.5) == []


def test_magnitude_mask_bad_arguments() -> None:
    w = torch.randn(4, 5)
    with pytest.raises(
        RuntimeError, match=r"magnitude_prune_mask: expected 'amount' to be a float in \[0, 1\]"
    ):
        opforge.magnitude_prune_mask(w, 1.5)
    with pytest.raises(
        RuntimeError, match=r"magnitude_prune_mask: expected 'amount' to be a non-negative integer"
    ):
        opforge.magnitude_prune_mask(w, -2)
    with pytest.raises(
        RuntimeError, match=r"magnitude_prune_mask: 'amount' = 21 should be smaller than"
    ):
        opforge.magnitude_prune_mask(w, 21)
    with pytest.raises(
        TypeError, match=r"global_magnitude_prune_masks: expected every tensor of 'weights'"
    ):
        opforge.global_magnitude_prune_masks([w, w.double()], 0.5)


def test_random_mask_prunes_exactly_the_amount_reproducibly() -> None:
    w = torch.randn(40, 30)
    for amount, count in ((0.25, 300), (0.5, 600), (17, 17), (0.999, 1199)):
        mask = opforge.random_prune_mask(w, amount, generator=torch.Generator().manual_seed(1))
        assert mask.dtype == w.dtype and mask.shape == w.shape
        assert int((mask == 0).sum()) == count
        assert set(mask.unique().tolist()) <= {0.0, 1.0}
    # The same seed gives the same mask whatever the thread count; another seed another one.
    threads = torch.get_num_threads()
    masks = []
    for n in (1, 2):
        torch.set_num_threads(n)
        masks.append(opforge.random_prune_mask(w, 0.3, generator=torch.Generator().manual_seed(7)))
    torch.set_num_threads(threads)
    assert torch.equal(masks[0], masks[1])
    other = opforge.random_prune_mask(w, 0.3, generator=torch.Generator().manual_seed(8))
    assert not torch.equal(masks[0], other)
    # The default generator: torch.manual_seed fixes it.
    torch.manual_seed(3)
    a = opforge.random_prune_mask(w, 0.3)
    torch.manual_seed(3)
    assert torch.equal(a, opforge.random_prune_mask(w, 0.3))


def test_random_mask_is_uniform() -> None:
    # Each of 50 positions pruned with probability 0.2 over 2000 masks: a chi-square test
    # of the per-position counts (49 degrees of freedom; 99.9% quantile 85.4).
    gen = torch.Generator().manual_seed(11)
    counts = torch.zeros(50)
    trials = 2000
    for _ in range(trials):
        counts += 1 - opforge.random_prune_mask(torch.ones(50), 10, generator=gen)
    expected = trials * 10 / 50
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 85.4, chi2
