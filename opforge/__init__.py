"""opforge: PyTorch operators declared once in YAML, with generated registration.

Every operator is reachable as ``opforge.<name>(...)`` (fast eager path) and as
``torch.ops.opforge.<name>`` (the dispatcher; works under autograd and
torch.compile). See ``generated/docs/operators.md`` for the operator reference.
"""

from __future__ import annotations

from typing import Any

# torch must be loaded first: the extension has no RUNPATH to torch's libraries.
import torch

try:
    from opforge import _build_config
except ImportError as e:  # pragma: no cover - only when the package was never built
    raise ImportError(
        "opforge is not built; run `make build` (or `make test`) in the checkout"
    ) from e

if torch.__version__ != _build_config.TORCH_VERSION:
    raise ImportError(
        f"opforge was built against torch {_build_config.TORCH_VERSION}, but torch {torch.__version__} "
        "is installed; rebuild it (`make build`, or `pip install --no-build-isolation .`)"
    )

from opforge._archs import check_devices as _check_devices  # noqa: E402

# A GPU the build has no code for fails here, naming its capability and the
# compiled architectures, rather than at the first kernel with "no kernel image".
if _build_config.CUDA_COMPILED and torch.cuda.is_available():
    _check_devices(_build_config.CUDA_ARCHS.split())

from opforge import _C  # noqa: E402, F401  (registers the operators with the dispatcher)
from opforge._ops import *  # noqa: E402, F403
from opforge._ops import OP_TABLE  # noqa: E402
from opforge._ops import __all__ as _op_names

_C._cpu_capability()  # a bad OPFORGE_CPU_CAPABILITY fails the import, not a later kernel

from opforge import _sharding, _vmap  # noqa: E402

_vmap.register(OP_TABLE)  # Note [Batching rules]
_sharding.install(OP_TABLE)  # Note [Sharding rules]: on torch.distributed.tensor's import

__all__ = [*_op_names, "build_info", "onnx_translations", "patch"]

_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
    "Autograd",
)


def build_info() -> dict[str, Any]:
    """Facts about this build: torch it was built against, CUDA, the CPU kernel capabilities
    compiled and the one selected (Note [CPU capabilities]), and per op the registered keys."""
    ops = {}
    for row in OP_TABLE:
        name = f"opforge::{row['qualified']}"
        ops[row["qualified"]] = [
            k for k in _KEYS if torch._C._dispatch_has_kernel_for_dispatch_key(name, k)
        ]
    return {
        "torch_version": _build_config.TORCH_VERSION,
        "cuda_compiled": bool(_build_config.CUDA_COMPILED),
        "cuda_archs": _build_config.CUDA_ARCHS.split(),
        "cuda_sim": bool(getattr(_build_config, "CUDA_SIM", False)),
        "cpu_capability": _C._cpu_capability(),
        "cpu_capabilities": _C._cpu_capabilities.split(),
        "ops": ops,
    }


# Submodules reachable as attributes after `import opforge`, as `torch.optim` after
# `import torch`; imported on first use so that `import opforge` stays as fast as it was.
_LAZY_SUBMODULES = ("optim", "models", "quantization", "detection", "onnx")


def onnx_translations() -> dict[Any, Any]:
    """The ONNX forms of the ops whose YAML entry has `onnx:` (Note [ONNX forms] in
    opforge/onnx/__init__.py): pass it as `torch.onnx.export(..., dynamo=True,
    custom_translation_table=opforge.onnx_translations())`. Needs onnxscript."""
    from opforge.onnx import translations

    return translations(OP_TABLE)


def patch() -> Any:
    """Drop-in mode: while the returned `opforge._patch.Patch` is active (`with
    opforge.patch() as p:`, or `p.start()` ... `p.stop()`), the torch / torch.nn.functional
    calls opforge has ops for run those ops where they take the arguments as ATen does, the
    rest runs ATen; `p.counts` counts the routed calls per op. README "Use opforge kernels
    in your model"."""
    from opforge._patch import Patch  # imported on first use: `import opforge` stays fast

    return Patch()


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"opforge.{name}")
    raise AttributeError(f"module 'opforge' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY_SUBMODULES])
