#pragma once
// The split reductions of per-channel sums (prelu's weight gradient, the
// learnable fake quantization's scale and zero point gradients, batch_norm's
// statistics on CUDA): the elements of one channel of a
// [outer, channels, inner] tensor are split into channel_sum_splits() shares,
// each summed on its own (a CUDA block, a CPU task), then the shares of each
// channel are added in split order. The split count depends on the sizes only,
// so the result does not depend on the thread count. Torch-free.
#include <cstdint>

namespace opforge {

// Shares per channel of `elements` elements: about elements_per_split each (enough
// to amortize a share's reduction), at most 64.
inline int64_t channel_sum_splits(int64_t elements, int64_t elements_per_split = 16384) {
  constexpr int64_t k_max_splits = 64;
  const int64_t splits = (elements + elements_per_split - 1) / elements_per_split;
  return splits < 1 ? 1 : (splits > k_max_splits ? k_max_splits : splits);
}

}  // namespace opforge
