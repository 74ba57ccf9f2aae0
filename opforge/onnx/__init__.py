"""The ONNX forms of opforge ops, for `torch.onnx.export(..., dynamo=True)`.

Note [ONNX forms]: an entry's `onnx:` field names a function here that writes the op with
standard ONNX operators (onnxscript's opset 18), called by the exporter with the op's
arguments as its schema names them; `opforge.onnx_translations()` collects them from the
op table into the exporter's `custom_translation_table`. A call the standard operators
cannot express (training-mode batch_norm, dropout with 0 < p < 1, an adaptive pool over a
dynamic size) raises `Unsupported` naming the op and the argument at export time, rather
than exporting something else. onnxscript is imported only when a translation is asked
for: `import opforge` does not need it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class Unsupported(ValueError):
    """The call has no ONNX form (it names the op and the argument)."""


def static_dims(op_name: str, x: Any, dims: Sequence[int]) -> list[int]:
    """The sizes of `x` at `dims`, which the ONNX form needs known at export time."""
    shape = x.shape
    sizes = [shape[d] if shape is not None else None for d in dims]
    if not all(isinstance(s, int) for s in sizes):
        raise Unsupported(
            f"opforge.{op_name}: the ONNX form needs static sizes of the input's dims "
            f"{list(dims)}, got {sizes} (export without dynamic shapes for these dims)"
        )
    return [int(s) for s in sizes]  # type: ignore[arg-type]


def first(outputs: Any) -> Any:
    """The main output of an ONNX operator with optional extra ones (MaxPool's indices,
    LayerNormalization's statistics), which onnxscript returns as a tuple."""
    return outputs[0] if isinstance(outputs, tuple) else outputs


def batched(x: Any, form: Callable[[Any], Any], rank: int = 4) -> Any:
    """`form` applied to `x` with a leading dimension of 1 added where `x` is one unbatched
    sample (rank - 1: conv2d's and the pools' (C, H, W)): ONNX's operators take the batch."""
    if len(x.shape) != rank - 1:
        return form(x)
    from onnxscript import opset18 as op

    zero = op.Constant(value_ints=[0])
    return op.Squeeze(form(op.Unsqueeze(x, zero)), zero)


def translations(op_table: Sequence[dict[str, Any]]) -> dict[Any, Callable[..., Any]]:
    """{torch.ops.opforge.<op>.<overload>: its ONNX form} for every op with `onnx:`."""
    import importlib

    from opforge._op_table import overload

    table = {}
    for row in op_table:
        if row.get("onnx"):
            module, _, fn = row["onnx"].rpartition(".")
            table[overload(row["qualified"])] = getattr(importlib.import_module(module), fn)
    return table
