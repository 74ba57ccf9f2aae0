"""Every __global__ function in kernels/cuda ran under the simulator during this
session's cuda_sim tests (conftest.py orders this test last)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cuda_sim.kernels import global_kernels

pytestmark = pytest.mark.cuda_sim


def test_every_global_kernel_ran(cuda_sim: Any, capsys: pytest.CaptureFixture[str]) -> None:
    kernels = global_kernels()
    ran = set(cuda_sim.launched_kernels())
    with capsys.disabled():
        print(f"\ncuda_sim: {len(kernels & ran)} of {len(kernels)} __global__ kernels in kernels/cuda executed")
    assert kernels <= ran, f"never launched: {sorted(kernels - ran)}"
