#pragma once
// Per-group math of the normalization ops, shared by the CPU (kernels/cpu/norm*.cpp)
// and CUDA (kernels/cuda/norm*.cu) kernels. Torch-free so .cu files include it.
#include <c10/macros/Macros.h>

#include <opforge/math/functions.h>

#include <math.h>

#include <cstdint>

namespace opforge::math {

// 1 / sqrt(var + eps); NaN when var + eps < 0, as in torch (any eps is allowed).
template <typename A>
C10_HOST_DEVICE inline A norm_rstd(A var, double eps) {
  return A(1) / ::sqrt(var + static_cast<A>(eps));
}

// Note [Norm backward coefficients]: over one group of n elements with mean m and
// rstd r, xhat = (x - m) r, a = grad_out * weight (weight 1 when absent),
//   dx = r (a - mean(a) - xhat mean(a xhat)) + (grad_mean - grad_rstd r^2 xhat) / n,
// the last term being the gradients that reached the mean and rstd outputs
// (d mean / dx = 1/n, d rstd / dx = -r^2 xhat / n). With per-group constants,
// dx = r (a - mean(a)) + kc (x - m) + grad_mean / n; the differences are taken
// before scaling so nothing cancels when |m| >> std.
template <typename A>
struct norm_backward_coeffs {
  A r;
  A abar; // mean(a)
  A m;
  A kc; // coefficient of x - m
  A k0;

  // sum_a = sum(a), sum_ax = sum(a * xhat) over the group.
  C10_HOST_DEVICE static norm_backward_coeffs make(A sum_a, A sum_ax, A m, A r, A n, A grad_mean, A grad_rstd) {
    return with_inverse_count(sum_a, sum_ax, m, r, A(1) / n, grad_mean, grad_rstd);
  }

  // make() given 1 / n: a kernel argument, rather than a reciprocal the compiler
  // hoists out of a grid-stride loop and keeps in a stack slot across calls.
  C10_HOST_DEVICE static norm_backward_coeffs with_inverse_count(A sum_a, A sum_ax, A m, A r, A inv_n, A grad_mean,
                                                                 A grad_rstd) {
    const A kxhat = -r * sum_ax * inv_n - grad_rstd * r * r * inv_n; // coefficient of xhat
    return {r, sum_a * inv_n, m, kxhat * r, grad_mean * inv_n};
  }

  C10_HOST_DEVICE A operator()(A a, A x) const {
    return r * (a - abar) + kc * (x - m) + k0;
  }
};

// Local response norm, cross-channel: channel c averages the squares of channels
// [c - size/2, c + (size-1)/2] (clipped to [0, C)), always divided by `size` as
// torch's zero-padded avg_pool does.
struct lrn_window {
  int64_t lo;
  int64_t hi; // exclusive

  C10_HOST_DEVICE static lrn_window of(int64_t c, int64_t size, int64_t channels) {
    const int64_t lo = c - size / 2;
    const int64_t hi = c + (size - 1) / 2 + 1;
    return {lo < 0 ? 0 : lo, hi > channels ? channels : hi};
  }

  // The channels whose windows contain channel j (the transposed window).
  C10_HOST_DEVICE static lrn_window containing(int64_t j, int64_t size, int64_t channels) {
    const int64_t lo = j - (size - 1) / 2;
    const int64_t hi = j + size / 2 + 1;
    return {lo < 0 ? 0 : lo, hi > channels ? channels : hi};
  }
};

// d = k + alpha / size * sum of squares; the output is x * d^-beta.
template <typename A>
C10_HOST_DEVICE inline A lrn_denominator(A sum_sq, double alpha, double k, int64_t size) {
  return static_cast<A>(k) + static_cast<A>(alpha / static_cast<double>(size)) * sum_sq;
}

// d^-beta. `Fast` (host float only) computes exp(-beta log1p(d - 1)) with the
// branch-free functions of functions.h, so loops over it vectorize; d - 1 is
// exact for d >= 1/2, which callers guarantee (k >= 1/2, alpha >= 0) before
// choosing it. Otherwise pow.
template <bool Fast>
C10_HOST_DEVICE inline float lrn_pow_neg(float d, double beta) {
#if !OPFORGE_DEVICE_MATH
  if constexpr (Fast) {
    return exp_(-static_cast<float>(beta) * log1p_(d - 1.0f));
  }
#endif
  return ::powf(d, -static_cast<float>(beta));
}
template <bool Fast>
C10_HOST_DEVICE inline double lrn_pow_neg(double d, double beta) {
  return ::pow(d, -beta);
}

// Whether d = k + alpha/size * sum(x^2) >= 1/2 for every input (see lrn_pow_neg).
inline bool lrn_fast_pow_ok(double alpha, double k) {
  return k >= 0.5 && alpha >= 0;
}

} // namespace opforge::math
