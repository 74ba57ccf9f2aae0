#!/usr/bin/env bash
# The one script for a lent GPU machine (no network; python3 with torch, nvcc,
# cmake, ninja, pytest, compute-sanitizer): build opforge for the GPU that is
# present, run every CUDA test, run the CUDA simulator's launch-branch shapes on
# the real GPU, run compute-sanitizer (racecheck, synccheck, initcheck,
# memcheck) over a small-shape subset, check the compiled objects, then print
# the opforge / ATen ratio table (ATen with cuDNN). Sized for < 8 minutes on
# one H200 with 16 cores; each stage prints its start time.
#
#   bash benchmarks/cuda.sh                 # PYTHON=/path/to/python3 picks the interpreter
#   ARCHS="8.0;9.0+PTX" bash benchmarks/cuda.sh
#   STAGES="build tests" bash benchmarks/cuda.sh   # a subset, e.g. for a rerun
#
# Python packages the build needs besides torch (pybind11; jinja2 and pyyaml to
# regenerate): where the machine lacks them, `make gpu-deps` here copies them
# into .gpu-deps/, which travels with the working tree (carry ".gpu-deps").
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
STAGES=${STAGES:-"build tests gpu-shapes sanitizer objects table"}
export PYTHONUNBUFFERED=1
if ! "$PY" -c 'import pybind11' 2>/dev/null && [ -d .gpu-deps ]; then
  export PYTHONPATH="$PWD/.gpu-deps${PYTHONPATH:+:$PYTHONPATH}"
fi
start=$SECONDS
stamp() { echo "== $1 ($((SECONDS - start)) s)"; }
status=0
run() {  # a stage's command; a failure is reported and the script goes on
  "$@" || { echo "== FAILED ($?): $*"; status=1; }
}
want() { [[ " $STAGES " == *" $1 "* ]]; }

"$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.get_device_name())'
ARCHS=${ARCHS:-$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')}
# Regenerating needs jinja2 + pyyaml; generated/ is committed and CI keeps it current.
GENERATE=ON
"$PY" -c 'import jinja2, yaml' 2>/dev/null || GENERATE=OFF

if want build; then
  stamp "configure (archs $ARCHS, regenerate $GENERATE)"
  run cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DOPFORGE_CUDA=ON \
    -DOPFORGE_GENERATE="$GENERATE" -DPython_EXECUTABLE="$(command -v "$PY")" \
    -DTORCH_CUDA_ARCH_LIST="$ARCHS"
  stamp "build"
  run cmake --build build-cuda -j "$(nproc)"
  run "$PY" -c 'import opforge, torch; i = opforge.build_info(); print("cuda", i["cuda_compiled"], i["cuda_archs"], "sim", i["cuda_sim"])'
fi
pytest=("$PY" -m pytest -q -p no:cacheprovider -o addopts="--strict-markers -ra")
if want tests; then
  stamp "CUDA tests (OPFORGE_REQUIRE_CUDA=1: a skipped CUDA test fails)"
  OPFORGE_REQUIRE_CUDA=1 run "${pytest[@]}" -m cuda tests/
fi
if want gpu-shapes; then
  stamp "launch-branch shapes and the simulator's battery on the real GPU"
  OPFORGE_SIM_ON_GPU=1 run "${pytest[@]}" tests/cuda_sim/test_launch_branches.py tests/cuda_sim/test_battery.py
fi
if want sanitizer; then
  subset=(tests/cuda_sim/test_launch_branches.py -k "float32 and (softmax or sum or norm or conv0 or conv3 or pooling or embedding or prelu)")
  for tool in racecheck synccheck initcheck memcheck; do
    stamp "compute-sanitizer --tool $tool"
    OPFORGE_SIM_ON_GPU=1 run compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 \
      --target-processes all "${pytest[@]}" -x "${subset[@]}"
  done
fi
if want objects; then
  stamp "compiled objects (SASS/PTX images, registers, spills)"
  run "$PY" scripts/check_cuda_objects.py build-cuda
fi
if want table; then
  stamp "CUDA ratio table (opforge / ATen with cuDNN)"
  run "$PY" benchmarks/ops.py --device cuda --budget 0.2
  stamp "optimizer steps (opforge.optim / torch.optim foreach and fused)"
  run "$PY" benchmarks/optim.py --device cuda --budget 0.2
fi
stamp "done (status $status)"
exit $status
