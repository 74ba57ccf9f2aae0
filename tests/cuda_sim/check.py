"""Running one call on the CPU operator and on the simulated CUDA kernel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tests.ops import opdb


def overloads(name: str, overload: str = "default") -> tuple[Any, Any]:
    """(the CPU operator, the CUDA entry point under the simulator) of one op overload."""
    cpu = getattr(getattr(torch.ops.opforge, name), overload)
    sim = getattr(getattr(torch.ops.opforge_cuda_sim, name), overload)
    return cpu, sim


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
        return v.detach().clone() if isinstance(v, torch.Tensor) else v

    cpu_args, sim_args = [clone(a) for a in args], [clone(a) for a in args]
    cpu_kwargs = {k: clone(v) for k, v in kwargs.items()}
    sim_kwargs = {k: clone(v) for k, v in kwargs.items()}
    expected = cpu(*cpu_args, **cpu_kwargs)
    got = sim(*sim_args, **sim_kwargs)
    tensors = [t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)]
    dtype = next((t.dtype for t in tensors if t.is_floating_point()), tensors[0].dtype)
    torch.testing.assert_close(
        (opdb.outputs(got), written(sim_args, sim_kwargs)),
        (opdb.outputs(expected), written(cpu_args, cpu_kwargs)),
        **(tol or tolerances(dtype)),
        equal_nan=True,
        msg=lambda m: f"{name} {label}: {m}",
    )
    return got
