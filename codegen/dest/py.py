"""Template contexts for the generated Python wrappers, stubs, docs and CMake source list."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from itertools import groupby
from typing import Any

from codegen.api import python
from codegen.dest import structured
from codegen.dest.common import dtype_description, sources
from codegen.model import Argument, BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import OpDecl, output_names

Context = dict[str, Any]


def _ops_value(a: Argument) -> str:
    """The torch.ops side of an argument: a single int for `int[N]`/`SymInt[N]` becomes N
    copies (one for `int[]`), as the pybind11 path (and ATen's Python bindings) accept, which
    torch.ops does not."""
    t = a.type.elem if isinstance(a.type, OptionalType) else a.type
    if isinstance(t, ListType) and str(t.elem) in ("int", "SymInt"):
        return f"_expand({a.name}, {t.size or 1})"
    return a.name


def _out_values(op: OpDecl) -> dict[str, str]:
    """The Python expression of each out= argument: `out` itself, or `out[i]` of the one
    `out=(a, b)` tuple that takes an op's several results, as in PyTorch."""
    names = [a.name for a in op.schema.arguments.out]
    if len(names) == 1:
        return {names[0]: "out"}
    return {n: f"out[{i}]" for i, n in enumerate(names)}


def _call(op: OpDecl) -> tuple[str, str]:
    """Argument lists for the pybind11 call (all positional) and the torch.ops call."""
    args = op.schema.arguments
    outs = _out_values(op)
    positional = [a.name for a in args.positional]
    keywords = [a.name for a in args.kwarg_only] + [outs[a.name] for a in args.out]
    pyb = ", ".join(positional + keywords)
    ops = ", ".join(
        [_ops_value(a) for a in args.positional]
        + [f"{a.name}={_ops_value(a)}" for a in args.kwarg_only]
        + [f"{a.name}={outs[a.name]}" for a in args.out]
    )
    return pyb, ops


def _docstring(op: OpDecl) -> str:
    doc = op.doc or f"opforge.{op.name}"
    lines = [doc, "", f"Schema: ``{op.schema}``"]
    p = op.python
    if p is not None and p.number is not None:
        lines.append(f"``{p.number}`` may be a Python number (promoted as torch's are).")
    if p is not None and p.dtype is not None:
        lines.append(f"``dtype=``: ``{p.dtype}`` is cast to it first (as torch's).")
    if p is not None and p.none_size is not None:
        lines.append(
            f"``{p.none_size[0]}``: a None entry keeps the size of ``{p.none_size[1]}`` there."
        )
    if op.dtypes:
        lines.append(f"Dtypes: {_dtype_summary(op)}.")
    return "\n".join(lines)


def _dtype_summary(op: OpDecl) -> str:
    """`float32, float64`, then `; indices: int64` for arguments with dtypes of their own."""
    own = "".join(
        f"; {n}: "
        + ("float32 for float16/bfloat16, else the op's" if op.is_opmath(n) else ", ".join(ds))
        for n, ds in op.arg_dtypes
    )
    return ", ".join(op.dtypes) + own


# Note [Python conveniences]: what torch's Python API takes and a dispatcher schema
# cannot say, declared by `python:` (PythonArgs) and applied by the wrapper before it
# calls the op, so eager calls, torch.compile (which traces the wrapper) and out=
# all see them: a Python number for a Tensor (a 0-dim tensor of the dtype torch's
# promotion gives the number, as its wrapped numbers: int64 + 2.5 is float32),
# `dtype=` (the input cast first, as torch.softmax's), None in an output size (the
# input's size there, as torch's adaptive pools). torch.ops.opforge.* keeps the schema.
def _python_conveniences(op: OpDecl) -> tuple[list[str], dict[str, str], str]:
    """(the wrapper's first lines, parameter type hints replaced, extra keyword params)."""
    p = op.python
    if p is None:
        return [], {}, ""
    lines, hints, extra = [], {}, ""
    if p.number is not None:
        lines.append(f"{p.number} = _number_operand({p.number}, {_first_tensor(op, p.number)})")
        hints[p.number] = "Tensor | Number"
    if p.dtype is not None:
        lines.append(f"{p.dtype} = {p.dtype} if dtype is None else {p.dtype}.to(dtype)")
        extra = "dtype: torch.dtype | None = None"
    if p.none_size is not None:
        size, like = p.none_size
        lines.append(f"{size} = _fill_none({size}, {like})")
        hints[size] = "Sequence[int | None] | int"
    return lines, hints, extra


def _first_tensor(op: OpDecl, other_than: str) -> str:
    return next(
        a.name
        for a in op.schema.arguments.positional
        if a.name != other_than and a.type == BaseType(BaseTy.Tensor)
    )


def _wrapper(name: str, group: list[OpDecl]) -> Context:
    functional = [o for o in group if not o.schema.arguments.out]
    outs = [o for o in group if o.schema.arguments.out]
    if len(functional) == 1 and len(outs) <= 1:
        op = functional[0]
        pyb, ops_args = _call(op)
        prologue, hints, extra = _python_conveniences(op)
        params = python.parameters(op.schema, hints=hints)
        if extra:
            params += (", " if "*" in params else ", *, ") + extra
        ctx: Context = {
            "generic": False,
            "name": name,
            "prologue": prologue,
            "params": params,
            "returns": python.return_hint(op.schema),
            "doc": _docstring(op),
            "overload": op.overload or "default",
            "pyb_args": pyb,
            "ops_args": ops_args,
            "out": None,
        }
        if outs:
            out_op = outs[0]
            n_out = len(out_op.schema.arguments.out)
            o_pyb, o_ops = _call(out_op)
            hint = "Tensor" if n_out == 1 else f"tuple[{', '.join(['Tensor'] * n_out)}]"
            ctx["params"] += (
                ", " if "*" in ctx["params"] else ", *, "
            ) + f"out: {hint} | None = None"
            ctx["out"] = {
                "name": "out",
                "count": n_out,
                "overload": out_op.overload,
                "pyb_args": o_pyb,
                "ops_args": o_ops,
            }
        return ctx
    docs = "\n\n".join(_docstring(o) for o in group)
    overloads = []
    for o in functional:
        pyb, ops_args = _call(o)
        overloads.append(
            {
                "fn": f"_{o.name}_{o.overload or 'default'}",
                "params": python.parameters(o.schema),
                "returns": python.return_hint(o.schema),
                "fits": " and ".join(_fits(o)) or "True",
                "overload": o.overload or "default",
                "pyb_name": o.api_name,
                "pyb_args": pyb,
                "ops_args": ops_args,
            }
        )
    return {"generic": True, "name": name, "doc": docs, "overloads": overloads}


def _fits(op: OpDecl) -> list[str]:
    """Conditions on the argument values under which a call is for this overload: the
    argument kinds that tell overloads apart (tensors, strings, int lists)."""
    conditions = []
    for a in op.schema.arguments.flat_all:
        t = a.type.elem if isinstance(a.type, OptionalType) else a.type
        optional = t is not a.type
        if t == BaseType(BaseTy.Tensor):
            check = f"isinstance({a.name}, Tensor)"
        elif t == BaseType(BaseTy.str):
            check = f"isinstance({a.name}, str)"
        elif isinstance(t, ListType) and str(t.elem) in ("int", "SymInt"):
            check = f"_is_int_list({a.name})"
        else:
            continue
        conditions.append(f"({a.name} is None or {check})" if optional else check)
    return conditions


def wrappers(ops: Sequence[OpDecl]) -> Context:
    ops = sorted(ops, key=lambda o: (o.name, o.overload))
    fns = [_wrapper(name, list(g)) for name, g in groupby(ops, key=lambda o: o.name)]
    table = [
        {
            "qualified": o.qualified,
            "schema": str(o.schema),
            "keys": list(o.keys) or (["CPU", "CUDA"] if o.pointwise else []),
            "dtypes": list(o.dtypes),
            "arg_dtypes": {n: list(ds) for n, ds in o.arg_dtypes},
            # what benchmarks time it against where that is not the reference (`bench:`)
            "bench_against": o.bench.against if o.bench is not None else None,
            # how vmap and DTensor split it (Note [Batching rules] in opforge/_vmap.py)
            "batching": dataclasses.asdict(o.batch_rule) if o.batch_rule is not None else None,
            "sharding": o.sharding,
            "onnx": o.onnx,
            "reference": o.reference,
            "family": o.family,
            "shape": str(o.shape) if o.shape is not None else None,
            "samples": [dict(sample.values) for sample in o.samples],
        }
        for o in ops
    ]
    return {
        "sources": sources(ops),
        "fns": fns,
        "table": table,
        "names": sorted({o.name for o in ops}),
        "data_dependent": [
            {
                "qualified": o.qualified,
                "id": o.cpp_id,
                "name": o.name,
                "overload": o.overload or "default",
                "which": tuple(output_names(o.schema).index(n) for n in o.data_dependent),
            }
            for o in ops
            if o.data_dependent
        ],
    }


def docs(ops: Sequence[OpDecl]) -> Context:
    entries = []
    for o in ops:
        meta = "generated from `shape: " + str(o.shape) + "`" if o.shape is not None else "none"
        entries.append(
            {
                "qualified": o.qualified,
                "schema": str(o.schema),
                "doc": o.doc,
                "dtypes": dtype_description(o.dtypes)
                + "".join(f"; `{n}`: {', '.join(ds)}" for n, ds in o.arg_dtypes),
                "kernels": ", ".join(f"{k} (`{v}`)" for k, v in o.dispatch),
                "meta": meta,
                "reference": o.reference or "none",
                "source": str(o.loc),
                "tags": ", ".join(o.tags) or "none",
            }
        )
    return {"sources": sources(ops), "entries": entries}


# Note [Build groups]: the generated units of one family compile as CMake unity
# groups of at most this many files. A unit's own code is small next to what it
# instantiates from torch's headers (the dispatcher's boxing glue, Tensor's
# inline methods), which a group instantiates once: 8 registration units cost
# about 13 s as one group against 46 s apart (2 cores, PCH), and an edit to one
# op still recompiles only its group.
UNITY_GROUP_SIZE = 8


def _unity_groups(family_units: dict[str, set[str]]) -> list[tuple[str, list[str]]]:
    """(`<family>_<k>`, units) chunks of each family's units, in name order."""
    groups = []
    for family, units in sorted(family_units.items()):
        ordered = sorted(units)
        for i in range(0, len(ordered), UNITY_GROUP_SIZE):
            groups.append((f"{family}_{i // UNITY_GROUP_SIZE}", ordered[i : i + UNITY_GROUP_SIZE]))
    return groups


def cmake(ops: Sequence[OpDecl]) -> Context:
    pointwise = sorted(o.cpp_id for o in ops if o.pointwise is not None and o.variant_of is None)
    units = structured.units(ops)
    registration: dict[str, set[str]] = {}
    kernels: dict[str, set[str]] = {}
    for o in ops:
        registration.setdefault(o.family, set()).add(o.file_stem)
        if o.pointwise is not None and o.variant_of is None:
            kernels.setdefault(o.family, set()).add(o.cpp_id)
    return {
        "sources": sources(ops),
        "names": sorted({o.file_stem for o in ops}),
        "families": sorted({o.family for o in ops}),
        "registration_groups": _unity_groups(registration),
        "kernel_groups": _unity_groups(kernels),
        "pointwise": pointwise,
        "structured_cpu": sorted(p for p in units if p.endswith(".cpp")),
        "structured_cuda": sorted(p for p in units if p.endswith(".cu")),
        "structured_kernel_files": structured.kernel_files(ops),
    }
