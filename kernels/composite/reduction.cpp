// Device-independent composites for reductions, written against ATen view ops
// so autograd, meta and every device come from those ops.
#include <opforge/ops/sum_backward.h>

#include <opforge/core/dims.h>

#include <ATen/ops/expand.h>
#include <ATen/ops/unsqueeze.h>
#include <c10/util/Exception.h>

#include <vector>

namespace opforge {

at::Tensor sum_backward_composite(const at::Tensor& grad_output, c10::SymIntArrayRef sizes, at::OptionalIntArrayRef dim,
                                  bool keepdim) {
  constexpr const char* op = "opforge.sum_backward";
  const auto ndim = static_cast<int64_t>(sizes.size());
  const dim_mask mask = reduced_dims(op, "dim", dim, ndim);
  // grad_output must have sum's result shape: the reduced dims dropped (1 with keepdim).
  std::vector<c10::SymInt> reduced;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask.test(static_cast<size_t>(d))) {
      reduced.push_back(sizes[d]);
    } else if (keepdim) {
      reduced.emplace_back(1);
    }
  }
  TORCH_CHECK(grad_output.sym_sizes() == c10::SymIntArrayRef(reduced), op, ": expected 'grad_output' of sum's result shape ",
              c10::SymIntArrayRef(reduced), ", got ", grad_output.sym_sizes());
  at::Tensor g = grad_output;
  if (!keepdim) {
    // Restore the reduced dims in increasing order so each index is final.
    for (int64_t d = 0; d < ndim; ++d) {
      if (mask.test(static_cast<size_t>(d))) {
        g = g.unsqueeze(d);
      }
    }
  }
  return g.expand_symint(sizes);
}

}  // namespace opforge
