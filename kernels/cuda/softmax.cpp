// CUDA entry point for softmax (a template over the scalar type; the generated
// wrapper dispatches on dtype and guards the device). Kernels in softmax.cu.
#include <opforge/ops/softmax.h>

#include "softmax.cuh"

#include <opforge/dims.h>

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

namespace opforge {

template <typename scalar_t>
at::Tensor softmax_cuda(const at::Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim("opforge.softmax", "dim", dim, self.dim());
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  // A 0-d tensor is one row of length 1.
  const dim_split s = in.dim() == 0 ? dim_split{} : split_at_dim(in.sizes(), d);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  C10_CUDA_CHECK(cuda::launch_softmax(out.mutable_data_ptr<scalar_t>(),
                                      in.const_data_ptr<scalar_t>(), s.outer,
                                      s.size, s.inner, stream));
  return out;
}

OPFORGE_INSTANTIATE_softmax_cuda

} // namespace opforge
