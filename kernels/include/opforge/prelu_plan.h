#pragma once
// The plan of the structured prelu ops (Note [Structured ops]): self viewed as
// [outer, channels, inner], channels along dim 1; a single weight is one
// channel over everything. Torch-free, so the CUDA sources include it.
#include <cstdint>

namespace opforge {

struct prelu_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  // The CUDA backward's split reduction of the weight gradient: channels x
  // prelu_backward_splits() accumulators (math::opmath_t).
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// Blocks per channel of the CUDA backward: enough elements per block to
// amortize its reduction, at most 64.
inline int64_t prelu_backward_splits(int64_t outer, int64_t inner) {
  constexpr int64_t k_elements_per_split = 16384;
  constexpr int64_t k_max_splits = 64;
  const int64_t splits = (outer * inner + k_elements_per_split - 1) / k_elements_per_split;
  return splits < 1 ? 1 : (splits > k_max_splits ? k_max_splits : splits);
}

} // namespace opforge
