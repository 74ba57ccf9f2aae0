"""Norm family (schemas/norm.yaml) beyond the generated battery: bad inputs, output masks,
statistics against ATen's, long rows, large offsets, and double backward with every input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import opforge

DOUBLE = torch.float64


def _rand(*shape: int, dtype: torch.dtype = DOUBLE, requires_grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype).requires_grad_(requires_grad)


# ---- layer_norm -------------------------------------------------------------------------------


def test_layer_norm_bad_inputs() -> None:
    x = torch.randn(4, 6, 2)
    with pytest.raises(RuntimeError, match=r"opforge\.layer_norm: expected 'input' whose trailing"):
        opforge.layer_norm(x, [6])
    with pytest.raises(RuntimeError, match=r"opforge\.layer_norm: expected 'input' whose trailing"):
        opforge.layer_norm(x, [3, 4, 6, 2])
    with pytest.raises(RuntimeError, match=r"opforge\.layer_norm: expected 'normalized_shape' to"):
        opforge.layer_norm(x, [])
    with pytest.raises(
        RuntimeError, match=r"opforge\.layer_norm: expected 'weight' of shape \[2\]"
    ):
        opforge.layer_norm(x, [2], torch.randn(3))
    with pytest.raises(
        RuntimeError, match=r"opforge\.layer_norm: expected 'bias' of shape \[6, 2\]"
    ):
        opforge.layer_norm(x, [6, 2], None, torch.randn(12))
    with pytest.raises(
        TypeError, match=r"opforge\.layer_norm: expected 'weight' to have the dtype"
    ):
        opforge.layer_norm(x, [2], torch.randn(2, dtype=DOUBLE))
    with pytest.raises(RuntimeError, match=r"opforge\.layer_norm_forward: expected 'weight' of"):
        opforge.layer_norm_forward(x, [2], torch.randn(2, 1))


def test_layer_norm_backward_bad_inputs() -> None:
    x, g = torch.randn(4, 6), torch.randn(4, 6)
    m, r = torch.randn(4, 1), torch.rand(4, 1)
    mask = [True, True, True]
    op = opforge.layer_norm_backward
    with pytest.raises(
        RuntimeError, match=r"layer_norm_backward: expected 'mean' of shape \[4, 1\]"
    ):
        op(g, x, [6], torch.randn(4), r, mask)
    with pytest.raises(
        RuntimeError, match=r"layer_norm_backward: expected 'rstd' of shape \[4, 1\]"
    ):
        op(g, x, [6], m, torch.rand(1, 4), mask)
    with pytest.raises(RuntimeError, match=r"layer_norm_backward: expected 'grad_out' of shape"):
        op(torch.randn(4, 5), x, [6], m, r, mask)
    with pytest.raises(RuntimeError, match=r"layer_norm_backward: expected 'grad_rstd' of shape"):
        op(g, x, [6], m, r, mask, grad_rstd=torch.randn(4))
    with pytest.raises(
        RuntimeError, match=r"layer_norm_backward: expected 'weight' of shape \[6\]"
    ):
        op(g, x, [6], m, r, mask, torch.randn(5))
    # The meta kernel runs the same checks (fake tensors, torch.compile).
    with pytest.raises(RuntimeError, match=r"layer_norm_backward: expected 'mean' of shape"):
        op(g.to("meta"), x.to("meta"), [6], torch.randn(4, device="meta"), r.to("meta"), mask)
    with pytest.raises(
        RuntimeError, match=r"layer_norm_double_backward: expected 'grad_grad_weight' of shape"
    ):
        opforge.layer_norm_double_backward(g, g, x, [6], m, r, grad_grad_weight=torch.randn(4))
    with pytest.raises(RuntimeError, match=r"layer_norm_double_backward: expected 'mean' on"):
        opforge.layer_norm_double_backward(g, g, x, [6], m.to("meta"), r)


def test_layer_norm_matches_aten_statistics_and_gradients() -> None:
    x = _rand(5, 3, 8, dtype=torch.float32) * 4 + 2
    w, b = torch.randn(3, 8), torch.randn(3, 8)
    out, mean, rstd = opforge.layer_norm_forward(x, [3, 8], w, b, 1e-3)
    ref_out, ref_mean, ref_rstd = torch.native_layer_norm(x, [3, 8], w, b, 1e-3)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(mean, ref_mean)
    torch.testing.assert_close(rstd, ref_rstd)
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    g = torch.randn_like(x)
    ours = torch.autograd.grad(opforge.layer_norm(ins[0], [3, 8], ins[1], ins[2], 1e-3), ins, g)
    theirs = torch.autograd.grad(F.layer_norm(ref[0], [3, 8], ref[1], ref[2], 1e-3), ref, g)
    for a, e in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layer_norm_long_offset_rows(dtype: torch.dtype) -> None:
    # Rows longer than one accumulation chunk, with a mean far above their spread.
    x = torch.randn(3, 10000, dtype=DOUBLE) + 50
    expected = F.layer_norm(x.to(dtype).double(), [10000])
    got = opforge.layer_norm(x.to(dtype), [10000])
    tol = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}[dtype]
    torch.testing.assert_close(got.double(), expected, atol=tol, rtol=tol)


def test_layer_norm_backward_output_mask() -> None:
    x, g = torch.randn(4, 6), torch.randn(4, 6)
    _, m, r = opforge.layer_norm_forward(x, [6])
    full = opforge.layer_norm_backward(g, x, [6], m, r, [True, True, True])
    for mask in ([True, False, False], [False, True, False], [False, False, True]):
        got = opforge.layer_norm_backward(g, x, [6], m, r, mask)
        for want, t, f in zip(mask, got, full, strict=True):
            assert (t is not None) == want
            if t is not None:
                torch.testing.assert_close(t, f)


def test_layer_norm_empty() -> None:
    out, mean, rstd = opforge.layer_norm_forward(torch.randn(0, 5), [5])
    assert out.shape == (0, 5) and mean.shape == (0, 1) and rstd.shape == (0, 1)
    # Empty rows: torch gives mean 0, rstd NaN.
    out, mean, rstd = opforge.layer_norm_forward(torch.randn(3, 0), [0])
    ref = torch.native_layer_norm(torch.randn(3, 0), [0], None, None, 1e-5)
    torch.testing.assert_close((out, mean, rstd), ref, equal_nan=True)
    x = torch.randn(0, 5, requires_grad=True)
    w = torch.randn(5, requires_grad=True)
    opforge.layer_norm(x, [5], w).sum().backward()
    assert w.grad is not None and torch.equal(w.grad, torch.zeros(5))


def test_layer_norm_double_backward_all_inputs() -> None:
    x, w, b = _rand(3, 5, requires_grad=True), _rand(5, requires_grad=True), _rand(5)
    b.requires_grad_()
    assert torch.autograd.gradgradcheck(
        lambda *t: opforge.layer_norm_forward(t[0], [5], t[1], t[2]), (x, w, b)
    )
    # Only the weight requires grad: the input gradient is never formed (mask false).
    w2 = _rand(5, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: opforge.layer_norm(x.detach(), [5], t), (w2,))


# ---- group_norm -------------------------------------------------------------------------------


def test_group_norm_bad_inputs() -> None:
    x = torch.randn(2, 6, 4)
    with pytest.raises(RuntimeError, match=r"opforge\.group_norm: expected 'num_groups' to divide"):
        opforge.group_norm(x, 4)
    with pytest.raises(RuntimeError, match=r"opforge\.group_norm: expected 'num_groups' to be pos"):
        opforge.group_norm(x, 0)
    with pytest.raises(RuntimeError, match=r"opforge\.group_norm: expected 'num_groups' to be pos"):
        opforge.group_norm(x, -3)
    with pytest.raises(
        RuntimeError, match=r"opforge\.group_norm: expected 'input' with at least 2"
    ):
        opforge.group_norm(torch.randn(6), 3)
    with pytest.raises(
        RuntimeError, match=r"opforge\.group_norm: expected 'weight' of shape \[6\]"
    ):
        opforge.group_norm(x, 3, torch.randn(3))
    with pytest.raises(RuntimeError, match=r"opforge\.group_norm: expected 'bias' of shape \[6\]"):
        opforge.group_norm(x, 3, None, torch.randn(6, 1))
    m, r = torch.randn(2, 3), torch.rand(2, 3)
    with pytest.raises(
        RuntimeError, match=r"group_norm_backward: expected 'mean' of shape \[2, 3\]"
    ):
        opforge.group_norm_backward(x, x, 3, torch.randn(2, 2), r, [True] * 3)
    with pytest.raises(RuntimeError, match=r"group_norm_backward: expected 'num_groups' to divide"):
        opforge.group_norm_backward(x, x, 4, m, r, [True] * 3)
    with pytest.raises(
        RuntimeError, match=r"group_norm_double_backward: expected 'grad_grad_bias'"
    ):
        opforge.group_norm_double_backward(x, x, x, 3, m, r, grad_grad_bias=torch.randn(3))


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_matches_aten(groups: int) -> None:
    x = torch.randn(3, 6, 5, 4) * 3 + 1
    w, b = torch.randn(6), torch.randn(6)
    out, mean, rstd = opforge.group_norm_forward(x, groups, w, b, 1e-4)
    ref = torch.native_group_norm(x, w, b, 3, 6, 20, groups, 1e-4)
    torch.testing.assert_close((out, mean, rstd), ref)
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    refs = [t.clone().requires_grad_() for t in (x, w, b)]
    g = torch.randn_like(x)
    ours = torch.autograd.grad(opforge.group_norm(ins[0], groups, ins[1], ins[2], 1e-4), ins, g)
    theirs = torch.autograd.grad(F.group_norm(refs[0], groups, refs[1], refs[2], 1e-4), refs, g)
    for a, e in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-4)


def test_group_norm_backward_output_mask_and_empty() -> None:
    x, g = torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    _, m, r = opforge.group_norm_forward(x, 2)
    dx, dw, db = opforge.group_norm_backward(g, x, 2, m, r, [False, True, False])
    assert dx is None and db is None and dw is not None and dw.shape == (4,)
    out, mean, rstd = opforge.group_norm_forward(torch.randn(0, 4, 3), 2)
    assert out.shape == (0, 4, 3) and mean.shape == (0, 2)
    x0 = torch.randn(0, 4, 3, requires_grad=True)
    b0 = torch.randn(4, requires_grad=True)
    opforge.group_norm(x0, 2, None, b0).sum().backward()
    assert b0.grad is not None and torch.equal(b0.grad, torch.zeros(4))


def test_group_norm_double_backward_all_inputs() -> None:
    x, w, b = _rand(2, 4, 3, requires_grad=True), _rand(4), _rand(4)
    w.requires_grad_()
    b.requires_grad_()
    assert torch.autograd.gradgradcheck(
        lambda *t: opforge.group_norm_forward(t[0], 2, t[1], t[2]), (x, w, b)
    )
