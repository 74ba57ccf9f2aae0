"""Two CPU processes (gloo over loopback) running a test module's `case_*` functions: one
spawn runs every case (spawning and importing torch dominate the time), and each test reads
its case's outcome from both ranks."""

from __future__ import annotations

import importlib
import json
import os
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

WORLD = 2


def cases(namespace: dict[str, Any]) -> dict[str, Callable[..., None]]:
    """A module's cases: its functions named case_*."""
    return {name: fn for name, fn in namespace.items() if name.startswith("case_")}


def _rank_main(rank: int, module: str, out: str) -> None:
    """One rank: every case of `module` with the argument its `case_argument(rank)` gives,
    each outcome (None or the traceback) written to rank<N>.json."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    dist.init_process_group(
        "gloo",
        init_method=f"file://{out}/store",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=60),  # a rank that fails mid-case does not hang the other
    )
    tests = importlib.import_module(module)
    argument = tests.case_argument(rank)
    results: dict[str, Any] = {}
    for name, case in cases(vars(tests)).items():
        torch.manual_seed(0)  # every rank builds the same global tensors
        try:
            case(argument)
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc()
    dist.destroy_process_group()
    Path(out, f"rank{rank}.json").write_text(json.dumps(results))


def run(module: str, out: Path) -> list[dict[str, Any]]:
    """Every case of `module` on both ranks: per rank, case name -> None or its traceback."""
    torch.multiprocessing.spawn(_rank_main, args=(module, str(out)), nprocs=WORLD)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]


def check(outcomes: list[dict[str, Any]], case: str) -> None:
    for rank, results in enumerate(outcomes):
        assert results[case] is None, f"rank {rank}:\n{results[case]}"
