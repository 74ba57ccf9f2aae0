"""Schema types -> C++ types of the kernel (dispatcher) signature.

These are the types PyTorch's dispatcher passes to an unboxed kernel, so the
declaration in generated/include/opforge/ops/<op>.h is what `m.impl` checks
against the schema at registration time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from codegen.model import Argument, BaseTy, BaseType, FunctionSchema, ListType, OptionalType, Type

_SCALARS: dict[BaseTy, str] = {
    BaseTy.Tensor: "const at::Tensor&",
    BaseTy.int: "int64_t",
    BaseTy.SymInt: "c10::SymInt",
    BaseTy.float: "double",
    BaseTy.bool: "bool",
    BaseTy.str: "c10::string_view",
    BaseTy.Scalar: "const at::Scalar&",
    BaseTy.ScalarType: "at::ScalarType",
    BaseTy.Layout: "at::Layout",
    BaseTy.MemoryFormat: "at::MemoryFormat",
    BaseTy.Device: "at::Device",
    BaseTy.Generator: "at::Generator",
}
_OPTIONALS: dict[BaseTy, str] = {
    BaseTy.Tensor: "const std::optional<at::Tensor>&",
    BaseTy.Scalar: "const std::optional<at::Scalar>&",
    BaseTy.str: "std::optional<c10::string_view>",
    BaseTy.SymInt: "std::optional<c10::SymInt>",
}
_LISTS: dict[BaseTy, str] = {
    BaseTy.Tensor: "at::TensorList",
    BaseTy.int: "at::IntArrayRef",
    BaseTy.SymInt: "c10::SymIntArrayRef",
    BaseTy.float: "at::ArrayRef<double>",
    BaseTy.Scalar: "at::ArrayRef<at::Scalar>",
}
_OPTIONAL_LISTS: dict[BaseTy, str] = {
    BaseTy.int: "at::OptionalIntArrayRef",
    BaseTy.SymInt: "at::OptionalSymIntArrayRef",
    BaseTy.float: "std::optional<at::ArrayRef<double>>",
}
_RETURNS: dict[BaseTy, str] = {
    BaseTy.Tensor: "at::Tensor",
    BaseTy.int: "int64_t",
    BaseTy.SymInt: "c10::SymInt",
    BaseTy.float: "double",
    BaseTy.bool: "bool",
    BaseTy.Scalar: "at::Scalar",
    BaseTy.ScalarType: "at::ScalarType",
}


class UnsupportedType(ValueError):
    pass


def _base(t: Type) -> BaseTy | None:
    return t.name if isinstance(t, BaseType) else None


def argument_type(arg: Argument) -> str:
    t = arg.type
    if arg.is_write:
        if _base(t) is BaseTy.Tensor:
            return "at::Tensor&"
        if isinstance(t, OptionalType) and _base(t.elem) is BaseTy.Tensor:
            return "const std::optional<at::Tensor>&"
        if isinstance(t, ListType) and _base(t.elem) is BaseTy.Tensor:
            return "at::TensorList"
        raise UnsupportedType(f"mutable argument type '{t}' is not supported")
    if isinstance(t, BaseType) and t.name in _SCALARS:
        return _SCALARS[t.name]
    if isinstance(t, OptionalType):
        elem = t.elem
        if isinstance(elem, BaseType):
            if elem.name in _OPTIONALS:
                return _OPTIONALS[elem.name]
            if elem.name in _SCALARS and elem.name is not BaseTy.Tensor:
                return f"std::optional<{_SCALARS[elem.name]}>"
        if isinstance(elem, ListType) and _base(elem.elem) in _OPTIONAL_LISTS:
            return _OPTIONAL_LISTS[elem.elem.name]  # type: ignore[union-attr]
    if isinstance(t, ListType):
        elem_base = _base(t.elem)
        if elem_base is BaseTy.bool and t.size is not None:
            return f"std::array<bool,{t.size}>"
        if elem_base in _LISTS:
            return _LISTS[elem_base]
        if isinstance(t.elem, OptionalType) and _base(t.elem.elem) is BaseTy.Tensor:
            return "const c10::List<std::optional<at::Tensor>>&"
    raise UnsupportedType(f"type '{t}' is not supported by opforge's code generator")


@dataclass(frozen=True)
class Signature:
    """A C++ function signature as an object: generators rename, instantiate or declare it
    instead of editing its text."""

    returns: str
    name: str
    params: tuple[tuple[str, str], ...]  # (C++ type, name)
    template: tuple[str, ...] = ()  # the template's typename parameters, if any

    def __str__(self) -> str:
        params = ", ".join(f"{t} {n}" for t, n in self.params)
        return f"{self.returns} {self.name}({params})"

    def named(self, name: str) -> Signature:
        return dataclasses.replace(self, name=name)

    def instance(self, name: str) -> Signature:
        """An explicit instantiation's signature (`relu_cpu<float>`): no template line."""
        return dataclasses.replace(self, name=name, template=())

    def template_line(self) -> str:
        return f"template <{', '.join(f'typename {n}' for n in self.template)}>"

    def declaration(self, separator: str = "\n") -> str:
        """The signature after its template line (`separator` between them)."""
        return f"{self.template_line()}{separator}{self}" if self.template else str(self)


def return_type(schema: FunctionSchema, *, by_value: bool = False) -> str:
    """The C++ return type; `by_value`: a written-to Tensor returned as a new handle."""
    rets = schema.returns
    parts = []
    for r in rets:
        if r.is_write and _base(r.type) is BaseTy.Tensor:
            parts.append("at::Tensor" if by_value else "at::Tensor&")
        elif isinstance(r.type, BaseType) and r.type.name in _RETURNS:
            parts.append(_RETURNS[r.type.name])
        elif isinstance(r.type, ListType) and _base(r.type.elem) is BaseTy.Tensor:
            parts.append("std::vector<at::Tensor>")
        else:
            raise UnsupportedType(f"return type '{r.type}' is not supported")
    if not parts:
        return "void"
    return parts[0] if len(parts) == 1 else f"std::tuple<{', '.join(parts)}>"


def parameters(schema: FunctionSchema) -> list[tuple[str, str]]:
    """(C++ type, name) for each argument, in schema order (out arguments last)."""
    return [(argument_type(a), a.name) for a in schema.arguments.flat_all]


def signature(schema: FunctionSchema, fn_name: str) -> Signature:
    return Signature(return_type(schema), fn_name, tuple(parameters(schema)))


def function_type(schema: FunctionSchema) -> str:
    """The C++ function type used for the typed dispatcher handle, e.g. at::Tensor(const at::Tensor&)."""
    return f"{return_type(schema)}({', '.join(t for t, _ in parameters(schema))})"


def check_supported(schema: FunctionSchema) -> list[str]:
    """Messages for every argument or return type the generator cannot map."""
    problems = []
    for a in schema.arguments.flat_all:
        try:
            argument_type(a)
        except UnsupportedType as e:
            problems.append(f"argument '{a.name}': {e}")
    try:
        return_type(schema)
    except UnsupportedType as e:
        problems.append(str(e))
    return problems
