"""The op database the generated test battery runs over: schemas/ parsed by codegen,
with each declared sample turned into real arguments."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from codegen import formulas, parse
from codegen.model import BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import DTYPES, OPMATH, OpDecl, output_names
from opforge.detection import random_boxes

ROOT = Path(__file__).resolve().parents[2]
# YAML dtype names are torch's own attribute names (torch.float32, torch.int64, ...).
TORCH_DTYPES = {name: getattr(torch, name) for name in DTYPES}
TENSOR = BaseType(BaseTy.Tensor)
OPTIONAL_TENSOR = OptionalType(TENSOR)
TENSOR_LIST = ListType(TENSOR, None)
SCALAR_TYPE = BaseType(BaseTy.ScalarType)
OPTIONAL_SCALAR_TYPE = OptionalType(SCALAR_TYPE)
# A factory op's result options, as torch's: `ScalarType? dtype` and `Device? device`.
_FACTORY_ARGS = {
    "dtype": (OPTIONAL_SCALAR_TYPE,),
    "device": (OptionalType(BaseType(BaseTy.Device)),),
}


@functools.cache
def ops() -> tuple[OpDecl, ...]:
    return tuple(parse.load(ROOT / "schemas"))


def functional_ops() -> list[OpDecl]:
    """Ops with their own kernels or composite body: not out= overloads, not generated variants."""
    return [o for o in ops() if not o.schema.arguments.out and o.variant_of is None]


def variant_ops() -> list[OpDecl]:
    return [o for o in ops() if o.variant_of is not None]


def layout(t: torch.Tensor) -> list[int]:
    """The strides that matter: those of dimensions longer than 1."""
    return [s if n > 1 else 0 for s, n in zip(t.stride(), t.shape, strict=True)]


def by_qualified(name: str) -> OpDecl:
    return next(o for o in ops() if o.qualified == name)


def is_factory(op: OpDecl) -> bool:
    """No tensor argument (generate_anchors): its `dtype`/`device` arguments say what it makes."""
    return not any(a.type.is_tensor_like() for a in op.schema.arguments.flat_all)


def differentiable(op: OpDecl) -> bool:
    """Differentiable wherever it is used: its own formulas or a composite of differentiable
    ops (not an op declared without autograd)."""
    if op.without_autograd:
        return False
    return bool(op.derivatives) or op.keys == ("CompositeImplicitAutograd",)


def numerically_differentiable(op: OpDecl) -> bool:
    """Differentiable, with the true derivative (not a straight-through estimator), so
    gradcheck's finite differences apply."""
    return differentiable(op) and not op.straight_through


def double_differentiable(op: OpDecl) -> bool:
    """Every opforge op its formulas call is itself differentiable (so gradgradcheck applies)."""
    if op.keys == ("CompositeImplicitAutograd",):
        return differentiable(op)
    if not op.derivatives or op.straight_through:
        return False
    api = {o.api_name: o for o in ops()}
    called = {c for d in op.derivatives for c in formulas.calls(d.formula)}
    return all(differentiable(api[c]) for c in called if c in api)


def nondeterministic_backward(op: OpDecl, key: str) -> bool:
    """Whether an op op's derivative formulas call accumulates with atomics on `key` (its
    gradients' rounding then depends on the threads' order)."""
    api = {o.api_name: o for o in ops()}
    called = {c for d in op.derivatives for c in formulas.calls(d.formula)}
    return any(
        api[c].structured is not None and key in api[c].structured.nondeterministic
        for c in called
        if c in api
    )


def reference(op: OpDecl) -> Callable[..., Any]:
    assert op.reference is not None, f"{op.qualified} declares no reference"
    module, _, attr = op.reference.rpartition(".")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


GEOMETRY_KINDS = ("affine", "homography", "quad")


def random_geometry(kind: str, shape: list[int], gen: torch.Generator) -> torch.Tensor:
    """Well-conditioned warps, float64: `affine` [B, 2, 3] rotations by up to 40 degrees with
    scales in [0.7, 1.3) and shifts of a pixel or two about a point near (3, 3); `homography`
    [B, 3, 3] the same with perspective terms below 0.03 (the denominator stays positive on
    small images); `quad` [B, 4, 2] the corners of a 10 x 10 square, each moved by < 2."""
    b = shape[0]
    if kind == "quad":
        square = torch.tensor(
            [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]], dtype=torch.float64
        )
        return square + (torch.rand(b, 4, 2, generator=gen, dtype=torch.float64) * 4 - 2)
    u = torch.rand(b, 6, generator=gen, dtype=torch.float64)
    angle, scale = (u[:, 0] - 0.5) * 1.4, 0.7 + 0.6 * u[:, 1:3]
    cos, sin = angle.cos(), angle.sin()
    m = torch.zeros(b, 3, 3, dtype=torch.float64)
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1] = cos * scale[:, 0], sin, -sin, cos * scale[:, 1]
    m[:, :2, 2] = 3 - torch.einsum(
        "bij,j->bi", m[:, :2, :2], torch.tensor([3.0, 3.0], dtype=torch.float64)
    )
    m[:, :2, 2] += (u[:, 3:5] - 0.5) * 3
    m[:, 2, 2] = 1
    if kind == "homography":
        m[:, 2, :2] = (torch.rand(b, 2, generator=gen, dtype=torch.float64) - 0.5) * 0.06
        return m
    return m[:, :2]


def make_tensor(
    spec: Any, dtype: torch.dtype, device: str, gen: torch.Generator, *, noncontiguous: bool = False
) -> torch.Tensor:
    """A random tensor from a sample spec: a shape list, or {shape, low, high}, or
    {shape, kind: boxes, low, high} (valid boxes, opforge.detection.random_boxes), or
    {shape, kind: image, low, high} (an image: floating in [low, high], default [0, 1];
    uint8 in [0, 255])."""
    shape = list(spec["shape"] if isinstance(spec, dict) else spec)
    if isinstance(spec, dict) and "dtype" in spec:  # a tensor in a dtype of its own (bench cases)
        dtype = TORCH_DTYPES[spec["dtype"]]
    kind = spec.get("kind") if isinstance(spec, dict) else None
    image = kind == "image"
    low = spec.get("low", 0.0 if image else -3.0) if isinstance(spec, dict) else -3.0
    high = spec.get("high", 1.0 if image else 3.0) if isinstance(spec, dict) else 3.0
    if kind in GEOMETRY_KINDS:
        t = random_geometry(kind, shape, gen)
        return (t.transpose(-1, -2).contiguous().transpose(-1, -2) if noncontiguous else t).to(
            dtype=dtype, device=device
        )
    if kind is not None and not image:
        assert kind == "boxes", f"unknown sample kind {kind!r}"
        return random_boxes(shape, low, high, dtype, device, gen, noncontiguous=noncontiguous)
    alloc = list(shape)
    if noncontiguous and shape:
        alloc[-1] *= 2  # then take every other element of the last dim
    if image and not dtype.is_floating_point:
        t = torch.randint(0, 256, alloc, generator=gen, dtype=torch.int64)
    elif dtype.is_floating_point:
        t = torch.rand(alloc, generator=gen, dtype=torch.float64) * (high - low) + low
    elif isinstance(spec, dict) and "low" in spec:  # e.g. indices: values in [low, high)
        t = torch.randint(int(low), int(high), alloc, generator=gen, dtype=torch.int64)
    else:
        t = torch.randint(int(low) * 3, int(high) * 3 + 1, alloc, generator=gen, dtype=torch.int64)
    t = t.to(dtype)
    if noncontiguous and shape:
        t = t[..., ::2]
    return t.to(device)


@dataclass
class Call:
    """One call of an op: positional and keyword arguments, in schema order."""

    args: list[Any]
    kwargs: dict[str, Any]
    label: str
    names: tuple[str, ...] = ()  # schema names of `args`, where known

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor passed, those in `Tensor[]` lists included."""
        flat = [x for a in [*self.args, *self.kwargs.values()] for x in _flat(a)]
        return [a for a in flat if isinstance(a, torch.Tensor)]

    def named(self, name: str) -> Any:
        """The value passed for argument `name` (None if omitted)."""
        if name in self.kwargs:
            return self.kwargs[name]
        return self.args[self.names.index(name)] if name in self.names else None

    def map_tensors(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Call:
        def conv(v: Any) -> Any:
            if isinstance(v, list) and any(isinstance(x, torch.Tensor) for x in v):
                return [conv(x) for x in v]
            return fn(v) if isinstance(v, torch.Tensor) else v

        return Call(
            [conv(a) for a in self.args],
            {k: conv(v) for k, v in self.kwargs.items()},
            self.label,
            self.names,
        )

    def clone(self) -> Call:
        """Fresh copies of every tensor: ops that write into an argument get their own."""
        return self.map_tensors(lambda t: t.detach().clone())


VARIANTS = ("plain", "noncontiguous", "channels_last", "empty")


def calls(op: OpDecl, dtype: torch.dtype, device: str, *, variants: bool = True) -> list[Call]:
    """Every sample of `op`, plus non-contiguous, channels_last (where a tensor is 4-D) and
    empty variants, one call per further
    `arg_dtypes` entry (int32 indices, say) and one per single-output `output_mask`."""
    out = []
    for i, sample in enumerate(op.samples):
        for variant in VARIANTS if variants else ("plain",):
            call = _build(op, sample.get, dtype, device, variant, seed=i)
            if call is not None:
                out.append(Call(call.args, call.kwargs, f"sample{i}-{variant}", call.names))
        if not variants:
            continue
        inputs = {a.name for a in op.schema.arguments.flat_non_out}
        for name, choices in op.arg_dtypes:
            if name not in inputs:
                continue  # an output's dtypes follow from the arguments (quantize's `dtype`)
            for own in choices[1:]:
                call = _build(op, sample.get, dtype, device, "plain", seed=i, arg_dtype={name: own})
                if call is not None:
                    out.append(Call(call.args, call.kwargs, f"sample{i}-{name}-{own}", call.names))
        mask = sample.get("output_mask")
        if isinstance(mask, list) and all(mask) and len(mask) > 1:
            for k in range(len(mask)):
                only = [j == k for j in range(len(mask))]
                call = _build(
                    op,
                    lambda n, s=sample, m=only: m if n == "output_mask" else s.get(n),
                    dtype,
                    device,
                    "plain",
                    seed=i,
                )
                if call is not None:
                    out.append(Call(call.args, call.kwargs, f"sample{i}-mask{k}", call.names))
    from tests.ops.samples import SAMPLES

    extra = SAMPLES.get(op.qualified)
    for j, (args, kwargs) in enumerate(extra(dtype, device) if extra and variants else []):
        names = tuple(a.name for a in op.schema.arguments.positional[: len(args)])
        out.append(Call(args, kwargs, f"python{j}", names))
    return out


def bench_calls(op: OpDecl, device: str) -> list[Call]:
    """The calls of op's `bench:` cases (benchmarks/ops.py), one per case: float32 where the
    op takes it, else its first dtype (dequantize's integers)."""
    assert op.bench is not None, op.qualified
    out = []
    for i, case in enumerate(op.bench.cases):
        call = _build(op, case.get, dtype_for(op, torch.float32), device, "plain", seed=i)
        assert call is not None, f"{op.qualified}: bench case {i}"
        out.append(call)
    return out


def _build(
    op: OpDecl,
    get: Callable[[str], Any],
    dtype: torch.dtype,
    device: str,
    variant: str,
    seed: int,
    arg_dtype: dict[str, str] | None = None,
) -> Call | None:
    gen = torch.Generator().manual_seed(1234 + seed)
    schema_args = op.schema.arguments
    tensor_shapes = [
        spec
        for a in schema_args.flat_non_out
        if _is_tensor(a.type, get(a.name)) or a.type == TENSOR_LIST
        for spec in (get(a.name) if a.type == TENSOR_LIST else [get(a.name)])
    ]
    if variant == "noncontiguous" and not any(spec_shape(s) for s in tensor_shapes):
        return None
    if variant == "channels_last" and not any(len(spec_shape(s)) == 4 for s in tensor_shapes):
        return None
    if variant == "empty":
        shapes = [tuple(spec_shape(s)) for s in tensor_shapes]
        if op.shape is None or not shapes or not shapes[0] or len(set(shapes)) != 1:
            return None  # only where the output shape follows the inputs, all shaped alike
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    skipped = False  # after an omitted positional argument, later ones go by keyword
    built: dict[str, Any] = {}
    for a in schema_args.flat_non_out:
        value = get(a.name)
        if a.type in (SCALAR_TYPE, OPTIONAL_SCALAR_TYPE) and isinstance(value, str):
            # A dtype name, or a tensor argument's name for that tensor's dtype
            # (dequantize's `dtype: input`, whatever dtype the battery runs).
            value = TORCH_DTYPES[value] if value in TORCH_DTYPES else built[value].dtype
        if a.type == TENSOR_LIST:  # a list of specs
            value = [
                make_tensor(spec, _dtype_of(op, a.name, dtype, arg_dtype), device, gen,
                            noncontiguous=variant == "noncontiguous")
                for spec in value
            ]  # fmt: skip
        elif _is_tensor(a.type, value):
            spec = value
            if variant == "empty":
                spec = [0, *spec_shape(value)[1:]]
            value = make_tensor(
                spec,
                _dtype_of(op, a.name, dtype, arg_dtype),
                device,
                gen,
                noncontiguous=variant == "noncontiguous",
            )
            if variant == "channels_last" and value.dim() == 4:
                value = value.contiguous(memory_format=torch.channels_last)
        elif value is None and not tensor_shapes and a.type in _FACTORY_ARGS.get(a.name, ()):
            # A factory op (no tensor input): the battery's dtype and device pick its result's.
            value = dtype if a.name == "dtype" else torch.device(device)
        elif value is None and a.default is not None:
            skipped = True
            continue  # the schema's default applies
        # (an omitted `Tensor?` without a default is passed as None)
        built[a.name] = value
        if a in schema_args.positional and not skipped:
            args.append(value)
        else:
            kwargs[a.name] = value
    names = tuple(a.name for a in schema_args.positional[: len(args)])
    return Call(args, kwargs, variant, names)


def _dtype_of(
    op: OpDecl, name: str, dtype: torch.dtype, arg_dtype: dict[str, str] | None
) -> torch.dtype:
    """Tensor argument `name`'s dtype in a call: its own `arg_dtypes` one, else the call's."""
    own = (arg_dtype or {}).get(name) or next(iter(dict(op.arg_dtypes).get(name, ())), None)
    if own == OPMATH:
        return opmath_dtype(dtype)
    return TORCH_DTYPES[own] if own else dtype


def opmath_dtype(dtype: torch.dtype) -> torch.dtype:
    """The compute dtype of `dtype` (`arg_dtypes: [opmath]`): float32 for half precision."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def output_dtypes(op: OpDecl, dtype: torch.dtype) -> list[torch.dtype | None]:
    """Each output's dtype in a call of floating dtype `dtype` where the entry fixes it as
    `[opmath]`; None for the others (the reference's)."""
    names = output_names(op.schema)
    return [opmath_dtype(dtype) if op.is_opmath(n) else None for n in names]


def _flat(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _is_tensor(t: Any, value: Any) -> bool:
    """A Tensor argument, or a Tensor? one the sample gives a value for."""
    return t == TENSOR or (t == OPTIONAL_TENSOR and value is not None)


def dtype_for(op: OpDecl, preferred: torch.dtype) -> torch.dtype:
    """`preferred` where op takes it, else op's first dtype (float32-only statistics, the
    integer inputs of dequantize)."""
    name = str(preferred).removeprefix("torch.")
    return preferred if name in op.dtypes else TORCH_DTYPES[op.dtypes[0]]


def written_args(op: OpDecl) -> list[str]:
    """Inputs the op writes into (`Tensor(a!)`), other than out= arguments."""
    return [a.name for a in op.schema.arguments.flat_non_out if a.is_write]


def grad_inputs(op: OpDecl, call: Call) -> list[torch.Tensor]:
    """The call's tensors gradcheck varies: floating, not written into by the op, and with a
    derivative formula (a loss's weights and targets may have none) or, for a composite,
    one its decomposition has."""
    written = {id(call.named(n)) for n in written_args(op)}
    tensors = [t for t in call.tensors() if t.is_floating_point() and id(t) not in written]
    if op.keys == ("CompositeImplicitAutograd",):
        return [t for t in tensors if _composite_differentiates(op, call, t)]
    if not op.derivatives:
        return tensors
    formula = {id(call.named(n)) for n in op.differentiable_inputs}
    return [t for t in tensors if id(t) in formula]


def _composite_differentiates(op: OpDecl, call: Call, tensor: torch.Tensor) -> bool:
    """Whether the ops a composite decomposes into differentiate in `tensor`: false where
    one of them says it is not differentiable in that argument (as PyTorch's nll_loss in
    its weight)."""
    probe = call.map_tensors(lambda t: t.detach().clone().requires_grad_(t is tensor))
    index = [id(t) for t in call.tensors()].index(id(tensor))
    leaf = probe.tensors()[index]
    import opforge  # not at import time: the codegen tests read this module without a build

    result = grad_outputs(op, getattr(opforge, op.name)(*probe.args, **probe.kwargs))
    tracked = [r.sum() for r in result if r.requires_grad]
    if not tracked:
        return True
    try:
        torch.autograd.grad(tracked, leaf, allow_unused=True)
    except RuntimeError as e:
        if "is not differentiable with respect to" in str(e):
            return False
        raise
    return True


def grad_outputs(op: OpDecl, result: Any) -> tuple[torch.Tensor, ...]:
    """The outputs that carry gradients (floating, and differentiable per the YAML)."""
    return tuple(
        t
        for i, t in enumerate(outputs(result))
        if t.is_floating_point() and (not op.derivatives or op.output_differentiable(i))
    )


def outputs(result: Any) -> tuple[torch.Tensor, ...]:
    """An op's result as a tuple of tensors (ops like prelu_backward return several; ops
    returning `()`, such as the in-place list steps, return none)."""
    if result is None:
        return ()
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def spec_shape(spec: Any) -> list[int]:
    """The shape of a sample's tensor spec: a shape, or {shape, low, high, kind}."""
    return list(spec["shape"] if isinstance(spec, dict) else spec)


def tolerances(dtype: torch.dtype, op: OpDecl | None = None) -> dict[str, float]:
    """assert_close's tolerances for dtype; an op's `tolerance:` overrides the atol."""
    default = {
        torch.float16: {"atol": 2e-3, "rtol": 2e-3},
        torch.bfloat16: {"atol": 2e-2, "rtol": 1.6e-2},
        torch.float32: {"atol": 1e-5, "rtol": 1.3e-5},
        torch.float64: {"atol": 1e-10, "rtol": 1e-9},
    }.get(dtype, {"atol": 0.0, "rtol": 0.0})
    atol = dict(op.tolerance).get(str(dtype).removeprefix("torch.")) if op is not None else None
    return default if atol is None else {**default, "atol": atol}
