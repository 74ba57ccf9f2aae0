#pragma once
// Elementwise math of the pointwise losses (schemas/loss.yaml) and their
// backward ops, shared by the CPU and CUDA kernels (Note [Pointwise losses] in
// opforge/core/pointwise/loss.h: the reduction is not the functors' business, and
// a backward functor's `grad` already carries the 1/count of 'mean').
//
// Formulas and clamps follow ATen's kernels (aten/src/ATen/native/Loss*.cpp)
// so that values, NaN included, match torch. Piecewise definitions use
// select_ so that the CPU loops vectorize.
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

namespace opforge::math {

// x^y; on the host fast::pow, which vectorizes (libm's powf kept focal loss's
// loops scalar: 2.6x ATen's time).
C10_HOST_DEVICE inline float pow_(float x, float y) {
#if OPFORGE_DEVICE_MATH
  return ::powf(x, y);
#else
  return fast::pow(x, y);
#endif
}
C10_HOST_DEVICE inline double pow_(double x, double y) { return ::pow(x, y); }

template <typename A>
C10_HOST_DEVICE inline A abs_(A v) {
  return select_(v < A(0), -v, v);
}

template <typename A>
C10_HOST_DEVICE inline A max_(A a, A b) {
  return select_(a < b, b, a);
}

// log(1 + exp(-x)) without overflow: log1p(exp(-|x|)) + max(-x, 0).
template <typename A>
C10_HOST_DEVICE inline A softplus_neg_(A x) {
  return log1p_(exp_(-abs_(x))) + max_(-x, A(0));
}

// (x - y)^2
template <typename T>
struct mse_loss_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const acc_t r = cast_to<acc_t>(x) - cast_to<acc_t>(y);
    return cast_to<T>(r * r);
  }
};

// 2 (x - y) grad
template <typename T>
struct mse_loss_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t r = cast_to<acc_t>(x) - cast_to<acc_t>(y);
    return cast_to<T>(acc_t(2) * r * cast_to<acc_t>(grad));
  }
};

// |x - y|
template <typename T>
struct l1_loss_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    return cast_to<T>(abs_(cast_to<acc_t>(x) - cast_to<acc_t>(y)));
  }
};

// sign(x - y) grad, 0 where x == y or x - y is NaN (as ATen's l1_loss
// gradient, whose sgn gives 0 at NaN).
template <typename T>
struct l1_loss_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t r = cast_to<acc_t>(x) - cast_to<acc_t>(y);
    const acc_t sign = select_(r > acc_t(0), acc_t(1), select_(r < acc_t(0), acc_t(-1), acc_t(0)));
    return cast_to<T>(sign * cast_to<acc_t>(grad));
  }
};

// |r| < delta ? r^2 / 2 : delta (|r| - delta / 2), r = x - y.
template <typename T>
struct huber_loss_fn {
  using acc_t = opmath_t<T>;
  acc_t delta;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const acc_t z = abs_(cast_to<acc_t>(x) - cast_to<acc_t>(y));
    return cast_to<T>(select_(z < delta, acc_t(0.5) * z * z, delta * (z - acc_t(0.5) * delta)));
  }
};

// clamp(x - y, -delta, delta) grad
template <typename T>
struct huber_loss_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t delta;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t r = cast_to<acc_t>(x) - cast_to<acc_t>(y);
    const acc_t clamped = select_(r < -delta, -delta, select_(r > delta, delta, r));
    return cast_to<T>(clamped * cast_to<acc_t>(grad));
  }
};

// |r| < beta ? r^2 / (2 beta) : |r| - beta / 2; beta = 0 is l1_loss (the
// division by zero is only in the arm not taken).
template <typename T>
struct smooth_l1_loss_fn {
  using acc_t = opmath_t<T>;
  acc_t beta;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const acc_t z = abs_(cast_to<acc_t>(x) - cast_to<acc_t>(y));
    return cast_to<T>(select_(z < beta, acc_t(0.5) * z * z / beta, z - acc_t(0.5) * beta));
  }
};

// (r <= -beta ? -1 : r >= beta ? 1 : r / beta) grad
template <typename T>
struct smooth_l1_loss_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t beta;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t r = cast_to<acc_t>(x) - cast_to<acc_t>(y);
    const acc_t slope = select_(r <= -beta, acc_t(-1), select_(r >= beta, acc_t(1), r / beta));
    return cast_to<T>(slope * cast_to<acc_t>(grad));
  }
};

// -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 as torch does.
template <typename T>
struct binary_cross_entropy_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y, T w) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t t = cast_to<acc_t>(y);
    const acc_t log_x = max_(log_(v), acc_t(-100));
    const acc_t log_1mx = max_(log1p_(-v), acc_t(-100));
    return cast_to<T>(cast_to<acc_t>(w) * ((t - acc_t(1)) * log_1mx - t * log_x));
  }
};

// w grad (x - y) / max(x (1 - x), 1e-12)
template <typename T>
struct binary_cross_entropy_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y, T w) const {
    const acc_t v = cast_to<acc_t>(x);
    // ATen's epsilon is the float 1e-12 (9.99999996e-13) in every dtype
    const acc_t denom = max_((acc_t(1) - v) * v, acc_t(1e-12f));
    return cast_to<T>(cast_to<acc_t>(w) * cast_to<acc_t>(grad) * (v - cast_to<acc_t>(y)) / denom);
  }
};

// d/dtarget of binary_cross_entropy: w grad (log(1 - x) - log(x)), i.e.
// -logit(x), unclamped as torch's binary_cross_entropy_target_backward.
template <typename T>
struct binary_cross_entropy_target_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T /*y*/, T w) const {
    const acc_t v = cast_to<acc_t>(x);
    return cast_to<T>(cast_to<acc_t>(w) * cast_to<acc_t>(grad) * (log1p_(-v) - log_(v)));
  }
};

// w ((1 - y) x + (1 + (p - 1) y) log(1 + exp(-x))), the stable form.
template <typename T>
struct binary_cross_entropy_with_logits_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y, T w, T pos_weight) const {
    const acc_t v = cast_to<acc_t>(x);
    const acc_t t = cast_to<acc_t>(y);
    const acc_t log_weight = (cast_to<acc_t>(pos_weight) - acc_t(1)) * t + acc_t(1);
    return cast_to<T>(cast_to<acc_t>(w) * ((acc_t(1) - t) * v + log_weight * softplus_neg_(v)));
  }
};

// w grad ((p y + 1 - y) sigmoid(x) - p y)
template <typename T>
struct binary_cross_entropy_with_logits_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y, T w, T pos_weight) const {
    const acc_t t = cast_to<acc_t>(y);
    const acc_t py = cast_to<acc_t>(pos_weight) * t;
    const acc_t s = acc_t(1) / (acc_t(1) + exp_(-cast_to<acc_t>(x)));
    return cast_to<T>(cast_to<acc_t>(w) * cast_to<acc_t>(grad) * ((py + acc_t(1) - t) * s - py));
  }
};

// d/dtarget of binary_cross_entropy_with_logits: w grad ((p - 1) log(1 + exp(-x)) - x).
template <typename T>
struct binary_cross_entropy_with_logits_target_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T /*y*/, T w, T pos_weight) const {
    const acc_t v = cast_to<acc_t>(x);
    // (p - 1) is exactly 0 without a pos_weight: no 0 * inf at x = -inf.
    const acc_t p1 = cast_to<acc_t>(pos_weight) - acc_t(1);
    const acc_t d = select_(p1 == acc_t(0), acc_t(0), p1 * softplus_neg_(v)) - v;
    return cast_to<T>(cast_to<acc_t>(w) * cast_to<acc_t>(grad) * d);
  }
};

// xlogy(t, t) - t x: 0 where t == 0, NaN where t is NaN (torch's xlogy).
template <typename T>
struct kl_div_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const acc_t t = cast_to<acc_t>(y);
    const acc_t t_log_t = select_(t == acc_t(0), acc_t(0), t * log_(t));
    return cast_to<T>(t_log_t - t * cast_to<acc_t>(x));
  }
};

// exp(t) (t - x), the target given as a log-probability.
template <typename T>
struct kl_div_log_target_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const acc_t t = cast_to<acc_t>(y);
    return cast_to<T>(exp_(t) * (t - cast_to<acc_t>(x)));
  }
};

// d/dx: -t grad (-exp(t) grad for a log target).
template <typename T>
struct kl_div_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T /*x*/, T y) const {
    return cast_to<T>(-cast_to<acc_t>(y) * cast_to<acc_t>(grad));
  }
};

template <typename T>
struct kl_div_log_target_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T /*x*/, T y) const {
    return cast_to<T>(-exp_(cast_to<acc_t>(y)) * cast_to<acc_t>(grad));
  }
};

// d/dt: (log t + 1 - x) grad where t > 0, else 0.
template <typename T>
struct kl_div_target_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t t = cast_to<acc_t>(y);
    // 0 where t <= 0: a zero-probability target contributes nothing, its
    // gradient included (ATen's is NaN there, from t / t in xlogy's). A NaN t
    // gives NaN.
    const acc_t g = (log_(t) + acc_t(1) - cast_to<acc_t>(x)) * cast_to<acc_t>(grad);
    return cast_to<T>(select_(t <= acc_t(0), acc_t(0), g));
  }
};

// d/dt for a log target: exp(t) (t - x + 1) grad.
template <typename T>
struct kl_div_log_target_target_backward_fn {
  using acc_t = opmath_t<T>;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t t = cast_to<acc_t>(y);
    return cast_to<T>(exp_(t) * (t - cast_to<acc_t>(x) + acc_t(1)) * cast_to<acc_t>(grad));
  }
};

// torchvision's sigmoid_focal_loss: a_t ce (1 - p_t)^gamma with p = sigmoid(x),
// ce = bce_with_logits(x, t), p_t = p t + (1 - p)(1 - t), a_t = alpha t +
// (1 - alpha)(1 - t) (1 when alpha < 0).
template <typename A>
struct focal_terms {
  A ce, s, q, a_t;
};

template <typename A>
C10_HOST_DEVICE inline focal_terms<A> focal_terms_of(A v, A t, A alpha) {
  const A s = A(1) / (A(1) + exp_(-v));
  const A ce = (A(1) - t) * v + softplus_neg_(v);
  const A p_t = s * t + (A(1) - s) * (A(1) - t);
  const A a_t = select_(alpha < A(0), A(1), alpha * t + (A(1) - alpha) * (A(1) - t));
  return {ce, s, A(1) - p_t, a_t};
}

template <typename T>
struct sigmoid_focal_loss_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  acc_t gamma;
  C10_HOST_DEVICE T operator()(T x, T y) const {
    const auto f = focal_terms_of(cast_to<acc_t>(x), cast_to<acc_t>(y), alpha);
    return cast_to<T>(f.a_t * f.ce * pow_(f.q, gamma));
  }
};

// d/dx = a_t ((s - t) q^gamma - gamma ce q^(gamma - 1) s (1 - s) (2t - 1)) grad;
// the second term is 0 for gamma = 0 (whatever q^-1 is).
template <typename T>
struct sigmoid_focal_loss_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  acc_t gamma;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t t = cast_to<acc_t>(y);
    const auto f = focal_terms_of(cast_to<acc_t>(x), t, alpha);
    const acc_t ce_term = (f.s - t) * pow_(f.q, gamma);
    // s (1 - s) first: it is 0 where ce overflows (x = -max), and 0 * inf is NaN.
    const acc_t pt_term = gamma * f.s * (acc_t(1) - f.s) * f.ce * pow_(f.q, gamma - acc_t(1)) * (acc_t(2) * t - acc_t(1));
    const acc_t d = ce_term - select_(gamma == acc_t(0), acc_t(0), pt_term);
    return cast_to<T>(f.a_t * d * cast_to<acc_t>(grad));
  }
};

// d/dt = ((2 alpha - 1) ce q^gamma (0 for alpha < 0) - a_t x q^gamma
// + a_t ce gamma q^(gamma - 1) (1 - 2s)) grad: a_t, ce = bce_with_logits and
// q = 1 - p_t are each linear in t; the last term is 0 for gamma = 0.
template <typename T>
struct sigmoid_focal_loss_target_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  acc_t gamma;
  C10_HOST_DEVICE T operator()(T grad, T x, T y) const {
    const acc_t v = cast_to<acc_t>(x);
    const auto f = focal_terms_of(v, cast_to<acc_t>(y), alpha);
    const acc_t q_gamma = pow_(f.q, gamma);
    const acc_t d_alpha = select_(alpha < acc_t(0), acc_t(0), acc_t(2) * alpha - acc_t(1));
    const acc_t q_term = gamma * pow_(f.q, gamma - acc_t(1)) * (acc_t(1) - acc_t(2) * f.s);
    const acc_t d = d_alpha * f.ce * q_gamma - f.a_t * v * q_gamma +
                    select_(gamma == acc_t(0), acc_t(0), f.a_t * f.ce * q_term);
    return cast_to<T>(d * cast_to<acc_t>(grad));
  }
};

}  // namespace opforge::math
