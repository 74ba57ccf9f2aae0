"""House style is checked in CI: ruff (lint + format) on the Python, mypy --strict on codegen/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIRS = ["codegen", "tests", "opforge", "benchmarks", "cmake"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_lint() -> None:
    proc = _run("ruff", "check", *PYTHON_DIRS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = _run("ruff", "format", "--check", *PYTHON_DIRS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_codegen() -> None:
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
