"""The fields that tell PyTorch's transforms and exporters how to treat an op: `autocast:`,
`batch:` (vmap batching and DTensor sharding), `sharding:` and `onnx:`."""

from __future__ import annotations

from typing import Any

from codegen.model import BaseTy, BaseType
from codegen.opdecl import AUTOCAST_POLICIES, BATCH_KINDS, SHARDING_RULES, BatchRule
from codegen.parse_base import DOTTED, FieldParser


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
