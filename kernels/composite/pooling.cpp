// max_pool2d and adaptive_max_pool2d: the values of their _with_indices ops,
// which carry the autograd formulas (the indices route the gradient).
#include <opforge/ops/adaptive_max_pool2d.h>
#include <opforge/ops/adaptive_max_pool2d_with_indices.h>
#include <opforge/ops/max_pool2d.h>
#include <opforge/ops/max_pool2d_with_indices.h>

#include <tuple>

namespace opforge {

at::Tensor max_pool2d_composite(const at::Tensor& self, at::IntArrayRef kernel_size,
                                at::IntArrayRef stride, at::IntArrayRef padding,
                                at::IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      ops::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

at::Tensor adaptive_max_pool2d_composite(const at::Tensor& self, at::IntArrayRef output_size) {
  return std::get<0>(ops::adaptive_max_pool2d_with_indices(self, output_size));
}

} // namespace opforge
