"""Two small networks and a block from the project's source material, written with opforge
ops only.

- `MobileNetBlocks`: a MobileNet-style stack of depthwise-separable blocks
  (3x3 depthwise conv -> BN -> ReLU, 1x1 pointwise conv -> BN -> ReLU) after a
  strided stem, global average pooling and a linear classifier. `fused()` folds
  every BN into its convolution (`fold_conv_bn`) and runs each conv + bias + ReLU
  as one `conv2d_bias_act`: the deployment form of the same network; `quantized()`
  is its post-training int8 form (`quantized_conv2d` stages, a `quantized_linear`
  classifier; calibration with the min/max observer), and `prepare_qat()` adds
  learnable fake quantization for quantization-aware training.
- `SPPNet`: an SPP-Net-style classifier (conv, ReLU, local response norm, max
  pool, conv, spatial pyramid pooling, linear, dropout, log_softmax). The
  pyramid makes the classifier input size independent of the image size.
- `RepVGGBlock`: a RepVGG block, ReLU of the sum of a 3x3 conv -> BN branch, a 1x1
  conv -> BN branch and an identity BN branch; `fuse()` re-parameterizes the eval-mode
  block into one 3x3 convolution (`repvgg_fuse`) run as one `conv2d_bias_act`.

The parameters are ordinary `torch.nn` parameters and buffers, so optimizers,
`state_dict` and `torch.compile` work as with any module; only the forward
computation is opforge's. tests/models/ checks both networks against equivalent
`torch.nn` models, tests/ops/test_repvgg.py the block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor, nn

import opforge
from opforge.quantization import (
    ACTIVATION_RANGE,
    LearnableFakeQuantize,
    MinMaxObserver,
    quantize_weight,
    weight_fake_quantize,
)


def _conv_weight(c_out: int, c_in_per_group: int, k: int) -> nn.Parameter:
    w = torch.empty(c_out, c_in_per_group, k, k)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))  # torch.nn.Conv2d's default
    return nn.Parameter(w)


class ConvBN(nn.Module):
    """conv2d (no bias) -> batch_norm -> relu, with BN's running statistics as buffers."""

    def __init__(
        self, c_in: int, c_out: int, k: int, stride: int = 1, groups: int = 1, eps: float = 1e-5
    ) -> None:
        super().__init__()
        self.stride, self.padding, self.groups, self.eps = stride, k // 2, groups, eps
        self.weight = _conv_weight(c_out, c_in // groups, k)
        self.bn_weight = nn.Parameter(torch.ones(c_out))
        self.bn_bias = nn.Parameter(torch.zeros(c_out))
        self.register_buffer("running_mean", torch.zeros(c_out))
        self.register_buffer("running_var", torch.ones(c_out))
        # Quantization-aware training (MobileNetBlocks.prepare_qat): the weight and the
        # result pass through fake quantization.
        self.weight_fake_quant: nn.Module | None = None
        self.output_fake_quant: nn.Module | None = None

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight if self.weight_fake_quant is None else self.weight_fake_quant(self.weight)
        y = opforge.conv2d(x, w, None, self.stride, self.padding, 1, self.groups)
        y = opforge.batch_norm(
            y,
            self.bn_weight,
            self.bn_bias,
            self.running_mean,
            self.running_var,
            self.training,
            0.1,
            self.eps,
        )
        y = opforge.relu(y)
        return y if self.output_fake_quant is None else self.output_fake_quant(y)

    @torch.no_grad()
    def folded(self) -> tuple[Tensor, Tensor]:
        """The eval-mode (weight, bias) of the convolution with BN folded in."""
        weight, bias = opforge.fold_conv_bn(
            self.weight.detach(),
            None,
            self.bn_weight.detach(),
            self.bn_bias.detach(),
            self.running_mean,
            self.running_var,
            self.eps,
        )
        return weight, bias

    def fused(self) -> Callable[[Tensor], Tensor]:
        """Inference form: BN folded into the weights, conv + bias + ReLU in one op."""
        weight, bias = self.folded()
        stride, padding, groups = self.stride, self.padding, self.groups

        def run(x: Tensor) -> Tensor:
            return opforge.conv2d_bias_act(x, weight, bias, stride, padding, 1, groups, "relu")

        return run

    def quantized(
        self, input_qparams: tuple[float, int], output_qparams: tuple[float, int]
    ) -> Callable[[Tensor], Tensor]:
        """int8 form: the folded weights per channel, a uint8 input and result per tensor; the
        ReLU is the result's range (quant_min = the zero point clamps negatives to 0)."""
        weight, bias = self.folded()
        w = quantize_weight(weight)
        (s_in, z_in), (s_out, z_out) = input_qparams, output_qparams
        stride, padding, groups = self.stride, self.padding, self.groups
        _, q_max, dtype = ACTIVATION_RANGE

        def run(xq: Tensor) -> Tensor:
            return opforge.quantized_conv2d(
                xq, s_in, z_in, w.values, w.scales, w.zero_points, bias, s_out, z_out,
                z_out, q_max, dtype, stride, padding, 1, groups,
            )  # fmt: skip

        return run


class MobileNetBlocks(nn.Module):
    """Stem conv, then depthwise-separable blocks `(c_out, stride)`, pool, linear."""

    def __init__(
        self,
        c_in: int = 3,
        stem: int = 8,
        blocks: Sequence[tuple[int, int]] = ((16, 1), (32, 2), (32, 1)),
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        layers = [ConvBN(c_in, stem, 3, stride=2)]
        c = stem
        for c_out, stride in blocks:
            layers.append(ConvBN(c, c, 3, stride=stride, groups=c))  # depthwise
            layers.append(ConvBN(c, c_out, 1))  # pointwise
            c = c_out
        self.layers = nn.ModuleList(layers)
        self.fc_weight = nn.Parameter(torch.empty(num_classes, c))
        self.fc_bias = nn.Parameter(torch.empty(num_classes))
        nn.init.kaiming_uniform_(self.fc_weight, a=math.sqrt(5))
        nn.init.uniform_(self.fc_bias, -1 / math.sqrt(c), 1 / math.sqrt(c))
        self.input_fake_quant: nn.Module | None = None

    def prepare_qat(self) -> MobileNetBlocks:
        """Quantization-aware training: fake-quantizes the input and every conv stage's
        result (uint8 per tensor) and every conv weight (int8 per output channel), each with a
        learnable scale and zero point (`LearnableFakeQuantize`), so training sees the
        rounding the int8 network will do. Returns self; create the optimizer afterwards,
        so it holds the new parameters."""
        self.input_fake_quant = LearnableFakeQuantize()
        for layer in self.layers:
            if isinstance(layer, ConvBN):
                layer.weight_fake_quant = weight_fake_quantize()
                layer.output_fake_quant = LearnableFakeQuantize()
        return self

    def _head(self, x: Tensor) -> Tensor:
        pooled = opforge.adaptive_avg_pool2d(x, [1, 1]).flatten(1)
        return opforge.linear(pooled, self.fc_weight, self.fc_bias)

    def forward(self, x: Tensor) -> Tensor:
        if self.input_fake_quant is not None:
            x = self.input_fake_quant(x)
        for layer in self.layers:
            x = layer(x)
        return self._head(x)

    @torch.no_grad()
    def fused(self) -> Callable[[Tensor], Tensor]:
        """The eval-mode network with every conv-BN-ReLU as one fused op."""
        stages = [layer.fused() for layer in self.layers if isinstance(layer, ConvBN)]

        def run(x: Tensor) -> Tensor:
            for stage in stages:
                x = stage(x)
            return self._head(x)

        return run

    @torch.no_grad()
    def quantized(self, calibration: Iterable[Tensor]) -> Callable[[Tensor], Tensor]:
        """Post-training int8 quantization of the eval-mode network; returns float logits.

        Calibration runs the fused float network on the `calibration` batches, observing the
        range of the input, of every conv stage's result, of the pooled features and of the
        logits (`MinMaxObserver`). The int8 network then quantizes the input once (uint8 per
        tensor), runs every conv-BN-ReLU as one `quantized_conv2d` (BN folded, weights int8
        per output channel, int32 accumulators requantized to the next stage's uint8
        parameters), dequantizes for the global average pool and runs the classifier as a
        `quantized_linear`.
        """
        convs = [layer for layer in self.layers if isinstance(layer, ConvBN)]
        float_stages = [conv.fused() for conv in convs]
        observers = [MinMaxObserver() for _ in range(len(convs) + 3)]
        for x in calibration:
            observers[0].observe(x)
            for stage, observer in zip(float_stages, observers[1:], strict=False):
                x = observer.observe(stage(x))
            pooled = observers[-2].observe(opforge.adaptive_avg_pool2d(x, [1, 1]).flatten(1))
            observers[-1].observe(opforge.linear(pooled, self.fc_weight, self.fc_bias))
        qparams = [observer.qparams() for observer in observers]
        stages = [conv.quantized(qparams[i], qparams[i + 1]) for i, conv in enumerate(convs)]
        (s_in, z_in), (s_x, z_x) = qparams[0], qparams[len(convs)]
        (s_pool, z_pool), (s_out, z_out) = qparams[-2], qparams[-1]
        fc = quantize_weight(self.fc_weight.detach())
        fc_bias = self.fc_bias.detach()

        def run(x: Tensor) -> Tensor:
            xq = opforge.quantize_per_tensor(x, s_in, z_in, *ACTIVATION_RANGE)
            for stage in stages:
                xq = stage(xq)
            features = opforge.dequantize_per_tensor(xq, s_x, z_x, *ACTIVATION_RANGE)
            pooled = opforge.adaptive_avg_pool2d(features, [1, 1]).flatten(1)
            pq = opforge.quantize_per_tensor(pooled, s_pool, z_pool, *ACTIVATION_RANGE)
            yq = opforge.quantized_linear(
                pq, s_pool, z_pool, fc.values, fc.scales, fc.zero_points, fc_bias,
                s_out, z_out, *ACTIVATION_RANGE,
            )  # fmt: skip
            return opforge.dequantize_per_tensor(yq, s_out, z_out, *ACTIVATION_RANGE)

        return run


class SPPNet(nn.Module):
    """conv-ReLU-LRN-maxpool, conv-ReLU-LRN, spatial pyramid pool, fc-ReLU-dropout, fc,
    log_softmax. Accepts any input size at least as large as the first conv's kernel."""

    def __init__(
        self,
        c_in: int = 3,
        widths: tuple[int, int] = (12, 16),
        levels: Sequence[int] = (4, 2, 1),
        hidden: int = 32,
        num_classes: int = 10,
        p: float = 0.5,
    ) -> None:
        super().__init__()
        self.levels, self.p = list(levels), p
        self.conv1_weight = _conv_weight(widths[0], c_in, 5)
        self.conv1_bias = nn.Parameter(torch.zeros(widths[0]))
        self.conv2_weight = _conv_weight(widths[1], widths[0], 3)
        self.conv2_bias = nn.Parameter(torch.zeros(widths[1]))
        features = widths[1] * sum(n * n for n in levels)
        self.fc1_weight = nn.Parameter(torch.empty(hidden, features))
        self.fc1_bias = nn.Parameter(torch.zeros(hidden))
        self.fc2_weight = nn.Parameter(torch.empty(num_classes, hidden))
        self.fc2_bias = nn.Parameter(torch.zeros(num_classes))
        nn.init.kaiming_uniform_(self.fc1_weight, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.fc2_weight, a=math.sqrt(5))

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        x = opforge.relu(opforge.conv2d(x, self.conv1_weight, self.conv1_bias, 1, 2))
        x = opforge.local_response_norm(x, 5, 1e-4, 0.75, 2.0)
        x = opforge.max_pool2d(x, [3, 3], [2, 2])
        x = opforge.relu(opforge.conv2d(x, self.conv2_weight, self.conv2_bias, 1, 1))
        x = opforge.local_response_norm(x, 5, 1e-4, 0.75, 2.0)
        x = opforge.spatial_pyramid_pool(x, self.levels, "max")
        x = opforge.relu(opforge.linear(x, self.fc1_weight, self.fc1_bias))
        x = opforge.dropout(x, self.p, self.training, generator=generator)
        x = opforge.linear(x, self.fc2_weight, self.fc2_bias)
        return opforge.log_softmax(x, 1)


class _BatchNorm(nn.Module):
    """BatchNorm2d's parameters and running statistics, run by opforge.batch_norm."""

    def __init__(self, c: int, eps: float, momentum: float = 0.1) -> None:
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))

    def forward(self, x: Tensor) -> Tensor:
        return opforge.batch_norm(
            x,
            self.weight,
            self.bias,
            self.running_mean,
            self.running_var,
            self.training,
            self.momentum,
            self.eps,
        )

    def arguments(self) -> list[Tensor]:
        """(weight, bias, running_mean, running_var), detached: repvgg_fuse's order."""
        return [self.weight.detach(), self.bias.detach(), self.running_mean, self.running_var]


class RepVGGBlock(nn.Module):
    """A RepVGG block: relu(BN3(conv3x3(x)) + BN1(conv1x1(x)) + BNid(x)), the convolutions
    without bias, padding 1 and 0, both with `stride` and `groups`.

    The 1x1 branch is there unless `use_1x1` is False; the identity branch, by default,
    where it is defined (stride 1 and c_in == c_out). `fuse()` gives the deployment form:
    the eval-mode block as one 3x3 convolution with bias and ReLU."""

    def __init__(
        self,
        c_in: int,
        c_out: int,
        stride: int = 1,
        groups: int = 1,
        eps: float = 1e-5,
        use_1x1: bool = True,
        use_identity: bool | None = None,
    ) -> None:
        super().__init__()
        if use_identity is None:
            use_identity = stride == 1 and c_in == c_out
        if use_identity and (stride != 1 or c_in != c_out):
            raise ValueError(
                f"RepVGGBlock: the identity branch needs stride 1 and c_in == c_out, got stride "
                f"{stride}, c_in {c_in}, c_out {c_out}"
            )
        self.stride, self.groups, self.eps = stride, groups, eps
        self.weight3x3 = _conv_weight(c_out, c_in // groups, 3)
        self.bn3 = _BatchNorm(c_out, eps)
        self.weight1x1 = _conv_weight(c_out, c_in // groups, 1) if use_1x1 else None
        self.bn1 = _BatchNorm(c_out, eps) if use_1x1 else None
        self.bnid = _BatchNorm(c_out, eps) if use_identity else None

    def forward(self, x: Tensor) -> Tensor:
        y = self.bn3(opforge.conv2d(x, self.weight3x3, None, self.stride, 1, 1, self.groups))
        if self.weight1x1 is not None and self.bn1 is not None:
            y1 = opforge.conv2d(x, self.weight1x1, None, self.stride, 0, 1, self.groups)
            y = opforge.add(y, self.bn1(y1))
        if self.bnid is not None:
            y = opforge.add(y, self.bnid(x))
        return opforge.relu(y)

    @torch.no_grad()
    def folded(self) -> tuple[Tensor, Tensor]:
        """The eval-mode (weight, bias) of the one 3x3 convolution equal to the branches."""
        none: list[Tensor | None] = [None] * 4
        w1 = None if self.weight1x1 is None else self.weight1x1.detach()
        bn1 = none if self.bn1 is None else self.bn1.arguments()
        bnid = none if self.bnid is None else self.bnid.arguments()
        weight, bias = opforge.repvgg_fuse(
            self.weight3x3.detach(), *self.bn3.arguments(), w1, *bn1, *bnid, self.eps, self.groups
        )
        return weight, bias

    def fuse(self) -> Callable[[Tensor], Tensor]:
        """Inference form: the branches re-parameterized into one 3x3 convolution, run with
        its bias and the ReLU as one op. Uses the BN running statistics (eval mode)."""
        weight, bias = self.folded()
        stride, groups = self.stride, self.groups

        def run(x: Tensor) -> Tensor:
            return opforge.conv2d_bias_act(x, weight, bias, stride, 1, 1, groups, "relu")

        return run
