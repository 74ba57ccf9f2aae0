#pragma once
// The plans of the structured norm ops (Note [Structured ops]): the layouts
// and parameters their kernels loop over. Torch-free, so the CUDA sources
// include it.
#include <cstdint>

namespace opforge {

// local_response_norm of a contiguous [n, channels, inner] input. The CUDA
// backward keeps one accumulator (math::opmath_t) per element in `workspace`.
struct lrn_plan {
  int64_t n = 0;
  int64_t channels = 0;
  int64_t inner = 1;
  int64_t size = 1;
  double alpha = 0;
  double beta = 0;
  double k = 0;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

} // namespace opforge
