"""Hypothesis strategies for tests/ops/test_fuzz.py: calls of an op drawn from its declared
samples (tests/ops/opdb.py), with new values and, where the op's declaration says which sizes
are free, new shapes; laid out in memory in other ways; and, for the invalid-argument
fuzzing, changed once in a way that is usually an error.

A drawn `Case` prints as the recipe it was made by: that is what hypothesis shows for a
failing example, short enough to turn into a reproducer by hand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from hypothesis import strategies as st

from codegen.model import BaseTy, BaseType, ListType, OptionalType, Type
from codegen.opdecl import OpDecl, Sample
from tests.ops import opdb

Slot = tuple[str, int | None]  # a tensor argument's name, and its index in a Tensor[] list

# Sizes of a free dimension: empty and single ones, and a few longer ones for the last
# (innermost) dimension, past a 16-lane vector and its tail.
_DIM = st.sampled_from((0, 1, 2, 3, 5))
_LAST_DIM = st.sampled_from((0, 1, 2, 3, 7, 16, 17, 33))
# Usually-invalid values for an int argument (a dim, a size, a kernel size, a count): none
# is large enough that a size taken from it allocates much.
_BAD_INTS = (-1, -3, 0, 64)
# ... and for an element of an integer (index) tensor.
_BAD_INDICES = (-1, -7, 64, 10_000)
_MUTANT_DTYPES = (
    torch.int64,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)


@dataclass(frozen=True)
class Case:
    """A drawn call of an op, the dtype it was drawn for, and how it was made."""

    call: opdb.Call
    dtype: torch.dtype
    recipe: tuple[str, ...]
    mutation: str | None = None  # the invalid-argument kind applied, if any (MUTATIONS)
    mutated: str | None = None  # ... and the argument it changed

    def __repr__(self) -> str:
        return f"<{str(self.dtype).removeprefix('torch.')}: {'; '.join(self.recipe)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """What hypothesis prints for a failing example: the recipe, not the tensors."""
        printer.text(repr(self))

    def mutate(self, call: opdb.Call, step: str, mutation: str, argument: str) -> Case:
        recipe = (*self.recipe, step)
        return replace(self, call=call, recipe=recipe, mutation=mutation, mutated=argument)


# --- Which sizes of an op's tensors may change ------------------------------------------


def free_shapes(op: OpDecl) -> str | None:
    """How the shapes of op's samples may change and keep the call valid:
    - "free": every size (broadcast dims stay broadcast): elementwise ops, softmax-like
      ones (independent along all but `dim`), the fills (that read only the shape) and the
      Tensor[] steps (elementwise per list element);
    - "leading": dim 0 of the `batch: {leading: x}` argument (other tensors are shared);
    - "any_leading": a new leading dim on the `batch: {any_leading: x}` argument;
    - None: shapes stay as declared (sizes tied to other arguments' values)."""
    tensors = {a.name for a in op.schema.arguments.flat_non_out if a.type.is_tensor_like()}
    rule = op.batch_rule
    if rule is not None and rule.kind in ("pointwise", "all_but"):
        return "free"
    if op.pointwise is not None:  # a loss: elementwise, then reduced
        return "free"
    if op.structured is not None and tensors and tensors <= set(op.structured.shape_only):
        return "free"
    if op.lists is not None and op.family == "optim":
        return "free"
    return rule.kind if rule is not None and rule.kind in ("leading", "any_leading") else None


def _broadcast_like(shapes: Sequence[Sequence[int]], sizes: Sequence[int]) -> list[list[int]]:
    """New shapes of the same ranks that broadcast against each other as `shapes` did: a
    dimension that was broadcast (1 against a larger size) stays 1, every other one takes
    the size drawn for its (right-aligned) position."""
    rank = len(sizes)
    full = [1] * rank
    for s in shapes:
        for j, n in enumerate(s):
            if n != 1:
                full[rank - len(s) + j] = n
    return [
        [
            n if n == 1 and full[rank - len(s) + j] != 1 else sizes[rank - len(s) + j]
            for j, n in enumerate(s)
        ]
        for s in shapes
    ]


def _sizes(rank: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.tuples(*[_DIM] * (rank - 1), _LAST_DIM) if rank else st.just(())


def _with_shape(spec: Any, shape: list[int]) -> Any:
    """A sample's tensor spec with another shape (its value range and kind kept)."""
    return {**spec, "shape": shape} if isinstance(spec, dict) else shape


@st.composite
def _reshaped(draw: st.DrawFn, op: OpDecl, sample: Sample) -> dict[str, Any]:
    """Sample values to override: tensor specs with new shapes, as free_shapes(op) allows
    (or none: the declared shapes, with new values)."""
    kind = free_shapes(op)
    specs = {
        a.name: sample.get(a.name)
        for a in op.schema.arguments.flat_non_out
        if opdb._is_tensor(a.type, sample.get(a.name)) or a.type == opdb.TENSOR_LIST
    }
    if kind is None or not specs or draw(st.booleans()):
        return {}
    rule = op.batch_rule
    if kind == "free":
        return _free_reshape(draw, specs)
    assert rule is not None and rule.arg is not None
    shape = opdb.spec_shape(specs[rule.arg]) if rule.arg in specs else None
    if kind == "leading" and shape and len(shape) != rule.unbatched:
        return {rule.arg: _with_shape(specs[rule.arg], [draw(_DIM), *shape[1:]])}
    if kind == "any_leading" and shape is not None:
        return {rule.arg: _with_shape(specs[rule.arg], [draw(_DIM), *shape])}
    return {}


def _free_reshape(draw: st.DrawFn, specs: dict[str, Any]) -> dict[str, Any]:
    """New shapes for every tensor spec: one group of shapes that broadcast together, or for
    Tensor[] arguments one group per list position (element i of each list goes with element
    i of the others)."""
    lists = {n: list(s) for n, s in specs.items() if isinstance(s, list) and _is_spec_list(s)}
    if lists:
        length = max(map(len, lists.values()))
        groups = [[(n, i) for n in lists if i < len(lists[n])] for i in range(length)]
    else:
        groups = [[(n, None) for n in specs]]
    out: dict[str, Any] = lists
    for group in groups:
        old = [opdb.spec_shape(_spec(specs, slot)) for slot in group]
        new = _broadcast_like(old, draw(_sizes(max(map(len, old)))))
        for (name, i), shape in zip(group, new, strict=True):
            if i is None:
                out[name] = _with_shape(specs[name], shape)
            else:
                out[name][i] = _with_shape(specs[name][i], shape)
    return out


def _is_spec_list(value: list[Any]) -> bool:
    """A Tensor[] sample value: a list of shapes or specs (not itself one shape)."""
    return all(isinstance(v, (list, dict)) for v in value)


def _spec(specs: dict[str, Any], slot: Slot) -> Any:
    name, i = slot
    return specs[name] if i is None else specs[name][i]


# --- Memory layouts ----------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where a tensor's elements lie in memory, its values unchanged: its dims in memory
    order, outermost first (None: as they are; (0, 2, 3, 1): channels_last), a step per dim
    (gaps between elements: large strides), a storage offset, and a dim read through a
    stride of 0 (its first slice, expanded: this changes the values)."""

    order: tuple[int, ...] | None = None
    steps: tuple[int, ...] | None = None
    offset: int = 0
    expanded: int | None = None

    def apply(self, t: torch.Tensor) -> torch.Tensor:
        """A copy of t (new storage, so an op may write into it) laid out as self says."""
        src = t.narrow(self.expanded, 0, 1) if self.expanded is not None else t
        order = self.order or tuple(range(t.dim()))
        steps = self.steps or (1,) * t.dim()
        padded = [src.shape[d] * steps[d] for d in order]
        storage = t.new_empty(self.offset + math.prod(padded))
        inverse = sorted(range(t.dim()), key=order.__getitem__)
        base = storage[self.offset :].view(padded).permute(inverse)
        out = base[tuple(slice(None, None, s) for s in steps)]
        out.copy_(src)
        return out.expand(t.shape) if self.expanded is not None else out

    def memory_format(self, shape: Sequence[int]) -> bool:
        """Contiguous or channels_last, the layouts whose outputs' strides follow ATen's
        (test_ops._check_layout): no gaps, no stride 0, no other order of the dims."""
        gaps = self.steps is not None and any(
            s > 1 and n > 1 for s, n in zip(self.steps, shape, strict=True)
        )
        channels_last = len(shape) == 4 and self.order == (0, 2, 3, 1)
        in_order = self.order in (None, tuple(range(len(shape))))
        return not gaps and self.expanded is None and (in_order or channels_last)

    def __str__(self) -> str:
        parts = [
            f"order {self.order}" if self.order else "",
            f"steps {self.steps}" if self.steps else "",
            f"offset {self.offset}" if self.offset else "",
            f"stride 0 along dim {self.expanded}" if self.expanded is not None else "",
        ]
        return ", ".join(p for p in parts if p) or "contiguous"


def layouts(shape: Sequence[int], expandable: Sequence[int]) -> st.SearchStrategy[Layout]:
    """Contiguous first (hypothesis's simplest), then permuted (transposed, channels_last),
    strided, offset and expanded layouts, alone and together."""
    rank = len(shape)
    orders: list[st.SearchStrategy[tuple[int, ...] | None]] = [st.none()]
    if rank == 4:
        orders.append(st.just((0, 2, 3, 1)))  # channels_last
    if rank >= 2:
        orders.append(st.permutations(range(rank)).map(tuple))
    steps = st.none() | st.tuples(*[st.sampled_from((1, 2, 3))] * rank)
    expanded = (st.none() | st.sampled_from(tuple(expandable))) if expandable else st.none()
    return st.builds(Layout, st.one_of(orders), steps, st.sampled_from((0, 0, 3)), expanded)


def _expandable(op: OpDecl, slot: Slot, t: torch.Tensor) -> list[int]:
    """Dims of an input (not one the op writes) whose values may repeat along them: any dim
    for ops whose shapes are free (elementwise: repeated values stay valid ones), the batch
    dim for batched ops (repeated samples); none where repeats could tie (sorts, maxima) or
    break a value's meaning (a box's batch index in its first column)."""
    if slot[0] in opdb.written_args(op):
        return []
    kind = free_shapes(op)
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    if kind == "free":
        return dims
    rule = op.batch_rule
    if kind in ("leading", "any_leading") and rule is not None and slot[0] == rule.arg:
        return [d for d in dims if d == 0]
    return []


# --- Drawing calls -----------------------------------------------------------------------


_PYTHON_CALLS: dict[tuple[str, torch.dtype], tuple[opdb.Call, ...]] = {}


def _python_calls(op: OpDecl, dtype: torch.dtype) -> tuple[opdb.Call, ...]:
    """The battery's hand-written samples of op (tests/ops/samples.py) on the CPU, made once."""
    key = (op.qualified, dtype)
    if key not in _PYTHON_CALLS:
        calls = opdb.calls(op, dtype, "cpu")
        _PYTHON_CALLS[key] = tuple(c for c in calls if c.label.startswith("python"))
    return _PYTHON_CALLS[key]


def _input_arg_dtypes(op: OpDecl) -> list[tuple[str, tuple[str, ...]]]:
    """Tensor inputs that take dtypes of their own, where there is a choice (int32 or int64
    indices, say)."""
    inputs = {a.name for a in op.schema.arguments.flat_non_out}
    return [(n, c) for n, c in op.arg_dtypes if n in inputs and len(c) > 1]


@st.composite
def valid_cases(draw: st.DrawFn, op: OpDecl, dtype: torch.dtype) -> Case:
    """A call the op must accept: a declared sample with new random values, new shapes where
    the op allows them (size-0 and size-1 dims among them), other dtypes for arguments that
    declare a choice, other output masks, and each tensor in a drawn memory layout."""
    python = _python_calls(op, dtype)
    sources = [("yaml", i) for i in range(len(op.samples))]
    kind, index = draw(st.sampled_from(sources + [("python", j) for j in range(len(python))]))
    if kind == "python":  # a hand-written sample: only its layouts change
        call, recipe = python[index], [f"python sample {index}"]
    else:
        sample = op.samples[index]
        seed = draw(st.integers(0, 2**16 - 1))
        overrides = draw(_reshaped(op, sample))
        arg_dtype = {n: draw(st.sampled_from(c)) for n, c in _input_arg_dtypes(op)}
        mask = sample.get("output_mask")
        if isinstance(mask, list) and len(mask) > 1:
            overrides["output_mask"] = draw(
                st.lists(st.booleans(), min_size=len(mask), max_size=len(mask))
            )
        call = opdb._build(
            op, lambda n: overrides.get(n, sample.get(n)), dtype, "cpu", "plain", seed, arg_dtype
        )
        assert call is not None
        recipe = [f"sample {index} ({sample.loc}), seed {seed}"]
        recipe += [f"{n}={_describe(v)}" for n, v in overrides.items()]
        recipe += [f"{n} as {d}" for n, d in arg_dtype.items()]
    formats = True
    for slot in tensor_slots(call):
        t = get_tensor(call, slot)
        layout = draw(layouts(t.shape, _expandable(op, slot, t)))
        call = with_tensor(call, slot, layout.apply(t))
        formats &= layout.memory_format(t.shape)
        if layout != Layout():
            recipe.append(f"{_slot_name(slot)}: {layout}")
    # test_ops._check_layout compares the output strides of contiguous and channels_last calls.
    label = "fuzz" if formats else "fuzz-noncontiguous"
    call = opdb.Call(call.args, call.kwargs, label, call.names)
    return Case(call, dtype, tuple(recipe))


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("shape"))
    if isinstance(value, list) and value and _is_spec_list(value):
        return str([opdb.spec_shape(v) for v in value])
    return str(value)


# --- Invalid arguments -------------------------------------------------------------------


def _int_like(t: Type) -> bool:
    """int, SymInt, their lists (int[2], SymInt[]) and optionals (int?, int[1]?)."""
    if isinstance(t, OptionalType):
        t = t.elem
    if isinstance(t, ListType):
        t = t.elem
    return isinstance(t, BaseType) and t.name in (BaseTy.int, BaseTy.SymInt)


@st.composite
def _wrong_rank(draw: st.DrawFn, op: OpDecl, case: Case) -> Case:
    slot = draw(st.sampled_from(tensor_slots(case.call)))
    t = get_tensor(case.call, slot)
    if t.dim() and draw(st.booleans()):
        d = draw(st.integers(0, t.dim() - 1))
        new = t.select(d, 0) if t.shape[d] else t.sum(d).to(t.dtype)
        step = f"{_slot_name(slot)} loses dim {d}: {list(new.shape)}"
    else:
        d, n = draw(st.integers(0, t.dim())), draw(st.sampled_from((1, 2, 3)))
        new = t.unsqueeze(d).expand(*t.shape[:d], n, *t.shape[d:]).contiguous()
        step = f"{_slot_name(slot)} gains dim {d}: {list(new.shape)}"
    return case.mutate(with_tensor(case.call, slot, new), step, "rank", slot[0])


@st.composite
def _wrong_dtype(draw: st.DrawFn, op: OpDecl, case: Case) -> Case:
    slot = draw(st.sampled_from(tensor_slots(case.call)))
    t = get_tensor(case.call, slot)
    bad = draw(st.sampled_from([d for d in _MUTANT_DTYPES if d != t.dtype]))
    step = f"{_slot_name(slot)} as {str(bad).removeprefix('torch.')}"
    return case.mutate(with_tensor(case.call, slot, t.to(bad)), step, "dtype", slot[0])


@st.composite
def _bad_int(draw: st.DrawFn, op: OpDecl, case: Case) -> Case:
    """An int argument (given or left to its default) set to a negative, zero or too large
    value; for an int list, one element, or the list one element short or long."""
    arg = draw(st.sampled_from(_int_args(op)))
    value, bad = case.call.named(arg.name), draw(st.sampled_from(_BAD_INTS))
    list_type = arg.type.is_list_like()
    if list_type is None:
        new: Any = bad
    else:
        given = value if isinstance(value, list) else [] if value is None else [value]
        new = list(given) or [1] * (list_type.size or 1)
        how = draw(st.sampled_from(("element", "short", "long")))
        if how == "element":
            new[draw(st.integers(0, len(new) - 1))] = bad
        else:
            new = new[:-1] if how == "short" else [*new, bad]
    return case.mutate(replaced(case.call, arg.name, new), f"{arg.name}={new}", "int", arg.name)


def _int_args(op: OpDecl) -> list[Any]:
    return [a for a in op.schema.arguments.flat_non_out if _int_like(a.type)]


@st.composite
def _bad_index(draw: st.DrawFn, op: OpDecl, case: Case) -> Case:
    """One element of an integer tensor (indices, targets, argmax) out of range."""
    slot = draw(st.sampled_from(_index_slots(case.call)))
    t = get_tensor(case.call, slot)
    k, bad = draw(st.integers(0, t.numel() - 1)), draw(st.sampled_from(_BAD_INDICES))
    new = t.clone(memory_format=torch.contiguous_format)
    new.view(-1)[k] = bad
    step = f"{_slot_name(slot)}.flatten()[{k}] = {bad}"
    return case.mutate(with_tensor(case.call, slot, new), step, "index", slot[0])


def _index_slots(call: opdb.Call) -> list[Slot]:
    return [
        s
        for s in tensor_slots(call)
        if get_tensor(call, s).dtype in (torch.int32, torch.int64) and get_tensor(call, s).numel()
    ]


@st.composite
def _mismatched_shape(draw: st.DrawFn, op: OpDecl, case: Case) -> Case:
    """One dim of one tensor a size shorter or longer (against the others' sizes)."""
    slot = draw(
        st.sampled_from([s for s in tensor_slots(case.call) if get_tensor(case.call, s).dim()])
    )
    t = get_tensor(case.call, slot)
    d = draw(st.integers(0, t.dim() - 1))
    if t.shape[d] and draw(st.booleans()):
        new = t.narrow(d, 0, t.shape[d] - 1)
    elif t.shape[d]:
        new = torch.cat([t, t.narrow(d, 0, 1)], d)
    else:
        new = t.new_zeros([*t.shape[:d], 1, *t.shape[d + 1 :]])
    step = f"{_slot_name(slot)} dim {d}: {t.shape[d]} -> {new.shape[d]}"
    return case.mutate(with_tensor(case.call, slot, new), step, "shape", slot[0])


MutationFn = Callable[[OpDecl, Case], st.SearchStrategy[Case]]
# kind -> (applies to a call, strategy)
MUTATIONS: dict[str, tuple[Callable[[OpDecl, opdb.Call], bool], MutationFn]] = {
    "rank": (lambda op, c: bool(tensor_slots(c)), _wrong_rank),
    "dtype": (lambda op, c: bool(tensor_slots(c)), _wrong_dtype),
    "int": (lambda op, c: bool(_int_args(op)), _bad_int),
    "index": (lambda op, c: bool(_index_slots(c)), _bad_index),
    "shape": (
        lambda op, c: (
            len(tensor_slots(c)) > 1 and any(get_tensor(c, s).dim() for s in tensor_slots(c))
        ),
        _mismatched_shape,
    ),
}


@st.composite
def invalid_cases(draw: st.DrawFn, op: OpDecl) -> Case:
    """A valid case of any declared dtype, then one mutation (MUTATIONS) that is usually an
    error: a tensor of the wrong rank or dtype, a bad int argument or index, or mismatched
    sizes between tensors."""
    dtype = draw(st.sampled_from([opdb.TORCH_DTYPES[d] for d in op.dtypes]))
    case = draw(valid_cases(op, dtype))
    kinds = [k for k, (applies, _) in MUTATIONS.items() if applies(op, case.call)]
    if not kinds:
        return case
    kind = draw(st.sampled_from(kinds))
    return draw(MUTATIONS[kind][1](op, case))


# --- Reading and replacing a call's arguments ---------------------------------------------


def tensor_slots(call: opdb.Call) -> list[Slot]:
    """Every tensor argument, those in Tensor[] lists included."""
    out: list[Slot] = []
    for name in (*call.names, *call.kwargs):
        value = call.named(name)
        if isinstance(value, torch.Tensor):
            out.append((name, None))
        elif isinstance(value, list):
            out += [(name, i) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
    return out


def get_tensor(call: opdb.Call, slot: Slot) -> torch.Tensor:
    value = call.named(slot[0])
    return value if slot[1] is None else value[slot[1]]  # type: ignore[no-any-return]


def with_tensor(call: opdb.Call, slot: Slot, t: torch.Tensor) -> opdb.Call:
    name, i = slot
    if i is None:
        return replaced(call, name, t)
    items = list(call.named(name))
    items[i] = t
    return replaced(call, name, items)


def replaced(call: opdb.Call, name: str, value: Any) -> opdb.Call:
    """The call with argument `name` set (by keyword where it was not passed positionally)."""
    args, kwargs = list(call.args), dict(call.kwargs)
    if name in call.names:
        args[call.names.index(name)] = value
    else:
        kwargs[name] = value
    return opdb.Call(args, kwargs, call.label, call.names)


def _slot_name(slot: Slot) -> str:
    return slot[0] if slot[1] is None else f"{slot[0]}[{slot[1]}]"
