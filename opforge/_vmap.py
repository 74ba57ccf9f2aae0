"""Batching rules for torch.func.vmap, registered on import from the op table.

Note [Batching rules]: a pointwise op (`pointwise:` in its YAML entry, without a loss
reduction) applies elementwise with broadcasting, so vmap runs it once on the whole batch:
each batched tensor's batch dimension moves to the front, and gets size-1 dimensions
after it up to the highest logical rank among the arguments, so that broadcasting against
unbatched arguments lines up their logical dimensions. The result is batched along
dimension 0. Other ops go through functorch's per-sample fallback (correct, slower; it
warns once per op).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def _pointwise_rule(op: Callable[..., Any]) -> Callable[..., Any]:
    def rule(info: Any, in_dims: Sequence[int | None], *args: Any, **kwargs: Any) -> Any:
        batched = [
            (i, a.movedim(d, 0))
            for i, (a, d) in enumerate(zip(args, in_dims, strict=True))
            if d is not None
        ]
        if not batched:
            return op(*args, **kwargs), None
        logical = {i: t.dim() - 1 for i, t in batched}
        rank = max(
            [*logical.values()]
            + [
                t.dim()
                for i, t in enumerate(args)
                if isinstance(t, torch.Tensor) and i not in logical
            ]
        )
        new_args = list(args)
        for i, t in batched:
            new_args[i] = t.reshape(t.shape[0], *([1] * (rank - logical[i])), *t.shape[1:])
        return op(*new_args, **kwargs), 0

    return rule


def register(op_table: Sequence[dict[str, Any]]) -> int:
    """Registers the rules of the table's ops marked `batching: pointwise`; returns how many."""
    count = 0
    for row in op_table:
        if row.get("batching") == "pointwise":
            name = f"opforge::{row['qualified']}"
            packet = getattr(torch.ops.opforge, row["qualified"].split(".")[0])
            overload = row["qualified"].split(".")[1] if "." in row["qualified"] else "default"
            torch.library.register_vmap(name, _pointwise_rule(getattr(packet, overload)))
            count += 1
    return count
