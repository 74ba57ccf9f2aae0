// CUDA entry point for softmax_backward (a template over the scalar type; the
// generated wrapper dispatches on dtype and guards the device). Kernels in
// softmax_backward.cu.
#include <opforge/ops/softmax_backward.h>

#include "softmax_backward.cuh"

#include <opforge/dims.h>

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

namespace opforge {

template <typename scalar_t>
at::Tensor softmax_backward_cuda(const at::Tensor& grad_output,
                                 const at::Tensor& output, int64_t dim) {
  const int64_t d =
      wrap_dim("opforge.softmax_backward", "dim", dim, grad_output.dim());
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor result = output.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  // A 0-d tensor is one row of length 1.
  const dim_split s =
      grad.dim() == 0 ? dim_split{} : split_at_dim(grad.sizes(), d);
  C10_CUDA_CHECK(cuda::launch_softmax_backward(
      out.mutable_data_ptr<scalar_t>(), grad.const_data_ptr<scalar_t>(),
      result.const_data_ptr<scalar_t>(), s.outer, s.size, s.inner,
      c10::cuda::getCurrentCUDAStream()));
  return out;
}

OPFORGE_INSTANTIATE_softmax_backward_cuda

} // namespace opforge
