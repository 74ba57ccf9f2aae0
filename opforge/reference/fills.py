"""What the init ops' benchmarks time against (`bench: {against: ...}` in schemas/init.yaml):
torch.nn.init's in-place fills of a fresh tensor, with the ops' signatures. The references
of the battery (opforge/reference/layers.py) check the fills' statistics instead, so their
times say nothing about torch's."""

from __future__ import annotations

import torch
from torch import Tensor


def normal(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return torch.nn.init.normal_(torch.empty_like(tensor), mean, std, generator=generator)


def uniform(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return torch.nn.init.uniform_(torch.empty_like(tensor), a, b, generator=generator)


def trunc_normal(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    if std == 0:  # torch's divides by std; the degenerate fill is the clamped mean
        return torch.full_like(tensor, min(max(mean, a), b))
    return torch.nn.init.trunc_normal_(
        torch.empty_like(tensor), mean, std, a, b, generator=generator
    )


def constant(tensor: Tensor, val: float) -> Tensor:
    return torch.nn.init.constant_(torch.empty_like(tensor), val)


def kaiming_normal(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
) -> Tensor:
    return torch.nn.init.kaiming_normal_(
        torch.empty_like(tensor), a, mode, nonlinearity, generator=generator
    )


def kaiming_uniform(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: torch.Generator | None = None,
) -> Tensor:
    return torch.nn.init.kaiming_uniform_(
        torch.empty_like(tensor), a, mode, nonlinearity, generator=generator
    )


def xavier_normal(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return torch.nn.init.xavier_normal_(torch.empty_like(tensor), gain, generator=generator)


def xavier_uniform(
    tensor: Tensor, gain: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    return torch.nn.init.xavier_uniform_(torch.empty_like(tensor), gain, generator=generator)
