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


@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_matches_aten(groups: int, channels_last: bool) -> None:
    x = torch.randn(3, 6, 5, 4) * 3 + 1
    if channels_last:  # the forward kernel reads NHWC, the gradients keep the layout
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = torch.randn(6), torch.randn(6)
    out, mean, rstd = opforge.group_norm_forward(x, groups, w, b, 1e-4)
    ref = torch.native_group_norm(x, w, b, 3, 6, 20, groups, 1e-4)
    torch.testing.assert_close((out, mean, rstd), ref)
    assert out.stride() == ref[0].stride()
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    refs = [t.clone().requires_grad_() for t in (x, w, b)]
    g = torch.randn_like(x)
    ours = torch.autograd.grad(opforge.group_norm(ins[0], groups, ins[1], ins[2], 1e-4), ins, g)
    theirs = torch.autograd.grad(F.group_norm(refs[0], groups, refs[1], refs[2], 1e-4), refs, g)
    for a, e in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-4)
        assert a.stride() == e.stride()


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


# ---- batch_norm -------------------------------------------------------------------------------


def _buffers(c: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(c, dtype=dtype), torch.rand(c, dtype=dtype) + 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5, 6), (2, 5, 3)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_running_stats_match_torch(
    dtype: torch.dtype, shape: tuple[int, ...], training: bool
) -> None:
    c = shape[1]
    x = torch.randn(shape, dtype=dtype) * 2 + 0.5
    w, b = torch.randn(c, dtype=dtype), torch.randn(c, dtype=dtype)
    rm, rv = _buffers(c, dtype)
    ours_m, ours_v, ref_m, ref_v = rm.clone(), rv.clone(), rm.clone(), rv.clone()
    for momentum in (0.1, 0.7):  # twice: the second update starts from the first
        got = opforge.batch_norm(x, w, b, ours_m, ours_v, training, momentum, 1e-3)
        expected = F.batch_norm(x, ref_m, ref_v, w, b, training, momentum, 1e-3)
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close((ours_m, ours_v), (ref_m, ref_v))
    if not training:
        # Eval mode reads the running statistics and leaves them alone.
        assert torch.equal(ours_m, rm) and torch.equal(ours_v, rv)


def test_batch_norm_updates_strided_buffers_in_place() -> None:
    x = torch.randn(6, 4, 3)
    storage = torch.zeros(4, 2)
    rm, rv = storage[:, 0], torch.ones(8)[::2]
    ref_m, ref_v = rm.clone(), rv.clone()
    opforge.batch_norm(x, running_mean=rm, running_var=rv, training=True)
    F.batch_norm(x, ref_m, ref_v, training=True)
    torch.testing.assert_close((storage[:, 0], rv), (ref_m, ref_v))
    assert torch.equal(storage[:, 1], torch.zeros(4))


def test_batch_norm_without_buffers_and_empty_batch() -> None:
    x = torch.randn(5, 3, 4)
    torch.testing.assert_close(
        opforge.batch_norm(x, training=True), F.batch_norm(x, None, None, training=True)
    )
    rm, rv = _buffers(3, torch.float32)
    before = (rm.clone(), rv.clone())
    out, mean, invstd = opforge.batch_norm_forward(torch.randn(0, 3, 4), None, None, rm, rv, True)
    assert out.shape == (0, 3, 4) and mean.shape == (3,) and invstd.shape == (3,)
    assert torch.equal(rm, before[0]) and torch.equal(rv, before[1])


def test_batch_norm_bad_inputs() -> None:
    x = torch.randn(4, 3, 5)
    rm, rv = _buffers(3, torch.float32)
    with pytest.raises(
        RuntimeError, match=r"opforge\.batch_norm: expected 'weight' of shape \[3\]"
    ):
        opforge.batch_norm(x, torch.randn(4), None, rm, rv)
    with pytest.raises(RuntimeError, match=r"opforge\.batch_norm: expected 'bias' of shape \[3\]"):
        opforge.batch_norm(x, None, torch.randn(3, 1), rm, rv)
    with pytest.raises(RuntimeError, match=r"batch_norm: expected 'running_mean' of shape \[3\]"):
        opforge.batch_norm(x, None, None, torch.zeros(4), rv, True)
    with pytest.raises(RuntimeError, match=r"batch_norm: expected 'running_var' of shape \[3\]"):
        opforge.batch_norm(x, None, None, rm, torch.ones(2), False)
    with pytest.raises(
        RuntimeError, match=r"opforge\.batch_norm: 'running_mean' and 'running_var'"
    ):
        opforge.batch_norm(x, None, None, rm, None, False)
    with pytest.raises(RuntimeError, match=r"opforge\.batch_norm_forward: 'running_mean' and"):
        opforge.batch_norm_forward(x)
    with pytest.raises(ValueError, match=r"opforge\.batch_norm: expected more than 1 value per"):
        opforge.batch_norm(torch.randn(1, 3), None, None, rm, rv, True)
    with pytest.raises(ValueError, match=r"batch_norm_forward: expected more than 1 value per"):
        opforge.batch_norm_forward(torch.randn(1, 3, 1, 1), training=True)
    # Eval mode normalizes a single value per channel fine (as torch does).
    opforge.batch_norm(torch.randn(1, 3), None, None, rm, rv, False)
    with pytest.raises(
        RuntimeError, match=r"opforge\.batch_norm: expected 'input' with at least 2"
    ):
        opforge.batch_norm(torch.randn(3), None, None, rm, rv)
    with pytest.raises(TypeError, match=r"opforge\.batch_norm: expected 'running_mean' to have"):
        opforge.batch_norm(x, None, None, rm.double(), rv)
    m, r = torch.randn(3), torch.rand(3)
    with pytest.raises(RuntimeError, match=r"batch_norm_backward: expected 'save_invstd' of shape"):
        opforge.batch_norm_backward(x, x, m, torch.rand(4), True, [True] * 3)
    with pytest.raises(RuntimeError, match=r"batch_norm_backward: expected 'grad_out' of shape"):
        opforge.batch_norm_backward(x[:2], x, m, r, True, [True] * 3)
    with pytest.raises(
        RuntimeError, match=r"batch_norm_double_backward: expected 'grad_grad_weight'"
    ):
        opforge.batch_norm_double_backward(x, x, x, m, r, True, grad_grad_weight=torch.randn(2))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 7, 5)])
def test_batch_norm_gradients_match_torch(training: bool, shape: tuple[int, ...]) -> None:
    x = torch.randn(shape) * 3 + 1
    w, b = torch.randn(4), torch.randn(4)
    rm, rv = _buffers(4, torch.float32)
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    refs = [t.clone().requires_grad_() for t in (x, w, b)]
    g = torch.randn(shape)
    ours = opforge.batch_norm(ins[0], ins[1], ins[2], rm.clone(), rv.clone(), training)
    theirs = F.batch_norm(refs[0], rm.clone(), rv.clone(), refs[1], refs[2], training)
    for a, e in zip(
        torch.autograd.grad(ours, ins, g), torch.autograd.grad(theirs, refs, g), strict=True
    ):
        torch.testing.assert_close(a, e, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward(training: bool) -> None:
    x, w, b = _rand(4, 3, 2, requires_grad=True), _rand(3), _rand(3)
    w.requires_grad_()
    b.requires_grad_()
    rm, rv = _buffers(3, DOUBLE)
    assert torch.autograd.gradgradcheck(
        lambda *t: opforge.batch_norm(t[0], t[1], t[2], rm.clone(), rv.clone(), training), (x, w, b)
    )


def test_batch_norm_compiled_updates_buffers() -> None:
    torch._dynamo.reset()
    x = torch.randn(4, 3, 5)
    rm, rv = _buffers(3, torch.float32)
    ref_m, ref_v = rm.clone(), rv.clone()
    fn = torch.compile(
        lambda t, m, v: opforge.batch_norm(t, None, None, m, v, True, 0.2) * 2,
        fullgraph=True,
        backend="aot_eager",
    )
    got = fn(x, rm, rv)
    expected = F.batch_norm(x, ref_m, ref_v, None, None, True, 0.2) * 2
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close((rm, rv), (ref_m, ref_v))


# ---- local_response_norm ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,size,alpha,beta,k",
    [
        ((2, 16, 9), 5, 1e-4, 0.75, 1.0),
        ((2, 7, 3, 4), 2, 0.3, 0.5, 2.0),  # even window: more channels before than after
        ((1, 3, 2, 2, 2), 9, 0.5, 1.2, 1.0),  # window wider than the channels
        ((2, 6, 5), 3, 2.0, 0.75, 0.1),  # k < 1/2: the pow path
        ((2, 6, 70), 3, -0.01, 0.75, 1.0),  # alpha < 0, and more than one tile of positions
    ],
)
def test_local_response_norm_matches_torch(
    shape: tuple[int, ...], size: int, alpha: float, beta: float, k: float
) -> None:
    x = torch.randn(shape, dtype=DOUBLE)
    ref = F.local_response_norm(x, size, alpha, beta, k)
    torch.testing.assert_close(opforge.local_response_norm(x, size, alpha, beta, k), ref)
    got32 = opforge.local_response_norm(x.float(), size, alpha, beta, k)
    torch.testing.assert_close(got32, ref.float(), atol=1e-5, rtol=1e-5)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    g = torch.randn(shape, dtype=DOUBLE)
    (ours,) = torch.autograd.grad(
        opforge.local_response_norm(xs[0], size, alpha, beta, k), xs[0], g
    )
    (theirs,) = torch.autograd.grad(F.local_response_norm(xs[1], size, alpha, beta, k), xs[1], g)
    torch.testing.assert_close(ours, theirs)


def test_local_response_norm_bad_inputs() -> None:
    with pytest.raises(
        RuntimeError, match=r"local_response_norm: expected 'input' with at least 3"
    ):
        opforge.local_response_norm(torch.randn(3, 4), 2)
    with pytest.raises(RuntimeError, match=r"local_response_norm: expected 'size' to be positive"):
        opforge.local_response_norm(torch.randn(3, 4, 5), 0)
    with pytest.raises(RuntimeError, match=r"local_response_norm: expected 'size' to be positive"):
        torch.ops.opforge.local_response_norm(torch.randn(3, 4, 5, device="meta"), -1)
    with pytest.raises(RuntimeError, match=r"local_response_norm_backward: expected 'grad_output'"):
        opforge.local_response_norm_backward(
            torch.randn(3, 4, 4), torch.randn(3, 4, 5), 2, 1e-4, 0.75, 1.0
        )
    assert opforge.local_response_norm(torch.randn(0, 4, 5), 2).shape == (0, 4, 5)


def test_batch_norm_double_backward_eval_matches_reference() -> None:
    from opforge import reference

    u, g, x = _rand(4, 3, 2), _rand(4, 3, 2), _rand(4, 3, 2)
    m, r, w, p, q = _rand(3), torch.rand(3, dtype=DOUBLE) + 0.5, _rand(3), _rand(3), _rand(3)
    args = (u, g, x, m, r, False, w, None, None, p, q)
    got = opforge.batch_norm_double_backward(*args)
    expected = reference.batch_norm_double_backward(*args)
    torch.testing.assert_close(got, expected)
    # The statistics are constants in eval mode: nothing reaches grad_mean / grad_invstd.
    assert not got[5].any() and not got[6].any()


def _double_backward_cases() -> list[tuple[str, tuple[object, ...]]]:
    g = torch.Generator().manual_seed(3)

    def t(*shape: int, positive: bool = False) -> torch.Tensor:
        v = torch.rand(shape, generator=g, dtype=DOUBLE)
        return v + 0.5 if positive else v * 4 - 2

    ln, gn, bn = (2, 3, 5), (3, 4, 2), (5, 2)
    return [
        ("layer_norm", (t(*ln), t(*ln), t(*ln), [3, 5], t(2, 1, 1), t(2, 1, 1, positive=True))),
        (
            "layer_norm",
            (t(*ln), t(*ln), t(*ln), [5], t(2, 3, 1), t(2, 3, 1, positive=True), t(5))
            + (t(2, 3, 1), t(2, 3, 1), t(5), None),
        ),
        ("group_norm", (t(*gn), t(*gn), t(*gn), 2, t(3, 2), t(3, 2, positive=True))),
        (
            "group_norm",
            (t(*gn), t(*gn), t(*gn), 4, t(3, 4), t(3, 4, positive=True), None, t(3, 4))
            + (t(3, 4), None, t(4)),
        ),
        ("batch_norm", (t(*bn), t(*bn), t(*bn), t(2), t(2, positive=True), True, t(2), t(2))),
        ("batch_norm", (t(*bn), t(*bn), t(*bn), t(2), t(2, positive=True), False, None, t(2))),
    ]


@pytest.mark.parametrize("case", range(6))
def test_double_backward_ops_match_reference(case: int) -> None:
    from opforge import reference

    name, args = _double_backward_cases()[case]
    op = f"{name}_double_backward"
    got = getattr(opforge, op)(*args)
    torch.testing.assert_close(got, getattr(reference, op)(*args))
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    inputs = [a.clone().requires_grad_() for a in tensors]

    def fn(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        it = iter(xs)
        call = [next(it) if isinstance(a, torch.Tensor) else a for a in args]
        return tuple(o for o in getattr(opforge, op)(*call) if o.requires_grad)

    assert torch.autograd.gradcheck(fn, tuple(inputs))


def test_negative_eps_follows_torch() -> None:
    # torch allows any eps; a small negative one still normalizes rows with enough spread.
    x = torch.randn(4, 6, dtype=DOUBLE)
    torch.testing.assert_close(
        opforge.layer_norm(x, [6], eps=-1e-3), F.layer_norm(x, [6], eps=-1e-3)
    )
    xg = torch.randn(2, 4, 5, dtype=DOUBLE)
    torch.testing.assert_close(opforge.group_norm(xg, 2, eps=-1e-3), F.group_norm(xg, 2, eps=-1e-3))


# ---- statistics in the compute dtype (Note [Norm statistics in the compute dtype]) -------------


def _forward_statistics(x: torch.Tensor) -> dict[str, tuple[torch.Tensor, ...]]:
    """Each norm's (output, mean, rstd) on x [4, 6, 5] and the float64 statistics of the same
    values."""
    xd = x.double()
    rows = xd.reshape(4, 30)
    groups = xd.reshape(4, 3, 10)
    channels = xd.transpose(0, 1).reshape(6, 20)

    def stats(v: torch.Tensor, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        mean = v.mean(-1)
        rstd = torch.rsqrt(v.var(-1, unbiased=False) + 1e-5)
        return mean.reshape(shape), rstd.reshape(shape)

    return {
        "layer_norm": (*opforge.layer_norm_forward(x, [6, 5]), *stats(rows, (4, 1, 1))),
        "group_norm": (*opforge.group_norm_forward(x, 3), *stats(groups, (4, 3))),
        "batch_norm": (*opforge.batch_norm_forward(x, training=True), *stats(channels, (6,))),
    }


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_statistics_are_float32(dtype: torch.dtype, device: str) -> None:
    x = (torch.randn(4, 6, 5, dtype=DOUBLE) * 3 + 7).to(dtype).to(device)
    for name, (out, mean, rstd, mean64, rstd64) in _forward_statistics(x).items():
        assert out.dtype == dtype and mean.dtype == rstd.dtype == torch.float32, name
        # Unrounded: a half-precision rounding would be off by ~1e-3 relative.
        torch.testing.assert_close(mean.double(), mean64, rtol=2e-6, atol=1e-6, msg=name)
        torch.testing.assert_close(rstd.double(), rstd64, rtol=2e-5, atol=1e-6, msg=name)


def test_half_precision_statistics_are_checked() -> None:
    x = torch.randn(4, 6, dtype=torch.float16)
    g = torch.randn_like(x)
    _, mean, rstd = opforge.layer_norm_forward(x, [6])
    with pytest.raises(
        TypeError,
        match=r"opforge\.layer_norm_backward: expected 'mean' to have dtype float32 \(the "
        r"compute dtype of 'grad_out', float16\), got float16",
    ):
        opforge.layer_norm_backward(g, x, [6], mean.half(), rstd, [True, True, True])
    _, save_mean, save_invstd = opforge.batch_norm_forward(x, training=True)
    with pytest.raises(
        TypeError, match=r"batch_norm_double_backward: expected 'save_invstd' to have dtype float32"
    ):
        opforge.batch_norm_double_backward(g, g, x, save_mean, save_invstd.half(), True)
