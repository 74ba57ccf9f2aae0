"""opforge.optim.clip_grad_norm_: torch.nn.utils.clip_grad_norm_'s signature over the
`opforge.clip_grad_norm_` op (one fused call for gradients of one device and dtype)."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

import opforge


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scales the gradients of `parameters` in place so that their total norm_type-norm is at
    most max_norm, and returns that total norm (torch.nn.utils.clip_grad_norm_). `foreach`
    is accepted and changes nothing. With gradients of one device and dtype this is one
    `opforge.clip_grad_norm_` call. Gradients of several devices or dtypes, and
    error_if_nonfinite=True (which must see the norm before anything is scaled), take
    torch's foreach path instead: each group's norms by torch._foreach_norm, the total,
    then torch._foreach_mul_."""
    del foreach
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    max_norm, norm_type = float(max_norm), float(norm_type)
    groups: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
    for g in grads:
        groups.setdefault((g.device, g.dtype), []).append(g)
    if len(groups) <= 1 and not error_if_nonfinite:
        return opforge.clip_grad_norm_(grads, max_norm, norm_type)
    if not groups:
        return torch.tensor(0.0)
    first = grads[0].device
    norms = [
        n.to(first) for group in groups.values() for n in torch._foreach_norm(group, norm_type)
    ]
    total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and bool(torch.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for (device, _), group in groups.items():
        torch._foreach_mul_(group, coefficient.to(device))
    return total
