#pragma once
// The plan of the structured prelu ops (Note [Structured ops]): self viewed as
// [outer, channels, inner], channels along dim 1; a single weight is one
// channel over everything. Torch-free, so the CUDA sources include it.
#include <opforge/core/channel_splits.h>

#include <cstdint>

namespace opforge {

struct prelu_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  // The CUDA backward's split reduction of the weight gradient: channels x
  // channel_sum_splits() accumulators (opforge/core/channel_splits.h) (math::opmath_t).
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

} // namespace opforge
