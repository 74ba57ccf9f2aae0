#!/usr/bin/env bash
# The CPU test suite and the simulated CUDA kernels with every opforge C++ unit
# built under AddressSanitizer + UndefinedBehaviorSanitizer (`make sanitize`;
# CI runs it).
#
#   bash scripts/sanitize.sh [--ci | pytest args...]
#
# Default: every test that runs opforge's C++ in its own process, `-n <cores>`
# (all of tests/ but tests/codegen, the generator's tests and compiles; the GPU
# window's bash dry runs; the leak check, whose RSS means nothing under ASan's
# quarantine; and tests/cuda_sim), then tests/cuda_sim (one process, in order, as
# `make test` runs it) with opforge._cuda_sim sanitized too. About 20 min to build
# and 15 to test on 2 cores.
# --ci (`.ci/run`, within its 90 minutes): of the first run, the tests that reach
# every op with the most shapes, layouts and bad arguments: the generated battery
# (tests/ops/test_ops.py), the fuzz suite, the bad-input and variant tests; then
# tests/cuda_sim as above.
# pytest args replace the first run and skip the second.
# Builds the committed HEAD in a scratch clone (the checkout's own build and its
# opforge/_C module are left alone), CPU only, with -fsanitize=address,undefined
# -fno-sanitize-recover=all, then runs pytest there.
# Python and torch are not instrumented, so libasan is preloaded, with libstdc++
# (without it libasan cannot intercept the first C++ exception torch throws and
# aborts with "CHECK failed ... real___cxa_throw"). Leak checking is off: CPython
# keeps objects alive at exit on purpose (benchmarks/leaks.py, `make leaks`, measures
# opforge's calls instead). Any out-of-bounds access, use after free, signed
# overflow, bad shift or misaligned access in opforge code halts the run with a report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${SANITIZE_WORKDIR:-/tmp/opforge-sanitize}
PY="$ROOT/.venv/bin/python"
rm -rf "$WORK"
git clone -q "$ROOT" "$WORK"
ln -s "$ROOT/.venv" "$WORK/.venv"
cd "$WORK"
export PATH="$ROOT/.venv/bin:$PATH"
start=$(date +%s)
# -O2 (the release build's code generation: at -O1 a fake-quantize rounding tie came
# out one step apart from torch's, 6 tests) with -g1 line tables for the reports.
# The baseline (AVX2) copy of the CPU kernels only: the AVX-512 copy is the same
# source compiled for wider vectors, and skipping it halves the kernels' build.
# opforge._cuda_sim in the same tree and flags: scripts/sanitize_cuda.sh's ASan + UBSan
# stage without a build of its own (CI runs only its TSan stage).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
  -DOPFORGE_CUDA=OFF -DOPFORGE_CUDA_SIM=ON -DOPFORGE_CUDA_SIM_SANITIZE=address,undefined -DOPFORGE_CPU_AVX512=OFF \
  -DOPFORGE_SANITIZE=address,undefined -DPython_EXECUTABLE="$PY" >/dev/null
cmake --build build -j "$(nproc)" | tail -1
echo "== sanitized build: $(( $(date +%s) - start )) s"
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
args=("$@")
cuda_sim=1
parallel=(-n "$(nproc)" --dist loadgroup --durations=10)
if [ ${#args[@]} -eq 0 ]; then
  args=(tests --ignore=tests/cuda_sim --ignore=tests/codegen --ignore=tests/test_gpu_window.py
        --ignore=tests/test_leaks.py "${parallel[@]}")
elif [ "${args[*]}" = "--ci" ]; then
  args=(tests/ops/test_ops.py tests/ops/test_fuzz.py tests/ops/test_bad_inputs.py tests/ops/test_variants.py
        "${parallel[@]}")
else
  cuda_sim=0
fi
preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so)"
start=$(date +%s)
# --capture=sys: pytest leaves fd 2 alone, so a report printed as a worker halts is seen.
LD_PRELOAD="$preload" "$PY" -m pytest -q -p no:cacheprovider --capture=sys "${args[@]}"
echo "== sanitized tests: $(( $(date +%s) - start )) s"
if [ $cuda_sim -eq 1 ]; then
  start=$(date +%s)
  OMP_NUM_THREADS=1 LD_PRELOAD="$preload" "$PY" -m pytest -q -p no:cacheprovider --capture=sys -p no:xdist \
    -m cuda_sim tests/cuda_sim
  echo "== sanitized tests/cuda_sim: $(( $(date +%s) - start )) s"
fi
