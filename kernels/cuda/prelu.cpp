// CUDA entry points for prelu and prelu_backward (templates over the scalar
// type; the generated wrapper dispatches on dtype and guards the device).
// Kernels in prelu.cu.
#include <opforge/ops/prelu.h>
#include <opforge/ops/prelu_backward.h>

#include "prelu.cuh"

#include <opforge/prelu.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <tuple>

namespace opforge {

template <typename scalar_t>
at::Tensor prelu_cuda(const at::Tensor& self, const at::Tensor& weight) {
  const prelu_layout l = prelu_check("opforge.prelu", self, weight);
  const at::Tensor in = self.contiguous();
  const at::Tensor wt = weight.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  OPFORGE_CUDA_CHECK(cuda::launch_prelu(
      out.mutable_data_ptr<scalar_t>(), in.const_data_ptr<scalar_t>(),
      wt.const_data_ptr<scalar_t>(), l.outer, l.channels, l.inner,
      opforge::cuda::current_stream()));
  return out;
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor>
prelu_backward_cuda(const at::Tensor& grad_output, const at::Tensor& self,
                    const at::Tensor& weight) {
  const prelu_layout l = prelu_check("opforge.prelu_backward", self, weight);
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor in = self.contiguous();
  const at::Tensor wt = weight.contiguous();
  at::Tensor grad_self = at::empty(in.sizes(), in.options());
  at::Tensor grad_weight = at::empty(wt.sizes(), wt.options());
  using A = math::opmath_t<scalar_t>;
  at::Tensor partial = at::empty({l.channels * cuda::prelu_backward_splits(l.outer, l.inner)},
                                 wt.options().dtype(c10::CppTypeToScalarType<A>::value));
  OPFORGE_CUDA_CHECK(cuda::launch_prelu_backward(
      grad_self.mutable_data_ptr<scalar_t>(),
      grad_weight.mutable_data_ptr<scalar_t>(), partial.mutable_data_ptr<A>(), g.const_data_ptr<scalar_t>(),
      in.const_data_ptr<scalar_t>(), wt.const_data_ptr<scalar_t>(), l.outer,
      l.channels, l.inner, opforge::cuda::current_stream()));
  return {grad_self, grad_weight};
}

OPFORGE_INSTANTIATE_prelu_cuda
OPFORGE_INSTANTIATE_prelu_backward_cuda

} // namespace opforge
