"""opforge.optim against torch.optim on ResNet-18's parameters: ms per step and time ratios.

Run: `.venv/bin/python benchmarks/optim.py [--device cpu|cuda|all] [--only adam]
[--budget 0.4] [--threads N] [--dtype bfloat16]`. The parameter list has the shapes of
torchvision's resnet18 (62 tensors, 11.7M elements), each with a gradient. One row per
optimizer: opforge.optim's ms per step() (one fused call per device and dtype), and its
time over torch.optim's foreach=True step and over its fused=True step (lower is better;
1.00 = parity). Each ratio comes from the two timed alternately in one process
(benchmarks/ops.py's time_pair: these machines are shared and noisy, so only ratios from
one run mean something). Where torch has no fused step (RMSprop, Adadelta, or a device
it does not cover) the row says so. A last row times opforge.optim.clip_grad_norm_ (one
fused call) against torch.nn.utils.clip_grad_norm_ with foreach=True and foreach=False.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import opforge  # noqa: E402
import opforge.optim  # noqa: E402
from benchmarks.ops import time_pair  # noqa: E402

# name, opforge op, hyperparameters (torch.optim's defaults but where a common setting differs)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("SGD", "sgd_step_", {"lr": 0.01, "momentum": 0.9}),
    ("Adam", "adam_step_", {"lr": 1e-3}),
    ("AdamW", "adamw_step_", {"lr": 1e-3}),
    ("RMSprop", "rmsprop_step_", {"lr": 1e-3}),
    ("Adagrad", "adagrad_step_", {"lr": 1e-2}),
    ("Adadelta", "adadelta_step_", {}),
]


def resnet18_shapes() -> list[torch.Size]:
    return [p.shape for p in torchvision.models.resnet18(weights=None).parameters()]


def _params(
    shapes: list[torch.Size], device: torch.device, dtype: torch.dtype
) -> list[torch.nn.Parameter]:
    """Fresh parameters with gradients, the same values on every call (seeded)."""
    g = torch.Generator().manual_seed(0)
    params = []
    for s in shapes:
        p = torch.nn.Parameter(torch.randn(s, generator=g).mul_(0.1).to(device, dtype))
        p.grad = torch.randn(s, generator=g).mul_(0.01).to(device, dtype)
        params.append(p)
    return params


def _stepper(
    make: Callable[..., torch.optim.Optimizer],
    shapes: list[torch.Size],
    device: torch.device,
    dtype: torch.dtype,
    **kwargs: Any,
) -> Callable[[], Any]:
    """opt.step over its own copy of the parameters (the gradients are kept between steps)."""
    opt = make(_params(shapes, device, dtype), **kwargs)
    return opt.step


def _fused_stepper(
    name: str,
    shapes: list[torch.Size],
    device: torch.device,
    dtype: torch.dtype,
    hp: dict[str, Any],
) -> tuple[Callable[[], Any] | None, str]:
    """torch.optim.<name>(fused=True).step, or None and why torch has none here."""
    try:
        step = _stepper(getattr(torch.optim, name), shapes, device, dtype, fused=True, **hp)
        step()
    except TypeError:
        return None, f"torch.optim.{name} has no fused=True"
    except RuntimeError as e:
        return None, f"torch.optim.{name}(fused=True) not on {device.type}: {str(e)[:60]}"
    return step, ""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench(device: torch.device, dtype: torch.dtype, only: str, budget: float) -> list[str]:
    """Prints one row per optimizer on device; returns the notes on what was skipped."""
    shapes = resnet18_shapes()
    numel = sum(s.numel() for s in shapes)
    print(
        f"\nopforge.optim / torch.optim time per step, {dtype}, {device}, "
        f"{torch.get_num_threads()} threads (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}), "
        f"ResNet-18: {len(shapes)} tensors, {numel / 1e6:.1f}M elements"
    )
    print(
        f"{'optimizer':10s} {'opforge ms':>10s} {'foreach ms':>10s} {'/foreach':>8s} "
        f"{'fused ms':>9s} {'/fused':>7s}"
    )
    notes = []
    for name, op, hp in CASES:
        if only.lower() not in name.lower():
            continue
        if not hasattr(opforge, op):
            print(f"{name:10s} opforge.{op} is not in this build")
            notes.append(f"{device.type} {name}: opforge.{op} missing")
            continue
        ours = _stepper(getattr(opforge.optim, name), shapes, device, dtype, **hp)
        foreach = _stepper(getattr(torch.optim, name), shapes, device, dtype, foreach=True, **hp)
        t_ours, t_foreach = time_pair(ours, foreach, device, budget)
        del foreach
        row = f"{name:10s} {t_ours * 1e3:10.3f} {t_foreach * 1e3:10.3f} {t_ours / t_foreach:8.2f}"
        fused, why = _fused_stepper(name, shapes, device, dtype, hp)
        if fused is None:
            row += f" {'-':>9s} {'-':>7s}"
            notes.append(f"{device.type} {name}: {why}")
        else:
            t_ours2, t_fused = time_pair(ours, fused, device, budget)
            row += f" {t_fused * 1e3:9.3f} {t_ours2 / t_fused:7.2f}"
        del ours, fused
        _sync(device)
        print(row, flush=True)
    if only.lower() in "clip_grad_norm_":
        print(_clip_row(shapes, device, dtype, budget), flush=True)
    return notes


def _clip_row(
    shapes: list[torch.Size], device: torch.device, dtype: torch.dtype, budget: float
) -> str:
    """clip_grad_norm_ with max_norm 1: opforge's against torch's foreach and per-tensor forms."""

    def clipper(clip: Callable[..., Any], **kw: Any) -> Callable[[], None]:
        params = _params(shapes, device, dtype)
        return lambda: clip(params, 1.0, **kw)

    ours = clipper(opforge.optim.clip_grad_norm_)
    t_ours, t_foreach = time_pair(
        ours, clipper(torch.nn.utils.clip_grad_norm_, foreach=True), device, budget
    )
    t_ours2, t_loop = time_pair(
        ours, clipper(torch.nn.utils.clip_grad_norm_, foreach=False), device, budget
    )
    return (
        f"{'clip_norm':10s} {t_ours * 1e3:10.3f} {t_foreach * 1e3:10.3f} {t_ours / t_foreach:8.2f} "
        f"{t_loop * 1e3:9.3f} {t_ours2 / t_loop:7.2f}  (last columns: foreach=False, not fused)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="all", help="cpu, cuda, or all (cuda when available)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--only", default="", help="run optimizers whose name contains this")
    parser.add_argument("--budget", type=float, default=0.4, help="seconds per side per timing")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: as is)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "all":
        devices = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    else:
        devices = [args.device]
    torch.manual_seed(0)
    notes = []
    for d in devices:
        notes += bench(torch.device(d), getattr(torch, args.dtype), args.only, args.budget)
    print("\nnotes: " + ("; ".join(notes) if notes else "none"))


if __name__ == "__main__":
    main()
