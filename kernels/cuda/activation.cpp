// CUDA entry points for relu and gelu (templates over the scalar type; the
// generated wrapper dispatches on dtype and guards the device). Kernels in
// activation.cu.
#include <opforge/ops/gelu.h>
#include <opforge/ops/relu.h>

#include "activation.cuh"

#include <opforge/args.h>

#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge {

template <typename scalar_t>
at::Tensor relu_cuda(const at::Tensor& self) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const cudaStream_t stream = opforge::cuda::current_stream();
  OPFORGE_CUDA_CHECK(cuda::launch_relu(out.mutable_data_ptr<scalar_t>(),
                                   in.const_data_ptr<scalar_t>(), in.numel(),
                                   stream));
  return out;
}

template <typename scalar_t>
at::Tensor gelu_cuda(const at::Tensor& self, c10::string_view approximate) {
  const math::gelu_approximation approx = parse_gelu_approximate(approximate);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const cudaStream_t stream = opforge::cuda::current_stream();
  OPFORGE_CUDA_CHECK(cuda::launch_gelu(out.mutable_data_ptr<scalar_t>(),
                                   in.const_data_ptr<scalar_t>(), in.numel(),
                                   approx, stream));
  return out;
}

OPFORGE_INSTANTIATE_relu_cuda
OPFORGE_INSTANTIATE_gelu_cuda

} // namespace opforge
