"""Helpers the reference families share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor


def _masked(values: tuple[Tensor, ...], mask: Sequence[bool]) -> tuple[Tensor | None, ...]:
    return tuple(v if m else None for v, m in zip(values, mask, strict=True))


def _vjp(
    fn: Callable[..., tuple[Tensor, ...]],
    inputs: Sequence[Tensor],
    cotangents: Sequence[Tensor | None],
) -> tuple[Tensor, ...]:
    """Gradients of sum(<cotangent, fn(*inputs)>) with respect to every input (zeros where
    unused), differentiable again when the inputs require grad."""
    with torch.enable_grad():
        ins = [t if t.requires_grad else t.detach().requires_grad_() for t in inputs]
        outs = fn(*ins)
        pairs = [(o, c) for o, c in zip(outs, cotangents, strict=True) if c is not None]
        if not pairs:
            return tuple(torch.zeros_like(t) for t in inputs)
        grads = torch.autograd.grad(
            [o for o, _ in pairs],
            ins,
            [c for _, c in pairs],
            create_graph=True,
            allow_unused=True,
        )
    return tuple(
        torch.zeros_like(t) if g is None else g for g, t in zip(grads, inputs, strict=True)
    )


def _decomposed() -> Any:
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers the ops)

    return torch.ops.quantized_decomposed
