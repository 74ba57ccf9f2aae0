"""In-place and out= variants generated from a functional op, and C++ API names.

Pointwise and structured ops' variants are real kernels writing into their target
(codegen/dest/pointwise.py, codegen/dest/structured.py); a composite op's are
registered as CompositeImplicitAutograd: they call the functional op and copy the
result (`self.copy_(op(self))`, or resize + copy into `out`), so autograd, meta and
torch.compile come from the functional op.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from codegen.model import Annotation, Argument, Arguments, FunctionSchema, OperatorName, Return
from codegen.opdecl import OpDecl, PythonArgs

_WRITE_A = Annotation(("a",), True, ())


def _inplace_schema(s: FunctionSchema) -> FunctionSchema:
    first, *rest = s.arguments.positional
    mutable_first = dataclasses.replace(first, annotation=_WRITE_A)
    return FunctionSchema(
        name=OperatorName(f"{s.name.name}_", s.name.overload_name),
        arguments=dataclasses.replace(s.arguments, positional=(mutable_first, *rest)),
        returns=(Return(None, s.returns[0].type, _WRITE_A),),
    )


def _out_overload(op: OpDecl, siblings: int) -> str:
    return "out" if not op.overload or siblings == 1 else f"{op.overload}_out"


def _out_schema(s: FunctionSchema, overload: str) -> FunctionSchema:
    outs: list[Argument] = []
    rets: list[Return] = []
    for i, r in enumerate(s.returns):
        alias = Annotation((chr(ord("a") + i),), True, ())
        name = "out" if len(s.returns) == 1 else f"out{i}"
        outs.append(Argument(name, r.type, None, alias))
        rets.append(Return(None, r.type, alias))
    args = s.arguments
    return FunctionSchema(
        name=OperatorName(s.name.name, overload),
        arguments=Arguments(args.positional, args.kwarg_only, tuple(outs)),
        returns=tuple(rets),
    )


def _variant_python(python: PythonArgs | None) -> PythonArgs | None:
    if python is None or python.number is None:
        return None
    return PythonArgs(number=python.number)


def expand_variants(ops: Sequence[OpDecl]) -> list[OpDecl]:
    """`ops` plus a generated OpDecl for every variant an op asks for."""
    functional_count: dict[str, int] = defaultdict(int)
    for op in ops:
        if not op.schema.arguments.out:
            functional_count[op.name] += 1
    out = list(ops)
    for op in ops:
        for kind in op.variants:
            if kind == "inplace":
                schema = _inplace_schema(op.schema)
                doc = f"In-place variant of `opforge.{op.name}`: writes the result into `{schema.arguments.positional[0].name}`."
                tags: tuple[str, ...] = ("inplace",)
            else:
                schema = _out_schema(op.schema, _out_overload(op, functional_count[op.name]))
                doc = f"out= variant of `opforge.{op.name}`: writes the result into `out` (resized if needed)."
                # No at::Tag::out: Inductor (torch 2.14) lowers a functional custom op to
                # its out-tagged overload and passes keyword-only arguments positionally
                # ("expected at most 4 argument(s) but received 5" for add(alpha=...)).
                tags = ()
            out.append(
                dataclasses.replace(
                    op,
                    schema=schema,
                    doc=doc,
                    tags=tags,
                    # A structured variant's kernels run on its functional op's keys.
                    dispatch=op.dispatch if op.structured is not None else (),
                    shape=None,
                    dtype_rule=None,
                    derivatives=(),
                    variants=(),
                    autocast=None,  # as ATen's: in-place and out= run in the given dtypes
                    batch=None,
                    sharding=None,
                    onnx=None,  # exporters see the functional op
                    # An in-place op writes into `self`: no cast of it (`dtype=`).
                    python=_variant_python(op.python) if kind == "inplace" else None,
                    jvp=(),  # tangents come from the functional op (variant_kernels)
                    variant_of=op.qualified,
                )
            )
    return out


def api_names(ops: Sequence[OpDecl]) -> list[OpDecl]:
    """Give each op its `opforge::ops::` C++ name: the bare name when unambiguous."""
    functional: dict[str, list[OpDecl]] = defaultdict(list)
    for op in ops:
        if not op.schema.arguments.out:
            functional[op.name].append(op)
    named = []
    for op in ops:
        if op.schema.arguments.out:
            name = f"{op.name}_out" if op.overload == "out" else f"{op.name}_{op.overload}"
        elif len(functional[op.name]) == 1 or not op.overload:
            name = op.name
        else:
            name = f"{op.name}_{op.overload}"
        named.append(dataclasses.replace(op, api_name=name))
    return named
