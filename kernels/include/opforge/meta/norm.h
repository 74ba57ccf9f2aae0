#pragma once
// Meta functions of the structured norm ops (Note [Structured ops] in
// opforge/structured.h): the shape checks of opforge/norm.h, the outputs, and
// for concrete sizes the plans of opforge/norm_plan.h.
#include <opforge/norm.h>
#include <opforge/norm_plan.h>
#include <opforge/structured.h>

#include <algorithm>

namespace opforge {
namespace norm {

inline lrn_plan lrn_plan_of(const at::Tensor& input, int64_t size, double alpha, double beta,
                            double k) {
  const int64_t n = input.size(0);
  const int64_t c = input.size(1);
  return {n, c, input.numel() / std::max<int64_t>(1, n * c), size, alpha, beta, k};
}

} // namespace norm

template <typename Int>
structured::result<Int, 1, lrn_plan> local_response_norm_meta(const char* op,
                                                               const at::Tensor& input,
                                                               int64_t size, double alpha,
                                                               double beta, double k) {
  local_response_norm_check(op, input, size);
  structured::result<Int, 1, lrn_plan> r{{structured::like<Int>(input)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::lrn_plan_of(input, size, alpha, beta, k);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, lrn_plan> local_response_norm_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& input, int64_t size,
    double alpha, double beta, double k) {
  local_response_norm_check(op, input, size);
  expect_sizes(op, "grad_output", grad_output, input.sym_sizes(), "the shape of 'input'");
  structured::result<Int, 1, lrn_plan> r{{structured::like<Int>(input)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::lrn_plan_of(input, size, alpha, beta, k);
    r.plan.workspace_bytes = input.numel() * structured::opmath_bytes(input.scalar_type());
  }
  return r;
}

} // namespace opforge
