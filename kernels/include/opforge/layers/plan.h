#pragma once
// The plans of the structured layer ops (Note [Structured ops]). Torch-free,
// so the CUDA sources include it.
#include <opforge/core/plan_services.h>

#include <cstdint>

namespace opforge {

// embedding: out[i, :] = weight[indices[i], :] for i < n; weight is (rows, dim).
struct embedding_plan {
  int64_t n = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  index_report bad_index;
};

// embedding_backward: out (rows, dim) = the rows of grad (n, dim) summed into
// the rows indices name, none into padding_idx. CUDA sums half/bfloat16 in a
// float workspace of rows * dim (atomics on 16-bit types are slow and lossy).
struct embedding_backward_plan {
  int64_t n = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  int64_t padding_idx = -1;
  index_report bad_index;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// channel_shuffle of a contiguous (batch, channels, inner) input.
struct channel_shuffle_plan {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t groups = 1;
  int64_t inner = 0;
};

// dropout_forward of n elements: not training or p = 0 a copy with an all-true
// mask (keep), p = 1 zeros with an all-false mask (drop), otherwise element i
// kept with probability 1 - p and scaled by `scale` (random; opforge/layers/dropout_math.h).
enum class dropout_mode : int32_t { keep, drop, random };

struct dropout_plan {
  int64_t n = 0;
  dropout_mode mode = dropout_mode::keep;
  uint32_t threshold = 0;  // math::dropout_threshold(p)
  double scale = 1.0;      // 1 / (1 - p)
  philox_request random;   // one Philox counter per 4 elements (random mode only)
};

// dropout_backward: out[i] = mask[i] ? grad[i] * scale : 0.
struct dropout_backward_plan {
  int64_t n = 0;
  double scale = 1.0;
};

} // namespace opforge
