"""The generated test battery: every op in schemas/ against its reference, on every
declared dtype and device, plus opcheck, meta, torch.compile and bad-input checks.

Test ids name op, dtype and device, so `pytest -k gelu` runs one op's battery.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import opforge
from codegen.opdecl import OpDecl, output_names
from tests.ops import opdb

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


def _op_dtype_params() -> list[Any]:
    return [
        pytest.param(op, opdb.TORCH_DTYPES[d], id=f"{op.qualified}-{d}")
        for op in opdb.functional_ops()
        for d in op.dtypes
    ]


def _op_params() -> list[Any]:
    return [pytest.param(op, id=op.qualified) for op in opdb.functional_ops()]


def _opforge_fn(op: OpDecl) -> Any:
    return getattr(opforge, op.name)


def _reference_out(op: OpDecl, call: opdb.Call, dtype: torch.dtype) -> tuple[Any, list[Any]]:
    """The reference result and the arguments it wrote into (`Tensor(a!)` inputs); reduced
    precision is computed in float32 and rounded once."""
    ref = opdb.reference(op)
    if dtype in (torch.float16, torch.bfloat16):
        # (float32 arguments of their own, as optimizer step counts, are compared as float32)
        up = call.map_tensors(lambda t: t.float() if t.is_floating_point() else t.clone())
        out = ref(*up.args, **up.kwargs)
        written = [_to(up.named(n), dtype) for n in opdb.written_args(op)]
        # (`[opmath]` outputs, as half-precision norm statistics, stay float32)
        own = opdb.output_dtypes(op, dtype)
        if isinstance(out, tuple):
            return tuple(_to(t, d or dtype) for t, d in zip(out, own, strict=True)), written
        return _to(out, own[0] if own and own[0] else dtype), written
    call = call.clone()
    return ref(*call.args, **call.kwargs), [call.named(n) for n in opdb.written_args(op)]


def _to(t: Any, dtype: torch.dtype) -> Any:
    if isinstance(t, list):  # a Tensor[] argument
        return [_to(x, dtype) for x in t]
    return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,dtype", _op_dtype_params())
def test_matches_reference(op: OpDecl, dtype: torch.dtype, device: str) -> None:
    cases = opdb.calls(op, dtype, device)
    assert cases, f"{op.qualified} declares no samples"
    for call in cases:
        expected, expected_written = _reference_out(op, call, dtype)
        call = call.clone()  # the reference and opforge each write into their own copies
        got = _opforge_fn(op)(*call.args, **call.kwargs)
        got_written = [call.named(n) for n in opdb.written_args(op)]
        # (an output whose output_mask entry is false is undefined: None)
        assert all(t.device.type == device for t in opdb.outputs(got) if t is not None)
        torch.testing.assert_close(
            (got, got_written),
            (expected, expected_written),
            **opdb.tolerances(dtype, op),
            equal_nan=True,
            msg=lambda m, label=call.label: f"{label}: {m}",
        )
        _check_layout(op, call.label, got, expected)


# Ops whose reference has no consistent layout to follow.
_LAYOUT_FREE = {
    # The autograd sum of adaptive pooling gradients takes its first term's layout, which
    # depends on the levels; opforge keeps the input's layout, as every ATen pooling gradient.
    "spatial_pyramid_pool_backward",
}


def _check_layout(op: OpDecl, label: str, got: Any, expected: Any) -> None:
    """4-D outputs are laid out as the reference's (channels_last kept where ATen keeps it;
    the Python references compute through ATen ops, so they keep its layouts)."""
    if op.name in _LAYOUT_FREE or label.endswith("-noncontiguous"):
        return  # ATen keeps some non-dense strides; opforge's outputs are dense
    for g, e in zip(opdb.outputs(got), opdb.outputs(expected), strict=True):
        if g is None or e is None or g.dim() != 4 or e.numel() == 0:
            continue
        # (ATen transposes some weight gradients: no dense layout to follow)
        if e.is_contiguous() or e.is_contiguous(memory_format=torch.channels_last):
            assert opdb.layout(g) == opdb.layout(e), (
                f"{label}: strides {g.stride()} != ATen's {e.stride()}"
            )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _op_params())
def test_torch_ops_path_matches_wrapper(op: OpDecl, device: str) -> None:
    overload = getattr(getattr(torch.ops.opforge, op.name), op.overload or "default")
    for call in opdb.calls(op, opdb.dtype_for(op, torch.float64), device, variants=False):
        # Each path on its own copy: an op may write its arguments (clip_grad_norm_).
        a, b = call.clone(), call.clone()
        torch.testing.assert_close(
            overload(*a.args, **a.kwargs), _opforge_fn(op)(*b.args, **b.kwargs)
        )


@pytest.mark.parametrize("op", _op_params())
def test_opcheck(op: OpDecl) -> None:
    overload = getattr(getattr(torch.ops.opforge, op.name), op.overload or "default")
    # opcheck's output comparison rejects NaN: hand-written Python samples may hold it, and
    # a loss's 'mean' over an empty sample is NaN (as torch's).
    for call in [
        c
        for c in opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu")
        if not c.label.startswith("python")
    ]:
        result = opdb.outputs(overload(*call.clone().args, **call.clone().kwargs))
        if any(
            isinstance(t, torch.Tensor) and t.is_floating_point() and t.isnan().any()
            for t in result
        ):
            continue
        torch.library.opcheck(overload, tuple(call.args), call.kwargs)


@pytest.mark.parametrize("op", _op_params())
def test_meta_matches_real(op: OpDecl) -> None:
    for call in opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu"):
        real = _opforge_fn(op)(*call.args, **call.kwargs)
        if op.data_dependent:
            _check_data_dependent_fake(op, call, real)
            continue
        meta_call = call.map_tensors(lambda t: t.to("meta"))
        if opdb.is_factory(op):  # the device argument says where
            meta_call.kwargs["device"] = "meta"
        meta = getattr(torch.ops.opforge, op.name)(*meta_call.args, **meta_call.kwargs)
        for m, r in zip(opdb.outputs(meta), opdb.outputs(real), strict=True):
            assert (m is None) == (r is None), call.label  # output_mask leaves both undefined
            if m is None:
                continue
            assert m.device.type == "meta"
            assert (m.shape, m.dtype) == (r.shape, r.dtype), call.label
            # Pointwise and structured ops allocate from one meta step on every key; the
            # others' strides are not yet decided in one place (issue 9, memory format).
            if op.pointwise is not None or op.structured is not None:
                assert m.stride() == r.stride(), call.label


def _check_data_dependent_fake(op: OpDecl, call: opdb.Call, real: Any) -> None:
    """An op whose output lengths depend on the data (nms's kept boxes): under fake tensors
    each such length is a new unbacked size, no larger than the bound its bounds op gives."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        fake_call = call.map_tensors(mode.from_tensor)
        fake = getattr(torch.ops.opforge, op.name)(*fake_call.args, **fake_call.kwargs)
        bound = getattr(torch.ops.opforge_bounds, op.name)(*fake_call.args, **fake_call.kwargs)
    lengths = set(op.data_dependent)
    pairs = zip(opdb.outputs(fake), opdb.outputs(bound), opdb.outputs(real), strict=True)
    for name, (f, b, r) in zip(output_names(op.schema), pairs, strict=True):
        assert (f.dtype, f.dim()) == (r.dtype, r.dim()), call.label
        if name in lengths:
            assert isinstance(f.shape[0], torch.SymInt), call.label
            assert r.shape[0] <= b.shape[0] and f.shape[1:] == r.shape[1:], call.label
        else:
            assert f.shape == r.shape, call.label


@pytest.mark.parametrize("op", _op_params())
def test_compile_fullgraph_dynamic(op: OpDecl) -> None:
    """Every op under torch.compile's default backend (Inductor), dynamic shapes."""
    torch._dynamo.reset()
    fn = _opforge_fn(op)
    compiled = torch.compile(lambda *a, **k: fn(*a, **k), fullgraph=True, dynamic=True)
    # A graph cached by an earlier build may call an overload that no longer exists.
    with torch._inductor.config.patch(fx_graph_cache=False):
        for call in opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu", variants=False)[:2]:
            a, b = call.clone(), call.clone()  # (the op may write its arguments)
            torch.testing.assert_close(compiled(*a.args, **a.kwargs), fn(*b.args, **b.kwargs))


def _backend_op_params() -> list[Any]:
    """Ops whose generated code checks dtypes: kernels and explicit composites."""
    checked = {"CPU", "CUDA", "CompositeExplicitAutograd"}
    return [p for p in _op_params() if set(p.values[0].keys) & checked]


@pytest.mark.parametrize("op", _backend_op_params())
def test_wrong_dtype_names_op_and_argument(op: OpDecl) -> None:
    bad = next(
        d
        for d in (torch.int32, torch.complex64, torch.bool)
        if str(d).split(".")[1] not in op.dtypes
    )
    call = opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu", variants=False)[0].map_tensors(
        lambda t: t.to(bad)
    )
    first = op.schema.arguments.flat_all[0].name
    if opdb.is_factory(op):  # its `dtype` argument asks for the bad dtype
        call.kwargs["dtype"], first = bad, "dtype"
    bad_name = str(bad).split(".")[1]
    with pytest.raises(
        TypeError, match=rf"opforge\.{op.name}: expected .* for .*'{first}'.*, got {bad_name}"
    ):
        _opforge_fn(op)(*call.args, **call.kwargs)


def _multi_tensor_op_params() -> list[Any]:
    return [
        p
        for p in _op_params()
        if len(
            opdb.calls(
                p.values[0], opdb.dtype_for(p.values[0], torch.float32), "cpu", variants=False
            )[0].tensors()
        )
        > 1
    ]


@pytest.mark.parametrize("op", _multi_tensor_op_params())
def test_wrong_device_names_op_and_argument(op: OpDecl) -> None:
    # A meta tensor mixed with CPU ones: the dispatcher picks the Meta kernel, which must refuse.
    call = opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu", variants=False)[0]
    second = call.tensors()[1]
    call = call.map_tensors(lambda t: t.to("meta") if t is second else t)
    with pytest.raises(
        RuntimeError, match=rf"opforge\.{op.name}: expected (every tensor of )?'\w+' on"
    ):
        _opforge_fn(op)(*call.args, **call.kwargs)


@pytest.mark.cuda
@pytest.mark.parametrize("op", _multi_tensor_op_params())
def test_cpu_tensor_on_cuda_op_names_argument(op: OpDecl) -> None:
    call = opdb.calls(op, opdb.dtype_for(op, torch.float32), "cuda", variants=False)[0]
    first = call.tensors()[0]
    mixed = call.map_tensors(lambda t: t.cpu() if t is first else t)
    with pytest.raises(
        RuntimeError, match=rf"opforge\.{op.name}: expected (every tensor of )?'\w+' on"
    ):
        _opforge_fn(op)(*mixed.args, **mixed.kwargs)


@pytest.mark.cuda
@pytest.mark.parametrize("op,dtype", _op_dtype_params())
def test_cpu_and_cuda_agree(op: OpDecl, dtype: torch.dtype) -> None:
    for call in opdb.calls(op, dtype, "cpu"):
        call = call.clone()
        gpu_call = call.map_tensors(lambda t: t.cuda())
        cpu = _opforge_fn(op)(*call.args, **call.kwargs)
        gpu = _opforge_fn(op)(*gpu_call.args, **gpu_call.kwargs)
        written = opdb.written_args(op)
        torch.testing.assert_close(
            (
                tuple(t.cpu() if t is not None else None for t in opdb.outputs(gpu)),
                [
                    gpu_call.named(n).cpu() if gpu_call.named(n) is not None else None
                    for n in written
                ],
            ),
            (opdb.outputs(cpu), [call.named(n) for n in written]),
            **opdb.tolerances(dtype, op),
            equal_nan=True,  # samples carry NaN and inf on purpose
            msg=lambda m, label=call.label: f"{label}: {m}",
        )
        _check_layout(op, call.label, gpu, cpu)


def _single_int_calls(op: OpDecl) -> list[opdb.Call]:
    """Samples whose `int[N]` arguments hold N equal values, with those given as one int."""
    sized = {a.name for a in op.schema.arguments.flat_non_out if "int[" in str(a.type).lower()}
    found = []
    for call in opdb.calls(op, opdb.dtype_for(op, torch.float32), "cpu", variants=False):
        kwargs = dict(call.kwargs)
        args = list(call.args)
        changed = False
        for i, name in enumerate(call.names):
            v = args[i]
            if name in sized and isinstance(v, list) and v and len(set(v)) == 1:
                args[i], changed = v[0], True
        for name, v in kwargs.items():
            if name in sized and isinstance(v, list) and v and len(set(v)) == 1:
                kwargs[name], changed = v[0], True
        if changed:
            found.append(opdb.Call(args, kwargs, call.label, call.names))
    return found


@pytest.mark.parametrize("op", [p for p in _op_params() if _single_int_calls(p.values[0])])
def test_single_int_for_int_list_works_eagerly_and_compiled(op: OpDecl) -> None:
    """The eager (pybind11) and compiled (torch.ops) paths accept the same arguments."""
    torch._dynamo.reset()
    fn = _opforge_fn(op)
    compiled = torch.compile(lambda *a, **k: fn(*a, **k), fullgraph=True, backend="aot_eager")
    for call in _single_int_calls(op)[:2]:
        eager = fn(*call.args, **call.kwargs)
        for e, c in zip(
            opdb.outputs(eager), opdb.outputs(compiled(*call.args, **call.kwargs)), strict=True
        ):
            torch.testing.assert_close(c, e)
