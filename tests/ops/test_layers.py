"""Layer ops (schemas/layers.yaml): bad inputs and behaviour the generated battery cannot state."""

from __future__ import annotations

import math

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


# --- dropout ---------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def _philox4x32_10(key: int, counter: int) -> list[int]:
    """Philox4x32-10 with counter (counter, 0), as opforge/math/philox.h."""
    c = [counter & _M32, counter >> 32 & _M32, 0, 0]
    k0, k1 = key & _M32, key >> 32 & _M32
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & _M32, (p0 >> 32) ^ c[3] ^ k1, p0 & _M32]
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    return c


def _expected_cpu_mask(generator: torch.Generator, n: int, p: float) -> torch.Tensor:
    """The CPU mask: the seed is the generator's next random64() (what random_(-2**63, None)
    returns), element i keeps when the top 24 bits of its Philox word >= ceil(p * 2**24)."""
    seed = int(torch.empty((), dtype=torch.int64).random_(-(2**63), None, generator=generator))
    threshold = math.ceil(p * 2**24)
    words = [w for g in range((n + 3) // 4) for w in _philox4x32_10(seed & (2**64 - 1), g)]
    return torch.tensor([(w >> 8) >= threshold for w in words[:n]])


def test_philox_known_answer() -> None:
    # Random123's known-answer vector for a zero key and counter.
    assert _philox4x32_10(0, 0) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_dropout_mask_and_values_are_exact(dtype: torch.dtype) -> None:
    p = 0.3
    x = torch.randn(1003).to(dtype)
    x[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    gen = torch.Generator().manual_seed(2024)
    twin = torch.Generator().set_state(gen.get_state())
    out, mask = opforge.dropout_forward(x, p, True, generator=gen)
    assert mask.dtype == torch.bool and torch.equal(mask, _expected_cpu_mask(twin, x.numel(), p))
    opmath = torch.float64 if dtype == torch.float64 else torch.float32
    kept = (x.to(opmath) * torch.tensor(1 / (1 - p), dtype=opmath)).to(dtype)
    torch.testing.assert_close(out[mask], kept[mask], rtol=0, atol=0, equal_nan=True)
    assert torch.equal(out[~mask], torch.zeros_like(out[~mask]))  # exactly 0, even for inf/NaN
    # The generator moved on: the next call draws another mask.
    assert not torch.equal(opforge.dropout_forward(x, p, True, generator=gen)[1], mask)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_keeps_a_fraction_1_minus_p(p: float) -> None:
    n = 1 << 20
    mask = opforge.dropout_forward(torch.ones(n), p, True)[1]
    kept = mask.double().mean().item()
    assert abs(kept - (1 - p)) <= 6 * math.sqrt(p * (1 - p) / n)
    # Neighbouring elements (within one Philox call and across calls) are uncorrelated.
    m = mask.double() - mask.double().mean()
    for lag in (1, 2, 4):
        corr = (m[:-lag] * m[lag:]).mean() / m.var()
        assert abs(corr.item()) <= 6 / math.sqrt(n)


def test_dropout_seeds_and_threads() -> None:
    x = torch.randn(300, 301)
    masks = []
    threads = torch.get_num_threads()
    try:
        for seed, nthreads in ((7, 1), (7, max(2, threads)), (8, 1)):
            torch.set_num_threads(nthreads)
            masks.append(
                opforge.dropout(x, 0.5, generator=torch.Generator().manual_seed(seed)) != 0
            )
        torch.manual_seed(7)  # the default generator when generator=None
        first = opforge.dropout(x, 0.5)
        torch.manual_seed(7)
        assert torch.equal(opforge.dropout(x, 0.5), first)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(masks[0], masks[1])  # same seed, any thread count
    assert not torch.equal(masks[0], masks[2])  # another seed


def test_dropout_gradient_is_mask_times_scale() -> None:
    p = 0.4
    x = (torch.rand(64, 33, dtype=torch.float64) + 0.5).requires_grad_()
    y = opforge.dropout(x, p, generator=torch.Generator().manual_seed(3))
    grad = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, grad)
    mask = opforge.dropout_forward(x.detach(), p, True, generator=torch.Generator().manual_seed(3))[
        1
    ]
    assert torch.equal(y != 0, mask)
    torch.testing.assert_close(gx, grad * mask / (1 - p), rtol=0, atol=1e-15)
    # Double backward: dropout_backward is linear in grad_output.
    gy = grad.clone().requires_grad_()
    (ggx,) = torch.autograd.grad(opforge.dropout_backward(gy, mask, 2.0), gy, torch.ones_like(gy))
    assert torch.equal(ggx, mask * 2.0)


def test_dropout_without_randomness() -> None:
    x = torch.randn(5, 6)
    gen = torch.Generator().manual_seed(11)
    state = gen.get_state()
    for p, train in ((0.0, True), (0.7, False), (1.0, False)):
        y = opforge.dropout(x, p, train, generator=gen)
        assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()  # a copy, never the input
    assert torch.equal(opforge.dropout(x, 1.0, generator=gen), torch.zeros_like(x))
    assert torch.equal(gen.get_state(), state)  # nothing was drawn
    out, mask = opforge.dropout_forward(x, 0.7, False)
    assert torch.equal(out, x) and bool(mask.all())
    xg = x.clone().requires_grad_()
    (grad,) = torch.autograd.grad(opforge.dropout(xg, 0.7, False).sum(), xg)
    assert torch.equal(grad, torch.ones_like(x))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_dropout_bad_p(device: str) -> None:
    x = torch.randn(3, device=device)
    for p in (-0.1, 1.5, float("nan")):
        with pytest.raises(RuntimeError, match=r"opforge\.dropout: expected 'p' .* in \[0, 1\]"):
            opforge.dropout(x, p)
        with pytest.raises(RuntimeError, match=r"opforge\.dropout: expected 'p' .* in \[0, 1\]"):
            opforge.dropout(x, p, train=False)
        with pytest.raises(RuntimeError, match=r"opforge\.dropout_forward: expected 'p'"):
            torch.ops.opforge.dropout_forward(x, p, True)
    with pytest.raises(
        TypeError, match=r"opforge\.dropout: .*'generator' must be a torch\.Generator"
    ):
        opforge.dropout(x, 0.5, generator=3)  # type: ignore[arg-type]


def test_dropout_noncontiguous_and_compiled() -> None:
    x = torch.randn(40, 60)[:, ::3]
    y = opforge.dropout(x, 0.25, generator=torch.Generator().manual_seed(5))
    z = opforge.dropout(x.contiguous(), 0.25, generator=torch.Generator().manual_seed(5))
    assert torch.equal(y, z)
    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="aot_eager")
    def twice(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return opforge.dropout(t, 0.5), opforge.dropout(t, 0.5)

    a, b = twice(torch.ones(4096))
    assert not torch.equal(a, b)  # two draws, not one computed twice
    assert bool(((a == 0) | (a == 2)).all())


# --- CUDA (skipped without a GPU) ------------------------------------------------------------


@pytest.mark.cuda
def test_dropout_cuda_mask_is_the_shared_philox_mask() -> None:
    # A CUDA generator seeded with s starts at Philox offset 0 and advances by 4 words per
    # 4 elements, so the first call uses counters 0.. and the second ceil(n / 4)..
    n, p, seed = 1001, 0.35, 99
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, device="cuda")
    threshold = math.ceil(p * 2**24)
    base = 0
    for _ in range(2):
        out, mask = opforge.dropout_forward(x, p, True, generator=gen)
        words = [w for g in range((n + 3) // 4) for w in _philox4x32_10(seed, base + g)]
        expected = torch.tensor([(w >> 8) >= threshold for w in words[:n]])
        assert torch.equal(mask.cpu(), expected)
        kept = x * torch.tensor(1 / (1 - p), dtype=torch.float32, device="cuda")
        assert torch.equal(out, torch.where(mask, kept, torch.zeros_like(x)))
        base += (n + 3) // 4


@pytest.mark.cuda
def test_embedding_cuda_index_errors_and_gradients() -> None:
    w = torch.randn(50, 8, device="cuda", requires_grad=True)
    with pytest.raises(IndexError, match=r"opforge\.embedding: 'indices' out of range: 50 "):
        opforge.embedding(w, torch.tensor([1, 50], device="cuda"))
    with pytest.raises(IndexError, match=r"embedding_backward: 'indices' out of range: -3 "):
        opforge.embedding_backward(
            torch.randn(2, 8, device="cuda"), torch.tensor([-3, 1], device="cuda"), 50
        )
    idx = torch.randint(0, 50, (64, 9), device="cuda")
    grad = torch.randn(64, 9, 8, device="cuda")
    for dtype in (torch.float32, torch.float16):
        got = opforge.embedding_backward(grad.to(dtype), idx.int(), 50, 4)
        expected = opforge.embedding_backward(grad.cpu().to(dtype), idx.cpu(), 50, 4)
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-3, atol=1e-3)
