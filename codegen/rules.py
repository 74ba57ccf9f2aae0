"""The `shape:` and `dtype:` rule languages that yield an op's Meta (fake) kernel.

Shape rules (README.md, "Entry fields", says the same for users):
  like(x)                 output has x's sizes
  broadcast(a, b, ...)    broadcast of the inputs' sizes
  same(a, b, ...)         the inputs must all have one shape (checked), which the output takes
  reduce(x, dim, keepdim) x's sizes with the `int[]? dim` reduced (all when None/empty)
  sizes(e0, e1, ...)      explicit sizes: +, -, *, // over int literals, int/SymInt arguments,
                          list elements (`stride[0]`) and tensor sizes (`x.size(2)`, `x.dim()`),
                          e.g. the conv output size `(x.size(2) + 2 * padding[0] - 1) // stride[0] + 1`
  (an op whose outputs need C++ is structured: its meta function owns the shapes and checks)
Dtype rules:
  like(x)                 output dtype is x's (the default: the first Tensor argument)
  promote(a, b, ...)      torch type promotion of the inputs; inputs are converted first
"""

from __future__ import annotations

import ast
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
class Same:
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"same({', '.join(self.args)})"


@dataclass(frozen=True)
class Reduce:
    arg: str
    dim: str
    keepdim: str

    def __str__(self) -> str:
        return f"reduce({self.arg}, {self.dim}, {self.keepdim})"


@dataclass(frozen=True)
class Promote:
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"promote({', '.join(self.args)})"


@dataclass(frozen=True)
class Sizes:
    exprs: tuple[str, ...]
    names: tuple[str, ...]  # argument names the expressions use

    def __str__(self) -> str:
        return f"sizes({', '.join(self.exprs)})"


ShapeRule = Like | Broadcast | Same | Reduce | Sizes
DtypeRule = Like | Promote

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\((.*)\))?\s*$")
_SHAPE_ARITY = {"like": (1, 1), "broadcast": (2, None), "same": (2, None), "reduce": (3, 3)}
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


def _parse_sizes(text: str) -> Sizes:
    try:
        call = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise RuleError(f"cannot parse '{text}': {e.msg}") from None
    assert isinstance(call, ast.Call)
    if not call.args or call.keywords:
        raise RuleError("sizes(...) takes one expression per output dimension")
    names: set[str] = set()
    for expr in call.args:
        _check_size_expr(expr, names)
    return Sizes(tuple(ast.unparse(e) for e in call.args), tuple(sorted(names)))


def _check_size_expr(e: ast.expr, names: set[str]) -> None:
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return
    if isinstance(e, ast.Name):
        names.add(e.id)
        return
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
        if not (
            isinstance(e.slice, ast.Constant)
            and isinstance(e.slice.value, int)
            and e.slice.value >= 0
        ):
            raise RuleError(f"'{ast.unparse(e)}': list elements take a constant index >= 0")
        names.add(e.value.id)
        return
    if (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Attribute)
        and isinstance(e.func.value, ast.Name)
    ):
        method, arity = e.func.attr, len(e.args)
        if (method, arity) in (("size", 1), ("dim", 0)) and not e.keywords:
            names.add(e.func.value.id)
            for a in e.args:
                _check_size_expr(a, names)
            return
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv):
        _check_size_expr(e.left, names)
        _check_size_expr(e.right, names)
        return
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        _check_size_expr(e.operand, names)
        return
    raise RuleError(
        f"'{ast.unparse(e)}' is not a size expression; use + - * // over ints, int arguments, "
        "list[i], x.size(i) and x.dim()"
    )


def size_expr_cpp(text: str, tensors: set[str]) -> str:
    """A checked sizes() expression as C++ over c10::SymInt (`//` is division of non-negative sizes)."""
    return _cpp(ast.parse(text, mode="eval").body, tensors)


def _cpp(e: ast.expr, tensors: set[str]) -> str:
    if isinstance(e, ast.Constant):
        return f"c10::SymInt({e.value!r})"
    if isinstance(e, ast.Name):
        return f"c10::SymInt({e.id})"
    if isinstance(e, ast.Subscript):
        # .at(): a list shorter than the rule expects is an error, not an out-of-bounds read.
        return f"c10::SymInt({ast.unparse(e.value)}.at({ast.unparse(e.slice)}))"
    if isinstance(e, ast.Call):
        assert isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name)
        owner = e.func.value.id
        if e.func.attr == "dim":
            return f"c10::SymInt({owner}.dim())"
        index = ast.unparse(e.args[0])
        return f"{owner}.sym_size({index})"
    if isinstance(e, ast.BinOp):
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}[type(e.op)]
        return f"({_cpp(e.left, tensors)} {op} {_cpp(e.right, tensors)})"
    if isinstance(e, ast.UnaryOp):
        return f"(-{_cpp(e.operand, tensors)})"
    raise AssertionError(ast.dump(e))


def parse_shape(text: str) -> ShapeRule:
    if text.strip().startswith("sizes("):
        return _parse_sizes(text)
    name, args = _split_call(text, _SHAPE_ARITY)
    if name not in _SHAPE_ARITY:
        raise RuleError(
            f"'{text.strip()}' is not one; expected like(x), broadcast(a, b, ...), "
            "same(a, b, ...), reduce(x, dim, keepdim) or sizes(...); an op whose outputs need "
            "C++ is declared 'structured: {meta: ...}'"
        )
    if name == "like":
        return Like(args[0])
    if name == "broadcast":
        return Broadcast(args)
    if name == "same":
        return Same(args)
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
    if isinstance(rule, Broadcast | Promote | Same):
        return rule.args
    if isinstance(rule, Reduce):
        return (rule.arg, rule.dim, rule.keepdim)
    if isinstance(rule, Sizes):
        return rule.names
    return ()
