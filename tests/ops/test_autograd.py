"""Generated autograd: gradcheck (float64), gradgradcheck where the backward ops are
themselves differentiable, gradients against the reference's in float32, and the
clear error for inputs without a derivative formula."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge
from codegen.opdecl import OpDecl
from tests.ops import opdb


def _params(pred: Any) -> list[Any]:
    return [pytest.param(op, id=op.qualified) for op in opdb.functional_ops() if pred(op)]


def _requiring_grad(
    op: OpDecl, dtype: torch.dtype, device: str = "cpu"
) -> list[tuple[opdb.Call, list[torch.Tensor]]]:
    """Each sample with fresh tensors, and its inputs set to require grad."""
    out = []
    for call in opdb.calls(op, dtype, device, variants=False):
        call = call.clone()
        inputs = opdb.grad_inputs(op, call)
        for t in inputs:
            t.requires_grad_()
        out.append((call, inputs))
    return out


def _fn(op: OpDecl, call: opdb.Call, inputs: list[torch.Tensor], impl: Any) -> Any:
    """impl(*args) as a function of `inputs` (what gradcheck varies), returning the outputs
    that carry gradients."""

    def run(*new: torch.Tensor) -> Any:
        swap = dict(zip(map(id, inputs), new, strict=True))
        c = call.map_tensors(lambda t: swap.get(id(t), t))
        return opdb.grad_outputs(op, impl(*c.args, **c.kwargs))

    return run


DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _params(opdb.numerically_differentiable))
def test_gradcheck(op: OpDecl, device: str) -> None:
    # The YAML samples are small: float64 gradcheck runs them on the GPU as well. A backward
    # that accumulates atomically differs between two runs by its rounding (nondet_tol).
    nondet_tol = 1e-10 if opdb.nondeterministic_backward(op, device.upper()) else 0.0
    for call, inputs in _requiring_grad(op, torch.float64, device):
        fn = _fn(op, call, inputs, getattr(opforge, op.name))
        assert torch.autograd.gradcheck(fn, tuple(inputs), nondet_tol=nondet_tol), call.label


@pytest.mark.parametrize("op", _params(opdb.double_differentiable))
def test_gradgradcheck(op: OpDecl) -> None:
    for call, inputs in _requiring_grad(op, torch.float64):
        fn = _fn(op, call, inputs, getattr(opforge, op.name))
        assert torch.autograd.gradgradcheck(fn, tuple(inputs)), call.label


@pytest.mark.parametrize("op", _params(opdb.differentiable))
def test_gradients_match_reference_float32(op: OpDecl) -> None:
    gen = torch.Generator().manual_seed(7)
    for call, inputs in _requiring_grad(op, torch.float32):
        # Written-into arguments (running stats) are updated by both calls: in training mode
        # the outputs do not read them, in eval mode neither call writes them.
        ours = _fn(op, call, inputs, getattr(opforge, op.name))(*inputs)
        ref = _fn(op, call, inputs, opdb.reference(op))(*inputs)
        grad_outs = [torch.randn(t.shape, generator=gen) for t in ours]
        got = torch.autograd.grad(ours, inputs, grad_outs, allow_unused=True)
        expected = torch.autograd.grad(ref, inputs, grad_outs, allow_unused=True)
        for g, e in zip(got, expected, strict=True):
            torch.testing.assert_close(
                g, e, atol=1e-5, rtol=1e-4, msg=lambda m, c=call: f"{c.label}: {m}"
            )


@pytest.mark.parametrize("op", _params(lambda o: not opdb.differentiable(o)))
def test_backward_through_non_differentiable_op_is_a_clear_error(op: OpDecl) -> None:
    call, _ = _requiring_grad(op, opdb.dtype_for(op, torch.float64))[0]
    out = getattr(opforge, op.name)(*call.args, **call.kwargs)
    if op.without_autograd:  # output_differentiability: [false] and no derivatives
        assert not any(t.requires_grad for t in opdb.outputs(out)), "outputs carry no history"
        return
    first = next(a.name for a in op.schema.arguments.flat_all if str(a.type) == "Tensor")
    with pytest.raises(
        RuntimeError, match=rf"opforge\.{op.name} is not differentiable with respect to '{first}'"
    ):
        sum(t.sum() for t in opdb.outputs(out)).backward()


@pytest.mark.parametrize("op", _params(lambda o: bool(o.non_differentiable)))
def test_non_differentiable_inputs_get_no_gradient(op: OpDecl) -> None:
    """`x: non_differentiable` inputs may require grad; backward leaves their .grad None and
    still reaches the differentiable ones."""
    for call, inputs in _requiring_grad(op, opdb.dtype_for(op, torch.float64)):
        quiet = [call.named(n) for n in op.non_differentiable]
        for t in quiet:
            t.requires_grad_()
        out = getattr(opforge, op.name)(*call.args, **call.kwargs)
        sum(t.sum() for t in opdb.grad_outputs(op, out)).backward()
        assert all(t.grad is None for t in quiet), call.label
        assert all(t.grad is not None for t in inputs), call.label


@pytest.mark.parametrize("op", _params(opdb.differentiable))
def test_compiled_backward_matches_eager(op: OpDecl) -> None:
    torch._dynamo.reset()
    call, inputs = _requiring_grad(op, torch.float32)[0]
    fn = _fn(op, call, inputs, getattr(opforge, op.name))

    def loss(*xs: torch.Tensor) -> torch.Tensor:
        return sum((t * 1.5).sum() for t in fn(*xs))  # type: ignore[return-value]

    compiled = torch.compile(loss, fullgraph=True, dynamic=True, backend="aot_eager")
    expected = torch.autograd.grad(loss(*inputs), inputs)
    got = torch.autograd.grad(compiled(*inputs), inputs)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)


def _first_tangent_call(op: OpDecl) -> tuple[opdb.Call, torch.Tensor]:
    call, inputs = _requiring_grad(op, opdb.dtype_for(op, torch.float64))[0]
    for t in inputs:
        t.requires_grad_(False)
    return call, inputs[0]


def _without_jvp(op: OpDecl) -> bool:
    return opdb.differentiable(op) and bool(op.derivatives) and not op.jvp


@pytest.mark.parametrize("op", _params(_without_jvp))
def test_forward_ad_is_a_clear_error(op: OpDecl) -> None:
    """An op without `jvp:` formulas: a tangent through it raises, naming it, instead of
    coming out as zeros (ATen's ops without forward AD raise likewise)."""
    import torch.autograd.forward_ad as fwAD

    call, primal = _first_tangent_call(op)
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal, torch.ones_like(primal))
        c = call.map_tensors(lambda t: dual if t is primal else t)
        with pytest.raises(NotImplementedError, match=rf"opforge\.{op.name}\b.*forward-mode AD"):
            getattr(opforge, op.name)(*c.args, **c.kwargs)


@pytest.mark.parametrize("op", _params(_without_jvp))
def test_jvp_is_a_clear_error(op: OpDecl) -> None:
    call, primal = _first_tangent_call(op)

    def fn(x: torch.Tensor) -> Any:
        c = call.map_tensors(lambda t: x if t is primal else t)
        return opdb.grad_outputs(op, getattr(opforge, op.name)(*c.args, **c.kwargs))

    with pytest.raises(NotImplementedError, match=rf"opforge\.{op.name}\b.*forward-mode AD"):
        torch.func.jvp(fn, (primal,), (torch.ones_like(primal),))


@pytest.mark.parametrize(
    "op", _params(lambda o: bool(o.jvp) and opdb.numerically_differentiable(o))
)
def test_forward_ad_gradcheck(op: OpDecl) -> None:
    """`jvp:` formulas against finite differences (float64), through forward_ad."""
    for call, inputs in _requiring_grad(op, torch.float64):
        fn = _fn(op, call, inputs, getattr(opforge, op.name))
        assert torch.autograd.gradcheck(
            fn,
            tuple(inputs),
            check_forward_ad=True,
            check_backward_ad=False,
            check_undefined_grad=False,
            check_batched_grad=False,
        ), call.label


@pytest.mark.parametrize("op", _params(lambda o: bool(o.jvp)))
def test_jvp_matches_reference(op: OpDecl) -> None:
    """torch.func.jvp of the op and of its reference (ATen's op, whose forward AD is
    PyTorch's), with a random tangent for every differentiable input."""
    gen = torch.Generator().manual_seed(3)
    for call, inputs in _requiring_grad(op, torch.float64):
        for t in inputs:
            t.requires_grad_(False)
        tangents = tuple(torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in inputs)
        ours = _fn(op, call, inputs, getattr(opforge, op.name))
        ref = _fn(op, call, inputs, opdb.reference(op))
        _, got = torch.func.jvp(ours, tuple(inputs), tangents)
        _, want = torch.func.jvp(ref, tuple(inputs), tangents)
        torch.testing.assert_close(got, want, msg=lambda m, c=call: f"{c.label}: {m}")


def test_forward_ad_through_in_place_and_out_variants() -> None:
    import torch.autograd.forward_ad as fwAD

    x, t = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    with fwAD.dual_level():
        # (an in-place op writes its tangent in place too: the dual gets a copy of t)
        inplace = fwAD.make_dual(x.clone(), t.clone())
        opforge.tanh_(inplace)
        out = torch.empty(5, dtype=torch.float64)
        opforge.tanh(fwAD.make_dual(x, t), out=out)
        for y in (inplace, out):
            torch.testing.assert_close(fwAD.unpack_dual(y).tangent, t * (1 - x.tanh() ** 2))


def test_jvp_through_a_small_network_matches_torch() -> None:
    """conv2d -> relu -> max_pool2d -> linear -> log_softmax under torch.func.jvp, in every
    input and parameter, against the same network of ATen ops."""
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    primals = (
        torch.randn(2, 3, 8, 8, generator=gen, dtype=torch.float64),
        torch.randn(4, 3, 3, 3, generator=gen, dtype=torch.float64),
        torch.randn(4, generator=gen, dtype=torch.float64),
        torch.randn(10, 36, generator=gen, dtype=torch.float64),
    )
    tangents = tuple(torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in primals)

    def net(lib: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, fc: torch.Tensor) -> Any:
        h = lib.max_pool2d(lib.relu(lib.conv2d(x, w, b, padding=[1, 1])), [2, 2])
        return lib.log_softmax(lib.linear(h.flatten(1)[:, :36], fc), 1)

    ours = torch.func.jvp(lambda *a: net(opforge, *a), primals, tangents)
    theirs = torch.func.jvp(lambda *a: net(F, *a), primals, tangents)
    torch.testing.assert_close(ours, theirs)


def _floating_read_inputs(op: OpDecl) -> tuple[opdb.Call, list[torch.Tensor]]:
    """The first sample, and its floating tensors the op reads (not writes)."""
    call = opdb.calls(op, opdb.dtype_for(op, torch.float64), "cpu", variants=False)[0].clone()
    written = {id(call.named(n)) for n in opdb.written_args(op)}
    return call, [t for t in call.tensors() if t.is_floating_point() and id(t) not in written]


@pytest.mark.parametrize(
    "op", _params(lambda o: o.without_autograd and bool(_floating_read_inputs(o)[1]))
)
def test_forward_ad_through_op_without_autograd_gives_no_tangent(op: OpDecl) -> None:
    """Ops whose outputs carry no derivative (output_differentiability: [false]) take dual
    inputs, as ATen's non-differentiable ops do: there is no tangent to lose."""
    import torch.autograd.forward_ad as fwAD

    call, floating = _floating_read_inputs(op)
    with fwAD.dual_level():
        duals = {id(t): fwAD.make_dual(t, torch.ones_like(t)) for t in floating}
        c = call.map_tensors(lambda t: duals.get(id(t), t))
        out = getattr(opforge, op.name)(*c.args, **c.kwargs)
        assert all(fwAD.unpack_dual(t).tangent is None for t in opdb.outputs(out))
