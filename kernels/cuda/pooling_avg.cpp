// CUDA entry points for avg_pool2d, adaptive_avg_pool2d and their backward ops
// (templates over the scalar type; the generated wrapper dispatches on dtype
// and guards the device). Kernels in pooling.cu.
#include <opforge/ops/adaptive_avg_pool2d.h>
#include <opforge/ops/adaptive_avg_pool2d_backward.h>
#include <opforge/ops/avg_pool2d.h>
#include <opforge/ops/avg_pool2d_backward.h>

#include "pooling.cuh"

#include <opforge/pooling.h>

#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge {
namespace {

template <typename T, typename Win>
at::Tensor avg_pool(const at::Tensor& self, const pooling::geometry<Win>& a,
                    const math::avg_divisor& divisor) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(a.sizes, in.options());
  OPFORGE_CUDA_CHECK(cuda::launch_avg_pool(out.mutable_data_ptr<T>(), in.const_data_ptr<T>(),
                                       pooling::plane_shape(in, a.sizes), a.rows, a.cols, divisor,
                                       cuda::out_layout{}, opforge::cuda::current_stream()));
  return out;
}

template <typename T, typename Win>
at::Tensor avg_pool_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const pooling::geometry<Win>& a, const math::avg_divisor& divisor) {
  const at::Tensor go = grad_output.contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  OPFORGE_CUDA_CHECK(cuda::launch_avg_pool_backward(
      grad_input.mutable_data_ptr<T>(), go.const_data_ptr<T>(),
      pooling::plane_shape(self, a.sizes), a.rows, a.cols, divisor,
      opforge::cuda::current_stream()));
  return grad_input;
}

} // namespace

template <typename scalar_t>
at::Tensor avg_pool2d_cuda(const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  const auto a = pooling::avg_geometry("opforge.avg_pool2d", self.sizes(), kernel_size, stride,
                                       padding, ceil_mode, divisor_override);
  return avg_pool<scalar_t>(self, a, {count_include_pad, divisor_override.value_or(0)});
}

template <typename scalar_t>
at::Tensor avg_pool2d_backward_cuda(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                    at::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad,
                                    std::optional<int64_t> divisor_override) {
  constexpr const char* op = "opforge.avg_pool2d_backward";
  const auto a = pooling::avg_geometry(op, self.sizes(), kernel_size, stride, padding, ceil_mode,
                                       divisor_override);
  pooling::check_grad_output(op, grad_output.sizes(), a.sizes);
  return avg_pool_backward<scalar_t>(grad_output, self, a,
                                     {count_include_pad, divisor_override.value_or(0)});
}

template <typename scalar_t>
at::Tensor adaptive_avg_pool2d_cuda(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const auto a = pooling::adaptive_geometry(
      self.sizes(), pooling::adaptive_sizes<int64_t>("opforge.adaptive_avg_pool2d", self.sizes(),
                                                     C10_AS_INTARRAYREF_SLOW(output_size)));
  return avg_pool<scalar_t>(self, a, math::k_bin_size);
}

template <typename scalar_t>
at::Tensor adaptive_avg_pool2d_backward_cuda(const at::Tensor& grad_output,
                                             const at::Tensor& self) {
  const auto a = pooling::adaptive_backward_geometry("opforge.adaptive_avg_pool2d_backward",
                                                     grad_output.sizes(), self.sizes());
  return avg_pool_backward<scalar_t>(grad_output, self, a, math::k_bin_size);
}

OPFORGE_INSTANTIATE_avg_pool2d_cuda
OPFORGE_INSTANTIATE_avg_pool2d_backward_cuda
OPFORGE_INSTANTIATE_adaptive_avg_pool2d_cuda
OPFORGE_INSTANTIATE_adaptive_avg_pool2d_backward_cuda

} // namespace opforge
