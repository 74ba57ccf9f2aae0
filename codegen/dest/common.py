"""Small helpers shared by the template-context builders."""

from __future__ import annotations

from collections.abc import Sequence

from codegen.model import Argument, BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import FLOATING_DTYPES, OpDecl


def sources(ops: Sequence[OpDecl]) -> str:
    """The schema files a generated file comes from, for its first line."""
    return ", ".join(sorted({o.loc.path for o in ops}))


def _tensor_kind(a: Argument) -> str | None:
    t = a.type
    if t == BaseType(BaseTy.Tensor):
        return "tensor"
    if isinstance(t, OptionalType) and t.elem == BaseType(BaseTy.Tensor):
        return "optional"
    if isinstance(t, ListType) and t.elem == BaseType(BaseTy.Tensor):
        return "list"
    return None


def tensor_args(op: OpDecl) -> list[tuple[Argument, str]]:
    """(argument, 'tensor' | 'optional' | 'list') for every tensor-like argument."""
    return [(a, k) for a in op.schema.arguments.flat_all if (k := _tensor_kind(a)) is not None]


def dtype_description(dtypes: Sequence[str]) -> str:
    kind = "a floating tensor" if set(dtypes) <= set(FLOATING_DTYPES) else "a tensor of dtype"
    return f"{kind} ({', '.join(dtypes)})"
