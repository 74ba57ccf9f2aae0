"""CPU kernels compiled per capability and picked at load time (Note [CPU capabilities] in
kernels/include/opforge/core/cpu_capability.h)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import opforge

SO = Path(opforge._C.__file__)
# AVX-512 state: zmm registers, the upper 16 xmm/ymm registers and opmask registers.
_AVX512 = re.compile(r"%zmm\d|%[xy]mm(1[6-9]|2\d|3[01])\b|%k[1-7]\b")


def _run(capability: str, code: str) -> str:
    env = {**os.environ, "OPFORGE_CPU_CAPABILITY": capability}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_build_info_reports_compiled_and_selected() -> None:
    info = opforge.build_info()
    assert info["cpu_capability"] in info["cpu_capabilities"]
    if "avx512" in info["cpu_capabilities"] and torch.backends.cpu.get_cpu_capability() in (
        "AVX512",
    ):
        assert info["cpu_capability"] == "avx512"


@pytest.mark.parametrize("forced", ["default", "avx2"])
def test_environment_forces_the_baseline(forced: str) -> None:
    got = _run(forced, "import opforge; print(opforge.build_info()['cpu_capability'])")
    assert got == opforge.build_info()["cpu_capabilities"][0]


def test_bad_capability_is_refused_at_import() -> None:
    env = {**os.environ, "OPFORGE_CPU_CAPABILITY": "avx1024"}
    proc = subprocess.run(
        [sys.executable, "-c", "import opforge"], env=env, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "OPFORGE_CPU_CAPABILITY must be default, avx2 or avx512, got 'avx1024'" in proc.stderr


def test_every_capability_computes_the_same() -> None:
    code = (
        "import torch, opforge\n"
        "x = torch.linspace(-30, 30, 100003, dtype=torch.float64)\n"
        "ys = [opforge.sigmoid(x), opforge.gelu(x.float()).double(), opforge.silu(x),"
        " opforge.add(x, x, alpha=0.5), opforge.softplus(x.bfloat16()).double()]\n"
        "print(repr(torch.stack(ys).sum(1).tolist()))"
    )
    results = {c: _run(c, code) for c in opforge.build_info()["cpu_capabilities"]}
    values = {c: eval(r) for c, r in results.items()}  # noqa: S307 (our own repr of floats)
    first = next(iter(values.values()))
    for v in values.values():
        torch.testing.assert_close(torch.tensor(v), torch.tensor(first), rtol=1e-5, atol=1e-3)


@pytest.mark.skipif(
    shutil.which("objdump") is None or shutil.which("nm") is None, reason="binutils"
)
def test_no_shared_symbol_outside_the_avx512_copies_uses_avx512() -> None:
    """The copies must not merge: a function other code may call (global or weak) that uses
    AVX-512 must be in opforge::cpu_avx512, or a CPU without AVX-512 would run it."""
    if "avx512" not in opforge.build_info()["cpu_capabilities"]:
        pytest.skip("no AVX-512 copies in this build")
    binding = {}
    for line in subprocess.run(
        ["nm", "--defined-only", str(SO)], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            binding[parts[2]] = parts[1]
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(SO)], capture_output=True, text=True, check=True
    ).stdout
    leaks = []
    in_copies = 0
    current = None
    for line in disassembly.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if header:
            current = header.group(1)
            continue
        if current and _AVX512.search(line):
            shared = binding.get(current, "t") in ("T", "W", "V", "i", "u")
            if "10cpu_avx512" in current:
                in_copies += 1
            elif shared:
                leaks.append(current)
            current = None  # one finding per function
    assert in_copies > 0, "the AVX-512 copies use no AVX-512 (flags not applied?)"
    assert not leaks, f"{len(leaks)} shared functions use AVX-512, e.g. {leaks[:5]}"
