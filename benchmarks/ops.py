"""opforge vs ATen on realistic shapes: forward and forward+backward time ratios from one run.

Run: `.venv/bin/python benchmarks/ops.py [--device cuda] [--only conv]` (also `make bench`).
Prints one row per case: opforge time / ATen time (lower is better; 1.00 = parity)
for the forward pass and for forward + backward, next to the case's target. Both
sides are timed alternately in the same process (these machines are shared and
noisy, so only ratios from one run are meaningful); each figure is the median of
several timed repeats after a warm-up.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

import opforge

Fn = Callable[..., Any]


@dataclass(frozen=True)
class Case:
    name: str
    shape: str
    inputs: Callable[[torch.device], list[Any]]  # tensors that may require grad come first
    ours: Fn
    aten: Fn
    target: float  # forward ratio target (forward+backward: `target_bwd`)
    target_bwd: float | None = None  # None: same as target; 0: no backward timed
    grad_inputs: int = 1  # how many leading inputs get gradients


def _randn(*shape: int) -> Callable[[torch.device], list[Any]]:
    return lambda d: [torch.randn(*shape, device=d)]


def _with(*extra: Callable[[torch.device], Any], shape: tuple[int, ...]) -> Callable[..., Any]:
    return lambda d: [torch.randn(*shape, device=d), *(e(d) for e in extra)]


ACT = (4, 64, 128, 128)  # 4M activations
ELEMENTWISE: list[tuple[str, Fn, Fn]] = [
    ("relu", opforge.relu, torch.relu),
    ("gelu", opforge.gelu, F.gelu),
    ("leaky_relu", opforge.leaky_relu, F.leaky_relu),
    ("elu", opforge.elu, F.elu),
    ("softplus", opforge.softplus, F.softplus),
    ("sigmoid", opforge.sigmoid, torch.sigmoid),
    ("tanh", opforge.tanh, torch.tanh),
    ("silu", opforge.silu, F.silu),
    ("hardsigmoid", opforge.hardsigmoid, F.hardsigmoid),
    ("hardswish", opforge.hardswish, F.hardswish),
]


def _op(name: str) -> Fn:
    """opforge.<name>, or a stand-in that says the op is missing from this build."""
    fn = getattr(opforge, name, None)
    if fn is None:

        def missing(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(f"opforge.{name} is not in this build")

        return missing
    return fn  # type: ignore[no-any-return]


def _bn_eval(x: Tensor, w: Tensor, b: Tensor, bn: list[Tensor]) -> Tensor:
    gamma, beta, mean, var = bn
    return F.relu(F.batch_norm(F.conv2d(x, w, b, 1, 1), mean, var, gamma, beta, False))


def _fused(x: Tensor, w: Tensor, b: Tensor, folded: tuple[Tensor, Tensor]) -> Tensor:
    out: Tensor = _op("conv2d_bias_act")(x, folded[0], folded[1], 1, 1, 1, 1, "relu")
    return out


def _bn_params(c: int) -> Callable[[torch.device], list[Tensor]]:
    return lambda d: [
        torch.rand(c, device=d) + 0.5,
        torch.randn(c, device=d),
        torch.randn(c, device=d),
        torch.rand(c, device=d) + 0.5,
    ]


def _fold(w: Tensor, b: Tensor, bn: list[Tensor]) -> tuple[Tensor, Tensor]:
    return _op("fold_conv_bn")(w, b, bn[0], bn[1], bn[2], bn[3], 1e-5)  # type: ignore[no-any-return]


def _conv_bias_act_inputs(d: torch.device) -> list[Any]:
    x = torch.randn(8, 64, 56, 56, device=d)
    w = torch.randn(64, 64, 3, 3, device=d) * 0.05
    b = torch.randn(64, device=d)
    bn = _bn_params(64)(d)
    return [x, w, b, bn]


def _batch_norm_inputs(shape: tuple[int, ...], training: bool) -> Callable[..., Any]:
    """x, weight, bias, running mean and var, training."""
    c = shape[1]
    return _with(
        lambda d: torch.rand(c, device=d),
        lambda d: torch.rand(c, device=d),
        lambda d: torch.zeros(c, device=d),
        lambda d: torch.ones(c, device=d),
        lambda d: training,
        shape=shape,
    )


def _group_norm_inputs(shape: tuple[int, ...]) -> Callable[..., Any]:
    """x, 32 groups, weight, bias."""
    c = shape[1]
    return _with(
        lambda d: 32,
        lambda d: torch.rand(c, device=d),
        lambda d: torch.rand(c, device=d),
        shape=shape,
    )


def _spp_ref(x: Tensor, levels: list[int], mode: str) -> Tensor:
    return torch.cat([F.adaptive_max_pool2d(x, n).flatten(1) for n in levels], 1)


def _channels_last(*shape: int) -> Callable[[torch.device], list[Any]]:
    return lambda d: [torch.randn(*shape, device=d).contiguous(memory_format=torch.channels_last)]


def _two(*shape: int) -> Callable[[torch.device], list[Any]]:
    return lambda d: [torch.randn(*shape, device=d), torch.randn(*shape, device=d)]


def _out(fn: Fn, *args: Any) -> Fn:
    """fn(x, *args, out=buffer) with one buffer reused across calls (resized by the first)."""
    buffers: dict[tuple[Any, ...], Tensor] = {}

    def run(x: Tensor) -> Any:
        key = (x.shape, x.dtype, x.device)
        if key not in buffers:
            buffers[key] = torch.empty(0, dtype=x.dtype, device=x.device)
        return fn(x, *args, out=buffers[key])

    return run


def _variant_cases() -> list[Case]:
    """Real in-place and out= kernels (no compute-then-copy) and channels_last layouts,
    against ATen's op and against opforge's own functional op."""
    return [
        Case("relu_ (in-place)", str(ACT), _randn(*ACT), opforge.relu_, torch.relu_, 1.1, 0),
        Case("relu_ vs opforge.relu", str(ACT), _randn(*ACT), opforge.relu_, opforge.relu, 1.0, 0),
        Case(
            "sigmoid out=",
            str(ACT),
            _randn(*ACT),
            _out(opforge.sigmoid),
            _out(torch.sigmoid),
            1.1,
            0,
        ),
        Case(
            "sigmoid out= vs opforge.sigmoid",
            str(ACT),
            _randn(*ACT),
            _out(opforge.sigmoid),
            opforge.sigmoid,
            1.0,
            0,
        ),
        Case("add_ (in-place)", str(ACT), _two(*ACT), opforge.add_, torch.Tensor.add_, 1.1, 0),
        Case("add_ vs opforge.add", str(ACT), _two(*ACT), opforge.add_, opforge.add, 1.0, 0),
        # Structured out= (Note [Structured out=]): the kernel writes into `out`.
        Case(
            "softmax out=",
            "(4096, 1024)",
            _randn(4096, 1024),
            _out(opforge.softmax, 1),
            _out(torch.softmax, 1),
            1.1,
            0,
        ),
        Case(
            "softmax out= vs opforge.softmax",
            "(4096, 1024)",
            _randn(4096, 1024),
            _out(opforge.softmax, 1),
            lambda x: opforge.softmax(x, 1),
            1.0,
            0,
        ),
        Case(
            "avg_pool2d out=",
            str(ACT),
            _randn(*ACT),
            _out(opforge.avg_pool2d, 2),
            _out(torch._C._nn.avg_pool2d, 2),
            1.1,
            0,
        ),
        Case(
            "avg_pool2d out= vs opforge.avg_pool2d",
            str(ACT),
            _randn(*ACT),
            _out(opforge.avg_pool2d, 2),
            lambda x: opforge.avg_pool2d(x, 2),
            1.0,
            0,
        ),
        Case("relu channels_last", str(ACT), _channels_last(*ACT), opforge.relu, torch.relu, 1.0),
        Case(
            "sigmoid channels_last",
            str(ACT),
            _channels_last(*ACT),
            opforge.sigmoid,
            torch.sigmoid,
            1.1,
        ),
    ]


def _loss_cases() -> list[Case]:
    """The pointwise losses, 'mean' over 4M elements (ATen's is the elementwise loss then
    a mean, as opforge's)."""

    def pair(second: Callable[[Tensor], Tensor]) -> Callable[[torch.device], list[Any]]:
        return lambda d: [torch.randn(*ACT, device=d), second(torch.randn(*ACT, device=d))]

    same = pair(lambda t: t)
    probs = pair(torch.sigmoid)
    return [
        Case("mse_loss", str(ACT), same, opforge.mse_loss, F.mse_loss, 1.1),
        Case("smooth_l1_loss", str(ACT), same, opforge.smooth_l1_loss, F.smooth_l1_loss, 1.1),
        Case(
            "binary_cross_entropy_with_logits",
            str(ACT),
            probs,
            opforge.binary_cross_entropy_with_logits,
            F.binary_cross_entropy_with_logits,
            1.1,
        ),
        Case(
            "kl_div batchmean",
            str(ACT),
            probs,
            lambda x, t: opforge.kl_div(x, t, "batchmean"),
            lambda x, t: F.kl_div(x, t, reduction="batchmean"),
            1.1,
        ),
        *_classification_loss_cases(),
    ]


def _classification_loss_cases() -> list[Case]:
    """cross_entropy (one fused pass; ATen's is log_softmax then nll_loss) over ImageNet-sized
    rows and over a segmentation map (classes strided), and nll_loss."""

    def logits(*shape: int) -> Callable[[torch.device], list[Any]]:
        target_shape = (shape[0], *shape[2:])
        return lambda d: [
            torch.randn(*shape, device=d),
            torch.randint(0, shape[1], target_shape, device=d),
        ]

    return [
        Case(
            "cross_entropy",
            "(1024, 1000)",
            logits(1024, 1000),
            opforge.cross_entropy,
            F.cross_entropy,
            1.0,
        ),
        Case(
            "cross_entropy label_smoothing",
            "(1024, 1000)",
            logits(1024, 1000),
            lambda x, t: opforge.cross_entropy(x, t, label_smoothing=0.1),
            lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
            1.0,
        ),
        Case(
            "cross_entropy",
            "(4, 21, 128, 128)",
            logits(4, 21, 128, 128),
            opforge.cross_entropy,
            F.cross_entropy,
            1.0,
        ),
        Case("nll_loss", "(1024, 1000)", logits(1024, 1000), opforge.nll_loss, F.nll_loss, 1.1),
    ]


def _init_and_quantize_cases() -> list[Case]:
    """Parameter initialization in place (torch.nn.init's fills, no backward) over a
    ResNet-sized conv weight, and fake quantization with its straight-through backward."""
    weight = (512, 512, 3, 3)
    qargs = (0.05, 3, -128, 127)
    return [
        Case(
            "kaiming_uniform_",
            str(weight),
            _randn(*weight),
            opforge.kaiming_uniform_,
            torch.nn.init.kaiming_uniform_,
            1.1,
            target_bwd=0,
        ),
        Case(
            "trunc_normal_",
            str(weight),
            _randn(*weight),
            opforge.trunc_normal_,
            torch.nn.init.trunc_normal_,
            1.1,
            target_bwd=0,
        ),
        Case(
            "fake_quantize_per_tensor_affine",
            str(ACT),
            _randn(*ACT),
            lambda x: opforge.fake_quantize_per_tensor_affine(x, *qargs),
            lambda x: torch.fake_quantize_per_tensor_affine(x, *qargs),
            1.1,
        ),
        Case(
            "fake_quantize_learnable_per_tensor_affine",
            str(ACT),
            lambda d: [
                torch.randn(*ACT, device=d),
                torch.full((1,), 0.05, device=d),
                torch.full((1,), 3.0, device=d),
            ],
            lambda x, s, z: opforge.fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 255),
            lambda x, s, z: torch._fake_quantize_learnable_per_tensor_affine(x, s, z, 0, 255),
            1.1,
            grad_inputs=3,
        ),
        Case(
            "fake_quantize_learnable_per_channel_affine",
            str(ACT),
            lambda d: [
                torch.randn(*ACT, device=d),
                torch.full((ACT[1],), 0.05, device=d),
                torch.full((ACT[1],), 3.0, device=d),
            ],
            lambda x, s, z: opforge.fake_quantize_learnable_per_channel_affine(x, s, z, 1, 0, 255),
            lambda x, s, z: torch._fake_quantize_learnable_per_channel_affine(x, s, z, 1, 0, 255),
            1.1,
            grad_inputs=3,
        ),
        *_quantization_and_pruning_cases(),
        *_box_cases(),
    ]


def _boxes(n: int, seed: int) -> Callable[[torch.device], Tensor]:
    """n valid (x1, y1, x2, y2) boxes in a 1000 x 1000 image."""

    def make(d: torch.device) -> Tensor:
        g = torch.Generator().manual_seed(seed)
        corner = torch.rand(n, 2, generator=g) * 900
        return torch.cat([corner, corner + torch.rand(n, 2, generator=g) * 100 + 1], 1).to(d)

    return make


def _box_cases() -> list[Case]:
    """Detection boxes (schemas/boxes.yaml) against torchvision: IoU of 1000 boxes against
    10000 (a proposal-matching step) and BoxCoder.decode_single of 20000 boxes."""
    import torchvision
    from torchvision.models.detection._utils import BoxCoder

    coder = BoxCoder((10.0, 10.0, 5.0, 5.0))
    return [
        Case(
            "box_iou",
            "(1000, 4) x (10000, 4)",
            lambda d: [_boxes(1000, 0)(d), _boxes(10000, 1)(d)],
            _op("box_iou"),
            torchvision.ops.box_iou,
            1.0,
        ),
        Case(
            "generalized_box_iou",
            "(1000, 4) x (10000, 4)",
            lambda d: [_boxes(1000, 0)(d), _boxes(10000, 1)(d)],
            _op("generalized_box_iou"),
            torchvision.ops.generalized_box_iou,
            1.0,
        ),
        Case(
            "box_decode",
            "(20000, 4)",
            lambda d: [torch.randn(20000, 4, device=d), _boxes(20000, 2)(d)],
            lambda codes, boxes: _op("box_decode")(codes, boxes, coder.weights),
            coder.decode_single,
            1.0,
        ),
    ]


def _quantization_and_pruning_cases() -> list[Case]:
    """Quantize/dequantize against quantized_decomposed (what PT2E graphs call), the observer
    against torch.aminmax, the integer products against torch._int_mm and the decomposed
    dequantize -> linear -> quantize, the pruning criteria against torch.nn.utils.prune's;
    no backward."""
    from opforge.reference import _decomposed

    d = _decomposed()
    q = (0.05, 3, -128, 127, torch.int8)
    channels = ACT[1]
    per_channel = (lambda dev: torch.full((channels,), 0.05, device=dev),
                   lambda dev: torch.zeros(channels, dtype=torch.int32, device=dev))  # fmt: skip
    int8 = lambda *shape: lambda dev: torch.randint(-128, 128, shape, device=dev, dtype=torch.int8)  # noqa: E731
    from torch.nn.utils import prune

    conv_w = (512, 512, 3, 3)
    m, k, n = 512, 1024, 1024
    linear_q = (0.05, 0, 0.01, 0, -128, 127, torch.int8)

    def linear_ours(x: Any, w: Any, ws: Any, wz: Any, b: Any) -> Any:
        return opforge.quantized_linear(x, 0.05, 0, w, ws, wz, b, 0.01, 0, -128, 127, torch.int8)

    def linear_decomposed(x: Any, w: Any, ws: Any, wz: Any, b: Any) -> Any:
        x_f = d.dequantize_per_tensor(x, 0.05, 0, -128, 127, torch.int8)
        w_f = d.dequantize_per_channel(w, ws, wz, 0, -128, 127, torch.int8)
        return d.quantize_per_tensor(F.linear(x_f, w_f, b), *linear_q[2:])

    # A MobileNet-sized layer pair: a 3x3 depthwise and a 1x1 pointwise conv on 56x56.
    conv_q = (0.05, 0, 0.01, 0, -128, 127, torch.int8)

    def conv_ours(groups: int, padding: int) -> Any:
        def run(x: Any, w: Any, ws: Any, wz: Any, b: Any) -> Any:
            return opforge.quantized_conv2d(
                x, 0.05, 0, w, ws, wz, b, *conv_q[2:], 1, padding, 1, groups
            )

        return run

    def conv_decomposed(groups: int, padding: int) -> Any:
        def run(x: Any, w: Any, ws: Any, wz: Any, b: Any) -> Any:
            x_f = d.dequantize_per_tensor(x, 0.05, 0, -128, 127, torch.int8)
            w_f = d.dequantize_per_channel(w, ws, wz, 0, -128, 127, torch.int8)
            y = F.conv2d(x_f, w_f, b, 1, padding, 1, groups)
            return d.quantize_per_tensor(y, *conv_q[2:])

        return run

    def conv_inputs(x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> Any:
        c = w_shape[0]
        return lambda dev: [int8(*x_shape)(dev), int8(*w_shape)(dev), torch.full((c,), 0.002, device=dev),
                            torch.zeros(c, dtype=torch.int32, device=dev), torch.zeros(c, device=dev)]  # fmt: skip

    def observe_ours(x: Any) -> Any:
        lo, hi = torch.tensor(-1.0, device=x.device), torch.tensor(1.0, device=x.device)
        opforge.minmax_observer_update_(lo, hi, x)
        return lo, hi

    def observe_torch(x: Any) -> Any:
        lo, hi = torch.aminmax(x)
        return torch.min(lo, torch.tensor(-1.0, device=x.device)), torch.max(
            hi, torch.tensor(1.0, device=x.device)
        )

    return [
        Case("quantize_per_tensor", str(ACT), _randn(*ACT),
             lambda x: opforge.quantize_per_tensor(x, *q), lambda x: d.quantize_per_tensor(x, *q),
             1.1, target_bwd=0),
        Case("dequantize_per_tensor", str(ACT), lambda dev: [int8(*ACT)(dev)],
             lambda x: opforge.dequantize_per_tensor(x, *q), lambda x: d.dequantize_per_tensor(x, *q),
             1.1, target_bwd=0),
        Case("quantize_per_channel", str(ACT), _with(*per_channel, shape=ACT),
             lambda x, s, z: opforge.quantize_per_channel(x, s, z, 1, -128, 127, torch.int8),
             lambda x, s, z: d.quantize_per_channel(x, s, z, 1, -128, 127, torch.int8),
             1.1, target_bwd=0),
        Case("minmax_observer_update_", str(ACT), _randn(*ACT), observe_ours, observe_torch,
             1.1, target_bwd=0),
        Case("channel_norm", str(conv_w), _randn(*conv_w),
             lambda w: opforge.channel_norm(w, 1.0, 0),
             lambda w: torch.linalg.vector_norm(w, 1.0, dim=[1, 2, 3]), 1.1, target_bwd=0),
        Case("ln_structured_mask", str(conv_w), _randn(*conv_w),
             lambda w: opforge.ln_structured_mask(w, 0.5, 1.0, 0),
             lambda w: prune.LnStructured(0.5, 1.0, dim=0).compute_mask(w, torch.ones_like(w)),
             1.1, target_bwd=0),
        Case("magnitude_prune_mask", str(conv_w), _randn(*conv_w),
             lambda w: opforge.magnitude_prune_mask(w, 0.5),
             lambda w: prune.L1Unstructured(0.5).compute_mask(w, torch.ones_like(w)),
             1.1, target_bwd=0),
        Case("int8_mm", f"{m}x{k}x{n}", lambda dev: [int8(m, k)(dev), int8(k, n)(dev)],
             opforge.int8_mm, torch._int_mm, 1.1, target_bwd=0),
        Case("quantized_linear", f"{m}x{k}x{n}",
             lambda dev: [int8(m, k)(dev), int8(n, k)(dev), torch.full((n,), 0.002, device=dev),
                          torch.zeros(n, dtype=torch.int32, device=dev), torch.zeros(n, device=dev)],
             linear_ours, linear_decomposed, 1.1, target_bwd=0),
        Case("quantized_conv2d", "depthwise 3x3 (8, 64, 56, 56)",
             conv_inputs((8, 64, 56, 56), (64, 1, 3, 3)), conv_ours(64, 1), conv_decomposed(64, 1),
             1.1, target_bwd=0),
        Case("quantized_conv2d", "pointwise (8, 64, 56, 56) -> 128",
             conv_inputs((8, 64, 56, 56), (128, 64, 1, 1)), conv_ours(1, 0), conv_decomposed(1, 0),
             1.1, target_bwd=0),
        Case("quantized_conv2d", "3x3 (8, 64, 28, 28) -> 64",
             conv_inputs((8, 64, 28, 28), (64, 64, 3, 3)), conv_ours(1, 1), conv_decomposed(1, 1),
             1.1, target_bwd=0),
    ]  # fmt: skip


def _nms_inputs(n: int, categories: int = 0) -> Callable[[torch.device], list[Any]]:
    """n boxes of a detector's crowded proposals (many overlaps), scores, and categories."""

    def make(d: torch.device) -> list[Any]:
        g = torch.Generator().manual_seed(0)
        xy = torch.rand(n, 2, generator=g) * 800
        boxes = torch.cat([xy, xy + 16 + torch.rand(n, 2, generator=g) * 160], 1)
        extra = [torch.randint(0, categories, (n,), generator=g)] if categories else []
        return [t.to(d) for t in (boxes, torch.rand(n, generator=g), *extra)]

    return make


def _detection_cases() -> list[Case]:
    import torchvision

    ops = torchvision.ops
    return [
        Case("nms", "10^4 boxes, IoU 0.5", _nms_inputs(10_000),
             lambda b, s: opforge.nms(b, s, 0.5), lambda b, s: ops.nms(b, s, 0.5), 1.0, target_bwd=0),
        Case("batched_nms", "10^4 boxes, 80 classes", _nms_inputs(10_000, 80),
             lambda b, s, i: opforge.batched_nms(b, s, i, 0.5),
             lambda b, s, i: ops.batched_nms(b, s, i, 0.5), 1.0, target_bwd=0),
    ]  # fmt: skip


def _roi_inputs(d: torch.device) -> list[Any]:
    """Faster R-CNN's box head: a stride-16 feature map of an 800 x 1088 image pair and
    512 proposals (batch index, x1, y1, x2, y2) in image coordinates."""
    g = torch.Generator().manual_seed(0)
    corners = torch.rand(512, 2, 2, generator=g) * torch.tensor([1088.0, 800.0])
    lo, hi = corners.min(1).values, corners.max(1).values
    batch = torch.randint(0, 2, (512, 1), generator=g).float()
    return [torch.randn(2, 256, 50, 68, device=d), torch.cat([batch, lo, hi], 1).to(d)]


def _roi_cases() -> list[Case]:
    import torchvision.ops as tv  # a test dependency (requirements.txt)

    shape = "x(2, 256, 50, 68) 512 boxes"
    return [
        Case(
            "roi_align 7x7 sr=2 aligned",
            shape,
            _roi_inputs,
            lambda x, b: opforge.roi_align(x, b, [7, 7], 1 / 16, 2, True),
            lambda x, b: tv.roi_align(x, b, [7, 7], 1 / 16, 2, True),
            1.0,
        ),
        Case(
            "roi_pool 7x7",
            shape,
            _roi_inputs,
            lambda x, b: opforge.roi_pool(x, b, [7, 7], 1 / 16),
            lambda x, b: tv.roi_pool(x, b, [7, 7], 1 / 16),
            1.0,
        ),
    ]


def _cases() -> list[Case]:
    cases = [Case(n, str(ACT), _randn(*ACT), ours, aten, 1.1) for n, ours, aten in ELEMENTWISE]
    cases += _variant_cases() + _loss_cases() + _init_and_quantize_cases()
    cases += _detection_cases() + _roi_cases()
    prelu_in = _with(lambda d: torch.rand(64, device=d), shape=ACT)
    cases += [
        Case("prelu", str(ACT), prelu_in, opforge.prelu, F.prelu, 1.1, grad_inputs=2),
        Case(
            "add",
            str(ACT),
            _with(lambda d: torch.randn(*ACT, device=d), shape=ACT),
            opforge.add,
            torch.add,
            1.1,
            grad_inputs=2,
        ),
        Case("sum", str(ACT), _with(lambda d: [1], shape=ACT), opforge.sum, torch.sum, 1.1),
        Case(
            "softmax",
            "(8192, 1024)",
            _with(lambda d: 1, shape=(8192, 1024)),
            opforge.softmax,
            torch.softmax,
            1.25,
        ),
        Case(
            "log_softmax",
            "(8192, 1024)",
            _with(lambda d: 1, shape=(8192, 1024)),
            opforge.log_softmax,
            torch.log_softmax,
            1.25,
        ),
    ]
    bn_shape = (8, 64, 56, 56)
    cases += [
        Case(
            "batch_norm (train)",
            str(bn_shape),
            _batch_norm_inputs(bn_shape, training=True),
            _op("batch_norm"),
            lambda x, w, b, mean, var, train: F.batch_norm(x, mean, var, w, b, train),
            1.25,
            grad_inputs=3,
        ),
        Case(
            "layer_norm",
            "(8192, 768)",
            _with(
                lambda d: [768],
                lambda d: torch.rand(768, device=d),
                lambda d: torch.rand(768, device=d),
                shape=(8192, 768),
            ),
            _op("layer_norm"),
            F.layer_norm,
            1.25,
        ),
        Case(
            "group_norm (32 groups)",
            str(bn_shape),
            _group_norm_inputs(bn_shape),
            _op("group_norm"),
            F.group_norm,
            1.25,
        ),
        Case(
            "local_response_norm",
            "(8, 96, 27, 27)",
            _with(lambda d: 5, shape=(8, 96, 27, 27)),
            _op("local_response_norm"),
            F.local_response_norm,
            1.25,
        ),
    ]

    def conv(name: str, x: tuple[int, ...], w: tuple[int, ...], target: float, **kw: Any) -> Case:
        args = [kw.get("stride", 1), kw.get("padding", 0), 1, kw.get("groups", 1)]
        return Case(
            name,
            f"x{x} w{w}",
            _with(lambda d: torch.randn(*w, device=d) * 0.05, lambda d: None, shape=x),
            lambda x, w, b: _op("conv2d")(x, w, b, *args),
            lambda x, w, b: F.conv2d(x, w, b, *args),
            target,
            2.0 if target == 1.5 else target,
            grad_inputs=2,
        )

    cases += [
        conv("conv2d 3x3 dense", (8, 64, 56, 56), (64, 64, 3, 3), 1.5, padding=1),
        conv("conv2d 3x3 depthwise", (8, 32, 112, 112), (32, 1, 3, 3), 1.2, padding=1, groups=32),
        conv("conv2d 1x1 pointwise", (8, 128, 28, 28), (256, 128, 1, 1), 1.5),
        Case(
            "conv_transpose2d 4x4 s2",
            "x(8, 64, 28, 28) w(64, 32, 4, 4)",
            _with(lambda d: torch.randn(64, 32, 4, 4, device=d) * 0.05, shape=(8, 64, 28, 28)),
            lambda x, w: _op("conv_transpose2d")(x, w, None, 2, 1),
            lambda x, w: F.conv_transpose2d(x, w, None, 2, 1),
            1.5,
            2.0,
            grad_inputs=2,
        ),
        Case(
            "conv2d_bias_act vs conv+bn+relu",
            "x(8, 64, 56, 56) w(64, 64, 3, 3)",
            _conv_bias_act_inputs,
            lambda x, w, b, bn: _fused(x, w, b, _fold(w, b, bn)),
            _bn_eval,
            1 / 1.3,
            0,
            grad_inputs=0,
        ),
        Case(
            "fold_conv_bn",
            "w(256, 256, 3, 3)",
            lambda d: (
                [torch.randn(256, 256, 3, 3, device=d), torch.randn(256, device=d)]
                + [_bn_params(256)(d)]
            ),
            lambda w, b, bn: _fold(w, b, bn),
            lambda w, b, bn: torch.nn.utils.fusion.fuse_conv_bn_weights(
                w, b, bn[2], bn[3], 1e-5, bn[0], bn[1]
            ),
            1.1,
            0,
            grad_inputs=0,
        ),
    ]
    pool = (8, 64, 112, 112)
    cases += [
        Case(
            "max_pool2d 3x3 s2",
            str(pool),
            _with(lambda d: [3, 3], lambda d: [2, 2], lambda d: [1, 1], shape=pool),
            _op("max_pool2d"),
            F.max_pool2d,
            1.1,
        ),
        Case(
            "avg_pool2d 2x2",
            str(pool),
            _with(lambda d: [2, 2], shape=pool),
            _op("avg_pool2d"),
            F.avg_pool2d,
            1.1,
        ),
        Case(
            "adaptive_avg_pool2d 1x1",
            "(8, 512, 7, 7)",
            _with(lambda d: [1, 1], shape=(8, 512, 7, 7)),
            _op("adaptive_avg_pool2d"),
            F.adaptive_avg_pool2d,
            1.1,
        ),
        Case(
            "adaptive_max_pool2d 6x6",
            "(8, 256, 13, 13)",
            _with(lambda d: [6, 6], shape=(8, 256, 13, 13)),
            _op("adaptive_max_pool2d"),
            F.adaptive_max_pool2d,
            1.1,
        ),
        Case(
            "spatial_pyramid_pool [4,2,1]",
            "(8, 256, 13, 13)",
            _with(lambda d: [4, 2, 1], lambda d: "max", shape=(8, 256, 13, 13)),
            _op("spatial_pyramid_pool"),
            _spp_ref,
            1.1,
        ),
        Case(
            "linear",
            "x(8192, 1024) w(1024, 1024)",
            _with(
                lambda d: torch.randn(1024, 1024, device=d) * 0.03,
                lambda d: torch.randn(1024, device=d),
                shape=(8192, 1024),
            ),
            _op("linear"),
            F.linear,
            1.1,
            grad_inputs=3,
        ),
        Case(
            "dropout p=0.5",
            str(ACT),
            _with(lambda d: 0.5, lambda d: True, shape=ACT),
            _op("dropout"),
            F.dropout,
            1.1,
        ),
        Case(
            "channel_shuffle g=4",
            str(ACT),
            _with(lambda d: 4, shape=ACT),
            _op("channel_shuffle"),
            F.channel_shuffle,
            1.1,
        ),
        Case(
            "embedding",
            "idx(64, 512) w(30000, 512)",
            lambda d: [
                torch.randn(30000, 512, device=d),
                torch.randint(0, 30000, (64, 512), device=d),
            ],
            _op("embedding"),
            lambda w, i: F.embedding(i, w),
            1.1,
        ),
    ]
    return cases + _channels_last_cases()


def _in_channels_last(inputs: Callable[[torch.device], list[Any]]) -> Callable[..., Any]:
    """The same inputs with every 4-D tensor in channels_last."""

    def make(d: torch.device) -> list[Any]:
        return [
            t.contiguous(memory_format=torch.channels_last)
            if isinstance(t, Tensor) and t.dim() == 4
            else t
            for t in inputs(d)
        ]

    return make


def _mobilenet_eval(d: torch.device) -> list[Any]:
    from opforge import model_twins, models

    torch.manual_seed(0)
    ours = models.MobileNetBlocks().to(d).eval()
    twin = model_twins.mobilenet_twin(ours).eval()
    x = torch.randn(8, 3, 128, 128, device=d).contiguous(memory_format=torch.channels_last)
    return [
        x,
        ours.to(memory_format=torch.channels_last),
        twin.to(memory_format=torch.channels_last),
    ]


def _no_grad(model: torch.nn.Module, x: Tensor) -> Any:
    with torch.no_grad():
        return model(x)


def _channels_last_cases() -> list[Case]:
    """Ops whose ATen counterpart keeps channels_last, on channels_last inputs (opforge
    computes in that layout where its kernel can, Note [Structured memory format]), and a
    whole network in eval."""
    bn_shape = (8, 64, 56, 56)
    bn_eval = _batch_norm_inputs(bn_shape, training=False)

    def conv(name: str, x: tuple[int, ...], w: tuple[int, ...], **kw: Any) -> Case:
        args = [kw.get("stride", 1), kw.get("padding", 0), 1, kw.get("groups", 1)]
        return Case(
            f"{name} channels_last",
            f"x{x} w{w}",
            _in_channels_last(
                _with(lambda d: torch.randn(*w, device=d) * 0.05, lambda d: None, shape=x)
            ),
            lambda x, w, b: _op("conv2d")(x, w, b, *args),
            lambda x, w, b: F.conv2d(x, w, b, *args),
            1.0,
        )

    pool = (8, 64, 112, 112)
    return [
        conv("conv2d 3x3 dense", (8, 64, 56, 56), (64, 64, 3, 3), padding=1),
        conv("conv2d 3x3 depthwise", (8, 32, 112, 112), (32, 1, 3, 3), padding=1, groups=32),
        conv("conv2d 1x1 pointwise", (8, 128, 28, 28), (256, 128, 1, 1)),
        Case(
            "batch_norm (eval) channels_last",
            str(bn_shape),
            _in_channels_last(bn_eval),
            _op("batch_norm"),
            lambda x, w, b, mean, var, train: F.batch_norm(x, mean, var, w, b, train),
            1.0,
        ),
        Case(
            "group_norm (32 groups) channels_last",
            str(bn_shape),
            _in_channels_last(_group_norm_inputs(bn_shape)),
            _op("group_norm"),
            F.group_norm,
            1.0,
        ),
        Case(
            "max_pool2d 3x3 s2 channels_last",
            str(pool),
            _in_channels_last(
                _with(lambda d: [3, 3], lambda d: [2, 2], lambda d: [1, 1], shape=pool)
            ),
            _op("max_pool2d"),
            F.max_pool2d,
            1.0,
        ),
        Case(
            "adaptive_avg_pool2d 1x1 channels_last",
            "(8, 512, 7, 7)",
            _in_channels_last(_with(lambda d: [1, 1], shape=(8, 512, 7, 7))),
            _op("adaptive_avg_pool2d"),
            F.adaptive_avg_pool2d,
            1.0,
        ),
        Case(
            "MobileNetBlocks eval channels_last",
            "(8, 3, 128, 128)",
            _mobilenet_eval,
            lambda x, ours, twin: _no_grad(ours, x),
            lambda x, ours, twin: _no_grad(twin, x),
            1.0,
            0,
            grad_inputs=0,
        ),
    ]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_pair(ours: Fn, aten: Fn, device: torch.device, budget_s: float) -> tuple[float, float]:
    """Median seconds per call of each, timing them alternately so load hits both alike."""
    for fn in (ours, aten):  # warm-up (lazy init, allocator, first-touch)
        fn()
    _sync(device)
    start = time.perf_counter()
    aten()
    _sync(device)
    once = max(time.perf_counter() - start, 1e-6)
    number = max(1, int(budget_s / 10 / once))
    samples: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(5):
        for i, fn in enumerate((ours, aten)):
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            _sync(device)
            samples[i].append((time.perf_counter() - t0) / number)
    return statistics.median(samples[0]), statistics.median(samples[1])


@contextlib.contextmanager
def _aten_defaults(device: torch.device) -> Iterator[None]:
    """ATen's own float32 settings on CUDA (cuDNN convolutions in TF32), where the table's
    main columns compare with TF32 off on both sides."""
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = device.type == "cuda"
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = saved


def _fwd_bwd(fn: Fn, inputs: list[Any], n_grad: int) -> Fn:
    leaves = [t.detach().requires_grad_() for t in inputs[:n_grad]]
    rest = inputs[n_grad:]

    def run() -> None:
        out = fn(*leaves, *rest)
        out = out[0] if isinstance(out, tuple) else out
        out.backward(torch.ones_like(out))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--only", default="", help="run cases whose name contains this")
    parser.add_argument("--budget", type=float, default=0.4, help="seconds per side per timing")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    # Full float32 on both sides; on CUDA a last column compares with ATen's defaults.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = device.type == "cuda"
    print(
        f"opforge / ATen time ratios, float32 (TF32 off), {device}, {torch.get_num_threads()} threads"
    )
    print(
        f"{'case':32s} {'shape':34s} {'fwd':>6s} {'target':>6s} {'fwd+bwd':>8s} {'target':>6s}"
        + (f" {'fwd vs ATen defaults':>20s}" if cuda else "")
    )
    misses = []
    for case in _cases():
        if args.only not in case.name:
            continue
        inputs = case.inputs(device)
        try:
            f_ours, f_aten = time_pair(
                lambda: case.ours(*inputs),  # noqa: B023 - used within the iteration
                lambda: case.aten(*inputs),  # noqa: B023
                device,
                args.budget,
            )
        except NotImplementedError as e:
            print(f"{case.name:32s} {case.shape:34s} {str(e)}")
            misses.append(f"{case.name}: missing")
            continue
        fwd = f_ours / f_aten
        row = f"{case.name:32s} {case.shape:34s} {fwd:6.2f} {case.target:6.2f}"
        if fwd > case.target:
            misses.append(f"{case.name} forward {fwd:.2f} > {case.target:.2f}")
        target_bwd = case.target if case.target_bwd is None else case.target_bwd
        if target_bwd and case.grad_inputs:
            b_ours, b_aten = time_pair(
                _fwd_bwd(case.ours, inputs, case.grad_inputs),
                _fwd_bwd(case.aten, inputs, case.grad_inputs),
                device,
                args.budget,
            )
            bwd = b_ours / b_aten
            row += f" {bwd:8.2f} {target_bwd:6.2f}"
            if bwd > target_bwd:
                misses.append(f"{case.name} fwd+bwd {bwd:.2f} > {target_bwd:.2f}")
        elif cuda:
            row += f" {'':8s} {'':6s}"
        if cuda:

            def aten_defaults() -> None:
                with _aten_defaults(device):
                    case.aten(*inputs)  # noqa: B023

            f_ours, f_default = time_pair(
                lambda: case.ours(*inputs),  # noqa: B023
                aten_defaults,
                device,
                args.budget,
            )
            row += f" {f_ours / f_default:20.2f}"
        print(row, flush=True)
    print("\nmisses: " + ("; ".join(misses) if misses else "none"))


if __name__ == "__main__":
    main()
