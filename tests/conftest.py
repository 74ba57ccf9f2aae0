from __future__ import annotations

import os

import pytest
import torch


def pytest_configure(config: pytest.Config) -> None:
    # On sm_80+ torch runs float32 matmuls and cuDNN convolutions in TF32 by
    # default (~1e-3 relative error): CUDA references must be full float32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Readable test ids for dtypes (`float32`, not `dtype0`): `-k float32` selects them."""
    if isinstance(val, torch.dtype):
        return str(val).removeprefix("torch.")
    return None


def _cuda_missing() -> str | None:
    """Why `cuda` tests cannot run here, or None."""
    if not torch.cuda.is_available():
        return "needs a CUDA device"
    try:
        from opforge import _build_config
    except ImportError:
        return "opforge is not built"
    if not _build_config.CUDA_COMPILED:
        return "opforge was built without CUDA kernels (no nvcc, a CPU torch, or OPFORGE_CUDA=OFF)"
    return None


@pytest.fixture(autouse=True)
def _cuda_guard(request: pytest.FixtureRequest) -> None:
    """`cuda` tests skip with the reason where they cannot run; OPFORGE_REQUIRE_CUDA=1
    (the GPU script) turns those skips into failures."""
    if request.node.get_closest_marker("cuda") is None:
        return
    reason = _cuda_missing()
    if reason is None:
        return
    if os.environ.get("OPFORGE_REQUIRE_CUDA") == "1":
        pytest.fail(f"OPFORGE_REQUIRE_CUDA=1: {reason}")
    pytest.skip(reason)
