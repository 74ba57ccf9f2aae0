"""`torch.nn` twins of the networks in opforge.models, sharing their weights.

Used by tests/models/ and `make demo` to show the opforge networks compute what
the same layers from torch.nn compute, forward and backward. torch's dropout
draws from another random stream, so the twin takes its dropout mask from the
same seeded generator the opforge model uses (`opforge.dropout` of ones): only
the masking is shared, every other layer is torch's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import opforge
from opforge.models import ConvBN, MobileNetBlocks, SPPNet


def _conv_bn_twin(layer: ConvBN) -> nn.Sequential:
    w = layer.weight
    conv = nn.Conv2d(
        w.shape[1] * layer.groups,
        w.shape[0],
        w.shape[2],
        layer.stride,
        layer.padding,
        groups=layer.groups,
        bias=False,
    )
    bn = nn.BatchNorm2d(w.shape[0], eps=layer.eps, momentum=0.1)
    with torch.no_grad():
        conv.weight.copy_(w)
        bn.weight.copy_(layer.bn_weight)
        bn.bias.copy_(layer.bn_bias)
        bn.running_mean.copy_(layer.running_mean)  # type: ignore[operator]
        bn.running_var.copy_(layer.running_var)  # type: ignore[operator]
    return nn.Sequential(conv, bn, nn.ReLU())


def mobilenet_twin(model: MobileNetBlocks) -> nn.Sequential:
    fc = nn.Linear(model.fc_weight.shape[1], model.fc_weight.shape[0])
    with torch.no_grad():
        fc.weight.copy_(model.fc_weight)
        fc.bias.copy_(model.fc_bias)
    layers = [_conv_bn_twin(layer) for layer in model.layers if isinstance(layer, ConvBN)]
    twin = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), fc)
    return twin.to(model.fc_weight.dtype).train(model.training)


class _SpatialPyramidPool(nn.Module):
    def __init__(self, levels: list[int]) -> None:
        super().__init__()
        self.levels = levels

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([F.adaptive_max_pool2d(x, n).flatten(1) for n in self.levels], 1)


class SPPNetTwin(nn.Module):
    def __init__(self, model: SPPNet) -> None:
        super().__init__()

        def conv(w: Tensor, b: Tensor, padding: int) -> nn.Conv2d:
            c = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2], padding=padding)
            with torch.no_grad():
                c.weight.copy_(w)
                c.bias.copy_(b)
            return c

        def linear(w: Tensor, b: Tensor) -> nn.Linear:
            f = nn.Linear(w.shape[1], w.shape[0])
            with torch.no_grad():
                f.weight.copy_(w)
                f.bias.copy_(b)
            return f

        self.p = model.p
        self.features = nn.Sequential(
            conv(model.conv1_weight, model.conv1_bias, 2),
            nn.ReLU(),
            nn.LocalResponseNorm(5, 1e-4, 0.75, 2.0),
            nn.MaxPool2d(3, 2),
            conv(model.conv2_weight, model.conv2_bias, 1),
            nn.ReLU(),
            nn.LocalResponseNorm(5, 1e-4, 0.75, 2.0),
            _SpatialPyramidPool(model.levels),
        )
        self.fc1 = linear(model.fc1_weight, model.fc1_bias)
        self.fc2 = linear(model.fc2_weight, model.fc2_bias)
        self.to(model.fc1_weight.dtype).train(model.training)

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        x = F.relu(self.fc1(self.features(x)))
        if self.training and self.p > 0:
            x = x * opforge.dropout(torch.ones_like(x), self.p, True, generator=generator)
        return F.log_softmax(self.fc2(x), 1)
