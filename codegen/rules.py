"""The `shape:` and `dtype:` rule languages that yield an op's Meta (fake) kernel.

Shape rules (see Note [Shape rules] in README's add-an-op section):
  like(x)                 output has x's sizes
  broadcast(a, b, ...)    broadcast of the inputs' sizes
  reduce(x, dim, keepdim) x's sizes with the `int[]? dim` reduced (all when None/empty)
  <identifier>            a hand-written C++ meta function in kernels/meta/ with the kernel signature
Dtype rules:
  like(x)                 output dtype is x's (the default: the first Tensor argument)
  promote(a, b, ...)      torch type promotion of the inputs; inputs are converted first
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Like:
    arg: str

    def __str__(self) -> str:
        return f"like({self.arg})"


@dataclass(frozen=True)
class Broadcast:
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"broadcast({', '.join(self.args)})"


@dataclass(frozen=True)
class Reduce:
    arg: str
    dim: str
    keepdim: str

    def __str__(self) -> str:
        return f"reduce({self.arg}, {self.dim}, {self.keepdim})"


@dataclass(frozen=True)
class MetaFunction:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Promote:
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"promote({', '.join(self.args)})"


ShapeRule = Like | Broadcast | Reduce | MetaFunction
DtypeRule = Like | Promote

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\((.*)\))?\s*$")
_SHAPE_ARITY = {"like": (1, 1), "broadcast": (2, None), "reduce": (3, 3)}
_DTYPE_ARITY = {"like": (1, 1), "promote": (2, None)}


class RuleError(ValueError):
    pass


def _split_call(text: str, arity: dict[str, tuple[int, int | None]]) -> tuple[str, tuple[str, ...]]:
    m = _CALL.match(text)
    if m is None:
        raise RuleError(f"cannot parse rule '{text}'; expected name(arg, ...)")
    name, inner = m.group(1), m.group(2)
    if inner is None:
        return name, ()
    args = tuple(a.strip() for a in inner.split(",")) if inner.strip() else ()
    if name not in arity:
        raise RuleError(f"unknown rule '{name}(...)'; known: {', '.join(sorted(arity))}")
    lo, hi = arity[name]
    if len(args) < lo or (hi is not None and len(args) > hi):
        want = f"{lo}" if lo == hi else f"at least {lo}"
        raise RuleError(f"rule '{name}' takes {want} argument(s), got {len(args)}")
    for a in args:
        if not re.fullmatch(r"[A-Za-z_]\w*", a):
            raise RuleError(f"rule argument '{a}' is not an argument name")
    return name, args


def parse_shape(text: str) -> ShapeRule:
    name, args = _split_call(text, _SHAPE_ARITY)
    if not args and name not in _SHAPE_ARITY:
        return MetaFunction(name)
    if name == "like":
        return Like(args[0])
    if name == "broadcast":
        return Broadcast(args)
    if name == "reduce":
        return Reduce(*args)
    raise RuleError(f"'{name}' needs arguments, e.g. {name}(self)")


def parse_dtype(text: str) -> DtypeRule:
    name, args = _split_call(text, _DTYPE_ARITY)
    if name == "like" and args:
        return Like(args[0])
    if name == "promote" and args:
        return Promote(args)
    raise RuleError(f"unknown dtype rule '{text}'; expected like(x) or promote(a, b, ...)")


def rule_args(rule: ShapeRule | DtypeRule) -> tuple[str, ...]:
    """Argument names a rule refers to (validated against the schema)."""
    if isinstance(rule, Like):
        return (rule.arg,)
    if isinstance(rule, Broadcast | Promote):
        return rule.args
    if isinstance(rule, Reduce):
        return (rule.arg, rule.dim, rule.keepdim)
    return ()
