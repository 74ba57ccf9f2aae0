"""opforge vs ATen on realistic shapes: forward and forward+backward time ratios from one run.

Run: `.venv/bin/python benchmarks/ops.py [--device cuda] [--only conv]` (also `make bench`).
The cases of single ops come from the `bench:` fields of schemas/ (the op database the test
battery runs over: tests/ops/opdb.py builds both); the cases below compare what is not one
op against one ATen function (fused against unfused, variants, layouts, models).
Prints one row per case: opforge time / ATen time (lower is better; 1.00 = parity)
for the forward pass and for forward + backward, next to the case's target. Both
sides are timed alternately in the same process (these machines are shared and
noisy, so only ratios from one run are meaningful): each figure is the median of the
ratios of 7 interleaved repetitions, with their spread; `?` marks a figure whose
spread reaches across its target (the run cannot tell which side it is on). The
table is also written as JSON (`--json`, default build/bench/ops-<device>.json),
with the machine it ran on.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

import opforge

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codegen.opdecl import OpDecl  # noqa: E402
from tests.ops import opdb  # noqa: E402

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
    # How to time forward + backward of `fn` on the inputs (default: _fwd_bwd over the
    # `grad_inputs` leading inputs).
    fwd_bwd: Callable[[Fn, list[Any]], Fn] | None = None


def _resolve(path: str) -> Fn:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _call_fwd_bwd(op: OpDecl, fn: Fn, inputs: list[Any]) -> Fn:
    """Forward + backward of a bench call: gradients for the tensors the battery gradchecks."""
    (call,) = inputs
    for t in opdb.grad_inputs(op, call):
        t.requires_grad_()

    def run() -> None:
        result = fn(call)
        outs = [o for o in opdb.outputs(result) if o is not None and o.requires_grad]
        torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])

    return run


def _shapes(op: OpDecl, case: Any) -> str:
    """`self(4, 64, 128, 128)`: the tensor arguments' shapes of a bench case."""
    tensors = [a.name for a in op.schema.arguments.flat_non_out if a.type.is_tensor_like()]
    parts = []
    for name in tensors:
        spec = case.get(name)
        if spec is None or (isinstance(spec, list) and spec and not isinstance(spec[0], int)):
            continue  # absent, or a Tensor[] list
        parts.append(f"{name}{tuple(opdb.spec_shape(spec))}")
    return " ".join(parts)


def _bench_cases() -> list[Case]:
    """One case per `bench:` case in schemas/ (codegen/opdecl.py Bench), timed against its
    `against:` or the entry's reference, with the same arguments."""
    cases = []
    for op in opdb.functional_ops():
        bench = op.bench
        if bench is None:
            continue
        ours, against = getattr(opforge, op.name), _resolve(bench.against or op.reference or "")
        for i, case in enumerate(bench.cases):
            cases.append(
                Case(
                    op.name,
                    _shapes(op, case),
                    lambda d, op=op, i=i: [opdb.bench_calls(op, d.type)[i]],
                    lambda call, fn=ours: fn(*call.args, **call.kwargs),
                    lambda call, fn=against: fn(*call.args, **call.kwargs),
                    bench.target,
                    bench.backward if opdb.differentiable(op) else 0,
                    fwd_bwd=functools.partial(_call_fwd_bwd, op),
                )
            )
    return cases


def _randn(*shape: int) -> Callable[[torch.device], list[Any]]:
    return lambda d: [torch.randn(*shape, device=d)]


def _with(*extra: Callable[[torch.device], Any], shape: tuple[int, ...]) -> Callable[..., Any]:
    return lambda d: [torch.randn(*shape, device=d), *(e(d) for e in extra)]


ACT = (4, 64, 128, 128)  # 4M activations


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


def _quantization_pipeline_cases() -> list[Case]:
    """The integer products against torch._int_mm and the decomposed dequantize -> linear /
    conv -> quantize (what PT2E graphs call); no backward."""
    from opforge.reference import _decomposed

    d = _decomposed()
    int8 = lambda *shape: lambda dev: torch.randint(-128, 128, shape, device=dev, dtype=torch.int8)  # noqa: E731

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


def _fusion_cases() -> list[Case]:
    """A fused op against the ATen ops it replaces."""
    return [
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
    ]


def _cases() -> list[Case]:
    cases = _bench_cases() + _variant_cases() + _fusion_cases() + _quantization_pipeline_cases()
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


@dataclass(frozen=True)
class Timing:
    """Seconds per call of both sides over interleaved repetitions (ours, ATen, ours, ...),
    so that a burst of load on the shared machine hits both alike."""

    ours: list[float]
    aten: list[float]

    @property
    def ratios(self) -> list[float]:
        """One ours / ATen ratio per repetition: the pairs were timed back to back."""
        return [o / a for o, a in zip(self.ours, self.aten, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        """Half the range of the ratios once the most extreme on each side is dropped:
        how far one run's figure moves on this machine."""
        r = sorted(self.ratios)
        r = r[1:-1] if len(r) >= 5 else r
        return (r[-1] - r[0]) / 2

    def uncertain(self, target: float) -> bool:
        """The spread reaches across the target: the run cannot say which side it is on."""
        return self.spread >= abs(self.ratio - target)

    def as_json(self, target: float) -> dict[str, Any]:
        return {
            "ratio": round(self.ratio, 4),
            "spread": round(self.spread, 4),
            "target": target,
            "uncertain": self.uncertain(target),
            "ours_s": statistics.median(self.ours),
            "aten_s": statistics.median(self.aten),
        }


REPEATS = 7


def time_both(ours: Fn, aten: Fn, device: torch.device, budget_s: float) -> Timing:
    """Both sides, interleaved: REPEATS timed repetitions of each after a warm-up."""
    for fn in (ours, aten):  # warm-up (lazy init, allocator, first-touch)
        fn()
    _sync(device)
    start = time.perf_counter()
    aten()
    _sync(device)
    once = max(time.perf_counter() - start, 1e-6)
    number = max(1, int(budget_s / REPEATS / once))
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(REPEATS):
        for i, fn in enumerate((ours, aten)):
            _sync(device)
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            _sync(device)
            samples[i].append((time.perf_counter() - t0) / number)
    return Timing(*samples)


def time_pair(ours: Fn, aten: Fn, device: torch.device, budget_s: float) -> tuple[float, float]:
    """Median seconds per call of each (benchmarks/optim.py's tables)."""
    t = time_both(ours, aten, device, budget_s)
    return statistics.median(t.ours), statistics.median(t.aten)


def _cell(t: Timing, target: float) -> str:
    """`1.05±0.04`, with `?` where the spread reaches across the target."""
    return f"{t.ratio:5.2f}±{t.spread:<4.2f}{'?' if t.uncertain(target) else ' '}"


def _machine() -> dict[str, Any]:
    """What the figures were measured on (the CPU model changes between rounds)."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu_capability": opforge.build_info()["cpu_capability"],
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


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
    parser.add_argument(
        "--json",
        default=None,
        help="where to write the table as JSON (default build/bench/ops-<device>.json)",
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    # Full float32 on both sides; on CUDA a last column compares with ATen's defaults.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cuda = device.type == "cuda"
    machine = _machine()
    print(
        f"opforge / ATen time ratios (median±spread of {REPEATS} interleaved repetitions; ?: the"
        f" spread reaches the target), float32 (TF32 off), {device}, {machine['cpu']},"
        f" {machine['threads']} threads"
    )
    print(
        f"{'case':32s} {'shape':34s} {'fwd':>11s} {'target':>6s} {'fwd+bwd':>11s} {'target':>6s}"
        + (f" {'fwd vs ATen defaults':>20s}" if cuda else "")
    )
    misses, rows = [], []
    for case in _cases():
        if args.only not in case.name:
            continue
        inputs = case.inputs(device)
        record: dict[str, Any] = {"case": case.name, "shape": case.shape}
        rows.append(record)
        try:
            fwd = time_both(
                lambda: case.ours(*inputs),  # noqa: B023 - used within the iteration
                lambda: case.aten(*inputs),  # noqa: B023
                device,
                args.budget,
            )
        except NotImplementedError as e:
            print(f"{case.name:32s} {case.shape:34s} {str(e)}")
            misses.append(f"{case.name}: missing")
            record["missing"] = str(e)
            continue
        record["fwd"] = fwd.as_json(case.target)
        row = f"{case.name:32s} {case.shape:34s} {_cell(fwd, case.target)} {case.target:6.2f}"
        if fwd.ratio > case.target:
            misses.append(_miss(case.name, "forward", fwd, case.target))
        target_bwd = case.target if case.target_bwd is None else case.target_bwd
        fwd_bwd = case.fwd_bwd or functools.partial(_fwd_bwd, n_grad=case.grad_inputs)
        if target_bwd and (case.grad_inputs or case.fwd_bwd):
            bwd = time_both(
                fwd_bwd(case.ours, inputs),
                fwd_bwd(case.aten, inputs),
                device,
                args.budget,
            )
            record["fwd_bwd"] = bwd.as_json(target_bwd)
            row += f" {_cell(bwd, target_bwd)} {target_bwd:6.2f}"
            if bwd.ratio > target_bwd:
                misses.append(_miss(case.name, "fwd+bwd", bwd, target_bwd))
        elif cuda:
            row += f" {'':11s} {'':6s}"
        if cuda:

            def aten_defaults() -> None:
                with _aten_defaults(device):
                    case.aten(*inputs)  # noqa: B023

            defaults = time_both(
                lambda: case.ours(*inputs),  # noqa: B023
                aten_defaults,
                device,
                args.budget,
            )
            record["fwd_vs_aten_defaults"] = defaults.as_json(case.target)
            row += f" {defaults.ratio:20.2f}"
        print(row, flush=True)
    print("\nmisses: " + ("; ".join(misses) if misses else "none"))
    out = Path(
        args.json
        or Path(__file__).resolve().parents[1] / "build" / "bench" / f"ops-{device.type}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"machine": machine, "device": str(device), "rows": rows}, indent=1) + "\n"
    )
    print(f"JSON: {out}")


def _miss(name: str, what: str, t: Timing, target: float) -> str:
    within = " (within the spread)" if t.uncertain(target) else ""
    return f"{name} {what} {t.ratio:.2f}±{t.spread:.2f} > {target:.2f}{within}"


if __name__ == "__main__":
    main()
