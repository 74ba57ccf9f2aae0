#pragma once
// A tensor viewed as [outer, size, inner] around one dim (contiguous layout):
// the plan of the ops along one dim. Torch-free, so CUDA sources include it.
#include <cstdint>

namespace opforge {

struct dim_split {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
};

} // namespace opforge
