// CUDA entry points for softmax_backward and log_softmax_backward (templates
// over the scalar type; the generated wrapper dispatches on dtype and guards
// the device). Kernels in softmax_backward.cu.
#include <opforge/ops/log_softmax_backward.h>
#include <opforge/ops/softmax_backward.h>

#include "softmax_backward.cuh"

#include <opforge/dims.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <string_view>

namespace opforge {
namespace {

template <bool Log, typename scalar_t>
at::Tensor backward_impl(std::string_view op, const at::Tensor& grad_output,
                         const at::Tensor& output, int64_t dim) {
  const dim_split s = split_along(op, grad_output.sizes(), dim);
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor result = output.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  scalar_t* o = out.mutable_data_ptr<scalar_t>();
  const scalar_t* g = grad.const_data_ptr<scalar_t>();
  const scalar_t* y = result.const_data_ptr<scalar_t>();
  const cudaStream_t stream = opforge::cuda::current_stream();
  if constexpr (Log) {
    OPFORGE_CUDA_CHECK(cuda::launch_log_softmax_backward(o, g, y, s.outer, s.size,
                                                     s.inner, stream));
  } else {
    OPFORGE_CUDA_CHECK(cuda::launch_softmax_backward(o, g, y, s.outer, s.size,
                                                 s.inner, stream));
  }
  return out;
}

} // namespace

template <typename scalar_t>
at::Tensor softmax_backward_cuda(const at::Tensor& grad_output,
                                 const at::Tensor& output, int64_t dim) {
  return backward_impl<false, scalar_t>("opforge.softmax_backward",
                                        grad_output, output, dim);
}

template <typename scalar_t>
at::Tensor log_softmax_backward_cuda(const at::Tensor& grad_output,
                                     const at::Tensor& output, int64_t dim) {
  return backward_impl<true, scalar_t>("opforge.log_softmax_backward",
                                       grad_output, output, dim);
}

OPFORGE_INSTANTIATE_softmax_backward_cuda
OPFORGE_INSTANTIATE_log_softmax_backward_cuda

} // namespace opforge
