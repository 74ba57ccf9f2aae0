"""Every __global__ function in kernels/cuda ran under the simulator during this
session's cuda_sim tests, and the real build's objects fit the launches the
simulator saw (conftest.py orders these tests last)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.cuda_sim.check import IN_ONE_WORKER, sim_only
from tests.cuda_sim.kernels import ROOT, global_kernels

pytestmark = [pytest.mark.cuda_sim, sim_only, IN_ONE_WORKER]


def test_every_global_kernel_ran(cuda_sim: Any, capsys: pytest.CaptureFixture[str]) -> None:
    kernels = global_kernels()
    ran = set(cuda_sim.launched_kernels())
    with capsys.disabled():
        print(
            f"\ncuda_sim: {len(kernels & ran)} of {len(kernels)} __global__ kernels in kernels/cuda executed"
        )
    assert kernels <= ran, f"never launched: {sorted(kernels - ran)}"


def test_compiled_kernels_fit_their_launches(cuda_sim: Any) -> None:
    """The real CUDA build's objects: SASS/PTX for every target architecture, registers
    within the largest block the suite launched each kernel with, no spills in hot kernels."""
    from opforge import _build_config

    if not _build_config.CUDA_COMPILED:
        pytest.skip("built without CUDA kernels (no nvcc or a CPU-only torch)")
    sys.path.insert(0, str(ROOT / "scripts"))
    import check_cuda_objects as objects

    blocks: dict[str, int] = {}
    launches: dict[str, int] = {}
    for key, (_, threads) in cuda_sim.launched_kernels().items():
        name = key.split(":")[1]
        blocks[name] = max(blocks.get(name, 0), threads)
        launches[key] = threads
    build = ROOT / "build"
    if not objects.cuda_objects(build):
        pytest.skip(f"no CUDA objects under {build}")
    report, failures = objects.check(build, _build_config.CUDA_ARCHS.split(), blocks, launches)
    assert report and not failures, "\n".join(failures)
