// CUDA entry point for add (a template over the scalar type; the generated
// wrapper converts both inputs to the promoted dtype, dispatches on it and
// guards the device). Kernels in binary.cu.
#include <opforge/ops/add.h>

#include "binary.cuh"

#include <opforge/args.h>
#include <opforge/broadcast.h>

#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge {
namespace {

cuda::add_geometry to_geometry(const broadcast_plan& plan) {
  cuda::add_geometry g;
  g.ndim = static_cast<int32_t>(plan.ndim());
  for (int64_t d = 0; d < plan.ndim(); ++d) {
    g.sizes[d] = plan.sizes[d];
    g.strides[0][d] = plan.strides[0][d];
    g.strides[1][d] = plan.strides[1][d];
  }
  return g;
}

} // namespace

template <typename scalar_t>
at::Tensor add_cuda(const at::Tensor& self, const at::Tensor& other,
                    const at::Scalar& alpha) {
  check_add_alpha(alpha, self.scalar_type());
  const auto shape = broadcast_shape("opforge.add", self, other);
  at::Tensor out = at::empty(shape, self.options());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;
  }
  const cudaStream_t stream = opforge::cuda::current_stream();
  using alpha_t = cuda::add_alpha_t<scalar_t>;
  const auto a = alpha.to<alpha_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  if (self.sizes() == other.sizes() && self.is_contiguous() &&
      other.is_contiguous()) {
    OPFORGE_CUDA_CHECK(cuda::launch_add_contiguous(
        y, self.const_data_ptr<scalar_t>(), other.const_data_ptr<scalar_t>(), a,
        n, stream));
    return out;
  }
  const broadcast_plan plan = plan_broadcast(self, other, shape);
  if (plan.ndim() <= cuda::k_max_add_dims) {
    OPFORGE_CUDA_CHECK(cuda::launch_add_strided(
        y, self.const_data_ptr<scalar_t>(), other.const_data_ptr<scalar_t>(), a,
        n, to_geometry(plan), stream));
    return out;
  }
  // Rare: more than k_max_add_dims dims that cannot be merged.
  const at::Tensor sa = self.expand(shape).contiguous();
  const at::Tensor sb = other.expand(shape).contiguous();
  OPFORGE_CUDA_CHECK(cuda::launch_add_contiguous(
      y, sa.const_data_ptr<scalar_t>(), sb.const_data_ptr<scalar_t>(), a, n,
      stream));
  return out;
}

OPFORGE_INSTANTIATE_add_cuda

} // namespace opforge
