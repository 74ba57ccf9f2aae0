"""Schema arguments -> Python wrapper parameters (type hints and defaults)."""

from __future__ import annotations

import re

from codegen.model import Argument, BaseTy, BaseType, FunctionSchema, OptionalType, Type

_HINTS: dict[BaseTy, str] = {
    BaseTy.Tensor: "Tensor",
    BaseTy.int: "int",
    BaseTy.SymInt: "int",
    BaseTy.float: "float",
    BaseTy.bool: "bool",
    BaseTy.str: "str",
    BaseTy.Scalar: "Number",
    BaseTy.ScalarType: "torch.dtype",
    BaseTy.Layout: "torch.layout",
    BaseTy.MemoryFormat: "torch.memory_format",
    BaseTy.Device: "torch.device | str",
    BaseTy.Generator: "torch.Generator",
}


def type_hint(t: Type) -> str:
    if isinstance(t, BaseType):
        return _HINTS.get(t.name, "Any")
    if isinstance(t, OptionalType):
        return f"{type_hint(t.elem)} | None"
    elem = type_hint(t.elem)
    # int[2] stride=1 takes a single int too, as in PyTorch.
    if isinstance(t.elem, BaseType) and t.elem.name in (BaseTy.int, BaseTy.SymInt):
        return "int | Sequence[int]"
    return f"Sequence[{elem}]"


def default_value(arg: Argument) -> str | None:
    d = arg.default
    if d is None:
        return None
    if d in ("True", "False", "None"):
        return d
    if d.startswith("[") and d.endswith("]"):
        items = [x.strip() for x in d[1:-1].split(",") if x.strip()]
        return "(" + "".join(f"{x}, " for x in items).rstrip(" ") + ")" if items else "()"
    if re.fullmatch(r"-?\d+", d) or re.fullmatch(r"-?[\d.]+(e-?\d+)?", d):
        return d
    if d.startswith(("'", '"')):
        return d
    if d == "contiguous_format":
        return "torch.contiguous_format"
    if d in ("long", "float", "double"):
        return f"torch.{ {'long': 'int64', 'float': 'float32', 'double': 'float64'}[d] }"
    return repr(d)


def parameters(
    schema: FunctionSchema, *, with_out: bool = True, hints: dict[str, str] | None = None
) -> str:
    """`self: Tensor, *, approximate: str = 'none'` for the wrapper's def line; `hints`
    replaces some arguments' type hints."""
    hints = hints or {}
    parts = []
    for a in schema.arguments.positional:
        parts.append(_param(a, hints.get(a.name)))
    kw = list(schema.arguments.kwarg_only) + (list(schema.arguments.out) if with_out else [])
    if kw:
        parts.append("*")
        parts.extend(_param(a, hints.get(a.name)) for a in kw)
    return ", ".join(parts)


def _param(a: Argument, hint: str | None = None) -> str:
    text = f"{a.name}: {hint or type_hint(a.type)}"
    default = default_value(a)
    return text if default is None else f"{text} = {default}"


def return_hint(schema: FunctionSchema) -> str:
    hints = [type_hint(r.type) for r in schema.returns]
    if not hints:
        return "None"
    return hints[0] if len(hints) == 1 else f"tuple[{', '.join(hints)}]"
