// CUDA entry points for max_pool2d_with_indices,
// adaptive_max_pool2d_with_indices and their backward ops (templates over the
// scalar type; the generated wrapper dispatches on dtype and guards the
// device). Kernels in pooling.cu.
#include <opforge/ops/adaptive_max_pool2d_backward.h>
#include <opforge/ops/adaptive_max_pool2d_with_indices.h>
#include <opforge/ops/max_pool2d_backward.h>
#include <opforge/ops/max_pool2d_with_indices.h>

#include "pooling.cuh"

#include <opforge/pooling.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <tuple>

namespace opforge {
namespace {

template <typename T, typename Win>
std::tuple<at::Tensor, at::Tensor> max_pool(const at::Tensor& self,
                                             const pooling::geometry<Win>& m) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(m.sizes, in.options());
  at::Tensor indices = at::empty(m.sizes, in.options().dtype(at::kLong));
  OPFORGE_CUDA_CHECK(cuda::launch_max_pool(out.mutable_data_ptr<T>(),
                                       indices.mutable_data_ptr<int64_t>(), in.const_data_ptr<T>(),
                                       pooling::plane_shape(in, m.sizes), m.rows, m.cols,
                                       cuda::out_layout{}, opforge::cuda::current_stream()));
  return {out, indices};
}

template <typename T, typename Win>
at::Tensor max_pool_backward(const char* op, const at::Tensor& grad_output,
                             const at::Tensor& self, const at::Tensor& indices,
                             const pooling::geometry<Win>& m) {
  pooling::check_indices(op, indices.sizes(), grad_output.sizes());
  const at::Tensor go = grad_output.contiguous();
  const at::Tensor ind = indices.contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  OPFORGE_CUDA_CHECK(cuda::launch_max_pool_backward(
      grad_input.mutable_data_ptr<T>(), go.const_data_ptr<T>(), ind.const_data_ptr<int64_t>(),
      pooling::plane_shape(self, m.sizes), m.rows, m.cols, opforge::cuda::current_stream()));
  return grad_input;
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices_cuda(const at::Tensor& self,
                                                                at::IntArrayRef kernel_size,
                                                                at::IntArrayRef stride,
                                                                at::IntArrayRef padding,
                                                                at::IntArrayRef dilation,
                                                                bool ceil_mode) {
  return max_pool<scalar_t>(self, pooling::max_geometry("opforge.max_pool2d_with_indices",
                                                        self.sizes(), kernel_size, stride,
                                                        padding, dilation, ceil_mode));
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d_with_indices_cuda(
    const at::Tensor& self, at::IntArrayRef output_size) {
  return max_pool<scalar_t>(
      self, pooling::adaptive_geometry(self.sizes(), pooling::adaptive_sizes<int64_t>(
                                                         "opforge.adaptive_max_pool2d_with_indices",
                                                         self.sizes(), output_size)));
}

template <typename scalar_t>
at::Tensor max_pool2d_backward_cuda(const at::Tensor& grad_output, const at::Tensor& self,
                                    const at::Tensor& indices, at::IntArrayRef kernel_size,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    at::IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "opforge.max_pool2d_backward";
  const auto m = pooling::max_geometry(op, self.sizes(), kernel_size, stride, padding, dilation,
                                       ceil_mode);
  pooling::check_grad_output(op, grad_output.sizes(), m.sizes);
  return max_pool_backward<scalar_t>(op, grad_output, self, indices, m);
}

template <typename scalar_t>
at::Tensor adaptive_max_pool2d_backward_cuda(const at::Tensor& grad_output,
                                             const at::Tensor& self, const at::Tensor& indices) {
  constexpr const char* op = "opforge.adaptive_max_pool2d_backward";
  return max_pool_backward<scalar_t>(
      op, grad_output, self, indices,
      pooling::adaptive_backward_geometry(op, grad_output.sizes(), self.sizes()));
}

OPFORGE_INSTANTIATE_max_pool2d_with_indices_cuda
OPFORGE_INSTANTIATE_max_pool2d_backward_cuda
OPFORGE_INSTANTIATE_adaptive_max_pool2d_backward_cuda
OPFORGE_INSTANTIATE_adaptive_max_pool2d_with_indices_cuda

} // namespace opforge
