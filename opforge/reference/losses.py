"""References of the losses (loss.yaml, classification_loss.yaml)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from opforge.reference._common import _vjp


def mse_loss(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return torch.nn.functional.mse_loss(self, target, reduction=reduction)


def l1_loss(self: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return torch.nn.functional.l1_loss(self, target, reduction=reduction)


def smooth_l1_loss(
    self: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    return torch.nn.functional.smooth_l1_loss(self, target, reduction=reduction, beta=beta)


def binary_cross_entropy(
    self: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    return torch.nn.functional.binary_cross_entropy(self, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return torch.nn.functional.binary_cross_entropy_with_logits(
        self, target, weight, reduction=reduction, pos_weight=pos_weight
    )


def kl_div(
    self: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False
) -> Tensor:
    with warnings.catch_warnings():  # torch warns that 'mean' is not the true KL divergence
        warnings.simplefilter("ignore")
        return torch.nn.functional.kl_div(self, target, reduction=reduction, log_target=log_target)


def sigmoid_focal_loss(
    self: Tensor, target: Tensor, alpha: float = 0.25, gamma: float = 2.0, reduction: str = "none"
) -> Tensor:
    """torchvision.ops.sigmoid_focal_loss (a test dependency, imported on first use)."""
    from torchvision.ops import sigmoid_focal_loss as focal

    return focal(self, target, alpha=alpha, gamma=gamma, reduction=reduction)


def _loss_grad(
    forward: Callable[..., Tensor],
    grad_output: Tensor,
    inputs: Sequence[Tensor],
    wrt: int,
    *rest: Any,
) -> Tensor:
    """d <grad_output, forward(*inputs, *rest)> / d inputs[wrt]."""
    grads = _vjp(lambda *ins: (forward(*ins, *rest),), inputs, [grad_output])
    return grads[wrt]


def mse_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: str) -> Tensor:
    return _loss_grad(mse_loss, grad_output, [self, target], 0, reduction)


def l1_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: str) -> Tensor:
    return _loss_grad(l1_loss, grad_output, [self, target], 0, reduction)


def huber_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, delta: float
) -> Tensor:
    return _loss_grad(
        torch.nn.functional.huber_loss, grad_output, [self, target], 0, reduction, delta
    )


def smooth_l1_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, beta: float
) -> Tensor:
    return _loss_grad(smooth_l1_loss, grad_output, [self, target], 0, reduction, beta)


def binary_cross_entropy_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return torch.ops.aten.binary_cross_entropy_backward(
        grad_output, self, target, weight, _REDUCTIONS[reduction]
    )


def binary_cross_entropy_with_logits_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(
        binary_cross_entropy_with_logits,
        grad_output,
        [self, target],
        0,
        weight,
        pos_weight,
        reduction,
    )


def binary_cross_entropy_target_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(binary_cross_entropy, grad_output, [self, target], 1, weight, reduction)


def binary_cross_entropy_with_logits_target_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    return _loss_grad(
        binary_cross_entropy_with_logits,
        grad_output,
        [self, target],
        1,
        weight,
        pos_weight,
        reduction,
    )


def kl_div_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, log_target: bool
) -> Tensor:
    # + 0 selected from self: the gradient does not depend on self (not even on its
    # NaNs, which self * 0 would pass), yet autograd sees self, so its gradient is 0,
    # not None.
    grad = _loss_grad(kl_div, grad_output, [self, target], 0, reduction, log_target)
    return grad + torch.where(torch.zeros_like(self, dtype=torch.bool), self, 0.0)


def kl_div_target_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, reduction: str, log_target: bool
) -> Tensor:
    return _loss_grad(kl_div, grad_output, [self, target], 1, reduction, log_target)


def sigmoid_focal_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, alpha: float, gamma: float, reduction: str
) -> Tensor:
    return _loss_grad(sigmoid_focal_loss, grad_output, [self, target], 0, alpha, gamma, reduction)


def sigmoid_focal_loss_target_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, alpha: float, gamma: float, reduction: str
) -> Tensor:
    return _loss_grad(sigmoid_focal_loss, grad_output, [self, target], 1, alpha, gamma, reduction)


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def cross_entropy(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    return torch.nn.functional.cross_entropy(
        self,
        target,
        weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def nll_loss(
    self: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    return torch.nn.functional.nll_loss(
        self, target, weight, ignore_index=ignore_index, reduction=reduction
    )


def _target_weights(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> Tensor:
    """w[target] per position, 0 where the target is ignore_index."""
    classes = self.shape[0 if self.dim() == 1 else 1]
    w = weight if weight is not None else torch.ones(classes, dtype=self.dtype, device=self.device)
    ignored = target == ignore_index
    picked = (
        w[target.masked_fill(ignored, 0)]
        if classes > 0
        else torch.zeros_like(target, dtype=w.dtype)
    )
    return torch.where(ignored, torch.zeros_like(picked), picked)


def cross_entropy_forward(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, label_smoothing: float
) -> tuple[Tensor, Tensor]:
    loss = cross_entropy(self, target, weight, ignore_index, "none", label_smoothing)
    return loss, _target_weights(self, target, weight, ignore_index)


def nll_loss_forward(
    self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> tuple[Tensor, Tensor]:
    loss = nll_loss(self, target, weight, ignore_index, "none")
    return loss, _target_weights(self, target, weight, ignore_index)


def cross_entropy_backward(
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    label_smoothing: float,
) -> Tensor:
    return _loss_grad(
        cross_entropy, grad_output, [self], 0, target, weight, ignore_index, "none", label_smoothing
    )


def nll_loss_backward(
    grad_output: Tensor, self: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int
) -> Tensor:
    """-w[t] grad_output scattered to each position's target class (ATen's own nll_loss
    backward needs a contiguous grad_output)."""
    class_dim = 0 if self.dim() == 1 else 1
    scaled = -_target_weights(self, target, weight, ignore_index) * grad_output
    index = target.masked_fill(target == ignore_index, 0).unsqueeze(class_dim)
    # self * 0: zero gradients in self, as the op's (a gradient of None would not compare).
    return (self * 0).scatter(class_dim, index, scaled.unsqueeze(class_dim).to(self.dtype))


def distillation_loss(
    s_logits: Tensor, t_logits: Tensor, target: Tensor, T: float = 1.0, alpha: float = 0.5
) -> Tensor:
    """CE(s, target) + alpha T^2 kl_div(log_softmax(s / T), softmax(t / T), 'batchmean')."""
    F = torch.nn.functional
    soft = F.kl_div(
        F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1), reduction="batchmean"
    )
    return F.cross_entropy(s_logits, target) + alpha * T * T * soft


def cross_entropy_double_backward(
    grad_grad_input: Tensor,
    grad_output: Tensor,
    self: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    label_smoothing: float,
) -> tuple[Tensor, Tensor]:
    def backward(g: Tensor, s: Tensor) -> tuple[Tensor]:
        return (cross_entropy_backward(g, s, target, weight, ignore_index, label_smoothing),)

    g, s = _vjp(backward, [grad_output, self], [grad_grad_input])
    return g, s
