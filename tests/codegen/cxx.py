"""Compile generated or scaffolded C++ for syntax and templates, without a full build."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def torch_includes() -> tuple[str, ...]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "cmake" / "torch_probe.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    probe = dict(line.split("=", 1) for line in out.splitlines())
    return tuple(probe["TORCH_PROBE_INCLUDES"].split(","))


def syntax_check(source: Path, include_dirs: list[Path]) -> subprocess.CompletedProcess[str]:
    """g++ -fsyntax-only with torch's headers and the given include dirs."""
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-D_GLIBCXX_USE_CXX11_ABI=1"]
    cmd += [f"-I{d}" for d in include_dirs] + [f"-isystem{p}" for p in torch_includes()]
    return subprocess.run([*cmd, str(source)], capture_output=True, text=True, check=False)


def syntax_check_all(
    sources: list[Path], include_dirs: list[Path], scratch: Path
) -> subprocess.CompletedProcess[str]:
    """syntax_check of every source in one translation unit (as a unity build compiles
    them): torch's headers are parsed once, not once a file."""
    unity = scratch / "unity.cpp"
    unity.write_text("".join(f'#include "{s}"\n' for s in sources))
    return syntax_check(unity, include_dirs)
