// CUDA entry point for sum (a template over the scalar type; the generated
// wrapper dispatches on dtype and guards the device). Kernels in reduction.cu.
#include <opforge/ops/sum.h>

#include "reduction.cuh"

#include <opforge/dims.h>
#include <opforge/reduction.h>
#include <opforge/shape_rules.h>

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include "host.h"

namespace opforge {

template <typename scalar_t>
at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    bool keepdim) {
  const dim_mask mask = reduced_dims("opforge.sum", "dim", dim, self.dim());
  const reduce_plan plan =
      plan_reduction(self, mask, cuda::sum_columns_ok);
  // The same shape rule as the generated Meta kernel.
  at::Tensor out = at::empty(
      shape::reduce<int64_t>("opforge.sum", "dim", self.sizes(), dim, keepdim),
      self.options());
  if (out.numel() == 0) {
    return out;
  }
  if (plan.reduced == 0) {
    return out.zero_();
  }
  const cudaStream_t stream = opforge::cuda::current_stream();
  const scalar_t* x = plan.input.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  if (plan.inner > 1) {
    OPFORGE_CUDA_CHECK(cuda::launch_sum_columns(y, x, plan.outer, plan.reduced,
                                            plan.inner, stream));
    return out;
  }
  using acc_t = math::sum_acc_t<scalar_t>;
  const int64_t splits = cuda::sum_row_splits(plan.outer, plan.reduced);
  at::Tensor workspace;
  if (splits > 1) {
    workspace = at::empty(
        {plan.outer * splits},
        self.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  }
  OPFORGE_CUDA_CHECK(cuda::launch_sum_rows(
      y, x, plan.outer, plan.reduced,
      splits > 1 ? workspace.mutable_data_ptr<acc_t>() : nullptr, splits,
      stream));
  return out;
}

OPFORGE_INSTANTIATE_sum_cuda

} // namespace opforge
