// CUDA entry points for relu_backward and gelu_backward (templates over the
// scalar type; the generated wrapper dispatches on dtype and guards the
// device). Kernels in activation_backward.cu.
#include <opforge/ops/gelu_backward.h>
#include <opforge/ops/relu_backward.h>

#include "activation_backward.cuh"

#include <opforge/args.h>

#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge {

template <typename scalar_t>
at::Tensor relu_backward_cuda(const at::Tensor& grad_output,
                              const at::Tensor& output) {
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor result = output.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  OPFORGE_CUDA_CHECK(cuda::launch_relu_backward(
      out.mutable_data_ptr<scalar_t>(), grad.const_data_ptr<scalar_t>(),
      result.const_data_ptr<scalar_t>(), grad.numel(),
      opforge::cuda::current_stream()));
  return out;
}

template <typename scalar_t>
at::Tensor gelu_backward_cuda(const at::Tensor& grad_output,
                              const at::Tensor& self,
                              c10::string_view approximate) {
  const math::gelu_approximation approx = parse_gelu_approximate(approximate);
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  OPFORGE_CUDA_CHECK(cuda::launch_gelu_backward(
      out.mutable_data_ptr<scalar_t>(), grad.const_data_ptr<scalar_t>(),
      x.const_data_ptr<scalar_t>(), grad.numel(), approx,
      opforge::cuda::current_stream()));
  return out;
}

OPFORGE_INSTANTIATE_relu_backward_cuda
OPFORGE_INSTANTIATE_gelu_backward_cuda

} // namespace opforge
