#pragma once
// Scalar math of the norms of clip_grad_norm_ (schemas/optim.yaml) and of the
// pruning criteria (schemas/prune.yaml), shared by the CPU and CUDA kernels:
// torch.linalg.vector_norm's p-norm of many elements as a reduction (an
// element term, an associative combination with its identity, a final step),
// and torch.nn.utils.clip_grad_norm_'s clip coefficient.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace opforge::math {

// p = 2: sqrt(sum x^2); p = 1: sum |x|; p = +inf: max |x|; p = -inf: min |x|;
// p = 0: the count of non-zero elements; else (sum |x|^p)^(1/p); in A. NaN
// propagates through max and min as through the sums.
template <typename A = double>
struct vector_norm_fn {
  double p;

  C10_HOST_DEVICE bool is_max() const { return p == std::numeric_limits<double>::infinity(); }
  C10_HOST_DEVICE bool is_min() const { return p == -std::numeric_limits<double>::infinity(); }
  C10_HOST_DEVICE A identity() const { return is_min() ? std::numeric_limits<A>::infinity() : A(0); }
  C10_HOST_DEVICE A term(A x) const {
    const A a = std::fabs(x);
    if (p == 2.0) {
      return a * a;
    }
    if (p == 1.0 || is_max() || is_min()) {
      return a;
    }
    if (p == 0.0) {
      return a != A(0) ? A(1) : A(0);
    }
    return static_cast<A>(std::pow(a, static_cast<A>(p)));
  }
  C10_HOST_DEVICE A combine(A a, A b) const {
    if (!is_max() && !is_min()) {
      return a + b;
    }
    if (a != a || b != b) {
      return a != a ? a : b;
    }
    return is_max() ? (a > b ? a : b) : (a < b ? a : b);
  }
  C10_HOST_DEVICE A finish(A s) const {
    if (p == 2.0) {
      return std::sqrt(s);
    }
    if (p == 1.0 || p == 0.0 || is_max() || is_min()) {
      return s;
    }
    return static_cast<A>(std::pow(s, static_cast<A>(1.0 / p)));
  }
};

// The combination as a binary operator (a block reduction's).
template <typename A>
struct vector_norm_combine {
  vector_norm_fn<A> norm;
  C10_HOST_DEVICE A operator()(A a, A b) const { return norm.combine(a, b); }
};

// torch.nn.utils.clip_grad_norm_'s total: the norm of the per-tensor norms
// `norms` (each reduced in double), each rounded to T first as torch's are.
template <typename T, typename Norms>
C10_HOST_DEVICE inline T norm_of_norms(const vector_norm_fn<double>& norm, const Norms& norms, int64_t count) {
  double s = norm.identity();
  for (int64_t i = 0; i < count; ++i) {
    const T n = cast_to<T>(norm.finish(norms[i]));
    s = norm.combine(s, norm.term(static_cast<double>(cast_to<opmath_t<T>>(n))));
  }
  return cast_to<T>(norm.finish(s));
}

// min(max_norm / (total + 1e-6), 1), rounded to T after each step as torch's
// tensor expression rounds it (the division is max_norm times the reciprocal,
// Tensor.__rtruediv__'s form). A NaN total gives NaN.
template <typename T>
C10_HOST_DEVICE inline T clip_coefficient(T total, double max_norm) {
  using A = opmath_t<T>;
  const T shifted = cast_to<T>(cast_to<A>(total) + static_cast<A>(1e-6));
  const T reciprocal = cast_to<T>(A(1) / cast_to<A>(shifted));
  const T coefficient = cast_to<T>(cast_to<A>(reciprocal) * static_cast<A>(max_norm));
  return cast_to<A>(coefficient) > A(1) ? cast_to<T>(A(1)) : coefficient;
}

}  // namespace opforge::math
