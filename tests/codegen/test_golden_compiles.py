"""The golden fixture's generated C++ compiles (syntax and templates), including rule kinds
that no shipped op uses yet, so a template regression is caught before an op needs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.codegen.cxx import ROOT, syntax_check, syntax_check_all

GOLDEN = Path(__file__).resolve().parent / "golden"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_golden_registration_compiles(tmp_path: Path) -> None:
    # One translation unit, as the build's unity groups compile them (Note [Build groups]):
    # about 10 s on 2 cores, torch's headers and the dispatcher's glue for every golden op.
    units = sorted((GOLDEN / "csrc" / "ops").glob("*.cpp"))
    assert units
    includes = [GOLDEN / "include", FIXTURES / "include", ROOT / "kernels" / "include"]
    proc = syntax_check_all(units, includes, tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_golden_pointwise_kernels_compile() -> None:
    fixture_include = FIXTURES / "include"
    units = sorted((GOLDEN / "csrc" / "kernels").glob("*_cpu.cpp"))
    assert units
    for cpp in units:
        proc = syntax_check(
            cpp, [GOLDEN / "include", fixture_include, ROOT / "kernels" / "include"]
        )
        assert proc.returncode == 0, f"{cpp.name}:\n{proc.stderr[-4000:]}"


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_golden_structured_kernel_unit_compiles() -> None:
    """The generated unit includes the kernel source (fixtures/kernels/cpu/select.cpp) and
    instantiates it for the entry's dtypes: the signatures must agree."""
    (cpp,) = sorted((GOLDEN / "csrc" / "structured").glob("*_cpu.cpp"))
    proc = syntax_check(
        cpp, [GOLDEN / "include", FIXTURES, FIXTURES / "include", ROOT / "kernels" / "include"]
    )
    assert proc.returncode == 0, f"{cpp.name}:\n{proc.stderr[-4000:]}"
