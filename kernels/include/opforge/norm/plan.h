#pragma once
// The plans of the structured norm ops (Note [Structured ops]): the layouts
// and parameters their kernels loop over. Torch-free, so the CUDA sources
// include it.
#include <opforge/core/channel_splits.h>

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

// layer_norm of a contiguous input as [rows, n]: n elements normalized
// together per row. The CUDA backward sums the weight and bias gradients in
// layer_norm_weight_chunks(rows) row chunks of 2 * n accumulators
// (math::opmath_t) in `workspace`.
struct layer_norm_plan {
  int64_t rows = 0;
  int64_t n = 0;
  double eps = 0;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

inline int64_t layer_norm_weight_chunks(int64_t rows) {
  const int64_t c = (rows + 63) / 64;
  return c < 1 ? 1 : (c > 256 ? 256 : c);
}

// group_norm (and batch_norm) of a contiguous [n, channels, hw] input;
// group (n, g) is the slab of its channels / groups channels.
struct group_norm_plan {
  int64_t n = 0;
  int64_t channels = 0;
  int64_t hw = 1;
  int64_t groups = 1;
  double eps = 0;
  // (N, H, W, C) memory (Note [Structured memory format] in structured.h).
  bool channels_last = false;
  int64_t group_channels() const { return channels / groups; }
};

// batch_norm of a contiguous [n, channels, hw] input: each channel's
// statistics reduce over n and hw. The CUDA kernels reduce a channel in
// batch_norm_splits(n * hw) blocks and keep their partial sums (math::opmath_t)
// in `workspace`: forward (3 * splits + 2) * channels, backward
// (2 * splits + 2) * channels values.
struct batch_norm_plan {
  int64_t n = 0;
  int64_t channels = 0;
  int64_t hw = 1;
  bool training = false;
  double momentum = 0;
  double eps = 0;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
  // (N, H, W, C) memory (Note [Structured memory format]): the CPU kernels see
  // it as [N * H * W, C], through in_memory_order().
  bool channels_last = false;
  batch_norm_plan in_memory_order() const {
    batch_norm_plan p = *this;
    if (channels_last) {
      p.n *= p.hw;
      p.hw = 1;
    }
    return p;
  }
};

// Shares of 4096 elements (opforge/core/channel_splits.h).
inline int64_t batch_norm_splits(int64_t elements) { return channel_sum_splits(elements, 4096); }

} // namespace opforge
