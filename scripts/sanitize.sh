#!/usr/bin/env bash
# Runs the CPU test battery with every opforge kernel built under AddressSanitizer.
#
#   bash scripts/asan.sh [pytest args...]      (default: tests/ops tests/models)
#
# Builds the committed HEAD in a scratch clone (so the checkout's own build is left
# alone), CPU only, with -fsanitize=address, then runs pytest with libasan preloaded
# (python and torch are not instrumented; leak checking is off because CPython
# deliberately keeps objects alive at exit). Any out-of-bounds access or
# use-after-free in opforge code aborts the run with an ASan report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${ASAN_WORKDIR:-/tmp/opforge-asan}
rm -rf "$WORK"
git clone -q "$ROOT" "$WORK"
ln -s "$ROOT/.venv" "$WORK/.venv"
cd "$WORK"
export PATH="$ROOT/.venv/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPFORGE_CUDA=OFF \
  -DOPFORGE_SANITIZE=address -DPython_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
cmake --build build -j "$(nproc)"
LIBASAN=$(g++ -print-file-name=libasan.so)
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:abort_on_error=1
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(tests/ops tests/models)
LD_PRELOAD="$LIBASAN" "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider "${args[@]}"
