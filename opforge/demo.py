"""`make demo`: the operator table of this build, then every op against its reference.

For each operator the first declared sample is scaled up to about a million
elements, run through opforge and through its reference (ATen), and the max
error and the time ratio (opforge / ATen, medians of one run) are printed.
"""

from __future__ import annotations

import importlib
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import opforge
from opforge.detection import random_boxes

TARGET_NUMEL = int(os.environ.get("OPFORGE_DEMO_NUMEL", 1 << 20))


def _reference(name: str) -> Callable[..., Any]:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def _scaled_call(
    row: dict[str, Any], schema: Any, scale: bool = True
) -> tuple[list[Any], dict[str, Any]]:
    """The first sample, each tensor dimension > 1 scaled by one common factor (unless not
    `scale`). Integer arguments (`arg_dtypes`) keep their values in the sample's [low, high)."""
    raw = row["samples"][0]
    # Tensor specs are shapes or {shape, low, high}; a Tensor[] argument is a list of them.
    tensor_args = [
        a
        for a in schema.arguments.flat_non_out
        if str(a.type) == "Tensor" or (str(a.type) == "Tensor?" and raw.get(a.name) is not None)
    ]
    list_args = [
        a for a in schema.arguments.flat_non_out if "Tensor" in str(a.type) and "[]" in str(a.type)
    ]
    specs = [raw[a.name] for a in tensor_args] + [s for a in list_args for s in raw[a.name]]
    shapes = [list(s["shape"] if isinstance(s, dict) else s) for s in specs]
    largest = max((math.prod(s) for s in shapes), default=1) or 1
    factor = max(1.0, (TARGET_NUMEL / largest) ** (1 / max(1, max(map(len, shapes), default=1))))
    if not scale:
        factor = 1.0
    gen = torch.Generator().manual_seed(0)
    # The op's own dtype: float32 where it takes it, else its first (dequantize's int8).
    primary = getattr(torch, "float32" if "float32" in row["dtypes"] else row["dtypes"][0])
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    built: dict[str, Any] = {}
    skipped = False  # after an omitted positional argument, later ones go by keyword
    for a in schema.arguments.flat_non_out:
        if raw.get(a.name) is None and a.default is not None:
            skipped = True
            continue  # the schema's default applies
        value = raw.get(a.name)
        own = row["arg_dtypes"].get(a.name)
        own_dtype = getattr(torch, own[0]) if own and own != ["opmath"] else primary
        if own == ["opmath"]:  # the compute dtype of the op's (norm statistics)
            own_dtype = torch.float32 if primary in (torch.float16, torch.bfloat16) else primary
        if str(a.type).startswith("ScalarType") and isinstance(value, str):
            # A dtype name, or a tensor argument's name for that tensor's dtype.
            value = built[value].dtype if value in built else getattr(torch, value)
        if a in tensor_args:
            value = _tensor(raw[a.name], factor, own_dtype, gen)
        elif a in list_args:
            value = [_tensor(spec, factor, own_dtype, gen) for spec in value]
        built[a.name] = value
        if a in schema.arguments.positional and not skipped:
            args.append(value)
        else:
            kwargs[a.name] = value
    return args, kwargs


def _tensor(spec: Any, factor: float, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """A sample tensor of `dtype`, its dimensions > 1 scaled by `factor`."""
    shape = [
        s if s <= 1 else int(s * factor)
        for s in (spec["shape"] if isinstance(spec, dict) else spec)
    ]
    ranged = isinstance(spec, dict) and "low" in spec
    if isinstance(spec, dict) and spec.get("kind") == "boxes":  # valid (x1, y1, x2, y2) boxes
        low, high = (spec["low"], spec["high"]) if ranged else (-3.0, 3.0)
        return random_boxes([*shape[:-1], 4], low, high, dtype, "cpu", gen)  # 4 coordinates
    if not dtype.is_floating_point:
        low, high = (spec["low"], spec["high"]) if ranged else (-3, 4)
        return torch.randint(int(low), int(high), shape, generator=gen).to(dtype)
    if ranged:  # e.g. a variance > 0
        t = torch.rand(shape, generator=gen) * (spec["high"] - spec["low"]) + spec["low"]
    else:
        t = torch.randn(shape, generator=gen)
    return t.to(dtype)


def _written(args: list[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """Every tensor argument (lists spread out): what an op returning nothing wrote."""
    flat = [x for v in [*args, *kwargs.values()] for x in (v if isinstance(v, list) else [v])]
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _clone(args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    def c(v: Any) -> Any:
        if isinstance(v, list):
            return [c(x) for x in v]
        return v.clone() if isinstance(v, torch.Tensor) else v

    return [c(a) for a in args], {k: c(v) for k, v in kwargs.items()}


def _outputs(result: Any) -> tuple[torch.Tensor, ...]:
    """An op's result as a tuple (prelu_backward returns two tensors)."""
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _time(fn: Callable[[], Any], repeat: int = 15) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    from codegen.model import FunctionSchema

    info = opforge.build_info()
    print(
        f"opforge built against torch {info['torch_version']}; CUDA kernels compiled: "
        f"{info['cuda_compiled']} {' '.join(info['cuda_archs'])}"
    )
    print(f"{torch.get_num_threads()} CPU threads; CUDA available: {torch.cuda.is_available()}\n")
    print(f"{'op':18s} {'registered keys':28s} {'dtypes':40s} schema")
    for row in opforge.OP_TABLE:
        keys = ",".join(info["ops"][row["qualified"]])
        print(f"{row['qualified']:18s} {keys:28s} {','.join(row['dtypes']):40s} {row['schema']}")

    print(
        f"\n{'op':18s} {'input shapes':28s} {'max abs err':>12s} {'opforge ms':>11s} {'ATen ms':>9s} {'ratio':>6s}"
    )
    for row in opforge.OP_TABLE:
        if (
            not set(row["keys"]) & {"CPU", "CUDA", "CompositeExplicitAutograd"}
            or not row["samples"]
        ):
            continue  # generated variants and pure composites: their component ops are timed
        schema = FunctionSchema.parse(row["schema"])
        ours = getattr(opforge, schema.name.name)
        ref = _reference(row["reference"])
        args, kwargs = _scaled_call(row, schema)
        try:
            got = ours(*args, **kwargs)
        except (RuntimeError, TypeError, IndexError):
            # Scaling broke a relation between arguments (e.g. channels divisible by groups).
            args, kwargs = _scaled_call(row, schema, scale=False)
            got = ours(*args, **kwargs)
        if got is None:  # an op that only writes into its arguments (the optimizer steps)
            mine, theirs = _clone(args, kwargs), _clone(args, kwargs)
            ours(*mine[0], **mine[1])
            ref(*theirs[0], **theirs[1])
            pairs = list(zip(_written(*mine), _written(*theirs), strict=True))
        else:
            pairs = list(zip(_outputs(got), _outputs(ref(*args, **kwargs)), strict=True))
        err = max(
            ((o.double() - r.double()).abs().max().item() for o, r in pairs if o.numel()),
            default=0.0,
        )
        t_ours = _time(lambda: ours(*args, **kwargs))  # noqa: B023 - called within the iteration
        # Timed against torch's own op where the reference is not one (the random fills'
        # references check statistics: `bench: {against: ...}` in schemas/).
        timed = _reference(row["bench_against"]) if row["bench_against"] else ref
        t_ref = _time(lambda: timed(*args, **kwargs))  # noqa: B023
        shapes = " ".join("x".join(map(str, a.shape)) or "0-d" for a in _written(args, {}))[:28]
        print(
            f"{row['qualified']:18s} {shapes:28s} {err:12.2e} {t_ours * 1e3:11.3f} {t_ref * 1e3:9.3f} "
            f"{t_ours / t_ref:6.2f}"
        )

    _model_proof()
    _detection_proof()


def _detection_proof() -> None:
    """The tiny two-stage detector of opforge.detection: eager, against torchvision's
    pipeline, and through torch.export (nms's kept count is an unbacked size there)."""
    from opforge import detection

    torch.manual_seed(0)
    model = detection.TinyTwoStageDetector().eval()
    gen = torch.Generator().manual_seed(0)
    image = torch.rand(1, 3, 64, 96, generator=gen)
    image[..., 8:40, 16:56] += 0.8
    with torch.no_grad():
        boxes, logits = model(image)
        ref_boxes, ref_logits = detection.reference_forward(model, image)
        program = torch.export.export(model, (image,))
        exported_boxes, _ = program.module()(image)
    same = boxes.shape == ref_boxes.shape
    err = (logits - ref_logits).abs().max().item() if same else float("nan")
    print(
        f"\ndetection pipeline (anchors, box_decode, nms, roi_align): {boxes.shape[0]} proposals "
        f"kept, same boxes as torchvision's pipeline: {same}, logits max abs err {err:.2e}, "
        f"torch.export: {exported_boxes.shape[0]} proposals"
    )


def _model_proof() -> None:
    """The two networks of opforge.models against their torch.nn twins (float64)."""
    from opforge import model_twins, models

    print("\nmodel-level check (float64): opforge network vs the same weights in torch.nn")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 32, 32, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 10, (4,), generator=gen)
    torch.manual_seed(0)
    mobilenet = models.MobileNetBlocks().double()
    sppnet = models.SPPNet().double()
    pairs = [
        ("MobileNet blocks", mobilenet, model_twins.mobilenet_twin(mobilenet)),
        ("SPP-Net", sppnet, model_twins.SPPNetTwin(sppnet)),
    ]
    for name, ours, twin in pairs:
        curves = []
        for model in (ours, twin):
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            curve = []
            for step in range(20):
                opt.zero_grad()
                kwargs = {"generator": torch.Generator().manual_seed(step)} if "SPP" in name else {}
                out = model(x, **kwargs)
                loss = torch.nn.functional.cross_entropy(out, y)
                loss.backward()
                opt.step()
                curve.append(loss.item())
            curves.append(curve)
        gap = max(abs(a - b) for a, b in zip(*curves, strict=True))
        print(
            f"  {name:18s} 20 SGD steps: loss {curves[0][0]:.4f} -> {curves[0][-1]:.4f} "
            f"(torch.nn {curves[1][-1]:.4f}), max loss gap {gap:.2e}"
        )
    mobilenet.eval()
    with torch.no_grad():
        err = (mobilenet.fused()(x) - mobilenet(x)).abs().max().item()
    print(f"  BN folded into convs + conv2d_bias_act vs unfused eval: max abs err {err:.2e}")


if __name__ == "__main__":
    main()
