#pragma once
// The plans of the structured layer ops (Note [Structured ops]). Torch-free,
// so the CUDA sources include it.
#include <cstdint>

namespace opforge {

// channel_shuffle of a contiguous (batch, channels, inner) input.
struct channel_shuffle_plan {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t groups = 1;
  int64_t inner = 0;
};

} // namespace opforge
