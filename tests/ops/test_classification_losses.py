"""cross_entropy and nll_loss (schemas/classification_loss.yaml) against
torch.nn.functional beyond the battery's samples: every input rank, both kernel
layouts (classes contiguous, classes strided, tiles of positions), weights,
ignored targets, label smoothing, probability targets, low precision, and the
errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

import opforge

REDUCTIONS = ["none", "mean", "sum"]
# (input shape, class dim size): (C), (N, C), a long row, (N, C, d), a plane wider than a tile.
SHAPES = [(7,), (6, 5), (3, 300), (2, 4, 9), (2, 3, 17, 19)]


def _case(
    shape: tuple[int, ...], dtype: torch.dtype = torch.float64, ignore_index: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(sum(shape))
    classes = shape[0] if len(shape) == 1 else shape[1]
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 3).to(dtype)
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    t = torch.randint(0, classes, target_shape, generator=gen)
    if ignore_index is not None and t.dim() > 0:
        t.view(-1)[::3] = ignore_index
    w = torch.rand(classes, generator=gen, dtype=torch.float64).to(dtype) + 0.5
    return x, t, w


def _check_loss_and_grad(ours: Any, theirs: Any, x: torch.Tensor, **tol: float) -> None:
    x = x.detach().requires_grad_()
    got = ours(x)
    want = theirs(x)
    torch.testing.assert_close(got, want, **tol)
    cot = torch.randn_like(want)
    (g,) = torch.autograd.grad(got, x, cot)
    (wg,) = torch.autograd.grad(want, x, cot)
    torch.testing.assert_close(g, wg, **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_cross_entropy_matches_torch(
    shape: tuple[int, ...], reduction: str, weighted: bool, label_smoothing: float
) -> None:
    x, t, w = _case(shape, ignore_index=1)
    weight = w if weighted else None
    kwargs: dict[str, Any] = {
        "ignore_index": 1,
        "reduction": reduction,
        "label_smoothing": label_smoothing,
    }
    _check_loss_and_grad(
        lambda v: opforge.cross_entropy(v, t, weight, **kwargs),
        lambda v: F.cross_entropy(v, t, weight, **kwargs),
        x,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_torch(shape: tuple[int, ...], reduction: str, weighted: bool) -> None:
    x, t, w = _case(shape, ignore_index=2)
    logp = torch.log_softmax(x, 0 if x.dim() == 1 else 1)
    weight = w if weighted else None
    _check_loss_and_grad(
        lambda v: opforge.nll_loss(v, t, weight, 2, reduction),
        lambda v: F.nll_loss(v, t, weight, ignore_index=2, reduction=reduction),
        logp,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(8, 1000), (4, 6, 5, 5)], ids=str)
def test_low_precision_accumulates_in_float(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    x, t, w = _case(shape, dtype)
    got = opforge.cross_entropy(x, t, w, reduction="none", label_smoothing=0.1)
    want = F.cross_entropy(x.double(), t, w.double(), reduction="none", label_smoothing=0.1)
    tol = {"atol": 1e-4, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 0.05, "rtol": 0.02}
    torch.testing.assert_close(got.double(), want, **tol)


def test_large_logits_are_stable() -> None:
    x = torch.tensor([[1e4, 0.0, -1e4], [-3e38, 3e38, 0.0]], dtype=torch.float32)
    t = torch.tensor([0, 2])
    got = opforge.cross_entropy(x, t, reduction="none", label_smoothing=0.0)
    torch.testing.assert_close(got, F.cross_entropy(x, t, reduction="none"))


def test_every_target_ignored_gives_nan_mean_and_zero_sum() -> None:
    x, _, _ = _case((4, 3))
    t = torch.full((4,), -100)
    assert torch.isnan(opforge.cross_entropy(x, t))
    assert opforge.cross_entropy(x, t, reduction="sum").item() == 0
    assert torch.isnan(opforge.nll_loss(x, t))
    x.requires_grad_()
    (g,) = torch.autograd.grad(opforge.cross_entropy(x, t, reduction="sum"), x)
    assert (g == 0).all()


def test_empty_batch() -> None:
    x = torch.randn(0, 5, dtype=torch.float64, requires_grad=True)
    t = torch.zeros(0, dtype=torch.int64)
    assert torch.isnan(opforge.cross_entropy(x, t))
    assert opforge.cross_entropy(x, t, reduction="none").shape == (0,)
    (g,) = torch.autograd.grad(opforge.cross_entropy(x, t, reduction="sum"), x)
    assert g.shape == (0, 5)


def test_non_contiguous_input() -> None:
    x, t, w = _case((5, 7))
    xt = x.t().contiguous().t()  # same values, column-major
    torch.testing.assert_close(opforge.cross_entropy(xt, t, w), F.cross_entropy(x, t, w))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (4, 6), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_class_probabilities(
    shape: tuple[int, ...], reduction: str, weighted: bool
) -> None:
    x, _, w = _case(shape)
    class_dim = 0 if x.dim() == 1 else 1
    probs = torch.softmax(torch.randn(shape, dtype=torch.float64), class_dim)
    weight = w if weighted else None
    _check_loss_and_grad(
        lambda v: opforge.cross_entropy(v, probs, weight, reduction=reduction, label_smoothing=0.2),
        lambda v: F.cross_entropy(v, probs, weight, reduction=reduction, label_smoothing=0.2),
        x,
    )


def test_double_backward_of_nll_loss() -> None:
    x, t, w = _case((4, 5), ignore_index=0)
    x.requires_grad_()
    assert torch.autograd.gradgradcheck(
        lambda v: opforge.nll_loss(v, t, w, 0, "sum") * v.sum(), (x,)
    )


def test_bad_target_raises_index_error_naming_the_op() -> None:
    x = torch.randn(3, 4)
    for bad in (4, -1):
        t = torch.tensor([0, bad, 1])
        with pytest.raises(
            IndexError, match=r"opforge\.cross_entropy_forward.*target.*" + str(bad)
        ):
            opforge.cross_entropy(x, t)
        with pytest.raises(IndexError, match=r"opforge\.nll_loss_forward.*target"):
            opforge.nll_loss(x, t)
    # Ignored targets need not be class indices.
    t = torch.tensor([0, -7, 1])
    torch.testing.assert_close(
        opforge.cross_entropy(x, t, ignore_index=-7), F.cross_entropy(x, t, ignore_index=-7)
    )
    # Strided classes (a tile of positions) check too.
    with pytest.raises(IndexError, match="target"):
        opforge.cross_entropy(
            torch.randn(2, 3, 5), torch.tensor([[0, 1, 2, 3, 0], [0, 0, 0, 0, 0]])
        )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda x, t: opforge.cross_entropy(x, t[:2]),
            r"opforge\.cross_entropy_forward: expected 'target' of shape",
        ),
        (lambda x, t: opforge.cross_entropy(x, t.int()), r"int64.*'target', got int32"),
        (
            lambda x, t: opforge.cross_entropy(x, t, torch.ones(5)),
            r"expected 'weight' of shape \(4\)",
        ),
        (
            lambda x, t: opforge.cross_entropy(x, t, label_smoothing=1.5),
            "label_smoothing must be between",
        ),
        (
            lambda x, t: opforge.cross_entropy(x, t, reduction="avg"),
            r"opforge\.cross_entropy: reduction must be one of",
        ),
        (lambda x, t: opforge.cross_entropy(torch.tensor(1.0), t[:0]), "0-d"),
        (lambda x, t: opforge.cross_entropy(x, torch.rand(3, 4).double()), "dtype"),
        (lambda x, t: opforge.cross_entropy(x, torch.rand(3, 5)), "shape of 'self'"),
        (
            lambda x, t: opforge.cross_entropy(x, torch.rand(3, 4), ignore_index=1),
            "ignore_index is not supported",
        ),
        (
            lambda x, t: opforge.nll_loss(x, t, reduction="batchmean"),
            r"opforge\.nll_loss: reduction",
        ),
    ],
)
def test_errors_name_the_op_and_the_argument(call: Any, message: str) -> None:
    x = torch.randn(3, 4)
    t = torch.tensor([0, 1, 3])
    with pytest.raises((RuntimeError, ValueError, TypeError), match=message):
        call(x, t)


def test_compiles_and_traces_with_fake_tensors() -> None:
    x, t, w = _case((4, 6, 3), torch.float32)

    def loss(v: torch.Tensor) -> torch.Tensor:
        return opforge.cross_entropy(v, t, w, label_smoothing=0.1) + opforge.nll_loss(
            torch.log_softmax(v, 1), t, w
        )

    torch._dynamo.reset()
    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), loss(x))


@pytest.mark.parametrize(("T", "alpha"), [(1.0, 0.5), (4.0, 0.9), (0.5, 0.0)])
@pytest.mark.parametrize("shape", [(6, 10), (2, 5, 3, 4)], ids=str)
def test_distillation_loss_matches_the_kl_form(
    shape: tuple[int, ...], T: float, alpha: float
) -> None:
    s, target, _ = _case(shape)
    t = torch.randn(
        shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5)
    ).requires_grad_()
    s.requires_grad_()
    got = opforge.distillation_loss(s, t, target, T, alpha)
    soft = F.kl_div(F.log_softmax(s / T, 1), F.softmax(t / T, 1), reduction="batchmean")
    want = F.cross_entropy(s, target) + alpha * T * T * soft
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(torch.autograd.grad(got, (s, t)), torch.autograd.grad(want, (s, t)))


def test_distillation_loss_errors() -> None:
    s, t = torch.randn(4, 3), torch.randn(4, 3)
    target = torch.tensor([0, 1, 2, 0])
    with pytest.raises(
        RuntimeError, match=r"opforge\.distillation_loss: expected a positive temperature"
    ):
        opforge.distillation_loss(s, t, target, 0.0, 0.5)
    with pytest.raises(
        RuntimeError, match=r"opforge\.distillation_loss: expected 't_logits' of the shape"
    ):
        opforge.distillation_loss(s, t[:, :2], target)
