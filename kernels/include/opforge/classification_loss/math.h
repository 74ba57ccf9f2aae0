#pragma once
// The per-position math of cross_entropy and its backward op with label
// smoothing, shared by the CPU and CUDA kernels (classification_loss.*). With
// m the max over the classes of a position and log_sum = log(sum_c exp(x_c - m)),
// the log-sum-exp is lse = m + log_sum, and
//   loss   = (1 - eps) w_t (lse - x_t) + eps / C sum_c w_c (lse - x_c)
//   grad_c = g ((1 - eps) w_t + eps / C sum_c w_c) softmax_c - g eps / C w_c
//            - g (1 - eps) w_t [c = t]
// (PyTorch's label smoothing: the target distribution (1 - eps) one_hot(t) +
// eps / C, weighted per class). lse - x is summed as (m - x) + log_sum so a
// large m does not round log_sum away.
#include <c10/macros/Macros.h>

#include <opforge/math/functions.h>

#include <cstdint>

namespace opforge::math {

// Where position p = n * inner + s of a [batch, classes, inner] input has its
// class 0 (class c is `inner` further per class).
C10_HOST_DEVICE inline int64_t class_base(int64_t p, int64_t classes, int64_t inner) {
  const int64_t n = p / inner;
  return n * classes * inner + (p - n * inner);
}

template <typename A>
struct label_smoothing {
  A on_target;  // 1 - eps
  A uniform;    // eps / C
  A w_total;    // sum_c w_c (C without a weight)

  C10_HOST_DEVICE static label_smoothing make(double eps, int64_t classes, A w_total) {
    return {A(1.0 - eps), classes > 0 ? A(eps / static_cast<double>(classes)) : A(0), w_total};
  }
  // `m_minus_x_t` = m - x_t; `weighted_m_minus_x` = sum_c w_c (m - x_c), read only with smoothing.
  C10_HOST_DEVICE A loss(A m_minus_x_t, A log_sum, A w_t, A weighted_m_minus_x) const {
    A l = on_target * w_t * (m_minus_x_t + log_sum);
    if (uniform != A(0)) {
      l += uniform * (weighted_m_minus_x + w_total * log_sum);
    }
    return l;
  }
  // grad_c = softmax_scale softmax_c - class_scale w_c - target_scale [c = t], each times g.
  C10_HOST_DEVICE A softmax_scale(A w_t) const { return on_target * w_t + uniform * w_total; }
  C10_HOST_DEVICE A target_scale(A w_t) const { return on_target * w_t; }
};

}  // namespace opforge::math
