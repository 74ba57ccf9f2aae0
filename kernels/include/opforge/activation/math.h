#pragma once
// Scalar activation math shared by the CPU and CUDA kernels: the functors of
// the `pointwise:` entries in schemas/activation.yaml (this header and
// activation_ext.h, which it includes).
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

namespace opforge::math {

enum class gelu_approximation : int { none = 0, tanh = 1 };

template <typename T>
struct relu_fn {
  using acc_t = opmath_t<T>;
  // `x < 0 ? 0 : x` rather than max(): NaN compares false and propagates,
  // as torch.relu does.
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    return cast_to<T>(v < acc_t(0) ? acc_t(0) : v);
  }
};

template <typename T>
struct gelu_erf_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    constexpr acc_t k_sqrt1_2 = acc_t(0.70710678118654752440);
    const acc_t v = cast_to<acc_t>(x);
    return cast_to<T>(v * acc_t(0.5) * (acc_t(1) + erf_(v * k_sqrt1_2)));
  }
};

template <typename T>
struct gelu_tanh_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    constexpr acc_t k_beta = acc_t(0.79788456080286535588); // sqrt(2/pi)
    constexpr acc_t k_kappa = acc_t(0.044715);
    const acc_t v = cast_to<acc_t>(x);
    const acc_t inner = k_beta * (v + k_kappa * v * v * v);
    return cast_to<T>(acc_t(0.5) * v * (acc_t(1) + tanh_(inner)));
  }
};

// d relu / dx given the output: zero where result <= 0, else grad. A NaN
// result passes grad through, as torch's threshold_backward does.
template <typename T>
struct relu_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T result) const {
    return cast_to<acc_t>(result) <= acc_t(0) ? cast_to<T>(acc_t(0)) : grad;
  }
};

template <typename T>
struct gelu_erf_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    constexpr acc_t k_sqrt1_2 = acc_t(0.70710678118654752440);
    constexpr acc_t k_inv_sqrt_2pi = acc_t(0.39894228040143267794);
    const acc_t v = cast_to<acc_t>(x);
    const acc_t cdf = acc_t(0.5) * (acc_t(1) + erf_(v * k_sqrt1_2));
    const acc_t pdf = k_inv_sqrt_2pi * exp_(acc_t(-0.5) * v * v);
    return cast_to<T>(cast_to<acc_t>(grad) * (cdf + v * pdf));
  }
};

template <typename T>
struct gelu_tanh_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    constexpr acc_t k_beta = acc_t(0.79788456080286535588);  // sqrt(2/pi)
    constexpr acc_t k_kappa = acc_t(0.044715);
    const acc_t v = cast_to<acc_t>(x);
    const acc_t t = tanh_(k_beta * (v + k_kappa * v * v * v));
    const acc_t d_inner = k_beta * (acc_t(1) + acc_t(3) * k_kappa * v * v);
    const acc_t d = acc_t(0.5) * (acc_t(1) + t) + acc_t(0.5) * v * (acc_t(1) - t * t) * d_inner;
    return cast_to<T>(cast_to<acc_t>(grad) * d);
  }
};

} // namespace opforge::math

#include <opforge/activation/math_ext.h>
