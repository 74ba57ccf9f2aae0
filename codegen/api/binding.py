"""Schema arguments -> pybind11 parameters and the conversion to dispatcher types.

The binding takes owning, Python-friendly types (std::string, std::vector) and
converts them once to the view types the dispatcher signature wants.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.api import cpp
from codegen.model import Argument, BaseTy, BaseType, ListType, OptionalType


@dataclass(frozen=True)
class BoundArg:
    param: str  # pybind11 lambda parameter declaration
    prelude: str | None  # statement converting it, if needed
    expr: str  # expression passed to the typed dispatcher handle
    name: str


def _int_list(op: str, a: Argument, t: ListType, optional: bool) -> BoundArg:
    size = t.size or 0
    v = f"{a.name}_list"
    fn = "optional_int_list" if optional else "int_list"
    prelude = f'auto {v} = opforge::bindings::{fn}({a.name}, {size}, "{op}", "{a.name}");'
    sym = isinstance(t.elem, BaseType) and t.elem.name is BaseTy.SymInt
    if optional:
        wrap = "at::OptionalSymIntArrayRef" if sym else "at::OptionalIntArrayRef"
        conv = f"c10::fromIntArrayRefSlow(*{v})" if sym else f"at::IntArrayRef(*{v})"
        expr = f"{v} ? {wrap}({conv}) : {wrap}(std::nullopt)"
    else:
        expr = f"c10::fromIntArrayRefSlow({v})" if sym else v
    return BoundArg(f"pybind11::handle {a.name}", prelude, expr, a.name)


def bind(op: str, a: Argument) -> BoundArg:
    """How argument `a` of operator `op` (e.g. "opforge.sum") crosses from Python."""
    t = a.type
    dispatcher = cpp.argument_type(a)
    if (
        isinstance(t, ListType)
        and isinstance(t.elem, BaseType)
        and t.elem.name in (BaseTy.int, BaseTy.SymInt)
    ):
        return _int_list(op, a, t, optional=False)
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType):
        return _int_list(op, a, t.elem, optional=True)
    if t == BaseType(BaseTy.Scalar) or t == OptionalType(BaseType(BaseTy.Scalar)):
        fn = "scalar" if isinstance(t, BaseType) else "optional_scalar"
        v = f"{a.name}_scalar"
        prelude = f'const auto {v} = opforge::bindings::{fn}({a.name}, "{op}", "{a.name}");'
        return BoundArg(f"pybind11::handle {a.name}", prelude, v, a.name)
    if isinstance(t, ListType) and t.elem == BaseType(BaseTy.float):
        v = f"{a.name}_list"
        prelude = f'const auto {v} = opforge::bindings::float_list({a.name}, "{op}", "{a.name}");'
        return BoundArg(f"pybind11::handle {a.name}", prelude, v, a.name)
    if t == OptionalType(BaseType(BaseTy.Device)):
        v = f"{a.name}_device"
        prelude = (
            f'const auto {v} = opforge::bindings::optional_device({a.name}, "{op}", "{a.name}");'
        )
        return BoundArg(f"pybind11::handle {a.name}", prelude, v, a.name)
    if t == OptionalType(BaseType(BaseTy.Generator)):
        v = f"{a.name}_gen"
        prelude = f'auto {v} = opforge::bindings::optional_generator({a.name}, "{op}", "{a.name}");'
        return BoundArg(f"pybind11::handle {a.name}", prelude, v, a.name)
    if isinstance(t, BaseType) and t.name is BaseTy.str:
        return BoundArg(f"const std::string& {a.name}", None, f"c10::string_view({a.name})", a.name)
    if isinstance(t, OptionalType) and t.elem == BaseType(BaseTy.str):
        expr = f"{a.name} ? std::optional<c10::string_view>(*{a.name}) : std::nullopt"
        return BoundArg(f"const std::optional<std::string>& {a.name}", None, expr, a.name)
    if isinstance(t, BaseType) and t.name is BaseTy.SymInt:
        return BoundArg(f"int64_t {a.name}", None, f"c10::SymInt({a.name})", a.name)
    if isinstance(t, ListType) and t.elem == BaseType(BaseTy.Tensor):
        return BoundArg(f"const std::vector<at::Tensor>& {a.name}", None, a.name, a.name)
    if dispatcher == "at::Tensor&":
        return BoundArg(f"at::Tensor {a.name}", None, a.name, a.name)
    return BoundArg(f"{dispatcher} {a.name}", None, a.name, a.name)
