"""The pointwise engine (Note [Pointwise engine] in kernels/include/opforge/pointwise/
geometry.h): every `pointwise:` op on every layout, values and strides as ATen's,
broadcasting, real in-place and out= kernels with torch's aliasing rules, autograd
and torch.compile (Inductor) through the variants, and the checks on every key."""

from __future__ import annotations

import time
import warnings
from typing import Any

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import opforge
from codegen.opdecl import OpDecl
from tests.ops import opdb

# Elementwise ops; the reduced losses (`reduction:`) have tests/ops/test_losses.py.
POINTWISE = [
    o for o in opdb.functional_ops() if o.pointwise is not None and o.pointwise.reduction is None
]
LAYOUTS = ("contiguous", "channels_last", "transposed", "sliced", "expanded")


def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    if layout == "transposed":
        return t.transpose(1, 3).contiguous().transpose(1, 3)
    if layout == "sliced":
        return torch.cat([t, t], dim=2)[:, :, ::2]
    if layout == "expanded":
        return t[:, :1].expand(t.shape)
    return t.contiguous()


def _call(
    op: OpDecl,
    layout: str,
    dtype: torch.dtype = torch.float64,
    shape: tuple[int, ...] = (2, 3, 4, 5),
) -> opdb.Call:
    """The op's first sample with every tensor of `shape` in `layout`."""
    sample = op.samples[0]
    gen = torch.Generator().manual_seed(0)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for a in op.schema.arguments.flat_non_out:
        value = sample.get(a.name)
        if a.type == opdb.TENSOR:
            spec = dict(value) if isinstance(value, dict) else {}
            spec["shape"] = list(shape)
            args.append(_layout(opdb.make_tensor(spec, dtype, "cpu", gen), layout))
        elif value is not None:
            kwargs[a.name] = value
    return opdb.Call(args, kwargs, layout)


def _fn(op: OpDecl) -> Any:
    return getattr(opforge, op.name)


def _param_ops() -> list[Any]:
    return [pytest.param(op, id=op.qualified) for op in POINTWISE]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", _param_ops())
def test_layouts_match_reference_values_and_strides(op: OpDecl, layout: str) -> None:
    call = _call(op, layout)
    result = _fn(op)(*call.args, **call.kwargs)
    expected = opdb.reference(op)(*call.args, **call.kwargs)
    torch.testing.assert_close(result, expected)
    if op.reference and op.reference.startswith("torch."):
        assert result.stride() == expected.stride()  # ATen's TensorIterator layout
    with FakeTensorMode() as mode:
        fake = _fn(op)(*[mode.from_tensor(t) for t in call.args], **call.kwargs)
    assert fake.stride() == result.stride()


@pytest.mark.parametrize(
    "shapes", [([2, 1, 4, 5], [3, 1, 5]), ([5], [2, 3, 4, 5]), ([], [3, 4]), ([0, 3], [3])]
)
@pytest.mark.parametrize(
    "op",
    [
        p
        for p in _param_ops()
        if len(p.values[0].schema.arguments.positional) >= 2
        and p.values[0].schema.arguments.positional[1].type == opdb.TENSOR
    ],
)
def test_binary_ops_broadcast(op: OpDecl, shapes: tuple[list[int], list[int]]) -> None:
    gen = torch.Generator().manual_seed(1)
    a, b = (opdb.make_tensor(s, torch.float64, "cpu", gen) for s in shapes)
    kwargs = _call(op, "contiguous").kwargs
    result = _fn(op)(a, b, **kwargs)
    expected = opdb.reference(op)(a, b, **kwargs)
    torch.testing.assert_close(result, expected)
    assert result.stride() == expected.stride() or op.reference.startswith("opforge")


def test_inplace_writes_through_a_view_and_keeps_its_strides() -> None:
    base = torch.randn(4, 6, dtype=torch.float64)
    view = base[:, ::2]
    untouched = base[:, 1::2].clone()
    expected = torch.relu(view)
    assert opforge.relu_(view) is view
    torch.testing.assert_close(view, expected)
    torch.testing.assert_close(base[:, 1::2], untouched)
    x = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    strides = x.stride()
    opforge.leaky_relu_(x, 0.2)
    assert x.stride() == strides


def test_inplace_add_broadcasts_other_into_self() -> None:
    x = torch.randn(3, 4)
    y = torch.randn(4)
    expected = x + 2 * y
    opforge.add_(x, y, alpha=2)
    torch.testing.assert_close(x, expected)


def test_inplace_into_an_expanded_tensor_is_refused() -> None:
    x = torch.zeros(1, 3).expand(4, 3)
    with pytest.raises(
        RuntimeError, match=r"opforge\.relu_: 'self' has elements that share memory"
    ):
        opforge.relu_(x)


def test_partially_overlapping_operands_are_refused() -> None:
    x = torch.randn(10)
    with pytest.raises(RuntimeError, match=r"opforge\.add_: 'self' and 'other' partially overlap"):
        opforge.add_(x[1:], x[:-1])
    with pytest.raises(RuntimeError, match=r"opforge\.add: 'out' and 'self' partially overlap"):
        opforge.add(x[:5], x[5:], out=x[1:6])


def test_out_may_be_an_input() -> None:
    x = torch.randn(5, 6)
    expected = torch.relu(x)
    assert opforge.relu(x, out=x) is x
    torch.testing.assert_close(x, expected)


def test_out_takes_the_functional_layout_when_resized_and_keeps_its_own_otherwise() -> None:
    x = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    out = torch.empty(0)
    opforge.relu(x, out=out)
    assert out.stride() == x.stride()
    torch.testing.assert_close(out, torch.relu(x))
    kept = torch.empty(2, 3, 4, 5)
    opforge.relu(x, out=kept)
    assert kept.is_contiguous()
    torch.testing.assert_close(kept, torch.relu(x))


def test_out_of_wider_dtype_is_written_through_a_copy() -> None:
    x = torch.randn(4, 5)
    out = torch.empty(4, 5, dtype=torch.float64)
    opforge.sigmoid(x, out=out)
    torch.testing.assert_close(out, torch.sigmoid(x).double())


def test_inplace_under_autograd_keeps_saved_inputs_intact() -> None:
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    y = x * 2
    opforge.leaky_relu_(y, 0.3)  # its backward needs the input, which the kernel overwrote
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.where(x > 0, 2.0, 0.6).double())


def test_inplace_on_a_leaf_that_requires_grad_is_refused() -> None:
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        opforge.relu_(x)


def test_inplace_bumps_the_version_and_runs_under_inference_mode() -> None:
    x = torch.randn(3)
    before = x._version
    opforge.relu_(x)
    assert x._version > before
    with torch.inference_mode():
        y = torch.randn(4)
        expected = torch.tanh(y)
        opforge.tanh_(y)
        torch.testing.assert_close(y, expected)


@pytest.mark.parametrize(
    "name,fn",
    [
        ("add_alpha", lambda x, y: opforge.add(x, y, alpha=0.5)),
        ("add_inplace", lambda x, y: opforge.add_(x.clone(), y, alpha=2)),
        ("add_out", lambda x, y: opforge.add(x, y, out=torch.empty_like(x))),
        ("relu_inplace", lambda x, y: opforge.relu_(x * y)),
        ("gelu_tanh", lambda x, y: opforge.gelu(x + y, approximate="tanh")),
    ],
)
def test_compile_with_inductor(name: str, fn: Any) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    # No cached graphs: they may call overloads an older build registered differently.
    with torch._inductor.config.patch(fx_graph_cache=False):
        for n in (5, 7):
            x, y = torch.randn(n, 4), torch.randn(n, 4)
            torch.testing.assert_close(compiled(x, y), fn(x, y))


def test_checks_run_on_every_key() -> None:
    x = torch.randn(3)
    for t in (x, x.to("meta")):
        with pytest.raises(
            RuntimeError, match=r"opforge\.gelu: approximate must be 'none' or 'tanh', got 'erf'"
        ):
            torch.ops.opforge.gelu(t, approximate="erf")
    i = torch.arange(3)
    with pytest.raises(
        RuntimeError, match=r"opforge\.add: alpha must be an integer for integral \(Long\) inputs"
    ):
        opforge.add(i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match=r"opforge\.add: alpha must be a number, not a boolean"):
        opforge.add(x, x, alpha=True)


def _special_values(op: OpDecl, dtype: torch.dtype) -> torch.Tensor:
    """Zeros of both signs, infinities, NaN, a denormal, the largest finite values, the
    integers -3..3 (hardsigmoid's and relu's bounds) and the op's scalar arguments
    (softplus's threshold, say), as one tensor."""
    info = torch.finfo(dtype)
    values = [
        0.0,
        -0.0,
        float("inf"),
        float("-inf"),
        float("nan"),
        info.tiny / 4,
        info.max,
        -info.max,
    ]
    values += [float(v) for v in range(-3, 4)] + [0.5, -0.5]
    for value in op.samples[0].values:
        if isinstance(value[1], (int, float)) and not isinstance(value[1], bool):
            values += [float(value[1]), -float(value[1])]
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", _param_ops())
def test_special_and_boundary_values_match_reference(op: OpDecl, dtype: torch.dtype) -> None:
    kwargs = _call(op, "contiguous").kwargs
    x = _special_values(op, dtype)
    n_tensors = sum(a.type == opdb.TENSOR for a in op.schema.arguments.flat_non_out)
    # Every special value against every other where the op takes two tensors (grad, x), but
    # NaN as the second (the input of a backward op): ATen's gradients at a NaN input differ
    # between its kernels (vectorized or not) and from opforge's here (relu_backward passes
    # grad, elu_/hardswish_backward give NaN); not matched yet.
    second = x[~x.isnan()]
    args = (
        [x]
        if n_tensors == 1
        else [x[:, None].expand(-1, second.numel()), second[None, :].expand(x.numel(), -1)]
    )
    with torch.no_grad():
        got = _fn(op)(*args, **kwargs)
        expected = opdb.reference(op)(*args, **kwargs)
        if dtype == torch.float32:
            # ATen's vectorized kernels differ from its scalar ones at some special values
            # with the CPU they run on (AVX-512 exact gelu: gelu(inf) = nan, and
            # gelu(3.4e38) = inf as 0.5 * x * 2 overflows); the float64 answer also counts.
            exact = opdb.reference(op)(*[a.double() for a in args], **kwargs).to(dtype)
            same = torch.isclose(got, exact, atol=1e-6, rtol=1e-5, equal_nan=True)
            expected = torch.where(same, exact, expected)
    torch.testing.assert_close(got, expected, equal_nan=True, atol=1e-6, rtol=1e-5)


def _best_time(fn: Any, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("op", _param_ops())
def test_flags_an_op_much_slower_than_its_reference(op: OpDecl) -> None:
    """Not a timed assertion (these machines are noisy): a warning with the figure when the op
    takes more than 3x its reference's time on a medium input, such as a functor that does
    not vectorize. benchmarks/ops.py measures properly."""
    call = _call(op, "contiguous", torch.float32, shape=(16, 64, 32, 32))
    ours = _best_time(lambda: _fn(op)(*call.args, **call.kwargs))
    ref = _best_time(lambda: opdb.reference(op)(*call.args, **call.kwargs))
    ratio = ours / ref
    if ratio > 3:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(
                f"opforge.{op.name} took {ratio:.1f}x the time of {op.reference} on 1M float32 "
                "elements; see CONTRIBUTING.md (write the functor so the CPU loop vectorizes)",
                stacklevel=1,
            )
