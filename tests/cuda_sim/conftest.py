from __future__ import annotations

import importlib.util
import os
import sys

import pytest

import opforge
from opforge import _build_config


@pytest.fixture(scope="session")
def cuda_sim():  # type: ignore[no-untyped-def]
    """opforge._cuda_sim, which registers torch.ops.opforge_cuda_sim.*."""
    if not getattr(_build_config, "CUDA_SIM", False):
        pytest.skip("built with OPFORGE_CUDA_SIM=OFF")
    assert opforge.build_info()  # the real ops are loaded first
    path = os.environ.get("OPFORGE_CUDA_SIM_PATH")
    if path:  # a sanitized build of the module (scripts/sanitize_cuda.sh)
        spec = importlib.util.spec_from_file_location("opforge._cuda_sim", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["opforge._cuda_sim"] = module
        spec.loader.exec_module(module)
        return module
    from opforge import _cuda_sim

    return _cuda_sim


# The coverage tests run last and only when the whole simulated suite ran.
_LAST = ("test_every_global_kernel_ran", "test_compiled_kernels_fit_their_launches")
_SUITES = ("test_battery.py", "test_launch_branches.py")
_partial: list[bool] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    if any("cuda_sim" in item.nodeid for item in items):
        _partial.append(True)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.name in _LAST)
    ran = {item.path.name for item in items}
    if _partial or not all(s in ran for s in _SUITES):
        for item in items:
            if item.name in _LAST:
                item.add_marker(
                    pytest.mark.skip(reason="only part of the cuda_sim suite was selected")
                )
