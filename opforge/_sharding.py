"""DTensor sharding rules, registered from the op table when DTensor is first imported.

Note [Sharding rules]: the op table's `batching` field (Note [Batching rules] in _vmap.py)
says along which dimensions an op's work splits into independent pieces; a dimension that
splits for vmap also splits across ranks. So every op with a `batching` field gets a DTensor
strategy (torch.distributed.tensor.experimental.register_sharding) that runs the op on each
rank's local shard, with no communication:
- pointwise: any output dimension; each argument is sharded on its aligned dimension, or
  replicated where it broadcasts (size 1 or missing) along it.
- leading: dimension 0 of `arg` and of every output, other tensors (conv weight) replicated;
  not when `arg` has rank `unbatched` (a single sample: dimension 0 is channels).
- any_leading: each leading dimension of `arg` (*, ...) and of the outputs. How many are
  leading is found by running the op on meta tensors with leading dimensions dropped (linear
  takes (in,) but not (); layer_norm over [C, H, W] takes (C, H, W) but not (H, W)).
- all_but: any dimension of the input and output but `dim`.
Always also all-replicated. The `sharding` field adds the tensor-parallel strategies of
`linear(input, weight, bias)`: column parallel (weight and bias Shard(0), input replicated ->
output Shard(-1)) and row parallel (input Shard(-1), weight Shard(1) -> output Partial, with
the bias as Partial too, so that it is added once in the sum). DTensor picks the cheapest
strategy for the inputs' placements and redistributes the inputs where none matches.

Ops without a rule (no `batching` field: linear_backward, conv2d_backward, batch_norm, the
losses ...) fail on DTensors with DTensor's own NotImplementedError, which names the op. A
CompositeImplicitAutograd op (max_pool2d, layer_norm) decomposes before DTensor sees it: its
rule is unused, the ops it calls need theirs (max_pool2d_with_indices and layer_norm_forward
have one).

Registration is lazy: importing torch.distributed.tensor costs ~0.5 s, more than all of
`import opforge` adds to torch. `install` registers at once when it is already imported, else
an import hook registers right after it is (torch.distributed.tensor is imported before any
DTensor exists, so the rules are in place before an op can run on one).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

from opforge._op_table import overload

_MODULE = "torch.distributed.tensor"

# (output placements, input placements by argument name); names not listed are not tensors,
# or None.
Strategy = tuple[Any, dict[str, Any]]


def _spec(value: Any) -> bool:
    """Whether a rule argument is a tensor: register_sharding passes each as a DTensorSpec."""
    return hasattr(value, "placements") and hasattr(value, "tensor_meta")


def _leading_dims(op: Any, bound: dict[str, Any], arg: str) -> int:
    """How many leading dimensions of `arg` the op treats as (*, ...): the most it can drop
    and still accept the input (probed on meta tensors)."""

    def accepts(drop: int) -> bool:
        args = {
            k: torch.empty(
                v.shape[drop:] if k == arg else v.shape, dtype=v.tensor_meta.dtype, device="meta"
            )
            if _spec(v)
            else v
            for k, v in bound.items()
        }
        try:
            op(**args)
        except (RuntimeError, ValueError, IndexError):
            return False
        return True

    n = 0
    while n < bound[arg].ndim and accepts(n + 1):
        n += 1
    return n


def _strategies(op: Any, row: dict[str, Any], bound: dict[str, Any]) -> list[Strategy]:
    from torch.distributed.tensor import Partial, Replicate, Shard

    tensors = [k for k, v in bound.items() if _spec(v)]
    n_out = len(op._schema.returns)

    def sharded(out: Any, ins: dict[str, Any]) -> Strategy:
        return [out] * n_out, {k: ins.get(k, Replicate()) for k in tensors}

    found = [sharded(Replicate(), {})]
    batching = row["batching"]
    kind = batching["kind"]
    if kind == "pointwise":
        shape = torch.broadcast_shapes(*(bound[k].shape for k in tensors))
        for d in range(len(shape)):
            ins = {}
            for k in tensors:
                s = bound[k].shape
                dim = d - (len(shape) - len(s))
                if dim >= 0 and s[dim] == shape[d]:
                    ins[k] = Shard(dim)
            found.append(sharded(Shard(d), ins))
    elif kind == "all_but":
        x = bound[tensors[0]]
        dim = bound[batching["arg"]] % max(x.ndim, 1)
        found += [sharded(Shard(d), {tensors[0]: Shard(d)}) for d in range(x.ndim) if d != dim]
    elif _spec(bound.get(batching["arg"])):
        arg = batching["arg"]
        if kind == "leading":
            if bound[arg].ndim not in (0, batching["unbatched"]):
                found.append(sharded(Shard(0), {arg: Shard(0)}))
        else:  # any_leading
            lead = _leading_dims(op, bound, arg)
            found += [sharded(Shard(d), {arg: Shard(d)}) for d in range(lead)]
    if row.get("sharding") == "linear":
        x, bias = bound["input"], bound.get("bias")
        found.append(sharded(Shard(x.ndim - 1), {"weight": Shard(0), "bias": Shard(0)}))
        row_ins = {"input": Shard(x.ndim - 1), "weight": Shard(1)}
        if _spec(bias):
            row_ins["bias"] = Partial()
        found.append(sharded(Partial(), row_ins))
    return found


def _rule(op: Any, row: dict[str, Any]) -> Callable[..., list[tuple[Any, Any]]]:
    names = [a.name for a in op._schema.arguments]
    defaults = {a.name: a.default_value for a in op._schema.arguments if a.has_default_value()}

    def rule(*args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        bound = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}
        # register_sharding wants the input placements in call order, None for non-tensors.
        order = [*names[: len(args)], *kwargs]
        return [(outs, [ins.get(k) for k in order]) for outs, ins in _strategies(op, row, bound)]

    return rule


def _hash_all_static_args(op: Any) -> None:
    """register_sharding keys DTensor's sharding cache on the tensors' specs and the `int`
    arguments only, not on int[]/float/str ones (derive_schema_info): max_pool2d_with_indices
    with kernel [2, 2] would reuse the output shape cached for [3, 3]. Every non-tensor
    argument goes into the key here."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo

    static = [
        (i, a.name) for i, a in enumerate(op._schema.arguments) if "Tensor" not in str(a.type)
    ]
    propagator = DTensor._op_dispatcher.sharding_propagator
    propagator.op_to_schema_info[op] = RuntimeSchemaInfo(
        static_argnum=static[0][0] if static else 100,
        static_kwargkey=[name for _, name in static] or None,
        needs_pytree=True,
    )


def register(op_table: Sequence[dict[str, Any]]) -> int:
    """Registers a DTensor sharding strategy for each op of the table with a `batching`
    field (Note [Sharding rules]); returns how many (0 where this torch lacks the API)."""
    try:
        from torch.distributed.tensor.experimental import register_sharding
    except ImportError:  # torch without distributed support, or without the API
        return 0
    count = 0
    for row in op_table:
        if row.get("batching"):
            op = overload(row["qualified"])
            register_sharding(op)(_rule(op, row))
            _hash_all_static_args(op)
            count += 1
    return count


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds torch.distributed.tensor as the other finders do, and registers the rules right
    after the module has run."""

    def __init__(self, op_table: Sequence[dict[str, Any]]) -> None:
        self.op_table = op_table

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            register(self.op_table)

        # The loader is this spec's own instance (a new one per find): only this import runs
        # the wrapper, and the module keeps its usual loader.
        spec.loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def install(op_table: Sequence[dict[str, Any]]) -> None:
    """Registers the rules now if torch.distributed.tensor is imported, else on its import."""
    if _MODULE in sys.modules:
        register(op_table)
    else:
        sys.meta_path.insert(0, _RegisterOnImport(op_table))
