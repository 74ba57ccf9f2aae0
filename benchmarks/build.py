"""Build-cost benchmark (issue 29): a cold build, then the rebuild after each kind of edit.

On a throwaway clone of HEAD with the compiler cache disabled it prints

- the cold build's wall time, and object-seconds by group (the compile time of each
  object from ninja's log, summed: generated registration units, CPU kernel copies per
  capability, CUDA, the simulator, the rest), and the CPU time of the whole build;
- the rebuild wall time after each edit of EDITS (each reverted before the next);
- `make test`'s wall time (with --test).

Run: `.venv/bin/python benchmarks/build.py [--test] [--keep] [--cuda OFF]`. It takes a
cold build and its rebuilds, about as long as `make build` from nothing several times:
run it alone, not beside another build. The venv of this checkout is reused (linked
into the clone), so the figures are the build's, not pip's.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (what a contributor edits, file, old text, new text): each a real change of content,
# so that neither ninja nor the generator's write-if-changed skips it.
EDITS: list[tuple[str, str, str, str]] = [
    (
        "one op's YAML doc:",
        "schemas/activation.yaml",
        "doc: Gradient of gelu with respect to its input.",
        "doc: Gradient of gelu with respect to its input (edited).",
    ),
    (
        "one op's YAML entry (a default)",
        "schemas/activation.yaml",
        "leaky_relu(Tensor self, Scalar negative_slope=0.01)",
        "leaky_relu(Tensor self, Scalar negative_slope=0.02)",
    ),
    ("one CPU kernel .cpp", "kernels/cpu/softmax.cpp", "", "\n// edited\n"),
    ("one CUDA kernel .cu", "kernels/cuda/softmax.cu", "", "\n// edited\n"),
    ("one family meta header", "kernels/include/opforge/pooling/meta.h", "", "\n// edited\n"),
    ("one math functor header", "kernels/include/opforge/activation/math.h", "", "\n// edited\n"),
    ("the framework header", "kernels/include/opforge/core/structured.h", "", "\n// edited\n"),
]


def group_of(output: str) -> str:
    if "_cuda_sim.dir" in output:
        return "simulator (_cuda_sim)"
    if output.endswith(".cu.o"):
        return "CUDA (nvcc)"
    match = re.search(r"opforge_(cpu_\w+)\.dir", output)
    if match:
        return f"CPU kernels ({match.group(1)})"
    if "generated/csrc/ops/" in output or "Unity/unity_ops_" in output:
        return "generated registration units"
    if output.endswith(".o") or output.endswith(".gch"):
        return "other objects (bindings, runtime, composites, PCH)"
    return "link and custom steps"


def ninja_log(build: Path) -> list[tuple[float, str]]:
    """(seconds, output) of each step in ninja's log."""
    steps = []
    for line in (build / ".ninja_log").read_text().splitlines()[1:]:
        start, end, _, output, _ = line.split("\t")
        steps.append(((int(end) - int(start)) / 1000, output))
    return steps


def rebuilt_objects(build: Path, since_ns: int) -> list[str]:
    """The objects written after `since_ns` (ninja may rewrite its log, so the log's length
    does not say which steps are new; the files' times do)."""
    objects = {o for _, o in ninja_log(build) if o.endswith(".o")}
    return [
        o for o in objects if (build / o).exists() and (build / o).stat().st_mtime_ns > since_ns
    ]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of cmd, which must succeed."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="store_true", help="also time `make test`")
    parser.add_argument("--keep", action="store_true", help="keep the clone")
    parser.add_argument("--cuda", default="AUTO", help="OPFORGE_CUDA for the clone (AUTO, OFF)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    clone = Path(tempfile.mkdtemp(prefix="opforge-build-bench-"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    (clone / ".venv" / ".installed").exists() or sys.exit("run `make venv` first")
    env = {**os.environ, "CCACHE_DISABLE": "1"}
    # -o: the linked venv counts as installed (the clone's requirements.txt is newer).
    make = ["make", "-o", ".venv/.installed", f"JOBS={args.jobs}", f"OPFORGE_CUDA={args.cuda}"]
    try:
        wall, cpu = timed([*make, "build"], clone, env)
        groups: dict[str, list[float]] = {}
        for seconds, output in ninja_log(clone / "build"):
            groups.setdefault(group_of(output), []).append(seconds)
        print(
            f"machine: {os.cpu_count()} cores; HEAD {subprocess.getoutput(f'git -C {clone} rev-parse --short HEAD')}"
        )
        print(f"cold build (no compiler cache): {wall:7.1f} s wall, {cpu:7.1f} CPU-s")
        print(f"  {'group':<52} {'objects':>7} {'object-s':>9}")
        for name, times in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name:<52} {len(times):>7} {sum(times):>9.1f}")
        print("rebuild after one edit (wall, objects recompiled):")
        for label, rel, old, new in EDITS:
            path = clone / rel
            original = path.read_text()
            if old and old not in original:
                print(f"  {label:<40} skipped: '{old}' not in {rel}")
                continue
            path.write_text(original.replace(old, new, 1) if old else original + new)
            since = time.time_ns()
            wall, _ = timed([*make, "build"], clone, env)
            objects = rebuilt_objects(clone / "build", since)
            print(f"  {label:<40} {wall:7.1f} s  {len(objects):>4} objects  ({rel})")
            path.write_text(original)
            timed([*make, "build"], clone, env)  # back to the committed tree
        if args.test:
            wall, _ = timed([*make, "test"], clone, env)
            print(f"make test: {wall:.1f} s wall")
    finally:
        if args.keep:
            print(f"clone kept in {clone}")
        else:
            shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
