#pragma once
// The plans of the quantization observer ops (schemas/observer.yaml).
// Torch-free, so the CUDA sources include it.
#include <cstdint>

namespace opforge {

// choose_qparams over `numel` (min, max) pairs.
struct qparams_plan {
  int64_t numel = 0;
  int64_t quant_min = 0;
  int64_t quant_max = 0;
  bool symmetric = false;
  int32_t symmetric_zero_point = 0;  // torch's rule for the range (observer/meta.h)
  float eps = 0.0f;
};

// minmax_observer_update_: x viewed as [outer, channels, inner], one (min, max)
// statistic per channel (one channel per tensor).
struct observer_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  bool moving_average = false;
  float averaging_constant = 1.0f;
  // CUDA: blocks per channel, whose partial (min, max) pairs go to the workspace.
  int64_t splits = 1;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// Blocks to split each channel's reduction across on CUDA: enough blocks for a
// per-tensor statistic over a large batch to fill the GPU, few for small ones.
inline int64_t observer_splits(int64_t channels, int64_t per_channel) {
  constexpr int64_t k_chunk = 16384;
  constexpr int64_t k_target_blocks = 1024;
  const int64_t by_size = (per_channel + k_chunk - 1) / k_chunk;
  const int64_t by_blocks = channels >= k_target_blocks ? 1 : k_target_blocks / channels;
  const int64_t splits = by_size < by_blocks ? by_size : by_blocks;
  return splits < 1 ? 1 : splits;
}

}  // namespace opforge
