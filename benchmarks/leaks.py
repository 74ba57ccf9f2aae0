"""Leak check: many forward+backward calls per op family, printing the process's RSS growth.

Run: `make leaks` or `.venv/bin/python benchmarks/leaks.py [--calls N] [--only FAMILY ...]`.
A family is a schema file (schemas/<family>.yaml). Its calls go round the family's ops,
each op on its first declared sample in float32 (fresh tensors every call, as a training
step's): the forward, and for a differentiable op the backward of its outputs' sum. The
RSS is read after a warm-up tenth of the calls (allocator pools and caches filled) and at
the end; a leak of even one small tensor per call grows it by tens of bytes a call, where
allocator noise over 1e5 calls stays within a few hundred KiB. Exit status 1 when a
family's growth passes --limit-kib.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import opforge  # noqa: E402
from tests.ops import opdb  # noqa: E402

_PAGE = os.sysconf("SC_PAGE_SIZE")
_LIBC = ctypes.CDLL(None)


def rss_bytes() -> int:
    """The resident set after a collection, with glibc's free pages handed back (a freed
    but resident page would hide a leak that reuses it)."""
    gc.collect()
    _LIBC.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def step_of(op: opdb.OpDecl) -> Callable[[], None] | None:
    """One call of op (forward, and backward where differentiable), or None if the op
    has no float32 sample to run."""
    dtype = opdb.dtype_for(op, torch.float32)
    calls = opdb.calls(op, dtype, "cpu", variants=False)
    if not calls:
        return None
    call = calls[0]
    fn = getattr(opforge, op.name)
    grads = opdb.differentiable(op) and bool(opdb.grad_inputs(op, call))

    def step() -> None:
        c = call.clone()
        leaves = opdb.grad_inputs(op, c) if grads else []
        for t in leaves:
            t.requires_grad_(True)
        result = fn(*c.args, **c.kwargs)
        tracked = [r.sum() for r in opdb.grad_outputs(op, result) if r.requires_grad]
        if tracked:
            torch.autograd.grad(tracked, leaves, allow_unused=True)

    return step


def families() -> dict[str, list[opdb.OpDecl]]:
    out: dict[str, list[opdb.OpDecl]] = {}
    for op in opdb.functional_ops():
        out.setdefault(Path(op.loc.path).stem, []).append(op)
    return out


def growth(steps: list[Callable[[], None]], calls: int) -> tuple[int, int]:
    """(RSS growth in bytes over the calls after the warm-up tenth, calls measured)."""
    warm = max(calls // 10, len(steps))
    for i in range(warm):
        steps[i % len(steps)]()
    before = rss_bytes()
    for i in range(warm, calls):
        steps[i % len(steps)]()
    return rss_bytes() - before, calls - warm


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per family")
    parser.add_argument("--only", nargs="*", help="families (schema file stems) to run")
    parser.add_argument("--limit-kib", type=float, default=2048.0, help="largest growth passed")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(
        f"RSS growth over --calls {args.calls} forward+backward calls per family "
        f"(after a warm-up tenth), float32, cpu, 1 thread"
    )
    print(f"{'family':22s} {'ops':>4s} {'growth KiB':>11s} {'bytes/call':>11s}")
    failed = []
    for family, ops in sorted(families().items()):
        if args.only and family not in args.only:
            continue
        steps = [s for s in map(step_of, ops) if s is not None]
        if not steps:
            continue
        grown, measured = growth(steps, args.calls)
        flag = "" if grown / 1024 <= args.limit_kib else "  LEAK?"
        print(
            f"{family:22s} {len(steps):4d} {grown / 1024:11.1f} {grown / measured:11.2f}{flag}",
            flush=True,
        )
        if flag:
            failed.append(family)
    if failed:
        print(f"growth past {args.limit_kib} KiB: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
