// Device-independent composites for reductions, written against ATen view ops
// so autograd, meta and every device come from those ops.
#include <opforge/ops/sum_backward.h>

#include <opforge/core/dims.h>

#include <ATen/ops/expand.h>
#include <ATen/ops/unsqueeze.h>

namespace opforge {

at::Tensor sum_backward_composite(const at::Tensor& grad_output, c10::SymIntArrayRef sizes, at::OptionalIntArrayRef dim,
                                  bool keepdim) {
  const auto ndim = static_cast<int64_t>(sizes.size());
  at::Tensor g = grad_output;
  if (!keepdim && g.dim() < ndim) {
    // Restore the reduced dims in increasing order so each index is final.
    const dim_mask mask = reduced_dims("opforge.sum_backward", "dim", dim, ndim);
    for (int64_t d = 0; d < ndim; ++d) {
      if (mask.test(static_cast<size_t>(d))) {
        g = g.unsqueeze(d);
      }
    }
  }
  return g.expand_symint(sizes);
}

}  // namespace opforge
