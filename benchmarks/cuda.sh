#!/usr/bin/env bash
# The script for a lent GPU machine (one H100/H200, 16 cores, torch, nvcc, cmake,
# ninja, pytest, pytest-xdist, compute-sanitizer; no network; at most 10 minutes
# a command, 15 in all). One device call each, run back to back (the machine
# keeps the build only while it is warm):
#
#   bash benchmarks/cuda.sh tests      # build, then the `cuda` tests        ~4 + 3 min
#   bash benchmarks/cuda.sh sanitize   # (build,) the simulator's shapes on the GPU,
#                                      # compute-sanitizer x4, graphs, >2^31 elements,
#                                      # the compiled objects                ~(4 +) 5 min
#   bash benchmarks/cuda.sh table      # (build,) opforge / ATen ratio tables ~(4 +) 3 min
#   bash benchmarks/cuda.sh --dry-run  # here, without a GPU: every stage of every call
#
# The minutes are estimates: the cold build from this machine's measured CPU
# time (benchmarks/build.py) over 16 cores, the tests from their CPU timings.
# Each stage runs under its own `timeout` and logs with `tee` to $OUT/<stage>.log
# (OUT defaults to ./cuda-out), so what failed early survives the output's tail.
# The environment is printed first. Generation is off (generated/ is committed),
# the build targets the present GPU's architecture only, without the simulator
# and with one CPU capability. Pure-Python build dependencies the machine lacks
# travel with the tree: `make gpu-deps` here, then carry ".gpu-deps".
#
# --dry-run runs each stage on this machine: every pytest selection must select
# at least one test (and the sanitizer's subset runs in the CUDA simulator), the
# tables run on the CPU for one case, the GPU-only commands are printed; exit
# non-zero on any problem. tests/test_gpu_window.py runs it in `make test`.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
CALLS=()
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    tests | sanitize | table) CALLS+=("$arg") ;;
    *) echo "usage: $0 [--dry-run] [tests|sanitize|table ...]" >&2; exit 2 ;;
  esac
done
[ ${#CALLS[@]} -eq 0 ] && { [ $DRY = 1 ] && CALLS=(tests sanitize table) || CALLS=(tests); }
PY=${PYTHON:-python3}
[ $DRY = 1 ] && [ -x .venv/bin/python ] && PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-$PWD/cuda-out}
BUILD=${BUILD:-build-cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ! "$PY" -c 'import pybind11' 2>/dev/null && [ -d .gpu-deps ]; then
  export PYTHONPATH="$PWD/.gpu-deps${PYTHONPATH:+:$PYTHONPATH}"
fi
start=$SECONDS
status=0
problem() { echo "== PROBLEM: $*" | tee -a "$OUT/problems.log"; status=1; }

# stage NAME SECONDS CMD...: the command under `timeout`, logged to $OUT/NAME.log.
stage() {
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit} s, at $((SECONDS - start)) s): $*" | tee "$OUT/$name.log"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || problem "$name exited $rc (see $OUT/$name.log)"
}

# gpu NAME SECONDS CMD...: a stage that needs the GPU; printed in a dry run.
gpu() {
  if [ $DRY = 1 ]; then
    echo "== $1 (limit $2 s; dry run, not run): ${*:3}"
  else
    stage "$@"
  fi
}

# select NAME PYTEST-ARGS...: in a dry run, the selection must collect a test.
select_tests() {
  local name=$1
  shift
  local line
  line=$("$PY" -m pytest --collect-only -q -p no:cacheprovider -p no:xdist "$@" 2>&1 | tail -1)
  echo "== $name selects: $line"
  [[ $line =~ ^([0-9]+)(/[0-9]+)?\ tests?\ collected ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    problem "$name selects no test ($*)"
}

pytest=("$PY" -m pytest -q -p no:cacheprovider -o addopts="--strict-markers -ra")
environment() {
  echo "== environment"
  "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "CUDA", torch.version.cuda); print("GPU", torch.cuda.get_device_name() if torch.cuda.is_available() else "none")'
  nvcc --version 2>/dev/null | tail -1 || echo "nvcc: none"
  cmake --version 2>/dev/null | head -1 || "$PY" -m cmake --version | head -1
  nproc
}
environment 2>&1 | tee "$OUT/environment.log"

build() {
  local arch
  if [ $DRY = 1 ]; then
    arch=9.0
  else
    arch=$("$PY" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
  fi
  # cmake/cuda.cmake reads the architectures from the environment.
  gpu configure 120 env TORCH_CUDA_ARCH_LIST="$arch" cmake -S . -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DOPFORGE_CUDA=ON -DOPFORGE_GENERATE=OFF -DOPFORGE_CUDA_SIM=OFF \
    -DOPFORGE_CPU_AVX512=OFF -DPython_EXECUTABLE="$(command -v "$PY")"
  gpu build 420 cmake --build "$BUILD" -j "$(nproc)"
  gpu build-info 60 "$PY" -c 'import opforge; i = opforge.build_info(); print("cuda", i["cuda_compiled"], i["cuda_archs"]); assert i["cuda_compiled"]'
}

# The launch-branch shapes compute-sanitizer runs: one dtype, the kernels with
# block reductions, shared memory tiles and gathers.
SANITIZE_SUBSET=(tests/cuda_sim/test_launch_branches.py -k "float32 and (softmax or sum or norm or conv0 or conv3 or pooling or embedding or prelu)")

for call in "${CALLS[@]}"; do
  echo "#### call: $call"
  [ $DRY = 1 ] || build
  case "$call" in
    tests)
      # OPFORGE_REQUIRE_CUDA=1: a skipped `cuda` test fails.
      [ $DRY = 1 ] && select_tests cuda-tests -m cuda tests/
      gpu cuda-tests 300 env OPFORGE_REQUIRE_CUDA=1 "${pytest[@]}" -n 8 -m cuda tests/
      ;;
    sanitize)
      # The simulator's launch branches and battery, with the real GPU computing.
      [ $DRY = 1 ] && select_tests gpu-shapes tests/cuda_sim/test_launch_branches.py tests/cuda_sim/test_battery.py
      gpu gpu-shapes 150 env OPFORGE_SIM_ON_GPU=1 "${pytest[@]}" -n 8 \
        tests/cuda_sim/test_launch_branches.py tests/cuda_sim/test_battery.py
      if [ $DRY = 1 ]; then
        select_tests sanitizer-subset "${SANITIZE_SUBSET[@]}"
        # The subset itself, in the simulator: the commands below cannot rot.
        stage sanitizer-subset-simulated 300 "${pytest[@]}" -p no:xdist "${SANITIZE_SUBSET[@]}"
      fi
      for tool in memcheck racecheck synccheck initcheck; do
        # The caching allocator would hide out-of-bounds and uninitialized reads
        # inside its cached segments.
        gpu "compute-sanitizer-$tool" 120 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 OPFORGE_SIM_ON_GPU=1 \
          compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 --target-processes all \
          "${pytest[@]}" -p no:xdist -x "${SANITIZE_SUBSET[@]}"
      done
      [ $DRY = 1 ] && select_tests graphs-and-large tests/ops/test_cuda_window.py
      gpu graphs-and-large 120 env OPFORGE_REQUIRE_CUDA=1 "${pytest[@]}" tests/ops/test_cuda_window.py
      gpu objects 120 "$PY" scripts/check_cuda_objects.py "$BUILD"
      ;;
    table)
      if [ $DRY = 1 ]; then
        stage ops-table 300 "$PY" benchmarks/ops.py --device cpu --only "relu" --budget 0.01
        stage optim-table 300 "$PY" benchmarks/optim.py --device cpu --only "SGD" --budget 0.01
      else
        stage ops-table 300 "$PY" benchmarks/ops.py --device cuda --budget 0.2
        stage optim-table 120 "$PY" benchmarks/optim.py --device cuda --budget 0.2
      fi
      ;;
  esac
done
echo "== done in $((SECONDS - start)) s (status $status); logs in $OUT"
exit $status
