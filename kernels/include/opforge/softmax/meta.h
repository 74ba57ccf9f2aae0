#pragma once
// Meta functions of the softmax family (Note [Structured ops] in
// opforge/core/structured.h): the checks and outputs, and the [outer, n, inner]
// split the kernels loop over.
#include <opforge/core/checks.h>
#include <opforge/core/dims.h>
#include <opforge/core/structured.h>

namespace opforge {

// softmax and log_softmax: one output like `self`, normalized along `dim`.
template <typename Int>
structured::result<Int, 1, dim_split> softmax_meta(const char* op, const at::Tensor& self,
                                                   int64_t dim) {
  structured::result<Int, 1, dim_split> r{{structured::like<Int>(self)}};
  const c10::ArrayRef<Int> sizes = structured::sizes_of<Int>(self);
  if constexpr (structured::concrete<Int>) {
    r.plan = split_along(op, sizes, dim);
  } else {
    wrap_dim(op, "dim", dim, static_cast<int64_t>(sizes.size()));
  }
  return r;
}

// Their backward ops: the gradient like `grad_output`, which `output` matches.
template <typename Int>
structured::result<Int, 1, dim_split> softmax_backward_meta(const char* op,
                                                            const at::Tensor& grad_output,
                                                            const at::Tensor& output,
                                                            int64_t dim) {
  check::same_shape(op, "output", output, "grad_output", grad_output);
  return softmax_meta<Int>(op, grad_output, dim);
}

} // namespace opforge
