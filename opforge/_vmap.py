"""Batching rules for torch.func.vmap, registered on import from the op table.

Note [Batching rules]: the op table's `batching` field (the YAML `batch:` rule, or
`pointwise` for a pointwise op) says how an op's work splits over samples, so vmap can run
it once on the whole batch instead of functorch's per-sample fallback:
- pointwise: each batched tensor's batch dimension moves to the front and gets size-1
  dimensions after it up to the highest logical rank among the arguments, so that
  broadcasting against unbatched arguments lines up their logical dimensions.
- leading (input is (N, ...)): the vmap dimension is folded into N, B x N samples in one
  call, and the outputs' dimension 0 is split again. Where one sample of rank `unbatched`
  is accepted (conv2d's (C, H, W)), a logical input of that rank takes the vmap dimension
  as its N.
- any_leading (input is (*, ...)): the vmap dimension becomes one more leading dimension.
- all_but (softmax over `dim`; its backward): every tensor's vmap dimension goes to the
  front (an unbatched one is expanded), `dim` shifts past it.
A call the rule does not cover (leading/any_leading with a batched weight: per-sample
weights) runs sample by sample here, as functorch's fallback would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._pytree import tree_map

from opforge._op_table import overload

Rule = Callable[..., tuple[Any, Any]]


def _batched(d: Any) -> bool:
    """Whether an in_dims entry batches its argument (non-tensor arguments get None, or a
    list of None for an int list)."""
    return isinstance(d, int)


def _out_dims(out: Any) -> Any:
    return tuple(0 for _ in out) if isinstance(out, tuple) else 0


def _per_sample(
    op: Callable[..., Any],
    in_dims: Sequence[int | None],
    args: Sequence[Any],
    kwargs: dict[str, Any],
) -> tuple[Any, Any]:
    size = next(a.shape[d] for a, d in zip(args, in_dims, strict=True) if _batched(d))
    results = [
        op(
            *[a.select(d, k) if _batched(d) else a for a, d in zip(args, in_dims, strict=True)],
            **kwargs,
        )
        for k in range(size)
    ]
    if isinstance(results[0], tuple):
        return tuple(torch.stack(r) for r in zip(*results, strict=True)), _out_dims(results[0])
    return torch.stack(results), 0


def _pointwise_rule(op: Callable[..., Any]) -> Rule:
    def rule(info: Any, in_dims: Sequence[int | None], *args: Any, **kwargs: Any) -> Any:
        batched = [
            (i, a.movedim(d, 0))
            for i, (a, d) in enumerate(zip(args, in_dims, strict=True))
            if _batched(d)
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


def _leading_rule(op: Callable[..., Any], index: int, fold: Callable[[int], bool]) -> Rule:
    """`fold(logical rank)`: whether the vmap dimension folds into dimension 0 (else it
    becomes the op's own leading dimension)."""

    def rule(info: Any, in_dims: Sequence[int | None], *args: Any, **kwargs: Any) -> Any:
        if any(_batched(d) for i, d in enumerate(in_dims) if i != index):
            return _per_sample(op, in_dims, args, kwargs)
        d = in_dims[index]
        if not _batched(d):
            out = op(*args, **kwargs)
            return out, tree_map(lambda _: None, out)
        x = args[index].movedim(d, 0)
        new_args = list(args)
        if not fold(x.dim() - 1):
            new_args[index] = x
            out = op(*new_args, **kwargs)
            return out, _out_dims(out)
        b, n = x.shape[0], x.shape[1]
        new_args[index] = x.flatten(0, 1)
        out = op(*new_args, **kwargs)
        return tree_map(lambda t: t.unflatten(0, (b, n)), out), _out_dims(out)

    return rule


def _all_but_rule(op: Callable[..., Any], dim_index: int, dim_name: str) -> Rule:
    """Every tensor argument is batched alike (softmax's input; softmax_backward's gradient
    and output): batched ones move their vmap dimension to the front, unbatched ones are
    expanded to the batch size, and `dim` shifts past it."""

    def rule(info: Any, in_dims: Sequence[int | None], *args: Any, **kwargs: Any) -> Any:
        new_args, new_kwargs = list(args), dict(kwargs)
        for i, (a, d) in enumerate(zip(args, in_dims, strict=True)):
            if isinstance(a, torch.Tensor):
                new_args[i] = (
                    a.movedim(d, 0) if _batched(d) else a.expand(info.batch_size, *a.shape)
                )
        scalar = new_args[0].dim() == 1  # 0-d samples: their one dimension is a size-1 one here
        if scalar:
            new_args = [a.unsqueeze(1) if isinstance(a, torch.Tensor) else a for a in new_args]
        if dim_name in new_kwargs:
            dim = new_kwargs[dim_name]
            new_kwargs[dim_name] = dim + 1 if dim >= 0 else dim
        else:
            dim = new_args[dim_index]
            new_args[dim_index] = dim + 1 if dim >= 0 else dim
        out = op(*new_args, **new_kwargs)
        if scalar:
            out = tree_map(lambda t: t.squeeze(1), out)
        return out, _out_dims(out)

    return rule


def _rule(op: Any, batching: dict[str, Any]) -> Rule:
    names = [a.name for a in op._schema.arguments]
    kind = batching["kind"]
    if kind == "pointwise":
        return _pointwise_rule(op)
    if kind == "all_but":
        return _all_but_rule(op, names.index(batching["arg"]), batching["arg"])
    index = names.index(batching["arg"])
    if kind == "any_leading":
        return _leading_rule(op, index, lambda rank: False)
    unbatched = batching.get("unbatched")
    return _leading_rule(op, index, lambda rank: rank != unbatched)


def register(op_table: Sequence[dict[str, Any]]) -> int:
    """Registers a batching rule for each op of the table with a `batching` field; returns
    how many."""
    count = 0
    for row in op_table:
        if row.get("batching"):
            op = overload(row["qualified"])
            torch.library.register_vmap(f"opforge::{row['qualified']}", _rule(op, row["batching"]))
            count += 1
    return count
