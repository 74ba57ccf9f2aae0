"""Checks over the compiled CUDA objects of the real build (every *.cu.o of the module: the
kernel files, the generated structured units and the pointwise groups).

- every object holds SASS for each architecture the build targets, and PTX for
  each `+PTX` one;
- no kernel needs more registers than the largest block it is launched with
  allows (65,536 registers per SM, allocated per warp in units of 256): the
  block sizes come from the CUDA simulator's launch statistics, so the check
  covers the launches the test suite makes;
- hot kernels (every instantiation not over double) neither spill nor use a
  stack frame (cuobjdump's STACK and LOCAL are 0);
- a kernel launched with more than 256 threads declares __launch_bounds__ at
  least that large (PTX `.maxntid`), so nvcc cannot give it more registers than
  such a block may use.

    python scripts/check_cuda_objects.py [build-dir]   (prints the table; exit 1 on a failure)

tests/cuda_sim/test_coverage.py runs the same checks after the simulated suite,
with its launch statistics.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTERS_PER_SM = 65536
WARP_ALLOCATION = 256  # registers are handed to a warp in units of 256


@dataclass(frozen=True)
class KernelResources:
    obj: str  # e.g. "softmax.cu"
    arch: str  # e.g. "sm_80"
    symbol: str  # demangled
    registers: int
    stack: int
    local: int

    @property
    def name(self) -> str:
        """The kernel's own name, without namespaces, template arguments or parameters."""
        text = self.symbol.replace("(anonymous namespace)", "anonymous")
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "<") - (ch == ">")
            if ch == "(" and depth == 0:
                text = text[:i]
                break
        return text.split("<")[0].split("::")[-1].split()[-1]

    @property
    def hot(self) -> bool:
        return "double" not in self.symbol


def find_cuobjdump() -> str | None:
    """The toolkit's cuobjdump, else the copy triton ships inside the torch environment."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda", "/usr/local/cuda-13.0"):
        if root and Path(root, "bin", "cuobjdump").exists():
            return str(Path(root, "bin", "cuobjdump"))
    try:
        import triton  # noqa: PLC0415

        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(bundled) if bundled.exists() else None
    except ImportError:
        return None


def cuda_objects(build: Path) -> list[Path]:
    return sorted((build / "CMakeFiles" / "_C.dir").rglob("*.cu.o"))


def _run(tool: str, *args: str) -> str:
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


def images(tool: str, obj: Path) -> tuple[set[str], set[str]]:
    """(SASS architectures, PTX architectures) embedded in an object."""
    elf = set(re.findall(r"\.(sm_\d+a?)\.cubin", _run(tool, "--list-elf", str(obj))))
    ptx = subprocess.run([tool, "--list-ptx", str(obj)], capture_output=True, text=True).stdout
    return elf, {f"compute_{m}" for m in re.findall(r"\.sm_(\d+a?)\.ptx", ptx)}


def resources(tool: str, obj: Path) -> list[KernelResources]:
    out = _run(tool, "--dump-resource-usage", str(obj))
    rows: list[tuple[str, str, str]] = []
    arch = "?"
    symbol = None
    for line in out.splitlines():
        if m := re.match(r"\s*arch = (sm_\d+a?)", line):
            arch = m.group(1)
        elif m := re.match(r"\s*Function (\S+):", line):
            symbol = m.group(1)
        elif symbol and "REG:" in line:
            rows.append((arch, symbol, line))
            symbol = None
    demangled = _run("c++filt", *[s for _, s, _ in rows]).splitlines() if rows else []
    result = []
    for (arch, _, line), name in zip(rows, demangled, strict=True):
        value = {k: int(v) for k, v in re.findall(r"(REG|STACK|LOCAL):(\d+)", line)}
        result.append(
            KernelResources(
                obj.name.removesuffix(".o"),
                arch,
                name,
                value["REG"],
                value["STACK"],
                value["LOCAL"],
            )
        )
    return result


def launch_bounds(tool: str, obj: Path) -> dict[str, int]:
    """Kernel name -> the smallest `.maxntid` among its PTX entries (0: none declared)."""
    ptx = subprocess.run([tool, "--dump-ptx", str(obj)], capture_output=True, text=True).stdout
    entries = re.findall(r"\.entry\s+(\S+)\((.*?)\{", ptx, flags=re.S)
    if not entries:
        return {}
    names = _run("c++filt", *[e[0] for e in entries]).splitlines()
    bounds: dict[str, int] = {}
    for (_, tail), symbol in zip(entries, names, strict=True):
        m = re.search(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", tail)
        n = int(m.group(1)) * int(m.group(2)) * int(m.group(3)) if m else 0
        name = KernelResources("", "", symbol, 0, 0, 0).name
        bounds[name] = min(bounds.get(name, n), n)
    return bounds


def bound_failures(bounds: dict[str, dict[str, int]], launches: dict[str, int]) -> list[str]:
    """Launches the GPU would refuse or starve: a block larger than the kernel's
    __launch_bounds__ (PTX `.maxntid`; the simulator ignores the bound), or one of more than
    256 threads without a bound at least that large (nvcc may then give the kernel more
    registers than such a block can have). `bounds`: object ("softmax.cu") -> kernel name ->
    bound (0: none); `launches`: "file:kernel" (the simulator's keys) -> largest block. A
    kernel of a header is looked up in every object (its smallest bound)."""
    failures = []
    for key, threads in sorted(launches.items()):
        file, name = key.split(":")
        own = bounds.get(file, {})
        found = [own[name]] if name in own else [b[name] for b in bounds.values() if name in b]
        if not found:  # not in these objects
            continue
        bound = min(found)
        if (bound and threads > bound) or (not bound and threads > 256):
            declared = f"__launch_bounds__({bound})" if bound else "no __launch_bounds__"
            failures.append(f"{key}: launched with {threads} threads, {declared}")
    return failures


def registers_for_block(registers: int, threads: int) -> int:
    """Registers one block of `threads` occupies (per-thread count rounded to warp units)."""
    per_warp = -(-registers * 32 // WARP_ALLOCATION) * WARP_ALLOCATION
    return -(-threads // 32) * per_warp


def expected_images(archs: list[str]) -> tuple[set[str], set[str]]:
    """`8.0;9.0+PTX` -> ({sm_80, sm_90}, {compute_90})."""
    sass, ptx = set(), set()
    for a in archs:
        bare = a.removesuffix("+PTX").replace(".", "")
        sass.add(f"sm_{bare}")
        if a.endswith("+PTX"):
            ptx.add(f"compute_{bare}")
    return sass, ptx


def check(
    build: Path, archs: list[str], block_threads: dict[str, int], launches: dict[str, int]
) -> tuple[list[str], list[str]]:
    """(report lines, failures). `block_threads`: kernel name -> largest block launched;
    `launches`: the same by "file:kernel" (the simulator's launch statistics)."""
    tool = find_cuobjdump()
    if tool is None:
        return [], ["no cuobjdump found (CUDA toolkit or triton)"]
    want_sass, want_ptx = expected_images(archs)
    report, failures = [], []
    kernels: list[KernelResources] = []
    bounds: dict[str, dict[str, int]] = {}
    for obj in cuda_objects(build):
        sass, ptx = images(tool, obj)
        if not want_sass <= sass or not want_ptx <= ptx:
            failures.append(
                f"{obj.name}: images {sorted(sass | ptx)}, expected {sorted(want_sass | want_ptx)}"
            )
        kernels += resources(tool, obj)
        bounds[obj.name.removesuffix(".o")] = launch_bounds(tool, obj)
    failures += bound_failures(bounds, launches)
    for k in kernels:
        threads = block_threads.get(k.name)
        if threads is not None and registers_for_block(k.registers, threads) > REGISTERS_PER_SM:
            failures.append(
                f"{k.obj} {k.arch} {k.symbol}: {k.registers} registers x {threads} threads "
                f"exceed {REGISTERS_PER_SM} (add __launch_bounds__({threads}))"
            )
        if k.hot and (k.stack or k.local):
            failures.append(
                f"{k.obj} {k.arch} {k.symbol}: STACK {k.stack} LOCAL {k.local} (spills)"
            )
    worst: dict[str, KernelResources] = {}
    for k in kernels:
        if k.name not in worst or k.registers > worst[k.name].registers:
            worst[k.name] = k
    for name, k in sorted(worst.items()):
        threads = block_threads.get(name)
        report.append(
            f"{name:40s} max REG {k.registers:3d}  block {threads if threads else '-':>4}  "
            f"({len([x for x in kernels if x.name == name])} instantiations x archs)"
        )
    return report, failures


def main() -> int:
    build = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
    sys.path.insert(0, str(ROOT))
    from opforge import _build_config  # noqa: PLC0415

    report, failures = check(build, _build_config.CUDA_ARCHS.split(), {}, {})
    print("\n".join(report))
    print("\n".join(f"FAIL {f}" for f in failures) or "all CUDA objects pass")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
