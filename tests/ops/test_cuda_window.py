"""What only a GPU shows (issue 31, `benchmarks/cuda.sh sanitize`): CUDA graph capture of
the random ops (Philox offsets read through the generator's device pointers, so each
replay draws anew) and pointwise / reduction kernels over more than 2**31 elements (the
pointwise engine's 32-bit index splitting)."""

from __future__ import annotations

import pytest
import torch

import opforge

pytestmark = pytest.mark.cuda


def test_graph_replays_draw_new_random_numbers_and_repeat_the_rest() -> None:
    x = torch.randn(4096, device="cuda")
    weight = torch.empty(64, 32, device="cuda")
    opforge.dropout(x, 0.5, True)  # warm-up outside the capture (lazy initialization)
    opforge.normal(weight)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dropped = opforge.dropout(x, 0.5, True)
        drawn = opforge.normal(weight)
        rectified = opforge.relu(x)
    outs = []
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        outs.append((dropped.clone(), drawn.clone(), rectified.clone()))
    (d0, w0, r0), (d1, w1, r1) = outs
    assert not torch.equal(d0, d1), "dropout replayed the same mask"
    assert not torch.equal(w0, w1), "normal replayed the same numbers"
    torch.testing.assert_close(r0, r1, atol=0, rtol=0)
    torch.testing.assert_close(r0, torch.relu(x), atol=0, rtol=0)
    kept = d0 != 0
    torch.testing.assert_close(d0[kept], x[kept] * 2)
    assert 0.45 < kept.float().mean().item() < 0.55


def _needs_bytes(n: int) -> None:
    free, _ = torch.cuda.mem_get_info()
    if free < n:
        pytest.skip(f"needs {n / 2**30:.1f} GiB of free GPU memory")


def test_pointwise_and_sum_over_2_31_elements() -> None:
    n = 2**31 + 4099
    _needs_bytes(2 * n * 2 + n * 4 + 2**30)
    x = torch.full((n,), -1.0, dtype=torch.float16, device="cuda")
    x[-3:] = 2.0  # past the first 2**31: the split's last piece
    y = opforge.relu(x)
    assert y.shape == x.shape
    assert bool((y[:-3] == 0).all())
    assert y[-3:].tolist() == [2.0, 2.0, 2.0]
    del x, y
    ones = torch.ones(n, device="cuda")
    assert opforge.sum(ones).item() == pytest.approx(n, rel=1e-6)
