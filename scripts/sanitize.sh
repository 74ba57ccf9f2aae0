#!/usr/bin/env bash
# The CPU test suite with every opforge C++ unit built under AddressSanitizer +
# UndefinedBehaviorSanitizer (`make sanitize`).
#
#   bash scripts/sanitize.sh [pytest args...]   (default: tests, less tests/cuda_sim,
#                                                which scripts/sanitize_cuda.sh covers)
#
# Builds the committed HEAD in a scratch clone (the checkout's own build and its
# opforge/_C module are left alone), CPU only, with -fsanitize=address,undefined
# -fno-sanitize-recover=all, then runs pytest there.
# Python and torch are not instrumented, so libasan is preloaded, with libstdc++
# (without it libasan cannot intercept the first C++ exception torch throws and
# aborts with "CHECK failed ... real___cxa_throw"). Leak checking is off: CPython
# keeps objects alive at exit on purpose. Any out-of-bounds access, use after
# free, signed overflow, bad shift or misaligned access in opforge code halts
# the run with a report.
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
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
  -DOPFORGE_CUDA=OFF -DOPFORGE_CUDA_SIM=OFF -DOPFORGE_CPU_AVX512=OFF \
  -DOPFORGE_SANITIZE=address,undefined -DPython_EXECUTABLE="$PY" >/dev/null
cmake --build build -j "$(nproc)" | tail -1
echo "== sanitized build: $(( $(date +%s) - start )) s"
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
args=("$@")
# Default: the whole suite but tests/cuda_sim (7200 tests: 16 min on 2 cores, after a
# 16 min build).
[ ${#args[@]} -eq 0 ] && args=(tests --ignore=tests/cuda_sim -n "$(nproc)" --dist loadgroup)
start=$(date +%s)
# --capture=sys: pytest leaves fd 2 alone, so a report printed as a worker halts is seen.
LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so)" \
  "$PY" -m pytest -q -p no:cacheprovider --capture=sys "${args[@]}"
echo "== sanitized tests: $(( $(date +%s) - start )) s"
