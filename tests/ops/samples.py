"""Sample inputs that YAML cannot describe, keyed by op (qualified name).

Each function returns (args, kwargs) pairs for a dtype and device; the test
battery runs them next to the YAML samples (`opdb.calls`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

SampleFn = Callable[[torch.dtype, str], list[tuple[list[Any], dict[str, Any]]]]
SAMPLES: dict[str, SampleFn] = {}


def samples(qualified: str) -> Callable[[SampleFn], SampleFn]:
    def register(fn: SampleFn) -> SampleFn:
        SAMPLES[qualified] = fn
        return fn

    return register


@samples("softmax")
def _softmax_large_logits(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    # exp(1000) overflows: only a max-subtracting softmax gets these right.
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-5e3, -5e3 + 1, -5e3 + 2]], dtype=torch.float64)
    return [([x.to(dtype=dtype, device=device), 1], {})]


@samples("relu")
def _relu_nan_inf(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    x = torch.tensor(
        [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1.5], dtype=torch.float64
    )
    return [([x.to(dtype=dtype, device=device)], {})]


# Special values and the exact kinks of the activations below, where ATen's
# choice of < or <= decides the result.
_ACTIVATION_SPECIALS = [
    *(float("nan"), float("inf"), -float("inf"), -0.0, 0.0),
    *(-3.0, 3.0, -2.5, 2.5, 20.0, -20.0, 88.0, -88.0, 100.0, -100.0),
]


def _specials(dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.tensor(_ACTIVATION_SPECIALS, dtype=torch.float64).to(dtype=dtype, device=device)


def _register_activation_specials() -> None:
    def forward(*params: dict[str, Any]) -> SampleFn:
        def fn(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
            return [([_specials(dtype, device)], dict(p)) for p in params or ({},)]

        return fn

    def backward(*params: dict[str, Any]) -> SampleFn:
        def fn(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
            # Without NaN: ATen's backward kernels pass grad through at NaN for
            # float32 but give NaN for float64 (e.g. elu_backward, hardswish_backward).
            x = _specials(dtype, device)[1:]
            grad = torch.linspace(-2, 2, x.numel(), dtype=dtype, device=device)
            return [([grad, x], dict(p)) for p in params or ({},)]

        return fn

    samples("leaky_relu")(forward({}, {"negative_slope": -0.5}))
    samples("elu")(forward({}, {"alpha": 0.5}))
    samples("softplus")(forward({}, {"beta": 2, "threshold": 5}))
    for op in ("sigmoid", "tanh", "silu", "hardsigmoid", "hardswish"):
        samples(op)(forward())
    samples("leaky_relu_backward")(backward({"negative_slope": 0.01}))
    samples("elu_backward")(backward({"alpha": 1}, {"alpha": 0.5}))
    samples("softplus_backward")(
        backward({"beta": 1, "threshold": 20}, {"beta": 2, "threshold": 5})
    )
    for op in ("silu_backward", "hardsigmoid_backward", "hardswish_backward"):
        samples(op)(backward())


_register_activation_specials()


@samples("log_softmax")
def _log_softmax_large_logits(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    # exp(1000) overflows and log(exp(-1000)) underflows: only x - max - log(sum)
    # gets these right (-2000.3 for the -1000 entry).
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-5e3, -5e3 + 1, -5e3 + 2]], dtype=torch.float64)
    return [
        ([x.to(dtype=dtype, device=device), 1], {}),
        ([x.to(dtype=dtype, device=device), 0], {}),
    ]


# ---- norm family (schemas/norm.yaml): rows and groups whose mean is far larger than their
# spread (x * rstd - mean * rstd would cancel), and optional arguments passed by keyword.

Sample = tuple[list[Any], dict[str, Any]]


def _norm_samples(build: Callable[[torch.Generator], list[Sample]]) -> SampleFn:
    def fn(dtype: torch.dtype, device: str) -> list[Sample]:
        conv = lambda v: v.to(dtype=dtype, device=device) if isinstance(v, torch.Tensor) else v  # noqa: E731
        out = build(torch.Generator().manual_seed(5))
        return [([conv(a) for a in args], {k: conv(v) for k, v in kw.items()}) for args, kw in out]

    return fn


def _uniform(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.rand(shape, generator=gen, dtype=torch.float64) * 6 - 3


def _layer_norm_offset(gen: torch.Generator) -> list[Sample]:
    return [([_uniform(gen, 3, 6) + 100.0, [6]], {"bias": _uniform(gen, 6)})]


def _group_norm_offset(gen: torch.Generator) -> list[Sample]:
    return [([_uniform(gen, 2, 4, 3) + 100.0, 2], {"weight": _uniform(gen, 4)})]


for _op, _inputs in (
    ("layer_norm", _layer_norm_offset),
    ("layer_norm_forward", _layer_norm_offset),
    ("group_norm", _group_norm_offset),
    ("group_norm_forward", _group_norm_offset),
):
    samples(_op)(_norm_samples(_inputs))


# --- pooling (schemas/pooling.yaml) ---

# kernel_size, stride, padding, dilation, ceil_mode: padded, dilated and ceil-mode windows.
_MAX_POOL_CONFIGS = [
    ([3, 3], [2, 2], [1, 1], [1, 1], False),
    ([2, 3], [1, 2], [1, 0], [2, 1], True),
    ([3, 2], [2, 2], [1, 1], [1, 2], True),
]


def _pool_input(shape: list[int], dtype: torch.dtype, device: str, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)


def _pool_specials(dtype: torch.dtype, device: str) -> torch.Tensor:
    """Ties, -inf and NaN: torch takes the first maximum and the last NaN of a window."""
    nan, inf = float("nan"), float("inf")
    rows = [
        [1.0, 1.0, 2.0, 2.0, -inf],
        [1.0, nan, 2.0, 0.5, -inf],
        [nan, 3.0, nan, -0.0, 0.0],
        [3.0, 3.0, 7.0, 0.0, -0.0],
    ]
    return torch.tensor(rows, dtype=torch.float64).expand(2, 3, 4, 5).to(dtype=dtype, device=device)


@samples("max_pool2d_with_indices")
def _max_pool_specials(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    x = _pool_specials(dtype, device)
    unbatched = _pool_input([3, 7, 6], dtype, device, 0)
    return [([x, *config], {}) for config in _MAX_POOL_CONFIGS] + [([unbatched, [3, 2]], {})]


@samples("adaptive_max_pool2d_with_indices")
def _adaptive_max_pool_specials(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    x = _pool_specials(dtype, device)
    unbatched = _pool_input([3, 7, 6], dtype, device, 1)
    return [([x, [2, 3]], {}), ([x, [5, 7]], {}), ([unbatched, [4, 4]], {})]


@samples("max_pool2d_backward")
def _max_pool_backward_indices(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    # Indices from the forward, so windows overlap and share maxima as in training.
    out = []
    for i, (shape, config) in enumerate(
        zip([[2, 3, 7, 6], [1, 2, 8, 9], [3, 6, 7]], _MAX_POOL_CONFIGS, strict=True)
    ):
        x = _pool_input(shape, dtype, device, i)
        _, indices = torch.nn.functional.max_pool2d(x.double(), *config, return_indices=True)
        grad = _pool_input(list(indices.shape), dtype, device, 10 + i)
        out.append(([grad, x, indices, *config], {}))
    return out


@samples("adaptive_max_pool2d_backward")
def _adaptive_max_pool_backward_indices(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    out = []
    for i, (shape, size) in enumerate([([2, 3, 5, 7], [4, 3]), ([3, 3, 2], [5, 4])]):
        x = _pool_input(shape, dtype, device, i)
        _, indices = torch.nn.functional.adaptive_max_pool2d(x.double(), size, return_indices=True)
        grad = _pool_input(list(indices.shape), dtype, device, 10 + i)
        out.append(([grad, x, indices], {}))
    return out


@samples("spatial_pyramid_pool")
def _spatial_pyramid_pool_specials(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    x = _pool_specials(dtype, device)
    return [([x, [4, 2, 1], "max"], {}), ([x, [3, 1], "avg"], {})]


# --- conv family (schemas/conv.yaml) ---

_Samples = list[tuple[list[Any], dict[str, Any]]]


def _conv_tensors(
    dtype: torch.dtype, device: str, *shapes: list[int], scale: float = 2.0
) -> list[torch.Tensor]:
    """Uniform in [-scale, scale]; long reductions take a small scale so that float32
    rounding stays within the battery's tolerances."""
    gen = torch.Generator().manual_seed(4321)
    return [
        ((torch.rand(s, generator=gen, dtype=torch.float64) * 2 - 1) * scale).to(
            dtype=dtype, device=device
        )
        for s in shapes
    ]


@samples("conv2d")
def _conv2d(dtype: torch.dtype, device: str) -> _Samples:
    def conv(
        shapes: list[list[int]], scale: float = 2.0, **kw: Any
    ) -> tuple[list[Any], dict[str, Any]]:
        return _conv_tensors(dtype, device, *shapes, scale=scale), kw

    return [
        # bias; several im2col blocks per image (576 rows, 144 positions; 27 rows, 2704)
        conv([[2, 64, 12, 12], [8, 64, 3, 3], [8]], scale=0.25, padding=[1, 1]),
        conv([[1, 3, 52, 52], [4, 3, 3, 3], [4]], padding=[1, 1]),
        # depthwise with a channel multiplier, stride, dilation and a bias
        conv(
            [[2, 4, 9, 8], [8, 1, 3, 3], [8]],
            stride=[2, 2],
            padding=[2, 2],
            dilation=[2, 2],
            groups=4,
        ),
        # grouped 1x1 (plain GEMM, no im2col), unbatched with a bias
        conv([[2, 6, 5, 4], [4, 3, 1, 1]], groups=2),
        conv([[3, 5, 6], [2, 3, 2, 2], [2]], stride=[2, 2]),
        # an empty batch
        conv([[0, 3, 5, 5], [4, 3, 3, 3], [4]], padding=[1, 1]),
    ]


@samples("conv2d_backward")
def _conv2d_backward(dtype: torch.dtype, device: str) -> _Samples:
    def back(
        shapes: list[list[int]], *params: Any, scale: float = 2.0
    ) -> tuple[list[Any], dict[str, Any]]:
        tensors = _conv_tensors(dtype, device, *shapes, scale=scale)
        return [*tensors, *params, [True, True, True]], {}

    return [
        back(
            [[2, 8, 12, 12], [2, 64, 12, 12], [8, 64, 3, 3]], [1, 1], [1, 1], [1, 1], 1, scale=0.25
        ),
        back([[1, 4, 52, 52], [1, 3, 52, 52], [4, 3, 3, 3]], [1, 1], [1, 1], [1, 1], 1, scale=0.5),
        back([[2, 8, 5, 4], [2, 4, 9, 8], [8, 1, 3, 3]], [2, 2], [2, 2], [2, 2], 4),
        back([[2, 4, 5, 4], [2, 6, 5, 4], [4, 3, 1, 1]], [1, 1], [0, 0], [1, 1], 2),
        back([[2, 2, 3], [3, 5, 6], [2, 3, 2, 2]], [2, 2], [0, 0], [1, 1], 1),
        back([[0, 4, 5, 5], [0, 3, 5, 5], [4, 3, 3, 3]], [1, 1], [1, 1], [1, 1], 1),
    ]


@samples("conv2d_bias_act")
def _conv2d_bias_act(dtype: torch.dtype, device: str) -> _Samples:
    x, w, b = _conv_tensors(dtype, device, [2, 8, 20, 20], [16, 8, 3, 3], [16], scale=0.5)
    xd, wd, bd = _conv_tensors(dtype, device, [2, 8, 9, 9], [8, 1, 3, 3], [8])
    return [
        ([x, w, b, [1, 1], [1, 1], [1, 1], 1, act], {})
        for act in ("none", "relu", "silu", "hardswish", "gelu")
    ] + [([xd, wd, bd, [2, 2], [1, 1], [1, 1], 8, "hardswish"], {})]


@samples("fold_conv_bn")
def _fold_conv_bn(dtype: torch.dtype, device: str) -> _Samples:
    w, g, b, m = _conv_tensors(dtype, device, [8, 4, 3, 3], [8], [8], [8])
    v = _conv_tensors(dtype, device, [8])[0].abs() + 0.25
    return [([w, None, g, b, m, v, 1e-5], {}), ([w[:, :0], None, g, b, m, v, 1e-3], {})]


@samples("repvgg_fuse")
def _repvgg_fuse(dtype: torch.dtype, device: str) -> _Samples:
    def bns(c: int) -> list[list[torch.Tensor]]:
        """Three different BNs (weight, bias, mean, var > 0) on c channels."""
        t = _conv_tensors(dtype, device, *[[c]] * 12)
        return [[*t[i : i + 3], t[i + 3].abs() + 0.25] for i in (0, 4, 8)]

    w3, w1 = _conv_tensors(dtype, device, [6, 3, 3, 3], [6, 3, 1, 1])
    bn3, bn1, bnid = bns(6)
    e3, e1, _ = bns(0)
    return [
        # Every branch, on 6 channels in 2 groups.
        ([w3, *bn3, w1, *bn1, *bnid, 1e-5, 2], {}),
        # No input channels: an empty weight, the bias still folded (no identity: I != O).
        ([w3[:, :0], *bn3, w1[:, :0], *bn1, None, None, None, None, 1e-5, 1], {}),
        # No output channels: both results empty.
        ([w3[:0, :2], *e3, w1[:0, :2], *e1, None, None, None, None, 1e-3, 2], {}),
    ]


@samples("conv_transpose2d")
def _conv_transpose2d(dtype: torch.dtype, device: str) -> _Samples:
    def tconv(
        shapes: list[list[int]], *params: Any, scale: float = 2.0
    ) -> tuple[list[Any], dict[str, Any]]:
        return [*_conv_tensors(dtype, device, *shapes, scale=scale), *params], {}

    return [
        # 4x4 stride 2 upsampling with several column blocks per image
        tconv([[2, 32, 9, 9], [32, 8, 4, 4], [8]], [2, 2], [1, 1], [0, 0], 1, [1, 1], scale=0.5),
        # depthwise (groups == channels), pointwise, unbatched, empty batch
        tconv([[2, 6, 5, 4], [6, 1, 3, 3], [6]], [2, 2], [1, 1], [1, 1], 6, [1, 1]),
        tconv([[2, 6, 5, 4], [6, 2, 1, 1], [4]], [1, 1], [0, 0], [0, 0], 2, [1, 1]),
        tconv([[4, 3, 3], [4, 2, 3, 3], [2]], [2, 1], [1, 0], [1, 0], 1, [1, 2]),
        tconv([[0, 4, 3, 3], [4, 2, 3, 3], [2]], [1, 1], [0, 0], [0, 0], 1, [1, 1]),
    ]


@samples("conv_transpose2d_backward")
def _conv_transpose2d_backward(dtype: torch.dtype, device: str) -> _Samples:
    def back(shapes: list[list[int]], *params: Any) -> tuple[list[Any], dict[str, Any]]:
        return [*_conv_tensors(dtype, device, *shapes, scale=0.5), *params, [True] * 3], {}

    return [
        back([[2, 8, 18, 18], [2, 32, 9, 9], [32, 8, 4, 4]], [2, 2], [1, 1], [0, 0], 1, [1, 1]),
        back([[2, 6, 9, 7], [2, 6, 5, 4], [6, 1, 3, 3]], [2, 2], [1, 1], [0, 0], 6, [1, 1]),
        back([[2, 6, 7], [4, 3, 3], [4, 2, 3, 3]], [2, 1], [1, 0], [1, 0], 1, [1, 2]),
        back([[0, 2, 5, 5], [0, 4, 3, 3], [4, 2, 3, 3]], [1, 1], [0, 0], [0, 0], 1, [1, 1]),
    ]


# --- RoI ops (schemas/roi.yaml): boxes over several images (integer batch indices),
# x1 <= x2 and y1 <= y2, reaching past the borders, plus a degenerate (zero-size) box.


def _roi_boxes(
    gen: torch.Generator, k: int, batch: int, height: int, width: int, scale: float
) -> torch.Tensor:
    """k boxes in input coordinates / scale, up to a quarter of the image outside it."""
    b = torch.randint(0, batch, (k,), generator=gen).double()
    xs = (torch.rand(k, 2, generator=gen, dtype=torch.float64) * 1.5 - 0.25) * width / scale
    ys = (torch.rand(k, 2, generator=gen, dtype=torch.float64) * 1.5 - 0.25) * height / scale
    boxes = torch.stack(
        [b, xs.min(1).values, ys.min(1).values, xs.max(1).values, ys.max(1).values], 1
    )
    boxes[-1, 3:] = boxes[-1, 1:3]  # a degenerate box
    return boxes


def _roi_case(
    dtype: torch.dtype, device: str, seed: int, shape: list[int], k: int, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    boxes = _roi_boxes(gen, k, shape[0], shape[2], shape[3], scale)
    return x.to(dtype=dtype, device=device), boxes.to(dtype=dtype, device=device)


# (input shape, boxes, output_size, spatial_scale, sampling_ratio, aligned, pool_mode)
_ROI_ALIGN_CONFIGS: list[tuple[list[int], int, list[int], float, int, bool, str]] = [
    ([2, 3, 9, 11], 6, [3, 2], 1.0, -1, False, "avg"),
    ([3, 2, 8, 8], 5, [2, 2], 0.5, 2, True, "avg"),
    ([2, 2, 10, 7], 5, [3, 3], 0.25, -1, True, "max"),
    ([2, 3, 7, 9], 4, [2, 3], 0.5, 2, False, "max"),
]


@samples("roi_align")
def _roi_align_boxes(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    out = []
    for i, (shape, k, size, scale, ratio, aligned, mode) in enumerate(_ROI_ALIGN_CONFIGS):
        x, boxes = _roi_case(dtype, device, 40 + i, shape, k, scale)
        out.append(([x, boxes, size, scale, ratio, aligned, mode], {}))
    x, boxes = _roi_case(dtype, device, 49, [2, 3, 5, 5], 1, 1.0)
    out.append(([x, boxes[:0], [2, 2]], {}))  # no boxes
    return out


@samples("roi_align_backward")
def _roi_align_backward_boxes(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    out = []
    for i, (shape, k, size, scale, ratio, aligned, mode) in enumerate(_ROI_ALIGN_CONFIGS):
        x, boxes = _roi_case(dtype, device, 40 + i, shape, k, scale)
        grad = _pool_input([k, shape[1], *size], dtype, device, 50 + i)
        out.append(([grad, boxes, shape, size, scale, ratio, aligned, mode, x], {}))
    return out


@samples("roi_pool")
def _roi_pool_boxes(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    out = []
    for i, (shape, k, size, scale) in enumerate(
        [([2, 3, 9, 11], 6, [3, 2], 1.0), ([3, 2, 8, 8], 5, [4, 3], 0.5)]
    ):
        x, boxes = _roi_case(dtype, device, 60 + i, shape, k, scale)
        out.append(([x, boxes, size, scale], {}))
    return out


@samples("roi_pool_backward")
def _roi_pool_backward_argmax(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    from opforge import reference  # argmax from the forward, so bins share maxima

    out = []
    for i, (shape, k, size, scale) in enumerate(
        [([2, 3, 9, 11], 6, [3, 2], 1.0), ([3, 2, 8, 8], 5, [4, 3], 0.5)]
    ):
        x, boxes = _roi_case(dtype, device, 60 + i, shape, k, scale)
        _, argmax = reference.roi_pool(x.double(), boxes.double(), size, scale)
        grad = _pool_input([k, shape[1], *size], dtype, device, 70 + i)
        out.append(([grad, boxes, argmax, shape], {}))
    return out


# --- boxes (schemas/boxes.yaml): the special configurations of IoU and box coding ---

# (x1, y1, x2, y2) rows; boxes2 holds, against boxes1[0] = (0, 0, 4, 4): an identical box,
# a nested one, a touching one (intersection width exactly 0), a disjoint one, a partly
# overlapping one and a zero-area one (a point inside).
_BOXES1 = [[0, 0, 4, 4], [1, 1, 3, 5], [2, 2, 2, 6]]
_BOXES2 = [[0, 0, 4, 4], [1, 1, 2, 2], [4, 0, 6, 4], [5, 5, 7, 8], [2, -1, 5, 3], [1, 1, 1, 1]]


def _box_tensor(rows: list[list[float]], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64).reshape(-1, 4).to(dtype=dtype, device=device)


def _box_sets(dtype: torch.dtype, device: str, degenerate_pair: bool) -> list[Sample]:
    b1, b2 = _box_tensor(_BOXES1, dtype, device), _box_tensor(_BOXES2, dtype, device)
    empty = _box_tensor([], dtype, device)
    out: list[Sample] = [([b1, b2], {}), ([b2, b1], {}), ([empty, b2], {}), ([b1, empty], {})]
    if degenerate_pair:  # two zero-area boxes: 0 / 0 = NaN, as torchvision
        point = _box_tensor([[1, 1, 1, 1], [3, 0, 3, 2]], dtype, device)
        out.append(([point, point], {}))
    return out


@samples("box_iou")
def _box_iou_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    sets = _box_sets(dtype, device, degenerate_pair=True)
    return sets + [(args, {"legacy_plus_one": True}) for args, _ in sets]


@samples("generalized_box_iou")
def _generalized_box_iou_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    return _box_sets(dtype, device, degenerate_pair=True)


def _pair_grads(dtype: torch.dtype, device: str, flags: list[list[bool]]) -> list[Sample]:
    """Ties of torch.maximum/minimum (identical, nested boxes) and clamps at exactly 0
    (touching boxes), where the gradient follows torch's rules."""
    gen = torch.Generator().manual_seed(3)
    out: list[Sample] = []
    for args, _ in _box_sets(dtype, device, degenerate_pair=False):
        shape = (args[0].shape[0], args[1].shape[0])
        grad = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype=dtype, device=device)
        out += [([grad, *args, *flag, [True, True]], {}) for flag in flags]
    return out


samples("box_iou_backward")(lambda dtype, device: _pair_grads(dtype, device, [[False], [True]]))
samples("generalized_box_iou_backward")(lambda dtype, device: _pair_grads(dtype, device, [[]]))


@samples("box_encode")
def _box_encode_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    b = _box_tensor(_BOXES2[:5], dtype, device)  # (no zero-size box: its log is -inf)
    empty = _box_tensor([], dtype, device)
    return [
        ([b, b], {}),
        ([b, b.flip(0)], {"weights": [10.0, 10.0, 5.0, 5.0]}),
        ([empty, empty], {}),
    ]


@samples("box_decode")
def _box_decode_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    b = _box_tensor(_BOXES2, dtype, device)
    # dw, dh beyond the clip (exp would overflow float16 without it), zero codes.
    codes = torch.tensor([[0.0, 0.0, 8.0, -2.0, 0.5, -0.5, 0.0, 20.0]], dtype=torch.float64)
    codes = codes.repeat(b.shape[0], 1).to(dtype=dtype, device=device)
    empty = _box_tensor([], dtype, device)
    return [([codes, b], {}), ([empty.reshape(0, 8), empty], {})]


# Coordinates on the bounds, outside, NaN; empty sets of boxes.
_CLIP_BOXES = [[-1, 0, 10, 8], [0, -2, 12, 9], [3, 4, 5, 6], [float("nan"), 1, 2, 3]]


@samples("clip_boxes_to_image")
def _clip_boxes_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    b = _box_tensor(_CLIP_BOXES, dtype, device)
    empty = _box_tensor([], dtype, device)
    return [([b, [8, 10]], {}), ([empty, [8, 10]], {}), ([empty.reshape(2, 0, 4), [3, 3]], {})]


@samples("clip_boxes_to_image_backward")
def _clip_boxes_backward_specials(dtype: torch.dtype, device: str) -> list[Sample]:
    b = _box_tensor(_CLIP_BOXES, dtype, device)  # (NaN: no gradient, as torch.clamp's)
    grad = torch.arange(16, dtype=torch.float64).reshape(4, 4).to(dtype=dtype, device=device)
    return [([grad, b, [8, 10]], {})]


@samples("filter2d")
def _filter2d_edges(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """An empty batch with a shared kernel (its gradient: zeros) and with an empty
    per-sample one, and the mode names in capitals (kornia's are case-insensitive)."""
    g = torch.Generator().manual_seed(7)

    def t(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)

    return [
        ([t(0, 3, 5, 6), t(1, 3, 3)], {}),
        ([t(0, 2, 5, 6), t(0, 3, 2)], {"border_type": "constant"}),
        ([t(2, 2, 5, 6), t(1, 3, 2)], {"padding": "Same", "border_type": "REPLICATE"}),
        ([t(1, 2, 4, 5), t(1, 2, 2)], {"padding": "VALID", "convolve": True}),
    ]


@samples("filter2d_backward")
def _filter2d_backward_empty(
    dtype: torch.dtype, device: str
) -> list[tuple[list[Any], dict[str, Any]]]:
    """An empty batch: the shared kernel's gradient is zeros."""
    g = torch.Generator().manual_seed(8)

    def t(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype=dtype, device=device)

    return [
        (
            [t(0, 3, 5, 6), t(0, 3, 5, 6), t(1, 3, 3), "same", "reflect", False, False],
            {"output_mask": [True, True]},
        ),
        (
            [t(0, 2, 4, 4), t(0, 2, 6, 6), t(1, 3, 3), "valid", "constant", True, True],
            {"output_mask": [True, True]},
        ),
    ]


def _uint8(shape: tuple[int, ...], device: str, low: int = 0, high: int = 256) -> torch.Tensor:
    g = torch.Generator().manual_seed(sum(shape) + low)
    return torch.randint(low, high, shape, generator=g, dtype=torch.uint8).to(device)


@samples("histogram")
def _histogram_edges(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """Empty batches and planes, and planes of one value at either end of the range."""
    full = torch.full((2, 3, 4), 255, dtype=torch.uint8, device=device)
    return [
        ([_uint8((0, 2, 3, 3), device)], {}),
        ([_uint8((3, 4, 0), device)], {}),
        ([full], {}),
        ([torch.zeros(5, 7, dtype=torch.uint8, device=device)], {}),
    ]


@samples("equalize")
def _equalize_edges(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """Constant planes (returned as they are) next to equalized ones in one batch, a
    plane with fewer than 255 pixels below its maximum (step 0: unchanged), and empty
    batches and planes."""
    mixed = _uint8((2, 3, 20, 20), device)
    mixed[0, 1] = 7
    mixed[1, 2] = 255
    mixed[1, 0] = 0
    few = torch.full((1, 1, 20, 20), 200, dtype=torch.uint8, device=device)
    few[0, 0, :3] = _uint8((3, 20), device, 0, 200)  # 60 pixels below the maximum
    return [
        ([mixed], {}),
        ([few], {}),
        ([_uint8((0, 3, 4, 5), device)], {}),
        ([_uint8((2, 0, 5), device)], {}),
    ]


@samples("to_tensor")
def _to_tensor_edges(dtype: torch.dtype, device: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """Every uint8 value once, and empty batches and images."""
    every = torch.arange(256, dtype=torch.uint8, device=device).reshape(8, 16, 2)
    return [
        ([every], {}),
        ([every], {"dtype": torch.float64}),
        ([every], {"dtype": torch.float16}),
        ([every], {"dtype": torch.bfloat16}),
        ([_uint8((0, 4, 5, 3), device)], {}),
        ([_uint8((3, 0, 2), device)], {"dtype": torch.float64}),
    ]


# ---- color family (schemas/color.yaml): black, white and gray pixels, pure channels and
# ties (two maxima, two minima), as uint8 values or their floating value / 255; HSV pixels
# on the sextant boundaries.
_COLOR_PIXELS = [
    (0, 0, 0), (255, 255, 255), (128, 128, 128), (255, 0, 0),
    (0, 255, 0), (0, 0, 255), (200, 200, 50), (200, 50, 200),
    (50, 200, 200), (10, 10, 240), (240, 10, 10), (10, 240, 10),
    (30, 60, 90), (250, 1, 128), (1, 2, 3), (77, 200, 77),
]  # fmt: skip


def _color_image(dtype: torch.dtype, device: str) -> torch.Tensor:
    x = torch.tensor(_COLOR_PIXELS, dtype=torch.float64).T.reshape(1, 3, 4, 4).contiguous()
    return (x if dtype == torch.uint8 else x / 255).to(dtype=dtype, device=device)


def _color_specials(*params: dict[str, Any]) -> SampleFn:
    def fn(dtype: torch.dtype, device: str) -> list[Sample]:
        return [([_color_image(dtype, device)], dict(p)) for p in params]

    return fn


samples("rgb_to_grayscale")(_color_specials({}, {"num_output_channels": 3}))
samples("rgb_to_hsv")(_color_specials({}))
samples("rgb_to_xyz")(_color_specials({}))
samples("adjust_brightness")(
    _color_specials({"brightness_factor": 1.0}, {"brightness_factor": 2.0})
)
samples("adjust_contrast")(_color_specials({"contrast_factor": 1.5}, {"contrast_factor": 0.0}))
samples("adjust_saturation")(
    _color_specials({"saturation_factor": 0.0}, {"saturation_factor": 2.0})
)
samples("adjust_hue")(_color_specials({"hue_factor": 0.5}, {"hue_factor": -0.25}))


@samples("hsv_to_rgb")
def _hsv_sextant_boundaries(dtype: torch.dtype, device: str) -> list[Sample]:
    h = torch.arange(7, dtype=torch.float64) * (2 * torch.pi / 6)
    s = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    v = torch.tensor([0.0, 0.3, 1.0], dtype=torch.float64)
    grid = torch.stack(torch.meshgrid(h, s, v, indexing="ij")).reshape(3, 7, 9)
    return [([grid.to(dtype=dtype, device=device)], {})]
