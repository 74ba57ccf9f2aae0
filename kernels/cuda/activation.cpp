// CUDA entry points for relu and gelu; kernels in activation.cu.
#include <opforge/ops/gelu.h>
#include <opforge/ops/relu.h>

#include "activation.cuh"

#include <opforge/args.h>
#include <opforge/dispatch.h>

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

namespace opforge {

at::Tensor relu_cuda(const at::Tensor& self) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  OPFORGE_DISPATCH_FLOATING(in.scalar_type(), "opforge.relu", [&] {
    C10_CUDA_CHECK(cuda::launch_relu(out.mutable_data_ptr<scalar_t>(),
                                     in.const_data_ptr<scalar_t>(),
                                     in.numel(), stream));
  });
  return out;
}

at::Tensor gelu_cuda(const at::Tensor& self, c10::string_view approximate) {
  const math::gelu_approximation approx = parse_gelu_approximate(approximate);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  OPFORGE_DISPATCH_FLOATING(in.scalar_type(), "opforge.gelu", [&] {
    C10_CUDA_CHECK(cuda::launch_gelu(out.mutable_data_ptr<scalar_t>(),
                                     in.const_data_ptr<scalar_t>(),
                                     in.numel(), approx, stream));
  });
  return out;
}

} // namespace opforge
