#pragma once
// The plans of the structured pooling ops (Note [Structured ops]): the planes
// of a contiguous (N, C, H, W) or (C, H, W) input and the windows along H and
// W. Torch-free, so the CUDA sources include it.
#include <opforge/pooling/math.h>

#include <cstdint>
#include <vector>

namespace opforge {

template <typename Win>
struct pool_plan {
  math::planes g;
  Win rows;
  Win cols;
  int64_t window;  // input elements one output reads (the CPU kernels' grain)
  int64_t channels = 1;  // C of (N, C, H, W); g.count = N * C
  // (N, H, W, C) memory (Note [Structured memory format] in structured.h).
  bool channels_last = false;
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

// Spatial pyramid pooling of (N, C, H, W): plane p = (n, c) pooled to an
// n_l x n_l grid per level l, written at row n, column offsets[l] + c * n_l^2
// of the (N, C * bins) output. The CUDA backward keeps the forward's argmax in
// `workspace` (workspace_bytes, allocated by the generated code; see
// structured::attach_workspace).
struct spp_plan {
  math::planes g;  // out_h / out_w unused: each level has its own
  int64_t channels = 0;
  int64_t row = 0;  // an output row's length, C * bins
  bool max = true;  // mode 'max', else 'avg'
  std::vector<int64_t> levels;
  std::vector<int64_t> offsets;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

} // namespace opforge
