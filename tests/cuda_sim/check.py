"""Running one call on the CPU operator and on the simulated CUDA kernel."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
import torch

from tests.ops import opdb

# benchmarks/cuda.sh runs these tests on a real GPU: the CUDA side is then the
# real CUDA kernel, on copies of the arguments moved to the device.
ON_GPU = os.environ.get("OPFORGE_SIM_ON_GPU") == "1"
sim_only = pytest.mark.skipif(ON_GPU, reason="about the simulator itself")
# `make test` runs the simulated suite in one process; under pytest-xdist (-n) it
# stays in one worker: the coverage tests read the kernels launched in their own process.
IN_ONE_WORKER = pytest.mark.xdist_group("cuda_sim")


def _on_gpu(op: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        def to(v: Any) -> Any:
            if isinstance(v, list):  # a Tensor[] argument
                return [to(x) for x in v]
            return v.cuda() if isinstance(v, torch.Tensor) else v

        gpu_args = [to(a) for a in args]
        gpu_kwargs = {k: to(v) for k, v in kwargs.items()}
        out = op(*gpu_args, **gpu_kwargs)
        # Written-into arguments come back into the caller's tensors, as on the CPU.
        for host, dev in zip(
            _flat([*args, *kwargs.values()]), _flat([*gpu_args, *gpu_kwargs.values()]), strict=True
        ):
            if isinstance(host, torch.Tensor):
                host.copy_(dev.cpu())
        if out is None:  # an op returning () (the optimizer steps)
            return None
        if isinstance(out, (tuple, list)):
            return type(out)(t.cpu() if isinstance(t, torch.Tensor) else t for t in out)
        return out.cpu()

    return run


def _flat(values: list[Any]) -> list[Any]:
    """The values with `Tensor[]` lists spread out."""
    return [x for v in values for x in (v if isinstance(v, list) else [v])]


def cuda_op(name: str, overload: str = "default") -> Any:
    """The CUDA entry point of one op overload: under the simulator on CPU tensors, or
    (OPFORGE_SIM_ON_GPU=1) the real kernel on the GPU, taking and returning CPU tensors."""
    if ON_GPU:
        return _on_gpu(getattr(getattr(torch.ops.opforge, name), overload))
    return getattr(getattr(torch.ops.opforge_cuda_sim, name), overload)


def overloads(name: str, overload: str = "default") -> tuple[Any, Any]:
    """(the CPU operator, the CUDA entry point) of one op overload."""
    return getattr(getattr(torch.ops.opforge, name), overload), cuda_op(name, overload)


def tolerances(dtype: torch.dtype) -> dict[str, float]:
    """The battery's, loosened for reduced precision where CUDA and CPU kernels round
    intermediate sums in a different order."""
    tol = dict(opdb.tolerances(dtype))
    if dtype in (torch.float16, torch.bfloat16):
        tol = {k: 2 * v for k, v in tol.items()}
    if dtype == torch.float32:
        tol = {"atol": 2e-5, "rtol": 2e-5}
    return tol


def agree(
    name: str,
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    overload: str = "default",
    written: Callable[[list[Any], dict[str, Any]], list[Any]] = lambda args, kwargs: [],
    label: str = "",
    tol: dict[str, float] | None = None,
) -> Any:
    """Runs both on their own copies of the arguments; compares the outputs and the
    arguments `written` picks (`Tensor(a!)` inputs). Returns the simulated result."""
    kwargs = kwargs or {}
    cpu, sim = overloads(name, overload)

    def clone(v: Any) -> Any:
        if isinstance(v, list):  # a Tensor[] argument
            return [clone(x) for x in v]
        return v.detach().clone() if isinstance(v, torch.Tensor) else v

    cpu_args, sim_args = [clone(a) for a in args], [clone(a) for a in args]
    cpu_kwargs = {k: clone(v) for k, v in kwargs.items()}
    sim_kwargs = {k: clone(v) for k, v in kwargs.items()}
    expected = cpu(*cpu_args, **cpu_kwargs)
    got = sim(*sim_args, **sim_kwargs)
    tensors = [t for t in _flat([*args, *kwargs.values()]) if isinstance(t, torch.Tensor)]
    dtype = next(
        (t.dtype for t in tensors if t.is_floating_point()),
        tensors[0].dtype if tensors else torch.float32,
    )
    torch.testing.assert_close(
        (opdb.outputs(got), written(sim_args, sim_kwargs)),
        (opdb.outputs(expected), written(cpu_args, cpu_kwargs)),
        **(tol or tolerances(dtype)),
        equal_nan=True,
        msg=lambda m: f"{name} {label}: {m}",
    )
    return got
