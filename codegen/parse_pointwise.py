"""The `pointwise:` field group of an entry: functor, loss reduction, if_none, and what a
pointwise entry implies."""

from __future__ import annotations

import re
from typing import Any

from codegen import rules
from codegen.diagnostics import did_you_mean
from codegen.model import (
    BaseTy,
    BaseType,
    FunctionSchema,
    SchemaError,
    split_commas,
)
from codegen.opdecl import (
    LOSS_REDUCTIONS,
    Functor,
    LossReduction,
    Pointwise,
)
from codegen.parse_base import FieldParser


class PointwiseFields(FieldParser):
    def _pointwise(self, schema: FunctionSchema, family: str) -> Pointwise | None:
        text = self.string("pointwise")
        if text is None:
            return None
        condition, sep, choices = text.partition(" ? ")
        first_text, colon, second_text = choices.partition(" : ")
        if sep and not colon:
            self.err("pointwise", f"pointwise '{text}' has '?' but no ' : ' alternative")
            return None
        functors = [self._functor(t, text) for t in ((first_text, second_text) if sep else (text,))]
        if any(f is None for f in functors):
            return None
        tensors = [a for a in schema.arguments.flat_non_out if a.type.is_tensor_like()]
        plain = BaseType(BaseTy.Tensor)
        if_none = self._if_none(tensors)
        if (
            not tensors
            or tensors[0].type != plain
            or any(a.type != plain and a.name not in if_none for a in tensors)
            or schema.arguments.out
            or schema.name.is_inplace
            or len(schema.returns) != 1
            or schema.returns[0].type != plain
        ):
            self.err(
                "pointwise",
                "a pointwise op is functional, takes one or more plain Tensor arguments "
                "(a first one, then Tensor? ones given a value by 'if_none') and returns one Tensor",
                "declare in-place and out= overloads with 'variants: [inplace, out]'",
            )
            return None
        for f in functors:
            assert f is not None
            for a in f.args:
                if a in {t.name for t in tensors}:
                    self.err(
                        "pointwise",
                        f"functor argument '{a}' is a tensor; the functor is applied to the tensor "
                        "arguments element by element, its own arguments are the scalar ones",
                    )
        first, *other = functors
        assert first is not None
        return Pointwise(
            first,
            f"opforge/{family}/math.h",
            condition.strip() if sep else None,
            other[0] if other else None,
            self._reduction(schema),
            tuple(if_none.items()),
        )

    def _if_none(self, tensors: list[Any]) -> dict[str, str]:
        """`if_none: {weight: 1}`: the constant each absent Tensor? input reads as."""
        raw = self.e.get("if_none")
        if raw is None:
            return {}
        optional = {a.name for a in tensors if a.type.is_nullable()}
        if not isinstance(raw, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw.values()
        ):
            self.err("if_none", "'if_none' maps Tensor? arguments to numbers, e.g. {weight: 1}")
            return {}
        for name in raw:
            if name not in optional:
                self.err(
                    "if_none",
                    f"'{name}' is not a Tensor? argument",
                    did_you_mean(str(name), optional),
                )
        return {str(k): repr(float(v)) for k, v in raw.items()}

    def _reduction(self, schema: FunctionSchema) -> LossReduction | None:
        """`reduction: reduction`, or `{arg: reduction, grad: grad_output, modes: [...]}`."""
        raw = self.e.get("reduction")
        if raw is None:
            return None
        spec = {"arg": raw} if isinstance(raw, str) else raw
        args = {a.name: a for a in schema.arguments.flat_non_out}
        if not isinstance(spec, dict) or set(spec) - {"arg", "grad", "modes"} or "arg" not in spec:
            self.err(
                "reduction",
                "'reduction' names the op's str reduction argument, or is "
                "{arg: reduction, grad: grad_output, modes: [none, mean, sum]}",
            )
            return None
        arg, grad = spec["arg"], spec.get("grad")
        modes = spec.get("modes", list(LOSS_REDUCTIONS))
        if arg not in args or args[arg].type != BaseType(BaseTy.str):
            self.err("reduction", f"'{arg}' is not a str argument of the op")
            return None
        if grad is not None and (grad not in args or args[grad].type != BaseType(BaseTy.Tensor)):
            self.err("reduction", f"'{grad}' (the incoming gradient) is not a Tensor argument")
            return None
        known = (*LOSS_REDUCTIONS, "batchmean")
        if not isinstance(modes, list) or not modes or any(m not in known for m in modes):
            self.err("reduction", f"'modes' must list reductions among {', '.join(known)}")
            return None
        return LossReduction(arg, grad, tuple(modes))

    def _functor(self, text: str, whole: str) -> Functor | None:
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", text, re.DOTALL)
        if m is None:
            self.err(
                "pointwise",
                f"pointwise '{whole}' is not a functor call",
                "e.g. pointwise: leaky_relu_fn(negative_slope), a struct in opforge::math",
            )
            return None
        try:
            return Functor(m.group(1), tuple(split_commas(m.group(2).strip())))
        except SchemaError as e:
            self.err("pointwise", f"bad functor arguments in '{whole}': {e}")
            return None

    def _pointwise_implied(
        self,
        schema: FunctionSchema,
        dispatch: tuple[tuple[str, str], ...],
        shape: rules.ShapeRule | None,
        tags: tuple[str, ...],
    ) -> tuple[tuple[tuple[str, str], ...], rules.ShapeRule, tuple[str, ...]]:
        """A pointwise op's generated kernels, broadcast shape and tag."""
        if dispatch:
            self.err(
                "dispatch",
                "a pointwise op's kernels are generated from its functor; drop 'dispatch'",
            )
        if shape is not None:
            self.err(
                "shape",
                "a pointwise op's output has the inputs' broadcast shape and memory format; drop 'shape'",
            )
        # A Tensor? input (`if_none`) broadcasts like the others but may be absent.
        tensors = tuple(
            a.name for a in schema.arguments.flat_non_out if a.type == BaseType(BaseTy.Tensor)
        )
        cpp_id = str(schema.name).replace(".", "_")
        kernels = (("CPU", f"{cpp_id}_cpu<scalar_t>"), ("CUDA", f"{cpp_id}_cuda<scalar_t>"))
        rule: rules.ShapeRule = (
            rules.Like(tensors[0]) if len(tensors) == 1 else rules.Broadcast(tensors)
        )
        return kernels, rule, tuple(sorted({*tags, "pointwise"}))
