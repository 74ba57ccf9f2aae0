"""Layer ops (schemas/layers.yaml): bad inputs and behaviour the generated battery cannot state."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import opforge
from opforge import reference

# --- linear ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_linear_bad_inputs(device: str) -> None:
    x, w, b = (torch.randn(s, device=device) for s in ((4, 5), (3, 5), (3,)))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected the last dim of 'input'"):
        torch.ops.opforge.linear(x, torch.randn(3, 4, device=device))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected 'weight' to be 2-D"):
        torch.ops.opforge.linear(x, torch.randn(5, device=device))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected 'weight' to be 2-D"):
        torch.ops.opforge.linear(x, torch.randn(1, 3, 5, device=device))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected 'bias' of shape \[3\]"):
        torch.ops.opforge.linear(x, w, torch.randn(4, device=device))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected 'bias' of shape \[3\]"):
        torch.ops.opforge.linear(x, w, torch.randn(1, 3, device=device))
    with pytest.raises(RuntimeError, match=r"opforge\.linear: expected 'input' to have at least 1"):
        torch.ops.opforge.linear(torch.randn((), device=device), w, b)
    with pytest.raises(
        RuntimeError, match=r"opforge\.linear_backward: expected 'grad_output' of shape \[4, 3\]"
    ):
        torch.ops.opforge.linear_backward(torch.randn(4, 2, device=device), x, w, [True] * 3)
    with pytest.raises(RuntimeError, match=r"opforge\.linear_backward: expected the last dim"):
        torch.ops.opforge.linear_backward(torch.randn(4, 3, device=device), x, w.T, [True] * 3)


def test_linear_double_backward_bad_inputs() -> None:
    g, x, w = torch.randn(4, 3), torch.randn(4, 5), torch.randn(3, 5)
    with pytest.raises(RuntimeError, match=r"linear_double_backward: expected 'grad_grad_input'"):
        opforge.linear_double_backward(g, x, w, [True] * 3, grad_grad_input=torch.randn(4, 4))
    with pytest.raises(RuntimeError, match=r"linear_double_backward: expected 'grad_grad_bias'"):
        opforge.linear_double_backward(g, x, w, [True] * 3, grad_grad_bias=torch.randn(5))


def test_linear_backward_output_mask() -> None:
    g, x, w = torch.randn(2, 3, 4), torch.randn(2, 3, 5), torch.randn(4, 5)
    full = opforge.linear_backward(g, x, w, [True, True, True])
    for mask in ([True, False, False], [False, True, False], [False, False, True], [False] * 3):
        got = opforge.linear_backward(g, x, w, mask)
        meta = torch.ops.opforge.linear_backward(g.to("meta"), x.to("meta"), w.to("meta"), mask)
        for keep, a, m, f in zip(mask, got, meta, full, strict=True):
            if keep:
                torch.testing.assert_close(a, f)
                assert m.shape == f.shape
            else:
                assert a is None and m is None


def test_linear_matches_torch_for_large_and_strided_inputs() -> None:
    x = torch.randn(3, 37, 130)[:, ::2]  # non-contiguous rows
    w, b = torch.randn(65, 130), torch.randn(65)
    torch.testing.assert_close(opforge.linear(x, w, b), F.linear(x, w, b))
    torch.testing.assert_close(opforge.linear(x, w.T.contiguous().T), F.linear(x, w))


@pytest.mark.parametrize("needs", [(True, False, True), (False, True, True), (True, True, False)])
def test_linear_double_backward_with_some_inputs_frozen(needs: tuple[bool, bool, bool]) -> None:
    # A frozen input or a missing bias leaves linear_backward outputs undefined; the double
    # backward must treat them as zero (e.g. a gradient penalty through a frozen layer).
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=needs[0])
    w = torch.randn(3, 5, dtype=torch.float64, requires_grad=needs[1])
    b = torch.randn(3, dtype=torch.float64, requires_grad=True) if needs[2] else None
    inputs = tuple(t for t in (x, w, b) if t is not None and t.requires_grad)

    def penalty(impl: object) -> tuple[torch.Tensor, ...]:
        y = impl(x, w, b)  # type: ignore[operator]
        grads = torch.autograd.grad((y.sin()).sum(), inputs, create_graph=True)
        return torch.autograd.grad(torch.stack([(g**2).sum() for g in grads]).sum(), inputs)

    for got, expected in zip(penalty(opforge.linear), penalty(F.linear), strict=True):
        torch.testing.assert_close(got, expected)
    args = [t for t in (x, w, b) if t is not None]
    fn = lambda *t: opforge.linear(t[0], t[1], t[2] if len(t) > 2 else None)  # noqa: E731
    assert torch.autograd.gradgradcheck(fn, args)


# --- channel_shuffle -------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_channel_shuffle_bad_inputs(device: str) -> None:
    x = torch.randn(2, 6, 4, device=device)
    for groups in (0, -2):
        with pytest.raises(
            RuntimeError,
            match=rf"opforge\.channel_shuffle: expected 'groups' to be positive, got {groups}",
        ):
            torch.ops.opforge.channel_shuffle(x, groups)
    with pytest.raises(
        RuntimeError, match=r"channels of 'self' \(6\) to be divisible by 'groups' \(4\)"
    ):
        torch.ops.opforge.channel_shuffle(x, 4)
    with pytest.raises(
        RuntimeError, match=r"opforge\.channel_shuffle: expected 'self' to have at least 3"
    ):
        torch.ops.opforge.channel_shuffle(torch.randn(2, 6, device=device), 2)


def test_channel_shuffle_layouts() -> None:
    base = torch.randn(3, 13, 24, 5, 7)
    for x, groups in (
        (base[1:, 1:], 3),  # contiguous but starting mid-storage
        (base[:, :12].permute(0, 1, 3, 4, 2), 4),  # strided
        (torch.randn(4, 12, 5, 5).to(memory_format=torch.channels_last), 6),
        (torch.randn(5, 64, 1, 1), 8),  # one element per plane
        (torch.randn(2, 9, 3, dtype=torch.float16), 3),
    ):
        torch.testing.assert_close(
            opforge.channel_shuffle(x, groups), F.channel_shuffle(x, groups), rtol=0, atol=0
        )


def test_channel_shuffle_is_inverted_by_the_complementary_groups() -> None:
    x = torch.randn(2, 12, 3, 3)
    y = opforge.channel_shuffle(x, 3)
    assert torch.equal(opforge.channel_shuffle(y, 4), x)


@pytest.mark.parametrize(
    "present", [(False, True, True), (True, False, False), (False, False, True)]
)
def test_linear_double_backward_absent_grads_count_as_zero(present: tuple[bool, ...]) -> None:
    g, x, w = torch.randn(4, 3), torch.randn(4, 5), torch.randn(3, 5)
    given = [
        torch.randn(s) if p else None for s, p in zip(((4, 5), (3, 5), (3,)), present, strict=True)
    ]
    for mask in ([True, True, True], [True, False, True], [False, True, False]):
        got = opforge.linear_double_backward(g, x, w, mask, *given)
        expected = reference.linear_double_backward(g, x, w, mask, *given)
        for a, e in zip(got, expected, strict=True):
            if e is None:
                assert a is None
            else:
                torch.testing.assert_close(a, e.detach())


# --- embedding -------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_embedding_bad_arguments(device: str) -> None:
    w = torch.randn(5, 3, device=device)
    idx = torch.tensor([0, 4, 2], device=device)
    with pytest.raises(RuntimeError, match=r"opforge\.embedding: expected 'weight' to be 2-D"):
        torch.ops.opforge.embedding(torch.randn(5, device=device), idx)
    for pad in (-2, 5):
        with pytest.raises(
            RuntimeError,
            match=rf"opforge\.embedding: expected 'padding_idx' to be -1 \(none\) or in \[0, 5\), got {pad}",
        ):
            torch.ops.opforge.embedding(w, idx, pad)
    if device == "cpu":  # Meta kernels check devices, not dtypes
        with pytest.raises(TypeError, match=r"opforge\.embedding: expected .* 'indices'.*float32"):
            torch.ops.opforge.embedding(w, idx.float())
    g = torch.randn(3, 3, device=device)
    with pytest.raises(RuntimeError, match=r"embedding_backward: expected 'padding_idx' .* got 7"):
        torch.ops.opforge.embedding_backward(g, idx, 5, 7)
    with pytest.raises(RuntimeError, match=r"embedding_backward: expected 'num_weights' to be non"):
        torch.ops.opforge.embedding_backward(g, idx, -1)
    with pytest.raises(RuntimeError, match=r"embedding_backward: expected 'grad_output' of shape"):
        torch.ops.opforge.embedding_backward(torch.randn(2, 3, device=device), idx, 5)


def test_embedding_index_out_of_range() -> None:
    w = torch.randn(5, 3)
    for bad in (5, -1, 2**40):
        idx = torch.tensor([[0, 1], [bad, 2]])
        with pytest.raises(
            IndexError, match=rf"opforge\.embedding: 'indices' out of range: {bad} "
        ):
            opforge.embedding(w, idx)
        with pytest.raises(
            IndexError, match=rf"embedding_backward: 'indices' out of range: {bad} "
        ):
            opforge.embedding_backward(torch.randn(2, 2, 3), idx, 5)
    with pytest.raises(IndexError, match=r"'indices' out of range: 3 is not in \[0, 3\)"):
        opforge.embedding(torch.randn(3, 0), torch.tensor([3]))  # checked even with nothing to copy
    with pytest.raises(IndexError, match=r"'indices' out of range: 7 "):
        opforge.embedding(w, torch.tensor([1, 7], dtype=torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_embedding_int32_indices_and_padding_gradients(dtype: torch.dtype) -> None:
    w = torch.randn(50, 16, dtype=dtype)
    idx = torch.randint(0, 50, (7, 30))
    idx[0, :5] = 3  # the padding row, used several times
    for pad in (-1, 3):
        ours_w = w.clone().requires_grad_()
        ref_w = w.double().requires_grad_()  # float64: ATen sums bfloat16 in bfloat16
        ours = opforge.embedding(ours_w, idx.int(), pad)
        ref = F.embedding(idx, ref_w, padding_idx=None if pad == -1 else pad)
        assert torch.equal(ours, ref.to(dtype))
        grad = torch.randn_like(ours)
        (g_ours,) = torch.autograd.grad(ours, ours_w, grad)
        (g_ref,) = torch.autograd.grad(ref, ref_w, grad.double())
        torch.testing.assert_close(g_ours, g_ref.to(dtype))
        if pad == 3:
            assert not g_ours[3].any()


def test_embedding_double_backward_skips_padding_positions() -> None:
    w = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[0, 2, 2], [5, 2, 1]])
    fn = lambda t: opforge.embedding(t, idx, 2)  # noqa: E731
    assert torch.autograd.gradgradcheck(fn, (w,))
    g = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    gw = opforge.embedding_backward(g, idx, 6, 2)
    (gg,) = torch.autograd.grad(gw, g, torch.ones_like(gw))
    torch.testing.assert_close(gg, (idx != 2).unsqueeze(-1).double().expand(2, 3, 4))


def test_embedding_backward_empty_and_deterministic() -> None:
    out = opforge.embedding_backward(torch.randn(0, 2, 3), torch.zeros(0, 2, dtype=torch.long), 5)
    assert torch.equal(out, torch.zeros(5, 3))
    # Many repeats of a few rows: the same bits whatever the thread count.
    idx = torch.randint(0, 4, (20000,))
    grad = torch.randn(20000, 64)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = opforge.embedding_backward(grad, idx, 4)
        torch.set_num_threads(max(2, threads))
        many = opforge.embedding_backward(grad, idx, 4)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, many)
    torch.testing.assert_close(
        one, torch.zeros(4, 64).index_add_(0, idx, grad), rtol=1e-4, atol=1e-3
    )
