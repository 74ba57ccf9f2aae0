#pragma once
// The plans of the structured pooling ops (Note [Structured ops]): the planes
// of a contiguous (N, C, H, W) or (C, H, W) input and the windows along H and
// W. Torch-free, so the CUDA sources include it.
#include <opforge/math/pooling.h>

#include <cstdint>

namespace opforge {

template <typename Win>
struct pool_plan {
  math::planes g;
  Win rows;
  Win cols;
  int64_t window;  // input elements one output reads (the CPU kernels' grain)
};

using max_pool_plan = pool_plan<math::strided_windows>;
using adaptive_pool_plan = pool_plan<math::adaptive_windows>;

// Average pooling also divides each window's sum.
template <typename Win>
struct avg_plan : pool_plan<Win> {
  math::avg_divisor divisor{math::k_bin_size};
};

using avg_pool_plan = avg_plan<math::avg_windows>;
using adaptive_avg_pool_plan = avg_plan<math::adaptive_windows>;

} // namespace opforge
