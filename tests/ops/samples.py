"""Sample inputs that YAML cannot describe, keyed by op (qualified name).

Each function returns (args, kwargs) pairs for a dtype and device; the test
battery runs them next to the YAML samples (`opdb.calls`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

SampleFn = Callable[[torch.dtype, str], list[tuple[list[Any], dict[str, Any]]]]
SAMPLES: dict[str, SampleFn] = {}


def samples(qualified: str) -> Callable[[SampleFn], SampleFn]:
    def register(fn: SampleFn) -> SampleFn:
        SAMPLES[qualified] = fn
        return fn

    return register


@samples("softmax")
def _softmax_large_logits(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    # exp(1000) overflows: only a max-subtracting softmax gets these right.
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-5e3, -5e3 + 1, -5e3 + 2]], dtype=torch.float64)
    return [([x.to(dtype=dtype, device=device), 1], {})]


@samples("relu")
def _relu_nan_inf(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    x = torch.tensor(
        [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1.5], dtype=torch.float64
    )
    return [([x.to(dtype=dtype, device=device)], {})]
