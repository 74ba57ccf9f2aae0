// CUDA entry points for local_response_norm and its backward (templates over the
// scalar type; the generated wrapper dispatches on dtype and guards the device).
// Kernels in norm_lrn.cu.
#include <opforge/ops/local_response_norm.h>
#include <opforge/ops/local_response_norm_backward.h>

#include "norm_lrn.cuh"

#include <opforge/norm.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <algorithm>

namespace opforge {
namespace {

cuda::lrn_args args_of(const at::Tensor& x, int64_t size, double alpha, double beta, double k) {
  const int64_t n = x.size(0);
  const int64_t c = x.size(1);
  return {n, c, x.numel() / std::max<int64_t>(1, n * c), size, alpha, beta, k};
}

} // namespace

template <typename scalar_t>
at::Tensor local_response_norm_cuda(const at::Tensor& input, int64_t size, double alpha, double beta, double k) {
  local_response_norm_check("opforge.local_response_norm", input, size);
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  OPFORGE_CUDA_CHECK(cuda::launch_local_response_norm(x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(),
                                                  args_of(x, size, alpha, beta, k),
                                                  opforge::cuda::current_stream()));
  return out;
}

template <typename scalar_t>
at::Tensor local_response_norm_backward_cuda(const at::Tensor& grad_output, const at::Tensor& input, int64_t size,
                                             double alpha, double beta, double k) {
  using A = math::opmath_t<scalar_t>;
  constexpr const char* op = "opforge.local_response_norm_backward";
  local_response_norm_check(op, input, size);
  expect_sizes(op, "grad_output", grad_output, input.sym_sizes(), "the shape of 'input'");
  const at::Tensor x = input.contiguous();
  const at::Tensor g = grad_output.contiguous();
  at::Tensor dx = at::empty(x.sizes(), x.options());
  at::Tensor t = at::empty(x.sizes(), x.options().dtype(c10::CppTypeToScalarType<A>::value));
  OPFORGE_CUDA_CHECK(cuda::launch_local_response_norm_backward(
      g.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), dx.mutable_data_ptr<scalar_t>(),
      t.mutable_data_ptr<A>(), args_of(x, size, alpha, beta, k), opforge::cuda::current_stream()));
  return dx;
}

OPFORGE_INSTANTIATE_local_response_norm_cuda
OPFORGE_INSTANTIATE_local_response_norm_backward_cuda

} // namespace opforge
