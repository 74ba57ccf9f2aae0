"""Every op with a CUDA kernel, run by the CUDA simulator on CPU tensors
(torch.ops.opforge_cuda_sim.*), against the CPU operator (which the battery
tests against PyTorch): every declared dtype, every YAML and Python sample with
its non-contiguous and empty variants, forward and backward ops alike."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from codegen.opdecl import OpDecl
from tests.cuda_sim.check import IN_ONE_WORKER, agree
from tests.ops import opdb

pytestmark = [pytest.mark.cuda_sim, IN_ONE_WORKER]


def _cuda_ops() -> list[OpDecl]:
    return [o for o in opdb.functional_ops() if "CUDA" in o.keys]


def _params() -> list[Any]:
    return [
        pytest.param(op, opdb.TORCH_DTYPES[d], id=f"{op.qualified}-{d}")
        for op in _cuda_ops()
        for d in op.dtypes
    ]


def _named(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@pytest.mark.parametrize("op,dtype", _params())
def test_simulated_cuda_matches_cpu(cuda_sim: Any, op: OpDecl, dtype: torch.dtype) -> None:
    calls = opdb.calls(op, dtype, "cpu")
    assert calls, f"{op.qualified} declares no samples"
    for call in calls:

        def written(args: list[Any], kwargs: dict[str, Any], call: opdb.Call = call) -> list[Any]:
            return [opdb.Call(args, kwargs, "", call.names).named(n) for n in opdb.written_args(op)]

        agree(
            op.name,
            call.args,
            call.kwargs,
            overload=op.overload or "default",
            written=written,
            label=call.label,
            # (an op's own `tolerance:` for this dtype, else check.py's for the dtype)
            tol=opdb.tolerances(dtype, op) if _named(dtype) in dict(op.tolerance) else None,
        )
