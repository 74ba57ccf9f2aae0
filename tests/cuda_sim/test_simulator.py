"""The CUDA simulator itself: barriers, shuffles, votes and atomics give CUDA's
results, and the misuses a GPU would hang on or reject fail the launch with a
clear message (see Note [CUDA simulation] in kernels/cuda/sim/runtime.cpp)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.cuda_sim.check import IN_ONE_WORKER, sim_only

pytestmark = [pytest.mark.cuda_sim, sim_only, IN_ONE_WORKER]

# CUDA runtime error codes.
SUCCESS = 0
INVALID_VALUE = 1
INVALID_CONFIGURATION = 9
ASSERT = 710
LAUNCH_FAILURE = 719


def _run(cuda_sim: Any, name: str, buffer: torch.Tensor) -> tuple[int, str]:
    return cuda_sim.run_selftest(name, buffer.data_ptr())  # type: ignore[no-any-return]


def test_block_sum_uses_barriers(cuda_sim: Any) -> None:
    buf = torch.zeros(404)
    buf[:400] = torch.arange(400, dtype=torch.float32)
    assert _run(cuda_sim, "block_sum", buf) == (SUCCESS, "")
    expected = torch.arange(400, dtype=torch.float32).view(4, 100).sum(1)
    torch.testing.assert_close(buf[400:], expected)


def test_warp_shuffles_and_votes(cuda_sim: Any) -> None:
    buf = torch.zeros(8, dtype=torch.int32)
    assert _run(cuda_sim, "warp_ops", buf) == (SUCCESS, "")
    total = sum(range(32))
    assert buf.tolist()[:6] == [total, total, 0xAAAAAAAA - (1 << 32), 1 + 2, 2, 70]


def test_atomics_across_blocks(cuda_sim: Any) -> None:
    buf = torch.zeros(2, dtype=torch.int32)
    view = buf.view(torch.float32)[:1]
    assert _run(cuda_sim, "atomic", buf) == (SUCCESS, "")
    assert view.item() == 0.5 * 7 * 64
    assert buf[1].item() == 7 * 64


@pytest.mark.parametrize(
    "name,code,words",
    [
        ("divergent_barrier", LAUNCH_FAILURE, "__syncthreads() reached by 16 of 32 threads"),
        ("divergent_shuffle", LAUNCH_FAILURE, "waits for lanes 16 (exited)"),
        ("partial_warp", LAUNCH_FAILURE, "names lanes that do not exist"),
        ("empty_grid", INVALID_CONFIGURATION, "empty grid (0, 1, 1)"),
        ("grid_y_too_big", INVALID_CONFIGURATION, "exceeds (2^31-1, 65535, 65535)"),
        ("block_too_big", INVALID_CONFIGURATION, "block (1025, 1, 1)"),
        ("shared_too_big", INVALID_VALUE, "49153 bytes of dynamic shared memory"),
    ],
)
def test_misuse_fails_the_launch(cuda_sim: Any, name: str, code: int, words: str) -> None:
    buf = torch.zeros(64, dtype=torch.int32)
    got_code, message = _run(cuda_sim, name, buf)
    assert got_code == code
    assert words in message
    assert "selftest.cu" in message  # names the launch site


def test_device_assert(cuda_sim: Any) -> None:
    buf = torch.zeros(32, dtype=torch.int32)
    assert _run(cuda_sim, "assert", buf) == (SUCCESS, "")
    buf[5] = -1
    code, message = _run(cuda_sim, "assert", buf)
    assert code == ASSERT
    assert "in[threadIdx.x] >= 0" in message and "thread (5, 0, 0)" in message
