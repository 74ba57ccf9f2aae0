#pragma once
// Meta functions of the initialization ops (Note [Structured ops] in
// opforge/core/structured.h): the argument checks torch.nn.init and ATen's random
// fills make, an output like `tensor` (its memory format kept), and the plan.
#include <opforge/core/generator_check.h>
#include <opforge/init/plan.h>
#include <opforge/init/math.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <cmath>
#include <optional>

namespace opforge {

namespace detail {

// A random fill like `tensor`, after the generator's check.
template <typename Int>
structured::result<Int, 1, random_fill_plan> random_fill(const char* op, const at::Tensor& tensor,
                                                         const std::optional<at::Generator>& generator,
                                                         random_fill_plan plan) {
  check::generator_device(op, generator, tensor, "tensor");
  structured::result<Int, 1, random_fill_plan> r{{structured::like<Int>(tensor)}};
  if constexpr (structured::concrete<Int>) {
    plan.n = tensor.numel();
    plan.random.words = math::init_words(plan.n);
    r.plan = plan;
  }
  structured::follow_layout(r, structured::layout_of(tensor));
  return r;
}

inline void std_check(const char* op, double std) {
  TORCH_CHECK(std >= 0.0, op, ": expected 'std' >= 0, got ", std);
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, random_fill_plan> uniform_meta(const char* op, const at::Tensor& tensor, double a, double b,
                                                          const std::optional<at::Generator>& generator) {
  TORCH_CHECK(a <= b, op, ": expected a range [a, b) with a <= b, got a = ", a, ", b = ", b);
  random_fill_plan plan;
  plan.low = a;
  plan.high = b;
  return detail::random_fill<Int>(op, tensor, generator, plan);
}

template <typename Int>
structured::result<Int, 1, random_fill_plan> normal_meta(const char* op, const at::Tensor& tensor, double mean,
                                                         double std, const std::optional<at::Generator>& generator) {
  detail::std_check(op, std);
  random_fill_plan plan;
  plan.mean = mean;
  plan.std = std;
  return detail::random_fill<Int>(op, tensor, generator, plan);
}

// The uniform range of erf^-1's argument is [erf(alpha), erf(beta)] with
// alpha, beta the bounds standardized and divided by sqrt(2) (2 Phi(x) - 1 =
// erf(x / sqrt(2))). With std = 0 every value is mean, clamped.
template <typename Int>
structured::result<Int, 1, random_fill_plan> trunc_normal_meta(const char* op, const at::Tensor& tensor, double mean,
                                                               double std, double a, double b,
                                                               const std::optional<at::Generator>& generator) {
  detail::std_check(op, std);
  TORCH_CHECK(a <= b, op, ": expected bounds a <= b, got a = ", a, ", b = ", b);
  random_fill_plan plan;
  plan.mean = mean;
  plan.std = std;
  plan.low = a;
  plan.high = b;
  if (std > 0.0) {
    plan.erf_low = std::erf((a - mean) / (std * std::sqrt(2.0)));
    plan.erf_high = std::erf((b - mean) / (std * std::sqrt(2.0)));
  } else {
    plan.erf_low = plan.erf_high = 0.0;
  }
  return detail::random_fill<Int>(op, tensor, generator, plan);
}

template <typename Int>
structured::result<Int, 1, constant_plan> constant_meta(const char* /*op*/, const at::Tensor& tensor, double val) {
  structured::result<Int, 1, constant_plan> r{{structured::like<Int>(tensor)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {tensor.numel(), val};
  }
  structured::follow_layout(r, structured::layout_of(tensor));
  return r;
}

}  // namespace opforge
