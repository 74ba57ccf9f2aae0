// Meta (fake) kernels for the pooling ops: the output sizes and argument
// checks of opforge/pooling.h over symbolic sizes, so torch.compile and
// device="meta" see the same errors as the CPU and CUDA kernels. The
// generated Meta wrappers have already checked devices and dtypes.
#include <opforge/ops/adaptive_avg_pool2d.h>
#include <opforge/ops/adaptive_avg_pool2d_backward.h>
#include <opforge/ops/adaptive_max_pool2d_backward.h>
#include <opforge/ops/adaptive_max_pool2d_with_indices.h>
#include <opforge/ops/avg_pool2d.h>
#include <opforge/ops/avg_pool2d_backward.h>
#include <opforge/ops/max_pool2d_backward.h>
#include <opforge/ops/max_pool2d_with_indices.h>
#include <opforge/ops/spatial_pyramid_pool.h>
#include <opforge/ops/spatial_pyramid_pool_backward.h>

#include <opforge/pooling.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {
namespace {

using sym_sizes = pooling::sizes_t<c10::SymInt>;

at::Tensor empty_like_sizes(const sym_sizes& sizes, const at::Tensor& like) {
  return at::empty_symint(sizes, like.options());
}

std::tuple<at::Tensor, at::Tensor> with_indices(const sym_sizes& sizes, const at::Tensor& self) {
  return {empty_like_sizes(sizes, self),
          at::empty_symint(sizes, self.options().dtype(at::kLong))};
}

} // namespace

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices_meta(const at::Tensor& self,
                                                                at::IntArrayRef kernel_size,
                                                                at::IntArrayRef stride,
                                                                at::IntArrayRef padding,
                                                                at::IntArrayRef dilation,
                                                                bool ceil_mode) {
  constexpr const char* op = "opforge.max_pool2d_with_indices";
  const auto w = pooling::window_args(op, kernel_size, stride, padding, dilation);
  return with_indices(pooling::pool2d_sizes(op, self.sym_sizes(), w, ceil_mode), self);
}

at::Tensor max_pool2d_backward_meta(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& indices, at::IntArrayRef kernel_size,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "opforge.max_pool2d_backward";
  const auto w = pooling::window_args(op, kernel_size, stride, padding, dilation);
  pooling::check_grad_output(op, grad_output.sym_sizes(),
                             pooling::pool2d_sizes(op, self.sym_sizes(), w, ceil_mode));
  pooling::check_indices(op, indices.sym_sizes(), grad_output.sym_sizes());
  return at::empty_symint(self.sym_sizes(), self.options());
}

at::Tensor avg_pool2d_meta(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "opforge.avg_pool2d";
  const auto w = pooling::avg_window_args(op, kernel_size, stride, padding, divisor_override);
  return empty_like_sizes(pooling::pool2d_sizes(op, self.sym_sizes(), w, ceil_mode), self);
}

at::Tensor avg_pool2d_backward_meta(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override) {
  constexpr const char* op = "opforge.avg_pool2d_backward";
  const auto w = pooling::avg_window_args(op, kernel_size, stride, padding, divisor_override);
  pooling::check_grad_output(op, grad_output.sym_sizes(),
                             pooling::pool2d_sizes(op, self.sym_sizes(), w, ceil_mode));
  return at::empty_symint(self.sym_sizes(), self.options());
}

at::Tensor adaptive_avg_pool2d_meta(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  return empty_like_sizes(
      pooling::adaptive_sizes("opforge.adaptive_avg_pool2d", self.sym_sizes(), output_size), self);
}

at::Tensor adaptive_avg_pool2d_backward_meta(const at::Tensor& grad_output,
                                             const at::Tensor& self) {
  pooling::adaptive_backward_sizes("opforge.adaptive_avg_pool2d_backward", grad_output.sym_sizes(),
                                   self.sym_sizes());
  return at::empty_symint(self.sym_sizes(), self.options());
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d_with_indices_meta(
    const at::Tensor& self, at::IntArrayRef output_size) {
  return with_indices(pooling::adaptive_sizes("opforge.adaptive_max_pool2d_with_indices",
                                              self.sym_sizes(), output_size),
                      self);
}

at::Tensor adaptive_max_pool2d_backward_meta(const at::Tensor& grad_output,
                                             const at::Tensor& self, const at::Tensor& indices) {
  constexpr const char* op = "opforge.adaptive_max_pool2d_backward";
  pooling::adaptive_backward_sizes(op, grad_output.sym_sizes(), self.sym_sizes());
  pooling::check_indices(op, indices.sym_sizes(), grad_output.sym_sizes());
  return at::empty_symint(self.sym_sizes(), self.options());
}

at::Tensor spatial_pyramid_pool_meta(const at::Tensor& self, at::IntArrayRef levels,
                                     c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool";
  pooling::spp_mode_arg(op, mode);
  return empty_like_sizes(pooling::spp_sizes(op, self.sym_sizes(), levels), self);
}

at::Tensor spatial_pyramid_pool_backward_meta(const at::Tensor& grad_output,
                                              const at::Tensor& self, at::IntArrayRef levels,
                                              c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool_backward";
  pooling::spp_mode_arg(op, mode);
  pooling::check_grad_output(op, grad_output.sym_sizes(),
                             pooling::spp_sizes(op, self.sym_sizes(), levels));
  return at::empty_symint(self.sym_sizes(), self.options());
}

} // namespace opforge
