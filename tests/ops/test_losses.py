"""The pointwise losses (schemas/loss.yaml) against torch.nn.functional beyond the battery's
samples: broadcasting, weights, every reduction, gradients in both inputs, special values,
and the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import opforge
from opforge import reference

REDUCTIONS = ["none", "mean", "sum"]


def _pair(shape: tuple[int, ...], dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(sum(shape) + len(shape))
    x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    y = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    return x, y


REGRESSION: list[tuple[str, Callable[..., Any], Callable[..., Any], dict[str, Any]]] = [
    ("mse", opforge.mse_loss, F.mse_loss, {}),
    ("l1", opforge.l1_loss, F.l1_loss, {}),
    ("huber", opforge.huber_loss, F.huber_loss, {"delta": 0.7}),
    ("smooth_l1", opforge.smooth_l1_loss, F.smooth_l1_loss, {"beta": 0.4}),
    ("smooth_l1_beta0", opforge.smooth_l1_loss, F.smooth_l1_loss, {"beta": 0.0}),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("name", "ours", "theirs", "extra"), REGRESSION, ids=[r[0] for r in REGRESSION]
)
def test_regression_losses_and_gradients(
    name: str,
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    extra: dict[str, Any],
    reduction: str,
) -> None:
    x, y = _pair((5, 3, 7))
    x.requires_grad_()
    y.requires_grad_()
    got = ours(x, y, reduction=reduction, **extra)
    want = theirs(x, y, reduction=reduction, **extra)
    torch.testing.assert_close(got, want)
    cot = torch.randn_like(want)
    gx, gy = torch.autograd.grad(got, (x, y), cot)
    wx, wy = torch.autograd.grad(want, (x, y), cot)
    torch.testing.assert_close(gx, wx)
    torch.testing.assert_close(gy, wy)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_mean_matches_torch(dtype: torch.dtype) -> None:
    x, y = _pair((64, 33), dtype)
    for ours, theirs in [(opforge.mse_loss, F.mse_loss), (opforge.l1_loss, F.l1_loss)]:
        got, want = ours(x, y), theirs(x, y)
        assert got.dtype == dtype and got.shape == ()
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)


def test_broadcast_target_divides_by_the_broadcast_count() -> None:
    x = torch.randn(4, 1, 5, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 5, dtype=torch.float64)
    with pytest.warns(UserWarning):  # torch warns about the broadcast, opforge does not
        want = F.mse_loss(x, y)
    got = opforge.mse_loss(x, y)
    torch.testing.assert_close(got, want)
    (g,) = torch.autograd.grad(got, x)
    (w,) = torch.autograd.grad(want, x)
    assert g.shape == x.shape
    torch.testing.assert_close(g, w)


def test_mixed_dtypes_promote() -> None:
    x = torch.randn(4, 5)
    y = torch.randn(4, 5, dtype=torch.float64)
    got = opforge.mse_loss(x, y, "none")
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, F.mse_loss(x.double(), y, reduction="none"))


def test_empty_input_mean_is_nan_and_sum_is_zero() -> None:
    x = torch.empty(0, 3)
    assert opforge.mse_loss(x, x).isnan()
    assert opforge.l1_loss(x, x, "sum").item() == 0
    assert opforge.mse_loss(x, x, "none").shape == (0, 3)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_weight(reduction: str) -> None:
    gen = torch.Generator().manual_seed(3)
    p = (torch.rand(6, 4, generator=gen, dtype=torch.float64) * 0.9 + 0.05).requires_grad_()
    t = torch.rand(6, 4, generator=gen, dtype=torch.float64)
    w = torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    for weight in (None, w):
        got = opforge.binary_cross_entropy(p, t, weight, reduction)
        want = F.binary_cross_entropy(p, t, weight, reduction=reduction)
        torch.testing.assert_close(got, want)
        cot = torch.randn_like(want)
        torch.testing.assert_close(
            torch.autograd.grad(got, p, cot)[0], torch.autograd.grad(want, p, cot)[0]
        )


def test_binary_cross_entropy_clamps_logs_at_minus_100() -> None:
    p = torch.tensor([0.0, 1.0, 0.0, 1.0])
    t = torch.tensor([1.0, 0.0, 0.0, 1.0])
    got = opforge.binary_cross_entropy(p, t, reduction="none")
    torch.testing.assert_close(got, F.binary_cross_entropy(p, t, reduction="none"))
    assert got.tolist() == [100.0, 100.0, 0.0, 0.0]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_weights(reduction: str) -> None:
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(6, 4, generator=gen, dtype=torch.float64) * 10).requires_grad_()
    t = torch.rand(6, 4, generator=gen, dtype=torch.float64)
    w = torch.rand(6, 1, generator=gen, dtype=torch.float64) + 0.5
    pw = torch.rand(4, generator=gen, dtype=torch.float64) * 3
    for weight, pos_weight in [(None, None), (w, None), (None, pw), (w, pw)]:
        got = opforge.binary_cross_entropy_with_logits(x, t, weight, pos_weight, reduction)
        want = F.binary_cross_entropy_with_logits(
            x, t, weight, reduction=reduction, pos_weight=pos_weight
        )
        torch.testing.assert_close(got, want)
        cot = torch.randn_like(want)
        torch.testing.assert_close(
            torch.autograd.grad(got, x, cot)[0], torch.autograd.grad(want, x, cot)[0]
        )


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits() -> None:
    x = torch.tensor([-200.0, -50.0, 50.0, 200.0])
    t = torch.tensor([1.0, 0.0, 1.0, 0.0])
    got = opforge.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, F.binary_cross_entropy_with_logits(x, t, reduction="none"))


@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["none", "batchmean", "mean", "sum"])
def test_kl_div(reduction: str, log_target: bool) -> None:
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(5, 6, generator=gen, dtype=torch.float64).log_softmax(1).requires_grad_()
    t = torch.randn(5, 6, generator=gen, dtype=torch.float64).softmax(1)
    if log_target:
        t = t.log()
    t.requires_grad_()
    got = opforge.kl_div(x, t, reduction, log_target)
    want = reference.kl_div(x, t, reduction, log_target)
    torch.testing.assert_close(got, want)
    cot = torch.randn_like(want)
    for g, w in zip(
        torch.autograd.grad(got, (x, t), cot), torch.autograd.grad(want, (x, t), cot), strict=True
    ):
        torch.testing.assert_close(g, w)


def test_kl_div_zero_target_contributes_nothing() -> None:
    x = torch.tensor([-1.0, -2.0])
    t = torch.tensor([0.0, 0.5], requires_grad=True)
    got = opforge.kl_div(x, t, "none")
    torch.testing.assert_close(got, F.kl_div(x, t, reduction="none"))
    assert got[0].item() == 0
    (g,) = torch.autograd.grad(got.sum(), t)
    assert g[0].item() == 0


@pytest.mark.parametrize(("alpha", "gamma"), [(0.25, 2.0), (-1.0, 0.0), (0.6, 1.0), (0.25, 0.5)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_sigmoid_focal_loss(alpha: float, gamma: float, reduction: str) -> None:
    gen = torch.Generator().manual_seed(11)
    x = (torch.randn(7, 5, generator=gen, dtype=torch.float64) * 3).requires_grad_()
    t = (torch.rand(7, 5, generator=gen, dtype=torch.float64) > 0.7).double()
    got = opforge.sigmoid_focal_loss(x, t, alpha, gamma, reduction)
    want = reference.sigmoid_focal_loss(x, t, alpha, gamma, reduction)
    torch.testing.assert_close(got, want)
    cot = torch.randn_like(want)
    torch.testing.assert_close(
        torch.autograd.grad(got, x, cot)[0], torch.autograd.grad(want, x, cot)[0]
    )


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0, 2.0, 3.7])
def test_sigmoid_focal_loss_float32_matches_float64_over_the_logit_range(gamma: float) -> None:
    # float32 computes q^gamma as exp(gamma log q) (fast::pow, vectorized): within
    # float32 rounding of the float64 loss and gradient. Logits within +-15 keep q = 1 - p_t
    # above 0 in float32 (beyond, q^(gamma - 1) is inf times a zero sigmoid slope: NaN, as
    # torchvision's autograd gives); the absolute tolerance is the float32 rounding of
    # bce's x + max(-x, 0) cancellation, an ulp of |x|.
    x64 = torch.linspace(-15, 15, 4099, dtype=torch.float64)
    t64 = (torch.arange(4099) % 3 == 0).double()
    x32 = x64.float().requires_grad_()
    x64 = x32.detach().double().requires_grad_()
    got = opforge.sigmoid_focal_loss(x32, t64.float(), 0.25, gamma, "none")
    want = opforge.sigmoid_focal_loss(x64, t64, 0.25, gamma, "none")
    torch.testing.assert_close(got.double(), want, rtol=2e-5, atol=2e-6)
    cot = torch.ones_like(want)
    g32 = torch.autograd.grad(got, x32, cot.float())[0]
    g64 = torch.autograd.grad(want, x64, cot)[0]
    torch.testing.assert_close(g32.double(), g64, rtol=2e-5, atol=2e-6)


def test_double_backward_of_mse_loss() -> None:
    x, y = _pair((4, 5))
    x.requires_grad_()
    y.requires_grad_()
    assert torch.autograd.gradgradcheck(lambda a, b: opforge.mse_loss(a, b), (x, y))
    assert torch.autograd.gradgradcheck(lambda a, b: opforge.l1_loss(a, b, "sum"), (x, y))


def test_bad_reduction_names_the_op_and_the_argument() -> None:
    x, y = _pair((3,))
    with pytest.raises(
        ValueError,
        match=r"opforge\.mse_loss: reduction must be one of 'none', 'mean', 'sum', got 'avg'",
    ):
        opforge.mse_loss(x, y, "avg")
    with pytest.raises(ValueError, match="opforge.l1_loss: reduction must be one of"):
        opforge.l1_loss(x, y, "batchmean")
    with pytest.raises(ValueError, match="got 'elementwise'"):
        opforge.kl_div(x, y, "elementwise")
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        opforge.huber_loss(x, y, delta=0.0)
    with pytest.raises(RuntimeError, match="opforge.mse_loss"):
        opforge.mse_loss(torch.randn(3), torch.randn(4))


def test_losses_compile_and_have_fake_kernels() -> None:
    x, y = _pair((4, 5), torch.float32)
    fn = torch.compile(
        lambda a, b: (
            opforge.mse_loss(a, b) + opforge.binary_cross_entropy_with_logits(a, b.sigmoid())
        ),
        fullgraph=True,
        backend="aot_eager",
    )
    want = F.mse_loss(x, y) + F.binary_cross_entropy_with_logits(x, y.sigmoid())
    torch.testing.assert_close(fn(x, y), want)
    with torch._subclasses.fake_tensor.FakeTensorMode():
        a = torch.empty(8, 3)
        assert opforge.huber_loss(a, a).shape == ()
        assert opforge.huber_loss(a, a, "none").shape == (8, 3)
