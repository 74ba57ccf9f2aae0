// CUDA entry points for softmax and log_softmax (templates over the scalar
// type; the generated wrapper dispatches on dtype and guards the device).
// Kernels in softmax.cu.
#include <opforge/ops/log_softmax.h>
#include <opforge/ops/softmax.h>

#include "softmax.cuh"

#include <opforge/dims.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <string_view>

namespace opforge {
namespace {

template <bool Log, typename scalar_t>
at::Tensor softmax_impl(std::string_view op, const at::Tensor& self,
                        int64_t dim) {
  const dim_split s = split_along(op, self.sizes(), dim);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const cudaStream_t stream = opforge::cuda::current_stream();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  const scalar_t* x = in.const_data_ptr<scalar_t>();
  if constexpr (Log) {
    OPFORGE_CUDA_CHECK(cuda::launch_log_softmax(y, x, s.outer, s.size, s.inner,
                                            stream));
  } else {
    OPFORGE_CUDA_CHECK(
        cuda::launch_softmax(y, x, s.outer, s.size, s.inner, stream));
  }
  return out;
}

} // namespace

template <typename scalar_t>
at::Tensor softmax_cuda(const at::Tensor& self, int64_t dim) {
  return softmax_impl<false, scalar_t>("opforge.softmax", self, dim);
}

template <typename scalar_t>
at::Tensor log_softmax_cuda(const at::Tensor& self, int64_t dim) {
  return softmax_impl<true, scalar_t>("opforge.log_softmax", self, dim);
}

OPFORGE_INSTANTIATE_softmax_cuda
OPFORGE_INSTANTIATE_log_softmax_cuda

} // namespace opforge
