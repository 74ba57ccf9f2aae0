"""The GPU window's tooling, checked without a GPU (issue 31): `benchmarks/cuda.sh --dry-run`
runs every stage of its device calls here, and the compiled-object check flags launches
above a kernel's __launch_bounds__ (which the simulator ignores)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import check_cuda_objects  # noqa: E402


def test_cuda_script_dry_run_runs_every_stage(tmp_path: Path) -> None:
    # About 30 s on 2 cores (a stated exception to the 10 s rule): it collects every selection of the three calls and runs the
    # sanitizer's subset in the simulator and one row of each table on the CPU.
    from opforge import _build_config

    if not getattr(_build_config, "CUDA_SIM", False):
        pytest.skip("built with OPFORGE_CUDA_SIM=OFF")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "cuda.sh"), "--dry-run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    for name in ("environment", "sanitizer-subset-simulated", "ops-table", "optim-table"):
        assert (tmp_path / f"{name}.log").exists(), name
    for printed in ("compute-sanitizer --tool memcheck", "PYTORCH_NO_CUDA_MEMORY_CACHING=1"):
        assert printed in proc.stdout


def test_dry_run_fails_on_a_selection_of_no_test(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OUT": str(tmp_path),
        "PYTHON": sys.executable,
        "PYTEST_ADDOPTS": "-k no_such_test",
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "cuda.sh"), "--dry-run", "tests"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode != 0
    assert "cuda-tests selects no test" in proc.stdout


def test_launch_above_a_kernels_bound_is_flagged() -> None:
    bounds = {
        "norm_layer.cu": {"forward_kernel": 1024},
        "norm_lrn.cu": {"forward_kernel": 0},
        "tiles.cu": {"tile_kernel": 256, "free_kernel": 0},
        "reduce.cu": {"shared_kernel": 128},
        "other.cu": {"shared_kernel": 512},
    }
    launches = {
        "norm_layer.cu:forward_kernel": 512,  # a kernel of the same name elsewhere is not it
        "norm_lrn.cu:forward_kernel": 256,
        "tiles.cu:tile_kernel": 512,
        "tiles.cu:free_kernel": 1024,
        "common.cuh:shared_kernel": 256,  # a header's kernel: its smallest bound
        "gone.cu:other_kernel": 2048,
    }
    assert check_cuda_objects.bound_failures(bounds, launches) == [
        "common.cuh:shared_kernel: launched with 256 threads, __launch_bounds__(128)",
        "tiles.cu:free_kernel: launched with 1024 threads, no __launch_bounds__",
        "tiles.cu:tile_kernel: launched with 512 threads, __launch_bounds__(256)",
    ]
