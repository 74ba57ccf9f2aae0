"""Every CPU op gives the same bits on 1 and 2 threads and on a repeated run: its `bench:`
cases (large enough that at::parallel_for splits them) where it has some, its samples
otherwise. Random ops are reseeded before each run (opforge's counter-based generators
promise the same values for a seed on any thread count). The CUDA kernels that accumulate
with atomics declare `nondeterministic: [CUDA]` and raise under
torch.use_deterministic_algorithms(True) (tests/ops/test_cuda_window.py, the simulator)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch

import opforge
from codegen.opdecl import OpDecl
from tests.ops import opdb


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(op: OpDecl, call: opdb.Call, threads: int) -> Any:
    call = call.clone()  # an op writing into an argument writes into its own copy
    torch.manual_seed(0)
    with _threads(threads):
        got = getattr(opforge, op.name)(*call.args, **call.kwargs)
    written = [call.named(n) for n in opdb.written_args(op)]
    return [t for t in (*opdb.outputs(got), *written) if isinstance(t, torch.Tensor)]


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():  # NaN == NaN bit for bit
        width = {8: torch.int64, 4: torch.int32, 2: torch.int16}[a.element_size()]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


def _calls(op: OpDecl) -> list[opdb.Call]:
    if op.bench is not None:
        return opdb.bench_calls(op, "cpu")
    dtype = opdb.TORCH_DTYPES[op.dtypes[0]]
    return opdb.calls(op, dtype, "cpu", variants=False)


# Ops whose float kernels are oneDNN's (kernels/include/opforge/conv/onednn.h):
# oneDNN splits a weight gradient's reduction by the thread count, as it does for ATen,
# so those results repeat run to run but not across thread counts.
_ONEDNN = {"conv2d_backward", "conv_transpose2d_backward"}


@pytest.mark.parametrize("op", opdb.functional_ops(), ids=lambda op: op.qualified)
def test_same_bits_on_one_and_two_threads(op: OpDecl) -> None:
    for call in _calls(op):
        one = _run(op, call, 1)
        two = _run(op, call, 2)
        again = _run(op, call, 2)
        for i, (a, b, c) in enumerate(zip(one, two, again, strict=True)):
            assert _same_bits(b, c), f"{op.qualified} {call.label} output {i}: repeated run"
            if op.name not in _ONEDNN:
                assert _same_bits(a, b), f"{op.qualified} {call.label} output {i}: 1 vs 2 threads"
