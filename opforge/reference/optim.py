"""References of the fused optimizer steps (optim.yaml)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def clip_grad_norm_(grads: list[Tensor], max_norm: float, norm_type: float = 2.0) -> Tensor:
    """torch.nn.utils.clip_grad_norm_ over parameters whose .grad are `grads` (scaled in place)."""
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.empty_like(g))
        p.grad = g
        params.append(p)
    return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, foreach=False)


def _opmath(t: Tensor) -> Tensor:
    """t widened to the type a kernel computes in: float32 for the 16-bit floats."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


def _store(state: Tensor, value: Tensor) -> Tensor:
    """Writes value into state; returns what was stored, widened, for the rest of the update."""
    state.copy_(value)
    return _opmath(state)


def _step_grad(param: Tensor, grad: Tensor, weight_decay: float, maximize: bool) -> Tensor:
    """The gradient the update uses: negated to maximize, plus L2 weight decay (opmath)."""
    g = _opmath(grad)
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g.add(_opmath(param), alpha=weight_decay)
    return g


def sgd_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    momentum_buffers: Sequence[Tensor],
    *,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
    is_first_step: bool = False,
) -> None:
    """torch.optim.SGD's step; momentum_buffers (empty without momentum) are allocated by the
    caller, and on is_first_step they are set to the gradient, as torch's fresh buffer is."""
    for i, (param, grad) in enumerate(zip(params, grads, strict=True)):
        g = _step_grad(param, grad, weight_decay, maximize)
        if momentum != 0:
            buf = momentum_buffers[i]
            b = g if is_first_step else _opmath(buf).mul(momentum).add(g, alpha=1 - dampening)
            b = _store(buf, b)
            g = g.add(b, alpha=momentum) if nesterov else b
        param.copy_(_opmath(param).add(g, alpha=-lr))


def _adam_step(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
) -> None:
    """Adam (L2 decay in the gradient) or AdamW (decoupled decay of the parameter)."""
    for i, param in enumerate(params):
        p = _opmath(param)
        g = _step_grad(param, grads[i], 0.0 if decoupled else weight_decay, maximize)
        if decoupled and weight_decay != 0:
            p = p.mul(1 - lr * weight_decay)
        m = _store(exp_avgs[i], _opmath(exp_avgs[i]).lerp(g, 1 - beta1))
        v = _opmath(exp_avg_sqs[i]).mul(beta2).addcmul(g, g, value=1 - beta2)
        v = _store(exp_avg_sqs[i], v)
        step = float(state_steps[i])  # already incremented by the caller
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if amsgrad:
            v_max = _store(max_exp_avg_sqs[i], torch.maximum(_opmath(max_exp_avg_sqs[i]), v))
            denom = (v_max.sqrt() / bias_correction2_sqrt).add(eps)
        else:
            denom = (v.sqrt() / bias_correction2_sqrt).add(eps)
        param.copy_(p.addcdiv(m, denom, value=-step_size))


def adam_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
) -> None:
    """torch.optim.Adam's step; state_steps hold the count after this step's increment."""
    _adam_step(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
        lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
        amsgrad=amsgrad, maximize=maximize, decoupled=False,
    )  # fmt: skip


def adamw_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
) -> None:
    """torch.optim.AdamW's step: p *= 1 - lr * weight_decay before the Adam update."""
    _adam_step(
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
        lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
        amsgrad=amsgrad, maximize=maximize, decoupled=True,
    )  # fmt: skip


def adagrad_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    state_sums: Sequence[Tensor],
    state_steps: Sequence[Tensor],
    *,
    lr: float,
    lr_decay: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """torch.optim.Adagrad's dense step; state_steps already incremented."""
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps, strict=True):
        g = _step_grad(param, grad, weight_decay, maximize)
        clr = lr / (1 + (float(step_t) - 1) * lr_decay)
        s = _store(state_sum, _opmath(state_sum).addcmul(g, g, value=1))
        param.copy_(_opmath(param).addcdiv(g, s.sqrt().add(eps), value=-clr))


def rmsprop_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    square_avgs: Sequence[Tensor],
    grad_avgs: Sequence[Tensor],
    momentum_buffers: Sequence[Tensor],
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    centered: bool,
    maximize: bool,
    eps_in_sqrt: bool = False,
) -> None:
    """torch.optim.RMSprop's step (grad_avgs only when centered, momentum_buffers only when
    momentum > 0); eps_in_sqrt puts eps under the square root, as TensorFlow does."""
    for i, param in enumerate(params):
        g = _step_grad(param, grads[i], weight_decay, maximize)
        sq = _opmath(square_avgs[i]).mul(alpha).addcmul(g, g, value=1 - alpha)
        var = sq = _store(square_avgs[i], sq)
        if centered:
            grad_avg = _store(grad_avgs[i], _opmath(grad_avgs[i]).lerp(g, 1 - alpha))
            var = sq.addcmul(grad_avg, grad_avg, value=-1)
        avg = var.add(eps).sqrt() if eps_in_sqrt else var.sqrt().add(eps)
        if momentum > 0:
            buf = _opmath(momentum_buffers[i]).mul(momentum).addcdiv(g, avg)
            buf = _store(momentum_buffers[i], buf)
            param.copy_(_opmath(param).add(buf, alpha=-lr))
        else:
            param.copy_(_opmath(param).addcdiv(g, avg, value=-lr))


def adadelta_step_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    square_avgs: Sequence[Tensor],
    acc_deltas: Sequence[Tensor],
    *,
    lr: float,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """torch.optim.Adadelta's step."""
    for param, grad, square_avg, acc_delta in zip(
        params, grads, square_avgs, acc_deltas, strict=True
    ):
        g = _step_grad(param, grad, weight_decay, maximize)
        sq = _store(square_avg, _opmath(square_avg).mul(rho).addcmul(g, g, value=1 - rho))
        acc = _opmath(acc_delta)
        delta = acc.add(eps).sqrt().div(sq.add(eps).sqrt()).mul(g)
        acc_delta.copy_(acc.mul(rho).addcmul(delta, delta, value=1 - rho))
        param.copy_(_opmath(param).add(delta, alpha=-lr))
