#pragma once
// The plan of the per-channel fake quantization ops (schemas/quantize.yaml):
// self viewed as [outer, channels, inner] around `axis` (contiguous), with the
// integer range. Torch-free, so the CUDA sources include it.
#include <cstdint>

namespace opforge {

struct per_channel_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  int64_t quant_min = 0;
  int64_t quant_max = 0;
};

}  // namespace opforge
