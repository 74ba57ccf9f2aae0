"""opforge.clip_grad_norm_ and opforge.optim.clip_grad_norm_ against
torch.nn.utils.clip_grad_norm_: norms of every order, clipping and not, the value torch
returns, empty and mixed lists, errors, a result independent of the thread count, and a
training loop that clips with it."""

from __future__ import annotations

import math

import pytest
import torch

import opforge
import opforge.optim
from opforge import reference


def _grads(
    seed: int, shapes: tuple[tuple[int, ...], ...], dtype: torch.dtype = torch.float32
) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=torch.float64).to(dtype) for s in shapes]


SHAPES = ((40, 30), (7,), (0,), (3, 3, 3), (70_000,))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, -math.inf, 0.0, 3.0, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_matches_torch(norm_type: float, max_norm: float) -> None:
    # (torch has no +-inf norm of an empty tensor: those orders go without one)
    shapes = SHAPES if math.isfinite(norm_type) else tuple(s for s in SHAPES if s != (0,))
    ours, theirs = _grads(0, shapes), _grads(0, shapes)
    exact = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g.double(), norm_type) for g in ours]), norm_type
    )
    total = opforge.clip_grad_norm_(ours, max_norm, norm_type)
    expected = reference.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.dtype == torch.float32
    # torch accumulates |x|^p in float32, opforge in float64: for p other than 1, 2, +-inf
    # and 0 opforge is the closer to the exact norm (e.g. p = 3: 3e-8 against 3e-6).
    special = norm_type in (1.0, 2.0, 0.0) or math.isinf(norm_type)
    tol = 2e-6 if special else 1e-5
    torch.testing.assert_close(total, expected, rtol=tol, atol=0)
    torch.testing.assert_close(total.double(), exact, rtol=2e-7, atol=0)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_other_dtypes(dtype: torch.dtype) -> None:
    ours, theirs = _grads(1, SHAPES[:4], dtype), _grads(1, SHAPES[:4], dtype)
    total = opforge.clip_grad_norm_(ours, 0.3)
    expected = reference.clip_grad_norm_(theirs, 0.3, 2.0)
    tol = {"rtol": 1e-12, "atol": 0.0} if dtype == torch.float64 else {"rtol": 1e-2, "atol": 1e-3}
    assert total.dtype == dtype
    torch.testing.assert_close(total, expected, **tol)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, **tol)


def test_no_gradients_is_a_float32_zero() -> None:
    total = opforge.clip_grad_norm_([], 1.0)
    assert total.dtype == torch.float32 and total.device.type == "cpu" and total.item() == 0.0
    assert opforge.optim.clip_grad_norm_([torch.nn.Parameter(torch.ones(3))], 1.0).item() == 0.0


def test_result_does_not_depend_on_the_thread_count() -> None:
    threads = torch.get_num_threads()
    results = []
    for n in (1, 2):
        torch.set_num_threads(n)
        grads = _grads(2, ((300_000,), (5, 5)))
        results.append((opforge.clip_grad_norm_(grads, 0.1), grads))
    torch.set_num_threads(threads)
    assert torch.equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1], strict=True):
        assert torch.equal(a, b)


def test_errors_name_op_and_argument() -> None:
    with pytest.raises(
        TypeError, match=r"clip_grad_norm_: expected every tensor of 'grads' to have the dtype of"
    ):
        opforge.clip_grad_norm_([torch.ones(2), torch.ones(2, dtype=torch.float64)], 1.0)
    with pytest.raises(TypeError, match=r"clip_grad_norm_.*'grads'"):
        opforge.clip_grad_norm_([torch.ones(2, dtype=torch.int64)], 1.0)
    g = torch.ones(4)
    with pytest.raises(
        RuntimeError,
        match=r"clip_grad_norm_: 'grads' element 0 is written in place, but its memory is also passed as 'grads' element 1",
    ):
        opforge.clip_grad_norm_([g, g], 1.0)


def test_optim_wrapper_takes_parameters_and_mixed_groups() -> None:
    a = torch.nn.Parameter(torch.zeros(10))
    b = torch.nn.Parameter(torch.zeros(4, dtype=torch.float64))
    c = torch.nn.Parameter(torch.zeros(3))  # no gradient
    a.grad = torch.arange(10.0)
    b.grad = torch.ones(4, dtype=torch.float64) * 3
    twins = [torch.nn.Parameter(t.detach().clone()) for t in (a, b)]
    for twin, p in zip(twins, (a, b), strict=True):
        twin.grad = p.grad.clone()
    total = opforge.optim.clip_grad_norm_([a, b, c], 2.0)
    expected = torch.nn.utils.clip_grad_norm_(twins, 2.0)
    torch.testing.assert_close(total, expected)
    for p, twin in zip((a, b), twins, strict=True):
        torch.testing.assert_close(p.grad, twin.grad)
    assert c.grad is None


def test_error_if_nonfinite_raises_before_scaling() -> None:
    p = torch.nn.Parameter(torch.zeros(3))
    p.grad = torch.tensor([1.0, float("inf"), 2.0])
    before = p.grad.clone()
    with pytest.raises(RuntimeError, match=r"non-finite"):
        opforge.optim.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert torch.equal(p.grad, before)


def test_training_with_clipping_matches_torch() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    twin.load_state_dict(model.state_dict())
    x, y = torch.randn(64, 8) * 10, torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_twin = torch.optim.SGD(twin.parameters(), lr=0.05)
    for _ in range(10):
        for m, o, clip in (
            (model, opt, opforge.optim.clip_grad_norm_),
            (twin, opt_twin, torch.nn.utils.clip_grad_norm_),
        ):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            clip(m.parameters(), 0.5)
            o.step()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
