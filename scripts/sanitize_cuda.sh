#!/usr/bin/env bash
# The CUDA kernels under sanitizers, through the CUDA simulator (see Note [CUDA
# simulation] in kernels/cuda/sim/runtime.cpp): builds opforge._cuda_sim with
# ThreadSanitizer, runs the cuda_sim tests, then again with AddressSanitizer +
# UndefinedBehaviorSanitizer. A missing __syncthreads() is a TSan data race
# between the fibers of a block; an out-of-bounds global or shared access an
# ASan report; signed overflow, a bad shift or misaligned access a UBSan error.
#
#   bash scripts/sanitize_cuda.sh [thread|address,undefined ...] [-- pytest args]
#   (`make sanitize-cuda`; default: both, over tests/cuda_sim)
#
# Each build lives in build-sanitize-<name>/ next to the normal build (only the
# _cuda_sim target is built there, CPU-only); the tests load that module through
# OPFORGE_CUDA_SIM_PATH while the rest of opforge is the checkout's normal build.
# SANITIZE_SOURCE_DIR points the builds at another tree (a scratch copy with a
# planted bug, say).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${SANITIZE_SOURCE_DIR:-$ROOT}
PY="$ROOT/.venv/bin/python"
export PATH="$ROOT/.venv/bin:$PATH"

sanitizers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sanitizers+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#sanitizers[@]} -eq 0 ] && sanitizers=(thread address,undefined)
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(tests/cuda_sim)

status=0
for san in "${sanitizers[@]}"; do
  build="$SRC/build-sanitize-${san//,/-}"
  echo "== $san: building opforge._cuda_sim in $build"
  cmake -S "$SRC" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPFORGE_CUDA=OFF \
    -DOPFORGE_CUDA_SIM_SANITIZE="$san" -DOPFORGE_CUDA_SIM_OUTPUT_DIR="$build/module" \
    -DPython_EXECUTABLE="$PY" >/dev/null
  cmake --build "$build" --target _cuda_sim -j "$(nproc)" | tail -1
  module=$(ls "$build"/module/_cuda_sim*.so)
  case "$san" in
    thread)
      preload=$(g++ -print-file-name=libtsan.so)
      # second_deadlock_stack etc. are off: torch itself is not instrumented.
      export TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=0:history_size=4"
      ;;
    *)
      # libstdc++ too: libasan must see the C++ runtime's __cxa_throw at startup.
      preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so)"
      export ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:abort_on_error=1"
      export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
      ;;
  esac
  echo "== $san: pytest ${tests[*]}"
  # setarch -R: older ThreadSanitizer runtimes cannot map their shadow under full ASLR.
  # --capture=sys: pytest leaves fd 2 alone, so a report printed as the process
  # halts reaches the terminal.
  if ! (cd "$SRC" && OMP_NUM_THREADS=1 OPFORGE_CUDA_SIM_PATH="$module" LD_PRELOAD="$preload" \
        setarch "$(uname -m)" -R "$PY" -m pytest -q -p no:cacheprovider --capture=sys -m cuda_sim "${tests[@]}"); then
    echo "== $san: FAILED"
    status=1
  fi
  unset TSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS
done
exit $status
