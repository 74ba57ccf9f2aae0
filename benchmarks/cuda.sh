#!/usr/bin/env bash
# One script for a machine with an NVIDIA GPU (no network needed): build opforge with
# its CUDA kernels against that machine's python3 + torch, run every CUDA test, then
# print the opforge/ATen ratio table on the GPU. Sized to finish within 8 minutes on
# one GPU with 16 cores (cold build ~2-4 min, tests ~2 min, table ~1 min).
#
#   bash benchmarks/cuda.sh            # PYTHON=/path/to/python3 to choose the interpreter
#   ARCHS="8.0;9.0" bash benchmarks/cuda.sh
#
# Needs python3 with torch (CUDA build), jinja2, pyyaml, pybind11, pytest; cmake, ninja, nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Default: the architecture of the GPU that is present (fast build), e.g. 9.0 on H100/H200.
ARCHS=${ARCHS:-$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')}
export PYTHONUNBUFFERED=1
start=$SECONDS
stamp() { echo "== $1 ($((SECONDS - start)) s)"; }

stamp "generate"
"$PY" -m codegen gen
stamp "configure (archs $ARCHS)"
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPFORGE_CUDA=ON \
  -DPython_EXECUTABLE="$(command -v "$PY")" -DTORCH_CUDA_ARCH_LIST="$ARCHS" >/dev/null
stamp "build"
cmake --build build-cuda -j "$(nproc)"
"$PY" -c 'import opforge, torch; i = opforge.build_info(); print(i["cuda_compiled"], i["cuda_archs"], torch.cuda.get_device_name())'
stamp "CUDA tests"
status=0
"$PY" -m pytest -q -m cuda -p no:cacheprovider -x tests/ || status=$?
stamp "CUDA ratio table"
"$PY" benchmarks/ops.py --device cuda --budget 0.2
stamp "done"
exit $status
