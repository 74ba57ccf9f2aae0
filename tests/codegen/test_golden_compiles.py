"""The golden fixture's generated C++ compiles (syntax and templates), including rule kinds
that no shipped op uses yet, so a template regression is caught before an op needs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"


def _torch_includes() -> list[str]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "cmake" / "torch_probe.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    probe = dict(line.split("=", 1) for line in out.splitlines())
    return probe["TORCH_PROBE_INCLUDES"].split(",")


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_golden_registration_compiles() -> None:
    flags = [
        "-std=c++20",
        "-fsyntax-only",
        "-D_GLIBCXX_USE_CXX11_ABI=1",
        f"-I{GOLDEN / 'include'}",
        f"-I{ROOT / 'kernels' / 'include'}",
    ]
    flags += [f"-isystem{p}" for p in _torch_includes()]
    for cpp in sorted((GOLDEN / "csrc" / "ops").glob("*.cpp")):
        proc = subprocess.run(
            ["g++", *flags, str(cpp)], capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, f"{cpp.name}:\n{proc.stderr[-4000:]}"
