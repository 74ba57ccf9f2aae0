#pragma once
// Argument checks and layout shared by the prelu CPU and CUDA entry points
// (the generated wrapper checks dtype and device, but with `shape: like(self)`
// not the size of 'weight').
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace opforge {

// self viewed as [outer, channels, inner], channels along dim 1; a single
// weight is one channel over everything.
struct prelu_layout {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
};

// 'weight' must be 0-d or 1-d, with one element or one per channel (dim 1 of
// self), as in torch.nn.functional.prelu.
inline prelu_layout prelu_check(const char* op, const at::Tensor& self, const at::Tensor& weight) {
  TORCH_CHECK(weight.dim() <= 1, op, ": expected 'weight' to be a scalar or 1-d tensor, got ",
              weight.dim(), " dims");
  const int64_t w = weight.numel();
  prelu_layout l;
  if (w == 1) {
    l.inner = self.numel();
    return l;
  }
  const int64_t channels = self.dim() >= 2 ? self.size(1) : 1;
  TORCH_CHECK(w == channels, op, ": expected 'weight' to have 1 element or ", channels,
              " (the size of dim 1 of 'self'), got ", w);
  l.outer = self.size(0);
  l.channels = channels;
  l.inner = channels == 0 || l.outer == 0 ? 0 : self.numel() / (l.outer * channels);
  return l;
}

} // namespace opforge
