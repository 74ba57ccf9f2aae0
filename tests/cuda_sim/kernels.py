"""The __global__ functions of kernels/cuda, as "file:kernel" keys like the
simulator's launch statistics (opforge._cuda_sim.launched_kernels())."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUDA = ROOT / "kernels" / "cuda"
# `__global__ void [__launch_bounds__(...)] name(`
_GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def global_kernels() -> set[str]:
    found = set()
    for path in sorted([*CUDA.glob("*.cu"), *CUDA.glob("*.cuh")]):
        found |= {f"{path.name}:{m.group(1)}" for m in _GLOBAL.finditer(path.read_text())}
    return found
