#pragma once
// The split reductions of per-channel gradients (prelu's weight, the learnable
// fake quantization's scale and zero point): the elements of one channel of a
// [outer, channels, inner] tensor are split into channel_sum_splits() shares,
// each summed on its own (a CUDA block, a CPU task), then the shares of each
// channel are added in split order. The split count depends on the sizes only,
// so the result does not depend on the thread count. Torch-free.
#include <cstdint>

namespace opforge {

// Shares per channel: enough elements per share to amortize its reduction, at
// most 64.
inline int64_t channel_sum_splits(int64_t outer, int64_t inner) {
  constexpr int64_t k_elements_per_split = 16384;
  constexpr int64_t k_max_splits = 64;
  const int64_t splits = (outer * inner + k_elements_per_split - 1) / k_elements_per_split;
  return splits < 1 ? 1 : (splits > k_max_splits ? k_max_splits : splits);
}

}  // namespace opforge
