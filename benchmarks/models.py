"""Whole networks, opforge against ATen in one run: ResNet-18 and MobileNetV2 written once
over a table of ops (opforge's or torch.nn.functional's), and the two models of
opforge/models.py against their torch.nn twins; eval and a training step (forward,
backward), contiguous and channels_last.

Run: `.venv/bin/python benchmarks/models.py [--only resnet] [--budget 1.0]`. The table
prints opforge / ATen time per case (medians of alternated repetitions, see
benchmarks/ops.py); target <= 1.0. MobileNetV2 uses ReLU where torchvision's uses ReLU6
(opforge has no ReLU6), in both columns.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import opforge  # noqa: E402
from benchmarks.ops import time_pair  # noqa: E402
from opforge import model_twins, models  # noqa: E402


@dataclass(frozen=True)
class Ops:
    """The functional ops a network's forward calls."""

    conv2d: Callable[..., Tensor]
    batch_norm: Callable[..., Tensor]
    relu: Callable[[Tensor], Tensor]
    max_pool2d: Callable[..., Tensor]
    adaptive_avg_pool2d: Callable[..., Tensor]
    linear: Callable[..., Tensor]
    add: Callable[[Tensor, Tensor], Tensor]


def _opforge_batch_norm(x: Tensor, mean: Any, var: Any, w: Any, b: Any, *rest: Any) -> Tensor:
    """F.batch_norm's argument order (running statistics first) over opforge.batch_norm's."""
    return opforge.batch_norm(x, w, b, mean, var, *rest)


OPFORGE = Ops(
    opforge.conv2d,
    _opforge_batch_norm,
    opforge.relu,
    opforge.max_pool2d,
    opforge.adaptive_avg_pool2d,
    opforge.linear,
    lambda a, b: opforge.add(a, b),
)
ATEN = Ops(F.conv2d, F.batch_norm, F.relu, F.max_pool2d, F.adaptive_avg_pool2d, F.linear, torch.add)


class ConvBN(nn.Module):
    def __init__(self, c_in: int, c_out: int, k: int, stride: int = 1, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def run(self, ops: Ops, x: Tensor, act: bool = True) -> Tensor:
        c, bn = self.conv, self.bn
        y = ops.conv2d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups)
        y = ops.batch_norm(
            y, bn.running_mean, bn.running_var, bn.weight, bn.bias, self.training, 0.1, bn.eps
        )
        return ops.relu(y) if act else y


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.a = ConvBN(c_in, c_out, 3, stride)
        self.b = ConvBN(c_out, c_out, 3)
        self.down = ConvBN(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

    def run(self, ops: Ops, x: Tensor) -> Tensor:
        y = self.b.run(ops, self.a.run(ops, x), act=False)
        skip = self.down.run(ops, x, act=False) if self.down is not None else x
        return ops.relu(ops.add(y, skip))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout: 7x7 stem, max pool, four stages of two blocks."""

    def __init__(self, ops: Ops, classes: int = 1000) -> None:
        super().__init__()
        self.ops = ops
        self.stem = ConvBN(3, 64, 7, 2)
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        self.blocks = nn.ModuleList(
            BasicBlock(c_in if i == 0 else c_out, c_out, stride if i == 0 else 1)
            for c_in, c_out, stride in widths
            for i in range(2)
        )
        self.fc = nn.Linear(512, classes)

    def forward(self, x: Tensor) -> Tensor:
        ops = self.ops
        x = ops.max_pool2d(self.stem.run(ops, x), 3, 2, 1)
        for block in self.blocks:
            x = block.run(ops, x)
        x = ops.adaptive_avg_pool2d(x, 1).flatten(1)
        return ops.linear(x, self.fc.weight, self.fc.bias)


class InvertedResidual(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = c_in * expand
        self.expand = ConvBN(c_in, hidden, 1) if expand != 1 else None
        self.depthwise = ConvBN(hidden, hidden, 3, stride, groups=hidden)
        self.project = ConvBN(hidden, c_out, 1)
        self.residual = stride == 1 and c_in == c_out

    def run(self, ops: Ops, x: Tensor) -> Tensor:
        y = self.expand.run(ops, x) if self.expand is not None else x
        y = self.project.run(ops, self.depthwise.run(ops, y), act=False)
        return ops.add(x, y) if self.residual else y


class MobileNetV2(nn.Module):
    """torchvision's mobilenet_v2 layout (width 1.0), ReLU for ReLU6."""

    _SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
    _SETTINGS += [(6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, ops: Ops, classes: int = 1000) -> None:
        super().__init__()
        self.ops = ops
        self.stem = ConvBN(3, 32, 3, 2)
        blocks = []
        c_in = 32
        for t, c, n, s in self._SETTINGS:
            for i in range(n):
                blocks.append(InvertedResidual(c_in, c, s if i == 0 else 1, t))
                c_in = c
        self.blocks = nn.ModuleList(blocks)
        self.head = ConvBN(c_in, 1280, 1)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x: Tensor) -> Tensor:
        ops = self.ops
        x = self.stem.run(ops, x)
        for block in self.blocks:
            x = block.run(ops, x)
        x = ops.adaptive_avg_pool2d(self.head.run(ops, x), 1).flatten(1)
        return ops.linear(x, self.fc.weight, self.fc.bias)


def network_pair(build: Callable[[Ops], nn.Module]) -> tuple[nn.Module, nn.Module]:
    """The same network (same parameters) over opforge's ops and over ATen's."""
    torch.manual_seed(0)
    ours = build(OPFORGE)
    aten = build(ATEN)
    aten.load_state_dict(ours.state_dict())
    return ours, aten


def _opforge_models() -> dict[str, tuple[nn.Module, nn.Module]]:
    torch.manual_seed(0)
    mobile = models.MobileNetBlocks()
    spp = models.SPPNet()
    return {
        "MobileNetBlocks": (mobile, model_twins.mobilenet_twin(mobile)),
        "SPPNet": (spp, model_twins.SPPNetTwin(spp)),
    }


def _eval(model: nn.Module, x: Tensor) -> Callable[[], Any]:
    model.eval()

    def run() -> Any:
        with torch.no_grad():
            return model(x)

    return run


def _train_step(model: nn.Module, x: Tensor) -> Callable[[], Any]:
    model.train()

    def run() -> None:
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()

    return run


def _cases() -> list[tuple[str, Callable[[], tuple[nn.Module, nn.Module]], int, int]]:
    """(name, models, eval size, training size)."""
    nets: list[tuple[str, Callable[[], tuple[nn.Module, nn.Module]], int, int]] = [
        ("ResNet-18", lambda: network_pair(ResNet18), 128, 96),
        ("MobileNetV2", lambda: network_pair(MobileNetV2), 128, 96),
    ]
    nets += [(name, lambda n=name: _opforge_models()[n], 128, 96) for name in _opforge_models()]
    return nets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run models whose name contains this")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per side per timing")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    info = opforge.build_info()
    print(
        f"opforge / ATen time, float32, cpu, {torch.get_num_threads()} threads, "
        f"batch {args.batch}, CPU kernels: {info['cpu_capability']}"
    )
    print(f"{'model':18s} {'mode':12s} {'layout':14s} {'ratio':>6s} {'opforge ms':>11s}")
    misses = []
    for name, build, eval_size, train_size in _cases():
        if args.only.lower() not in name.lower():
            continue
        ours, aten = build()
        for layout in (torch.contiguous_format, torch.channels_last):
            layout_name = "channels_last" if layout is torch.channels_last else "contiguous"
            ours, aten = ours.to(memory_format=layout), aten.to(memory_format=layout)
            for mode, size, make in (
                ("eval", eval_size, _eval),
                ("train step", train_size, _train_step),
            ):
                x = torch.randn(args.batch, 3, size, size).contiguous(memory_format=layout)
                t_ours, t_aten = time_pair(
                    make(ours, x), make(aten, x), torch.device("cpu"), args.budget
                )
                ratio = t_ours / t_aten
                print(f"{name:18s} {mode:12s} {layout_name:14s} {ratio:6.2f} {t_ours * 1e3:11.1f}")
                if ratio > 1.0:
                    misses.append(f"{name} {mode} {layout_name} {ratio:.2f}")
    print("\nabove 1.0: " + ("; ".join(misses) if misses else "none"))


if __name__ == "__main__":
    main()
