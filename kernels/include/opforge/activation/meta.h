#pragma once
// Meta functions of the structured ops of the activation family (Note
// [Structured ops] in opforge/core/structured.h): prelu and its backward.
#include <opforge/core/checks.h>
#include <opforge/activation/prelu_checks.h>
#include <opforge/core/structured.h>

namespace opforge {

template <typename Int>
structured::result<Int, 1, prelu_plan> prelu_meta(const char* op, const at::Tensor& self,
                                                  const at::Tensor& weight) {
  prelu_check(op, self, weight);
  structured::result<Int, 1, prelu_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = prelu_plan_of(self, weight);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

// The gradients like `self` and like `weight`.
template <typename Int>
structured::result<Int, 2, prelu_plan> prelu_backward_meta(const char* op,
                                                           const at::Tensor& grad_output,
                                                           const at::Tensor& self,
                                                           const at::Tensor& weight) {
  prelu_check(op, self, weight);
  check::same_shape(op, "grad_output", grad_output, "self", self);
  structured::result<Int, 2, prelu_plan> r{
      {structured::like<Int>(self), structured::like<Int>(weight)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = prelu_plan_of(self, weight);
    r.plan.workspace_bytes = r.plan.channels *
                             channel_sum_splits(r.plan.outer * r.plan.inner) *
                             structured::opmath_bytes(self.scalar_type());
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

} // namespace opforge
