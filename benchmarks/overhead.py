"""Per-call dispatch overhead on a 1-element tensor, as ratios against torch.relu from one run.

Run: `make bench` or `.venv/bin/python benchmarks/overhead.py`. Each figure is the
median of several timeit repeats, so one noisy burst does not decide it.
"""

from __future__ import annotations

import statistics
import timeit

import torch

import opforge


def per_call_us(fn: object, x: torch.Tensor, number: int = 20000, repeat: int = 9) -> float:
    times = timeit.repeat(lambda: fn(x), number=number, repeat=repeat)  # type: ignore[operator]
    return statistics.median(times) / number * 1e6


def main() -> None:
    torch.set_num_threads(1)
    x = torch.randn(1)
    ops_relu = torch.ops.opforge.relu
    ops_relu_default = torch.ops.opforge.relu.default
    candidates = {
        "torch.relu": torch.relu,
        "opforge.relu (eager wrapper)": opforge.relu,
        "opforge._C.relu (pybind11 binding)": opforge._C.relu,
        "torch.ops.opforge.relu": ops_relu,
        "torch.ops.opforge.relu.default": ops_relu_default,
    }
    for fn in candidates.values():  # warm up caches and lazy handles
        per_call_us(fn, x, number=1000, repeat=1)
    base = per_call_us(torch.relu, x)
    print(f"{'call':40s} {'us/call':>8s} {'vs torch.relu':>14s}")
    for name, fn in candidates.items():
        t = base if fn is torch.relu else per_call_us(fn, x)
        print(f"{name:40s} {t:8.3f} {t / base:13.2f}x")
    print("target: opforge.relu <= 1.20x torch.relu")


if __name__ == "__main__":
    main()
