"""The leak check (benchmarks/leaks.py, `make leaks`) measures what it says: a planted leak
of 4 KiB a call is reported, and a short run of one family's forward+backward stays flat."""

from __future__ import annotations

import torch

from benchmarks import leaks


def test_a_planted_leak_is_reported() -> None:
    kept: list[torch.Tensor] = []
    grown, measured = leaks.growth([lambda: kept.append(torch.ones(1024))], 3000)
    assert grown / measured > 2048  # 4 KiB of data a call, less page rounding


def test_activation_family_does_not_grow() -> None:
    steps = [s for s in map(leaks.step_of, leaks.families()["activation"]) if s is not None]
    assert len(steps) > 5
    grown, _ = leaks.growth(steps, 4000)
    assert grown < 1024 * 1024, f"RSS grew by {grown / 1024:.0f} KiB over 3600 calls"
