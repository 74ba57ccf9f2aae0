"""The transcendental activations' error in float32 ulps, opforge's beside ATen's.

Run: `.venv/bin/python benchmarks/ulp.py [--points N]`. Each op runs in float32 over
N points spread evenly over the range where its value changes (plus the same number of
random ones), and is compared with ATen's float64 result of the same op (its own error is
far below a float32 ulp). The error of one value is |y - exact| / ulp(exact), the ulp
being float32's spacing at exact, where |exact| >= 2^-6 (SMALLEST). Prints the max and
mean per op for opforge and for ATen's float32 kernel; tests/ops/test_ulp.py bounds
opforge's max by ATen's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import opforge

Fn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Case:
    name: str
    ours: Fn
    aten: Fn  # also the float64 reference
    low: float
    high: float


def _grad(forward: Fn) -> Fn:
    """x -> d forward(x) / dx by autograd (the backward kernel), for a gradient of ones."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(forward(x).sum(), x)
        return g

    return fn


CASES = [
    Case("sigmoid", opforge.sigmoid, torch.sigmoid, -30, 30),
    Case("tanh", opforge.tanh, torch.tanh, -12, 12),
    Case("silu", opforge.silu, F.silu, -30, 30),
    Case("gelu", opforge.gelu, F.gelu, -12, 12),
    Case(
        "gelu (tanh)",
        lambda x: opforge.gelu(x, approximate="tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
        -12,
        12,
    ),
    Case("elu", opforge.elu, F.elu, -30, 30),
    Case("softplus", opforge.softplus, F.softplus, -30, 30),
    Case("sigmoid backward", _grad(opforge.sigmoid), _grad(torch.sigmoid), -30, 30),
    Case("tanh backward", _grad(opforge.tanh), _grad(torch.tanh), -12, 12),
    Case("silu backward", _grad(opforge.silu), _grad(F.silu), -30, 30),
    Case("gelu backward", _grad(opforge.gelu), _grad(F.gelu), -12, 12),
    Case("elu backward", _grad(opforge.elu), _grad(F.elu), -30, 30),
    Case("softplus backward", _grad(opforge.softplus), _grad(F.softplus), -30, 30),
]


def inputs(case: Case, points: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    grid = torch.linspace(case.low, case.high, points, dtype=torch.float32)
    drawn = torch.rand(points, generator=g) * (case.high - case.low) + case.low
    return torch.cat([grid, drawn])


# Values below this are left out: where an op's value decays towards 0 (gelu's and the
# gradients' tails) or crosses it (silu's gradient), float32 formulas cancel (1 + erf,
# 1 - y^2) in ATen too, and the error in ulps of such a small value (1e7 and more at 1e-30)
# says nothing about the kernel.
SMALLEST = 2.0**-6


def ulp_errors(y: torch.Tensor, exact64: torch.Tensor) -> torch.Tensor:
    """|y - exact| in float32 ulps of the exact value, where |exact| >= SMALLEST."""
    kept = exact64.abs() >= SMALLEST
    exact = exact64[kept].float().abs()
    spacing = (torch.nextafter(exact, torch.tensor(float("inf"))) - exact).double()
    return (y[kept].double() - exact64[kept]).abs() / spacing


def measure(case: Case, points: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(opforge's errors, ATen's errors) in ulps over the case's inputs."""
    x = inputs(case, points)
    exact = case.aten(x.double())
    return ulp_errors(case.ours(x), exact), ulp_errors(case.aten(x), exact)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=1 << 20)
    args = parser.parse_args(argv)
    print(f"float32 error in ulps against ATen's float64 ({2 * args.points} inputs per op)")
    print(
        f"{'op':20s} {'range':>12s} {'opforge max':>12s} {'mean':>7s} {'ATen max':>9s} {'mean':>7s}"
    )
    for case in CASES:
        ours, aten = measure(case, args.points)
        span = f"[{case.low:g}, {case.high:g}]"
        print(
            f"{case.name:20s} {span:>12s} {ours.max():12.2f} {ours.mean():7.3f} "
            f"{aten.max():9.2f} {aten.mean():7.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
