#pragma once
// Scalar math of leaky_relu, elu, softplus, sigmoid, tanh, silu, hardsigmoid
// and hardswish and their backward ops, shared by the CPU and CUDA kernels.
// Parameters arrive as opmath_t values, converted once on the host.
//
// Piecewise definitions use select_ (functions.h), not `c ? a : b`, so that the
// CPU loops vectorize. Comparisons are written as in ATen's kernels, so NaN
// takes the same arm there and here.
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

namespace opforge::math {

template <typename T>
struct leaky_relu_fn {
  using acc_t = opmath_t<T>;
  acc_t negative_slope;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t neg = v * negative_slope;
    return cast_to<T>(select_(v > acc_t(0), v, neg));
  }
};

// grad where self > 0, else grad * negative_slope (ATen's leaky_relu_backward).
template <typename T>
struct leaky_relu_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t negative_slope;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t g = cast_to<acc_t>(grad);
    const acc_t neg = g * negative_slope;
    return cast_to<T>(select_(cast_to<acc_t>(x) > acc_t(0), g, neg));
  }
};

template <typename T>
struct elu_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t neg = alpha * expm1_(v);  // exp(v) - 1 would cancel near 0
    return cast_to<T>(select_(v <= acc_t(0), neg, v));
  }
};

// d elu / dx from the input: 1 for x > 0, else alpha * exp(x). A NaN x gives
// a NaN gradient: ATen's own answer there depends on the tensor's length (its
// vectorized loop gives NaN, its scalar tail passes grad through).
template <typename T>
struct elu_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t g = cast_to<acc_t>(grad);
    const acc_t v = cast_to<acc_t>(x);
    const acc_t neg = g * alpha * exp_(v);
    return cast_to<T>(select_(v > acc_t(0), g, neg));
  }
};

// log(1 + exp(beta * x)) / beta, or x itself where beta * x > threshold.
template <typename T>
struct softplus_fn {
  using acc_t = opmath_t<T>;
  acc_t beta;
  acc_t threshold;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t z = v * beta;
    const acc_t soft = log1p_(exp_(z)) / beta;
    return cast_to<T>(select_(z > threshold, v, soft));
  }
};

// grad * sigmoid(beta * x), or grad where beta * x > threshold.
template <typename T>
struct softplus_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t beta;
  acc_t threshold;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t g = cast_to<acc_t>(grad);
    const acc_t z = cast_to<acc_t>(x) * beta;
    const acc_t e = exp_(z);
    const acc_t soft = g * e / (e + acc_t(1));
    return cast_to<T>(select_(z > threshold, g, soft));
  }
};

template <typename T>
struct sigmoid_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    return cast_to<T>(acc_t(1) / (acc_t(1) + exp_(-v)));
  }
};

// From the output y: grad * (1 - y) * y.
template <typename T>
struct sigmoid_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T output) const {
    const acc_t y = cast_to<acc_t>(output);
    return cast_to<T>(cast_to<acc_t>(grad) * (acc_t(1) - y) * y);
  }
};

template <typename T>
struct tanh_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const { return cast_to<T>(tanh_(cast_to<acc_t>(x))); }
};

// From the output y: grad * (1 - y^2).
template <typename T>
struct tanh_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T output) const {
    const acc_t y = cast_to<acc_t>(output);
    return cast_to<T>(cast_to<acc_t>(grad) * (acc_t(1) - y * y));
  }
};

template <typename T>
struct silu_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    return cast_to<T>(v / (acc_t(1) + exp_(-v)));
  }
};

// grad * s * (1 + x * (1 - s)) with s = sigmoid(x).
template <typename T>
struct silu_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t s = acc_t(1) / (acc_t(1) + exp_(-v));
    return cast_to<T>(cast_to<acc_t>(grad) * s * (acc_t(1) + v * (acc_t(1) - s)));
  }
};

// min(max(x + 3, 0), 6) / 6; the clamps keep NaN, as std::min/max do in ATen.
template <typename T>
struct hardsigmoid_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    acc_t t = cast_to<acc_t>(x) + acc_t(3);
    t = select_(t < acc_t(0), acc_t(0), t);
    t = select_(t > acc_t(6), acc_t(6), t);
    return cast_to<T>(t / acc_t(6));
  }
};

// grad / 6 strictly inside (-3, 3), else 0. 1/6 is rounded to float even for
// double, as in ATen's hardsigmoid_backward, so that float64 results agree.
template <typename T>
struct hardsigmoid_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t inside = cast_to<acc_t>(grad) * acc_t(1.0f / 6.0f);
    return cast_to<T>(select_((v > acc_t(-3)) & (v < acc_t(3)), inside, acc_t(0)));
  }
};

// x * min(max(x + 3, 0), 6) / 6.
template <typename T>
struct hardswish_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x) const {
    const acc_t v = cast_to<acc_t>(x);
    acc_t t = v + acc_t(3);
    t = select_(t < acc_t(0), acc_t(0), t);
    t = select_(t > acc_t(6), acc_t(6), t);
    return cast_to<T>(v * t / acc_t(6));
  }
};

// 0 up to -3, grad * (x / 3 + 1/2) on (-3, 3), grad from 3 (ATen's
// hardswish_backward, boundaries included the same way).
template <typename T>
struct hardswish_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t g = cast_to<acc_t>(grad);
    const acc_t v = cast_to<acc_t>(x);
    const acc_t mid = g * (v / acc_t(3) + acc_t(0.5));
    // NaN falls through both tests to `mid`, NaN (as ATen's vectorized kernel).
    const acc_t upper = select_(v >= acc_t(3), g, mid);
    return cast_to<T>(select_(v <= acc_t(-3), acc_t(0), upper));
  }
};

} // namespace opforge::math
