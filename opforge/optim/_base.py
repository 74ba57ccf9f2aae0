"""What the fused optimizers share: the options they refuse, step()'s frame, the grouping of
a param_group's parameters into one op call per (device, dtype), and the step counters."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim.optimizer import Optimizer, ParamsT


def scalar(value: float | Tensor) -> float:
    """A hyperparameter as the float the op takes (torch.optim also accepts 1-element tensors;
    a CUDA one costs a sync per group and step)."""
    return float(value)


def check_nonnegative(what: str, value: float | Tensor) -> None:
    """torch.optim's constructor check, with its message, so drop-in code fails alike."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_lr(lr: float | Tensor) -> None:
    """lr: a non-negative float or 1-element tensor, as torch.optim checks it."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_nonnegative("learning rate", lr)


class FusedOptimizer(Optimizer):
    """Base of opforge.optim's optimizers: subclasses say how one param_group steps."""

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        # The fused steps are not differentiable, and not for CUDA graph capture: they take
        # the hyperparameters as host floats (a tensor lr is read with a sync each step).
        if defaults.get("differentiable"):
            raise ValueError(
                f"opforge.optim.{name} does not support differentiable=True: its fused step is "
                f"not differentiable; use torch.optim.{name}"
            )
        if defaults.get("capturable"):
            raise ValueError(
                f"opforge.optim.{name} does not support capturable=True (CUDA graph capture); "
                f"use torch.optim.{name}"
            )
        if defaults.get("fused") and defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A state dict from torch.optim (or an older one) may lack our group keys.
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self.defaults.items():
                group.setdefault(key, value)

    def _step_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One optimization step: one fused opforge call per (device, dtype) group of each
        param_group's parameters that have a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._check_group(group)
            self._step_group(group)
        return loss

    def _check_group(self, group: dict[str, Any]) -> None:
        """differentiable again at step time (load_state_dict replaces the group flags). A
        loaded capturable=True is not refused: it changes nothing here, and torch.compile
        sets it on every group it traces (note [torch.compile x capturable] in torch)."""
        if group.get("differentiable"):
            raise RuntimeError(
                f"opforge.optim.{type(self).__name__}: a param_group has differentiable=True, "
                "which the fused step does not support (was it loaded from a torch.optim "
                "state dict?)"
            )

    def params_with_grad(self, group: dict[str, Any]) -> list[Tensor]:
        """The group's parameters that step (those with a gradient), checked for what the
        fused ops cannot take."""
        name = type(self).__name__
        params: list[Tensor] = []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"opforge.optim.{name} does not support sparse gradients")
            if not p.is_floating_point():
                raise RuntimeError(
                    f"opforge.optim.{name} takes floating-point parameters, got {p.dtype}"
                )
            params.append(p)
        return params


def by_device_dtype(
    params: Iterable[Tensor], extra: Callable[[Tensor], Hashable] | None = None
) -> dict[tuple[Any, ...], list[Tensor]]:
    """params split by (device, dtype[, extra(p)]), in first-seen order: one op call each,
    as an op call takes one device and one dtype."""
    groups: dict[tuple[Any, ...], list[Tensor]] = {}
    for p in params:
        key: tuple[Any, ...] = (p.device, p.dtype)
        if extra is not None:
            key = (*key, extra(p))
        groups.setdefault(key, []).append(p)
    return groups


def new_step(p: Tensor) -> Tensor:
    """A step counter as the ops take it: a float32 0-d tensor on the parameter's device."""
    return torch.zeros((), dtype=torch.float32, device=p.device)


def step_counter(state: dict[str, Any], p: Tensor) -> Tensor:
    """state['step'] as the ops take it. torch.optim keeps it on the CPU (unless fused or
    capturable), float64 under a float64 default dtype, or a number in old state dicts:
    such a counter is moved once, and stays where the op wants it."""
    step = state["step"]
    if not isinstance(step, Tensor):
        step = torch.tensor(float(step), dtype=torch.float32, device=p.device)
    elif step.dtype != torch.float32 or step.device != p.device or step.dim() != 0:
        step = step.to(device=p.device, dtype=torch.float32).reshape(())
    state["step"] = step
    return step


def increment(steps: list[Tensor]) -> None:
    """Adds 1 to each counter before the op runs (the ops read the count after it)."""
    if steps:
        torch._foreach_add_(steps, 1.0)
