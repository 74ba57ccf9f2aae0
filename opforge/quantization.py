"""Post-training quantization helpers on opforge's quantization ops.

- `MinMaxObserver`: running min/max of the tensors it sees (`opforge.minmax_observer_update_`)
  and their affine parameters (`opforge.choose_qparams`), per tensor or per channel.
- `QuantizedWeight` / `quantize_weight`: a weight quantized per output channel, symmetric int8
  (torch.ao's default weight scheme, `per_channel_symmetric`), ready for `quantized_conv2d` /
  `quantized_linear`.
- `ACTIVATION_RANGE`: activations are asymmetric uint8 per tensor (torch.ao's default).
- `LearnableFakeQuantize`: quantization-aware training's fake quantization with a learnable
  scale and zero point (LSQ; `opforge.fake_quantize_learnable_per_{tensor,channel}_affine`),
  initialized from the first batch it sees, as torch.ao's `_LearnableFakeQuantize`.

`opforge.models.MobileNetBlocks.quantized` uses them to run the network in int8, and
`MobileNetBlocks.prepare_qat` to train it with fake quantization.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

import opforge

# (quant_min, quant_max, dtype) of the activations and of the weights.
ACTIVATION_RANGE = (0, 255, torch.uint8)
WEIGHT_RANGE = (-128, 127, torch.int8)


class MinMaxObserver:
    """The running extremes of every tensor passed to `observe`: one pair, or one per
    slice along `ch_axis`. `qparams()` turns them into (scale, zero point)."""

    def __init__(
        self,
        quant_min: int = ACTIVATION_RANGE[0],
        quant_max: int = ACTIVATION_RANGE[1],
        *,
        symmetric: bool = False,
        ch_axis: int | None = None,
    ) -> None:
        self.quant_min, self.quant_max, self.symmetric, self.ch_axis = (
            quant_min,
            quant_max,
            symmetric,
            ch_axis,
        )
        self.min_val: Tensor | None = None
        self.max_val: Tensor | None = None

    def observe(self, x: Tensor) -> Tensor:
        if self.min_val is None or self.max_val is None:
            shape = () if self.ch_axis is None else (x.shape[self.ch_axis],)
            self.min_val = torch.full(shape, float("inf"), device=x.device)
            self.max_val = torch.full(shape, -float("inf"), device=x.device)
        opforge.minmax_observer_update_(self.min_val, self.max_val, x, None, self.ch_axis)
        return x

    def qparams_tensors(self) -> tuple[Tensor, Tensor]:
        """(float32 scale, int32 zero point) tensors, in the statistics' shape."""
        if self.min_val is None or self.max_val is None:
            raise RuntimeError("MinMaxObserver: nothing observed yet")
        scale, zero_point = opforge.choose_qparams(
            self.min_val, self.max_val, self.quant_min, self.quant_max, self.symmetric
        )
        return scale, zero_point

    def qparams(self) -> tuple[float, int]:
        """The per-tensor (scale, zero point) as Python numbers."""
        scale, zero_point = self.qparams_tensors()
        return float(scale), int(zero_point)


@dataclass(frozen=True)
class QuantizedWeight:
    """int8 values with one scale and zero point per output channel (dim 0)."""

    values: Tensor
    scales: Tensor
    zero_points: Tensor


def quantize_weight(weight: Tensor) -> QuantizedWeight:
    """Per output channel, symmetric int8: scale = max|w| / 127.5 for each channel, zero point 0."""
    observer = MinMaxObserver(*WEIGHT_RANGE[:2], symmetric=True, ch_axis=0)
    observer.observe(weight)
    scales, zero_points = observer.qparams_tensors()
    values = opforge.quantize_per_channel(weight, scales, zero_points, 0, *WEIGHT_RANGE)
    return QuantizedWeight(values, scales, zero_points)


class LearnableFakeQuantize(nn.Module):
    """Fake quantization whose scale and zero point are parameters (one pair, or one per slice
    along `ch_axis`), set from the min/max of the first batch and then learned with the LSQ
    gradients, scaled by 1 / sqrt(elements per scale * quant_max) (LSQ's grad_factor)."""

    def __init__(
        self,
        quant_min: int = ACTIVATION_RANGE[0],
        quant_max: int = ACTIVATION_RANGE[1],
        *,
        symmetric: bool = False,
        ch_axis: int | None = None,
    ) -> None:
        super().__init__()
        # The observer that sets the first scale and zero point holds the scheme too.
        self.observer = MinMaxObserver(quant_min, quant_max, symmetric=symmetric, ch_axis=ch_axis)
        self.quant_min, self.quant_max, self.ch_axis = quant_min, quant_max, ch_axis
        self.scale = nn.Parameter(torch.ones(1))
        self.zero_point = nn.Parameter(torch.zeros(1))
        self.register_buffer("initialized", torch.tensor(False))

    @torch.no_grad()
    def _initialize(self, x: Tensor) -> None:
        self.observer.observe(x.detach())
        scale, zero_point = self.observer.qparams_tensors()
        self.scale.data = scale.reshape(-1).clone()
        self.zero_point.data = zero_point.reshape(-1).float()
        self.initialized.fill_(True)

    def forward(self, x: Tensor) -> Tensor:
        if not bool(self.initialized):
            self._initialize(x)
        per_scale = x.numel() // max(1, self.scale.numel())
        grad_factor = 1.0 / math.sqrt(max(1, per_scale) * self.quant_max)
        if self.ch_axis is None:
            return opforge.fake_quantize_learnable_per_tensor_affine(
                x, self.scale, self.zero_point, self.quant_min, self.quant_max, grad_factor
            )
        return opforge.fake_quantize_learnable_per_channel_affine(
            x, self.scale, self.zero_point, self.ch_axis % x.dim(), self.quant_min, self.quant_max,
            grad_factor,
        )  # fmt: skip


def weight_fake_quantize() -> LearnableFakeQuantize:
    """Per output channel, symmetric int8: the weight scheme of `quantize_weight`."""
    return LearnableFakeQuantize(*WEIGHT_RANGE[:2], symmetric=True, ch_axis=0)
