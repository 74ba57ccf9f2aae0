"""The fields that tell PyTorch's transforms and exporters how to treat an op: `autocast:`,
`batch:` (vmap batching and DTensor sharding), `sharding:` and `onnx:`; and `python:`, the
Python API's conveniences."""

from __future__ import annotations

from typing import Any

from codegen import formulas
from codegen.diagnostics import Location
from codegen.model import BaseTy, BaseType, FunctionSchema, ListType
from codegen.opdecl import (
    AUTOCAST_POLICIES,
    BATCH_KINDS,
    SHARDING_RULES,
    BatchRule,
    Derivative,
    PythonArgs,
    output_names,
)
from codegen.parse_base import DOTTED, FieldParser, _is_tensor_list


class EcosystemFields(FieldParser):
    def _autocast(self, args: dict[str, Any]) -> str | None:
        policy = self.string("autocast")
        if policy is None:
            return None
        if policy not in AUTOCAST_POLICIES:
            self.err(
                "autocast",
                f"unknown autocast policy '{policy}'",
                f"one of {', '.join(AUTOCAST_POLICIES)} (torch.autocast's categories: "
                "lower precision, float32, the widest input dtype)",
            )
            return None
        if not any(a.type.is_tensor_like() for a in args.values()):
            self.err("autocast", "an autocast policy casts tensor arguments, and the op has none")
            return None
        return policy

    def _batch(self, args: dict[str, Any]) -> BatchRule | None:
        """`batch: {leading: input}`: `input` is (N, ...) and sample n of every output depends
        on sample n of `input` alone (the other tensors are shared); `unbatched: R` adds
        that an input of rank R is one sample. `batch: {any_leading: input}`: `input` is
        (*, ...) with any number of such leading dimensions (linear, layer_norm).
        `batch: {all_but: dim}`: independent along every dimension but the int argument
        `dim` (softmax)."""
        raw = self.e.get("batch")
        if raw is None:
            return None
        usage = "e.g. batch: {leading: input, unbatched: 3}, {any_leading: input}, {all_but: dim}"
        kinds = [k for k in raw if k in BATCH_KINDS] if isinstance(raw, dict) else []
        extra = set(raw) - {*BATCH_KINDS, "unbatched"} if isinstance(raw, dict) else set()
        if len(kinds) != 1 or extra:
            self.err("batch", "'batch' must map one of " + ", ".join(BATCH_KINDS), usage)
            return None
        kind = kinds[0]
        name = raw[kind]
        arg = args.get(name) if isinstance(name, str) else None
        want = BaseType(BaseTy.int) if kind == "all_but" else BaseType(BaseTy.Tensor)
        if arg is None or arg.type != want:
            self.err(
                "batch",
                f"'{kind}: {name}': not a{'n' if kind == 'all_but' else ''} "
                f"{want} argument of the op",
                usage,
            )
            return None
        unbatched = raw.get("unbatched")
        if unbatched is not None and (kind != "leading" or not isinstance(unbatched, int)):
            self.err("batch", "'unbatched' is the rank of one sample, with 'leading'", usage)
            return None
        return BatchRule(kind=kind, arg=name, unbatched=unbatched)

    def _python(self, args: dict[str, Any]) -> PythonArgs | None:
        """`python: {number: other, dtype: self, none_size: {output_size: self}}`
        (PythonArgs)."""
        raw = self.e.get("python")
        if raw is None:
            return None
        usage = "e.g. python: {number: other}, {dtype: self}, {none_size: {output_size: self}}"
        if not isinstance(raw, dict) or not raw or set(raw) - {"number", "dtype", "none_size"}:
            self.err("python", "'python' maps number, dtype or none_size", usage)
            return None
        tensor = BaseType(BaseTy.Tensor)

        def tensor_arg(key: str, name: Any) -> str | None:
            if not isinstance(name, str) or getattr(args.get(name), "type", None) != tensor:
                self.err("python", f"'{key}: {name}': not a Tensor argument of the op", usage)
                return None
            return name

        number = tensor_arg("number", raw["number"]) if "number" in raw else None
        dtype = tensor_arg("dtype", raw["dtype"]) if "dtype" in raw else None
        if dtype is not None and "dtype" in args:
            self.err("python", "'dtype: ...' adds a `dtype` argument, and the op has one")
        none_size = None
        if "none_size" in raw:
            pair = raw["none_size"]
            size, like = (
                next(iter(pair.items())) if isinstance(pair, dict) and len(pair) == 1 else ("", "")
            )
            t = getattr(args.get(str(size)), "type", None)
            if not isinstance(t, ListType) or str(t.elem) not in ("int", "SymInt"):
                self.err(
                    "python", f"'none_size: {pair}': the key must be an int list argument", usage
                )
            elif (checked := tensor_arg("none_size", like)) is not None:
                none_size = (str(size), checked)
        return PythonArgs(number=number, dtype=dtype, none_size=none_size)

    def _sharding(self) -> str | None:
        rule = self.string("sharding")
        if rule is not None and rule not in SHARDING_RULES:
            self.err(
                "sharding",
                f"unknown sharding rule '{rule}'",
                f"one of {', '.join(SHARDING_RULES)} (pointwise ops and `batch:` ops need none)",
            )
            return None
        return rule

    def _dotted(self, key: str, example: str) -> str | None:
        value = self.string(key)
        if value is not None and not DOTTED.fullmatch(value):
            self.err(key, f"{key} '{value}' is not a dotted Python name", f"e.g. {key}: {example}")
            return None
        return value

    def _jvp(
        self, schema: FunctionSchema, derivatives: tuple[Derivative, ...]
    ) -> tuple[Derivative, ...]:
        """`jvp:` (Note [Forward-mode AD] in codegen/dest/autograd.py): `result: formula` per
        output (`result0, result1: f(...)` for a tuple), in the op's arguments, `result`s and
        tangents `<arg>_t`; or `auto_element_wise` (an elementwise op: its `self` derivative
        with the tangent for `grad`) or `auto_linear` (the op applied to the tangents)."""
        raw = self.e.get("jvp")
        if raw is None:
            return ()
        loc = self.loc("jvp")
        outputs = output_names(schema)
        results = ["result"] if len(outputs) == 1 else [f"result{i}" for i in range(len(outputs))]
        tensors = [a for a in schema.arguments.flat_all if a.type.is_tensor_like()]
        if any(_is_tensor_list(a.type) for a in tensors):
            self.err(
                "jvp", "forward-mode formulas for ops with Tensor[] arguments are not supported"
            )
            return ()
        if raw == "auto_element_wise":
            own = [d for d in derivatives if d.inputs == ("self",)]
            if len(results) != 1 or not own:
                self.err("jvp", "auto_element_wise needs one output and a `self:` derivative")
                return ()
            formula = "".join(
                "self_t" if tok == "grad" else tok for tok in _split_tokens(own[0].formula)
            )
            return (Derivative(("result",), formula, loc),)
        if raw == "auto_linear":
            if len(results) != 1:
                self.err("jvp", "auto_linear needs one output")
                return ()
            tensor_names = {a.name for a in tensors}
            args = ", ".join(
                f"{a.name}_t" if a.name in tensor_names else a.name
                for a in schema.arguments.flat_non_out
            )
            return (Derivative(("result",), f"{schema.name.name}({args})", loc),)
        if not isinstance(raw, dict):
            self.err(
                "jvp",
                "'jvp' must be auto_element_wise, auto_linear or map outputs to formulas",
                "e.g. jvp: {result: result * (self_t - (result * self_t).sum(dim, true))}",
            )
            return ()
        lines = getattr(raw, "key_lines", {})
        out = []
        for names_, formula in raw.items():
            at = Location(self.path, lines.get(names_, loc.line))
            names = tuple(n.strip() for n in str(names_).split(","))
            unknown = [n for n in names if n not in results]
            if unknown or not isinstance(formula, str):
                self.diags.error(
                    at,
                    f"jvp given for '{names_}': not a formula for the outputs",
                    f"outputs: {', '.join(results)}",
                )
                continue
            out.append(Derivative(names, formula.strip(), at))
        return tuple(out)


def _split_tokens(formula: str) -> list[str]:
    """The formula cut at identifiers (which formulas.tokens recognises), kept whole."""
    pieces, last = [], 0
    for m in formulas.TOKEN.finditer(formula):
        pieces += [formula[last : m.start(1)], m.group(1)]
        last = m.end(1)
    return [*pieces, formula[last:]]
