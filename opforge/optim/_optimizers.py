"""SGD, Adam, AdamW, RMSprop, Adagrad and Adadelta over opforge's fused step operators.

Constructor signatures, defaults, checks, param_group keys and state keys are torch.optim's,
so code and state dicts move between the two; the math is in the ops (and, written out, in
opforge.reference).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.optim.optimizer import ParamsT

import opforge
from opforge.optim._base import (
    FusedOptimizer,
    by_device_dtype,
    check_lr,
    check_nonnegative,
    increment,
    new_step,
    scalar,
    step_counter,
)


class SGD(FusedOptimizer):
    """torch.optim.SGD with one ``opforge.sgd_step_`` call per (device, dtype) group (and
    per whether the momentum buffers exist yet: new ones are allocated here and the call
    says is_first_step, where torch would set them to the gradient)."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float | Tensor = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(lr)
        check_nonnegative("momentum value", momentum)
        check_nonnegative("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        momentum = scalar(group["momentum"])

        def has_buffer(p: Tensor) -> bool:
            return momentum != 0 and self.state[p].get("momentum_buffer") is not None

        params = self.params_with_grad(group)
        for (_, _, existing), ps in by_device_dtype(params, has_buffer).items():
            buffers: list[Tensor] = []
            if momentum != 0:
                for p in ps:
                    state = self.state[p]
                    if not existing:
                        state["momentum_buffer"] = torch.zeros_like(
                            p, memory_format=torch.preserve_format
                        )
                    buffers.append(state["momentum_buffer"])
            opforge.sgd_step_(
                ps,
                [p.grad for p in ps],
                buffers,
                lr=scalar(group["lr"]),
                momentum=momentum,
                dampening=scalar(group["dampening"]),
                weight_decay=scalar(group["weight_decay"]),
                nesterov=bool(group["nesterov"]),
                maximize=bool(group["maximize"]),
                is_first_step=momentum != 0 and not existing,
            )


class Adam(FusedOptimizer):
    """torch.optim.Adam with one ``opforge.adam_step_`` (``adamw_step_`` when
    decoupled_weight_decay) call per (device, dtype) group."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor) and beta.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        amsgrad = bool(group["amsgrad"])
        beta1, beta2 = (scalar(b) for b in group["betas"])
        op = opforge.adamw_step_ if group["decoupled_weight_decay"] else opforge.adam_step_
        params = self.params_with_grad(group)
        for ps in by_device_dtype(params).values():
            states = [self._state(p, amsgrad) for p in ps]
            steps = [step_counter(s, p) for s, p in zip(states, ps, strict=True)]
            increment(steps)
            op(
                ps,
                [p.grad for p in ps],
                [s["exp_avg"] for s in states],
                [s["exp_avg_sq"] for s in states],
                [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
                steps,
                lr=scalar(group["lr"]),
                beta1=beta1,
                beta2=beta2,
                weight_decay=scalar(group["weight_decay"]),
                eps=scalar(group["eps"]),
                amsgrad=amsgrad,
                maximize=bool(group["maximize"]),
            )

    def _state(self, p: Tensor, amsgrad: bool) -> dict[str, Any]:
        """p's state, created on its first step in torch's key order."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step(p)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        if amsgrad and "max_exp_avg_sq" not in state:  # also when amsgrad is switched on later
            state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state


class AdamW(Adam):
    """torch.optim.AdamW (Adam with decoupled weight decay, default 1e-2) with one
    ``opforge.adamw_step_`` call per (device, dtype) group."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        # As torch's AdamW: whatever a loaded state dict says, the decay stays decoupled.
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


class Adagrad(FusedOptimizer):
    """torch.optim.Adagrad (dense gradients) with one ``opforge.adagrad_step_`` call per
    (device, dtype) group.

    As torch's, the state is created in the constructor for every parameter, and the
    accumulators start at the constructor's initial_accumulator_value (a param_group's own
    value is not used, nor for groups added later: torch takes it from the defaults too).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(lr)
        check_nonnegative("lr_decay value", lr_decay)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("initial_accumulator_value value", initial_accumulator_value)
        check_nonnegative("epsilon value", eps)
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._state(p)

    def _state(self, p: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step(p)
            state["sum"] = torch.full_like(
                p,
                self.defaults["initial_accumulator_value"],
                memory_format=torch.preserve_format,
            )
        return state

    def share_memory(self) -> None:
        """Puts the accumulators in shared memory (torch's Adagrad has this too)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _step_group(self, group: dict[str, Any]) -> None:
        params = self.params_with_grad(group)
        for ps in by_device_dtype(params).values():
            states = [self._state(p) for p in ps]
            steps = [step_counter(s, p) for s, p in zip(states, ps, strict=True)]
            increment(steps)
            opforge.adagrad_step_(
                ps,
                [p.grad for p in ps],
                [s["sum"] for s in states],
                steps,
                lr=scalar(group["lr"]),
                lr_decay=scalar(group["lr_decay"]),
                weight_decay=scalar(group["weight_decay"]),
                eps=scalar(group["eps"]),
                maximize=bool(group["maximize"]),
            )


class RMSprop(FusedOptimizer):
    """torch.optim.RMSprop with one ``opforge.rmsprop_step_`` call per (device, dtype) group.

    ``eps_in_sqrt=True`` (keyword-only, not in torch) divides by sqrt(v + eps), as TensorFlow
    does, instead of torch's sqrt(v) + eps. The 'step' state is counted, as torch counts it,
    though the update does not use it.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        *,
        eps_in_sqrt: bool = False,
    ) -> None:
        check_lr(lr)
        check_nonnegative("epsilon value", eps)
        check_nonnegative("momentum value", momentum)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("alpha value", alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "eps_in_sqrt": eps_in_sqrt,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        momentum = scalar(group["momentum"])
        centered = bool(group["centered"])
        params = self.params_with_grad(group)
        for ps in by_device_dtype(params).values():
            states = [self._state(p, momentum > 0, centered) for p in ps]
            increment([step_counter(s, p) for s, p in zip(states, ps, strict=True)])
            opforge.rmsprop_step_(
                ps,
                [p.grad for p in ps],
                [s["square_avg"] for s in states],
                [s["grad_avg"] for s in states] if centered else [],
                [s["momentum_buffer"] for s in states] if momentum > 0 else [],
                lr=scalar(group["lr"]),
                alpha=scalar(group["alpha"]),
                eps=scalar(group["eps"]),
                weight_decay=scalar(group["weight_decay"]),
                momentum=momentum,
                centered=centered,
                maximize=bool(group["maximize"]),
                eps_in_sqrt=bool(group["eps_in_sqrt"]),
            )

    def _state(self, p: Tensor, with_momentum: bool, centered: bool) -> dict[str, Any]:
        """p's state in torch's key order; buffers an option switched on later start at 0."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step(p)
            state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        if with_momentum and "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        if centered and "grad_avg" not in state:
            state["grad_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state


class Adadelta(FusedOptimizer):
    """torch.optim.Adadelta with one ``opforge.adadelta_step_`` call per (device, dtype)
    group. The 'step' state is counted, as torch counts it, though the update does not use
    it."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative("epsilon value", eps)
        check_nonnegative("weight_decay value", weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _step_group(self, group: dict[str, Any]) -> None:
        params = self.params_with_grad(group)
        for ps in by_device_dtype(params).values():
            states = [self._state(p) for p in ps]
            increment([step_counter(s, p) for s, p in zip(states, ps, strict=True)])
            opforge.adadelta_step_(
                ps,
                [p.grad for p in ps],
                [s["square_avg"] for s in states],
                [s["acc_delta"] for s in states],
                lr=scalar(group["lr"]),
                rho=scalar(group["rho"]),
                eps=scalar(group["eps"]),
                weight_decay=scalar(group["weight_decay"]),
                maximize=bool(group["maximize"]),
            )

    def _state(self, p: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step(p)
            state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["acc_delta"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state
