#pragma once
// Memory-layout helpers for elementwise kernels.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>

namespace opforge {

// Returns `self` when its storage is one dense block (any dim order), else a
// dense copy in the layout empty_like(self) would pick. A flat loop over the
// result then lines up element for element with empty_like of it, so unary
// outputs keep the input's layout like torch's own pointwise ops.
inline at::Tensor dense_input(const at::Tensor& self) {
  if (self.is_non_overlapping_and_dense()) {
    return self;
  }
  return self.contiguous(self.suggest_memory_format());
}

} // namespace opforge
