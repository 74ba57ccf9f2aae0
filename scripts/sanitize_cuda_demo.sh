#!/usr/bin/env bash
# Shows that the sanitized CUDA simulation catches real kernel bugs: plants
# three in a scratch copy of the checkout and runs scripts/sanitize_cuda.sh
# there, each sanitizer over the tests that reach its bug. Every run must end in
# the sanitizer's report (the script exits non-zero if one does not).
#
#   bash scripts/sanitize_cuda_demo.sh [thread | address,undefined]   (default: all)
#   1. ThreadSanitizer: the barrier between block_reduce's two warp stages removed
#      (common.cuh), so warp 0 reads the other warps' partial sums unsynchronized.
#   2. AddressSanitizer: an off-by-one loop bound in dropout_backward_kernel, one
#      element read and written past the end of the tensors.
#   3. UndefinedBehaviorSanitizer: a 32-bit plane index that overflows in
#      channel_shuffle_kernel.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${DEMO_WORKDIR:-/tmp/opforge-planted}
# The copy's sources are refreshed each time; its sanitizer builds are kept (incremental).
mkdir -p "$WORK"
(cd "$ROOT" && tar cf - --exclude='./build*' --exclude=./.venv --exclude=./.git .) | tar xf - -C "$WORK"
cd "$WORK"
plant() {  # file, old text, new text
  python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert text.count(old) == 1, (path, old)
open(path, "w").write(text.replace(old, new))
PY
}
plant kernels/cuda/common.cuh "    shared[warp] = v;
  }
  __syncthreads();" "    shared[warp] = v;
  }"
plant kernels/cuda/layers_dropout.cu "i < n; i += stride) {
    out[i] = mask[i] ?" "i <= n; i += stride) {
    out[i] = mask[i] ?"
plant kernels/cuda/layers_shuffle.cu "const int64_t from = b * channels + (c % groups) * per_group + c / groups;" \
  "const int from = static_cast<int>(b * channels + (c % groups) * per_group + c / groups) * 0x40000000 / 0x40000000;"

status=0
expect_failure() {  # sanitizer, pytest -k expression
  echo "#### planted bug for $1 (tests: $2)"
  log="$WORK/$1-${2// /_}.log"
  SANITIZE_SOURCE_DIR="$WORK" bash "$ROOT/scripts/sanitize_cuda.sh" "$1" -- tests/cuda_sim/test_launch_branches.py -k "$2" >"$log" 2>&1
  grep -E -A14 "WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error" "$log" | head -40
  # Caught means the sanitizer's own report, not merely a wrong result.
  if grep -q -E "WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error" "$log"; then
    echo "#### $1 caught it"
  else
    echo "#### $1 did NOT catch the planted bug"
    status=1
  fi
}
want=${1:-all}
[[ $want == all || $want == thread ]] && expect_failure thread "softmax and block-3000 and float32"
[[ $want == all || $want == address,undefined ]] && expect_failure address,undefined "dropout and float32"
[[ $want == all || $want == address,undefined ]] && expect_failure address,undefined "channel_shuffle and float32"
exit $status
