"""Frozen data model for PyTorch function schemas.

``FunctionSchema.parse(s)`` turns a ``native_functions.yaml``-style schema such as
``add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)``
into immutable objects, and ``str()`` prints the canonical text back, so that
``str(FunctionSchema.parse(s)) == s`` for every canonically formatted schema.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import Enum
from typing import Literal, TypeAlias


class SchemaError(ValueError):
    """A schema string that does not follow the function-schema grammar."""


class BaseTy(Enum):
    Tensor = "Tensor"
    int = "int"
    SymInt = "SymInt"
    float = "float"
    bool = "bool"
    str = "str"
    Scalar = "Scalar"
    ScalarType = "ScalarType"
    Layout = "Layout"
    MemoryFormat = "MemoryFormat"
    Device = "Device"
    DeviceIndex = "DeviceIndex"
    Generator = "Generator"
    Storage = "Storage"
    Stream = "Stream"
    Dimname = "Dimname"
    DimVector = "DimVector"
    QScheme = "QScheme"
    ConstQuantizerPtr = "ConstQuantizerPtr"
    SymBool = "SymBool"
    GraphModule = "GraphModule"


@dataclass(frozen=True)
class BaseType:
    name: BaseTy

    def __str__(self) -> str:
        return self.name.value

    def is_tensor_like(self) -> bool:
        return self.name is BaseTy.Tensor

    def is_nullable(self) -> bool:
        return False

    def is_list_like(self) -> ListType | None:
        return None


@dataclass(frozen=True)
class OptionalType:
    elem: Type

    def __str__(self) -> str:
        return f"{self.elem}?"

    def is_tensor_like(self) -> bool:
        # Only `Tensor?` itself; `Tensor[]?` is not an accepted tensor-like form.
        return isinstance(self.elem, BaseType) and self.elem.is_tensor_like()

    def is_nullable(self) -> bool:
        return True

    def is_list_like(self) -> ListType | None:
        return self.elem.is_list_like()


@dataclass(frozen=True)
class ListType:
    elem: Type
    size: int | None

    def __str__(self) -> str:
        return f"{self.elem}[{'' if self.size is None else self.size}]"

    def is_tensor_like(self) -> bool:
        # `Tensor[]` and `Tensor?[]`, but not lists of lists.
        return not isinstance(self.elem, ListType) and self.elem.is_tensor_like()

    def is_nullable(self) -> bool:
        return False

    def is_list_like(self) -> ListType | None:
        return self


Type: TypeAlias = BaseType | OptionalType | ListType

_BASE_NAMES = [t.value for t in BaseTy]
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALIAS = re.compile(r"[a-z][a-z0-9_]*|\*")
# Type text is a base name, an optional alias annotation, then `?`/`[N]` suffixes;
# `Tensor(a!)[]` is the only spelling PyTorch uses for annotated lists.
_TYPED = re.compile(
    r"(?P<base>\w+)(?:\((?P<ann>[^()]*)\))?(?P<suffix>[\[\]0-9?]*)"
    r"(?: (?P<name>\w+))?(?:=(?P<default>.*))?",
    re.DOTALL,
)
_SUFFIX = re.compile(r"\?|\[([1-9][0-9]*)?\]")


def _parse_base(name: str) -> BaseType:
    try:
        return BaseType(BaseTy(name))
    except ValueError:
        hint = difflib.get_close_matches(name, _BASE_NAMES, n=1)
        extra = f"; did you mean '{hint[0]}'?" if hint else ""
        raise SchemaError(f"unknown type '{name}'{extra}") from None


def _parse_type(base: str, suffix: str) -> Type:
    ty: Type = _parse_base(base)
    pos = 0
    while pos < len(suffix):
        m = _SUFFIX.match(suffix, pos)
        if m is None:
            raise SchemaError(
                f"malformed type suffix '{suffix[pos:]}' after '{ty}'; "
                "expected '?', '[]' or '[N]' with N > 0"
            )
        if m.group(0) == "?":
            if isinstance(ty, OptionalType):
                raise SchemaError(f"type '{ty}?' is optional twice")
            ty = OptionalType(ty)
        else:
            ty = ListType(ty, None if m.group(1) is None else int(m.group(1)))
        pos = m.end()
    return ty


def _type_text(ty: Type, annotation: Annotation | None) -> str:
    text = str(ty)
    if annotation is None:
        return text
    # The annotation attaches to the base name: `Tensor(a!)[]`, not `Tensor[](a!)`.
    base = text.split("[", 1)[0].split("?", 1)[0]
    return f"{base}({annotation}){text[len(base) :]}"


@dataclass(frozen=True)
class Annotation:
    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...]

    @staticmethod
    def parse(text: str) -> Annotation:
        before, arrow, after = text.partition(" -> ")
        is_write = before.endswith("!")
        sets = [before[:-1] if is_write else before]
        if arrow:
            sets.append(after)
        parsed: list[tuple[str, ...]] = []
        for s in sets:
            names = tuple(s.split("|"))
            if not all(_ALIAS.fullmatch(n) for n in names):
                raise SchemaError(
                    f"malformed alias annotation '({text})'; expected e.g. "
                    "'(a)', '(a!)', '(a|b)' or '(a -> *)'"
                )
            parsed.append(names)
        return Annotation(parsed[0], is_write, parsed[1] if arrow else ())

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            text += " -> " + "|".join(self.alias_set_after)
        return text


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    default: str | None
    annotation: Annotation | None

    @staticmethod
    def parse(text: str) -> Argument:
        m = _TYPED.fullmatch(text)
        if m is None or m.group("name") is None:
            raise SchemaError(
                f"cannot parse argument '{text}'; expected 'Type name' or 'Type name=default'"
            )
        default = m.group("default")
        if default is not None and not default.strip():
            raise SchemaError(f"argument '{text}' has an empty default")
        ann = m.group("ann")
        return Argument(
            name=m.group("name"),
            type=_parse_type(m.group("base"), m.group("suffix")),
            default=default,
            annotation=None if ann is None else Annotation.parse(ann),
        )

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def __str__(self) -> str:
        text = f"{_type_text(self.type, self.annotation)} {self.name}"
        return text if self.default is None else f"{text}={self.default}"


@dataclass(frozen=True)
class Return:
    name: str | None
    type: Type
    annotation: Annotation | None

    @staticmethod
    def parse(text: str) -> Return:
        m = _TYPED.fullmatch(text)
        if m is None or m.group("default") is not None:
            raise SchemaError(f"cannot parse return '{text}'; expected 'Type' or 'Type name'")
        ann = m.group("ann")
        return Return(
            name=m.group("name"),
            type=_parse_type(m.group("base"), m.group("suffix")),
            annotation=None if ann is None else Annotation.parse(ann),
        )

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def __str__(self) -> str:
        text = _type_text(self.type, self.annotation)
        return text if self.name is None else f"{text} {self.name}"


@dataclass(frozen=True)
class Arguments:
    positional: tuple[Argument, ...]
    kwarg_only: tuple[Argument, ...]
    out: tuple[Argument, ...]

    @property
    def flat_non_out(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only

    @property
    def flat_all(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only + self.out

    @staticmethod
    def parse(text: str) -> Arguments:
        positional: list[Argument] = []
        keyword: list[Argument] = []
        star_seen = False
        for item in split_commas(text):
            if item == "*":
                if star_seen:
                    raise SchemaError("'*' appears more than once")
                star_seen = True
                continue
            (keyword if star_seen else positional).append(Argument.parse(item))
        if star_seen and not keyword:
            raise SchemaError("'*' must be followed by keyword-only arguments")
        seen: set[str] = set()
        for a in positional + keyword:
            if a.name in seen:
                raise SchemaError(f"duplicate argument name '{a.name}'")
            seen.add(a.name)
        # PyTorch's convention: out arguments are the trailing written-to
        # keyword-only arguments. Keeping them last lets str() round-trip.
        n_out = len(keyword)
        while n_out > 0 and keyword[n_out - 1].is_write:
            n_out -= 1
        stray = [a.name for a in keyword[:n_out] if a.is_write]
        if stray:
            raise SchemaError(
                f"out argument '{stray[0]}' must come after all other keyword-only arguments"
            )
        return Arguments(tuple(positional), tuple(keyword[:n_out]), tuple(keyword[n_out:]))

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            parts.append("*")
            parts.extend(str(a) for a in self.kwarg_only + self.out)
        return ", ".join(parts)


# `__iand__` and friends are in-place by meaning even though they do not end in `_`.
_AUGMENTED_DUNDERS = frozenset(
    f"__i{op}__"
    for op in ("add", "sub", "mul", "div", "mod", "pow", "matmul", "floordiv",
               "truediv", "lshift", "rshift", "and", "or", "xor")
)  # fmt: skip


@dataclass(frozen=True)
class OperatorName:
    name: str
    overload_name: str

    @staticmethod
    def parse(text: str) -> OperatorName:
        name, dot, overload = text.partition(".")
        if not _IDENT.fullmatch(name) or (dot and not _IDENT.fullmatch(overload)):
            raise SchemaError(
                f"malformed operator name '{text}'; expected 'name' or 'name.overload'"
            )
        return OperatorName(name, overload)

    @property
    def is_dunder(self) -> bool:
        return len(self.name) > 4 and self.name.startswith("__") and self.name.endswith("__")

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and not self.is_dunder

    def __str__(self) -> str:
        return f"{self.name}.{self.overload_name}" if self.overload_name else self.name


SchemaKind = Literal["functional", "inplace", "out", "mutable"]


@dataclass(frozen=True)
class FunctionSchema:
    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...]

    @staticmethod
    def parse(text: str) -> FunctionSchema:
        try:
            return FunctionSchema._parse(text)
        except SchemaError as e:
            raise SchemaError(f"{e} (in schema '{text}')") from None

    @staticmethod
    def _parse(text: str) -> FunctionSchema:
        open_at = text.find("(")
        if open_at < 0:
            raise SchemaError("missing '(' before the argument list")
        close_at = _matching_close(text, open_at)
        rest = text[close_at + 1 :]
        if not rest.startswith(" -> "):
            raise SchemaError("expected ' -> ' and return types after the argument list")
        rets = rest[len(" -> ") :]
        if not rets:
            raise SchemaError("missing return type after ' -> '; use '()' for none")
        if rets.startswith("(") and _matching_close(rets, 0) == len(rets) - 1:
            rets = rets[1:-1]
        elif rets.startswith("("):
            raise SchemaError(f"unexpected text after the return tuple in '{rets}'")
        returns = tuple(Return.parse(r) for r in split_commas(rets))
        names = [r.name for r in returns if r.name is not None]
        if len(names) != len(set(names)):
            raise SchemaError("duplicate return names")
        return FunctionSchema(
            OperatorName.parse(text[:open_at]),
            Arguments.parse(text[open_at + 1 : close_at]),
            returns,
        )

    def is_out_fn(self) -> bool:
        return bool(self.arguments.out)

    def kind(self) -> SchemaKind:
        if self.name.is_inplace or self.name.name in _AUGMENTED_DUNDERS:
            return "inplace"
        if self.is_out_fn():
            return "out"
        if any(a.is_write for a in self.arguments.flat_all):
            return "mutable"
        return "functional"

    def __str__(self) -> str:
        if len(self.returns) == 1:
            rets = str(self.returns[0])
        else:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.name}({self.arguments}) -> {rets}"


_CLOSERS = {"(": ")", "[": "]"}


def _scan(text: str) -> list[tuple[int, str, int]]:
    """(index, char, depth before char) for every bracket and comma outside quotes."""
    events: list[tuple[int, str, int]] = []
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for i, c in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in _CLOSERS:
            events.append((i, c, len(stack)))
            stack.append(_CLOSERS[c])
        elif c in ")]":
            if not stack or stack[-1] != c:
                raise SchemaError(f"unbalanced '{c}' at column {i + 1}")
            stack.pop()
            events.append((i, c, len(stack)))
        elif c == ",":
            events.append((i, c, len(stack)))
    if quote is not None:
        raise SchemaError(f"unterminated {quote} string")
    if stack:
        raise SchemaError(f"unbalanced brackets: missing '{stack[-1]}'")
    return events


def _matching_close(text: str, open_at: int) -> int:
    for i, c, depth in _scan(text):
        if i > open_at and c == ")" and depth == 0:
            return i
    raise SchemaError(f"no ')' matches the '(' at column {open_at + 1}")  # pragma: no cover


def split_commas(text: str) -> list[str]:
    """Split on top-level commas; '' means an empty list."""
    if not text:
        return []
    cuts = [i for i, c, depth in _scan(text) if c == "," and depth == 0]
    parts = [text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)], strict=True)]
    items = [p.strip() for p in parts]
    if any(not p for p in items):
        raise SchemaError(f"empty item in list '{text}'")
    return items
