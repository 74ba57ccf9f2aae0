// CPU kernels for cross_entropy and nll_loss with class-index targets and
// their backward ops, structured ops (Note [Structured ops]) over the plan's
// [batch, classes, inner] view. cross_entropy is one fused pass per position:
// the max, then the sum of exp(x - max) (and, with label smoothing, the
// weighted sum of max - x) while the position's values are in L1, never a
// log_softmax tensor. With the classes contiguous (inner == 1) each row is a
// position; otherwise a tile of adjacent positions is reduced together so
// every inner loop is unit-stride (as softmax's column kernel). The backward
// op recomputes the softmax from `self`. Targets are range-checked before
// use; a bad one goes to the index report (Note [Plan services]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/classification_loss/plan.h>

#include "lanes.h"

#include <opforge/classification_loss/math.h>
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Positions reduced together when the classes are strided (inner > 1).
constexpr int64_t k_tile = 256;

template <typename T>
using acc_t = math::opmath_t<T>;

template <typename T>
acc_t<T> class_weight(const T* weight, int64_t c) {
  return weight != nullptr ? math::cast_to<acc_t<T>>(weight[c]) : acc_t<T>(1);
}

template <typename T>
math::label_smoothing<acc_t<T>> smoothing_of(const T* weight, const class_loss_plan& plan) {
  using A = acc_t<T>;
  A total = static_cast<A>(plan.classes);
  if (weight != nullptr) {
    total = cpu::lane_sum<A>(plan.classes, [&](int64_t c) { return math::cast_to<A>(weight[c]); });
  }
  return math::label_smoothing<A>::make(plan.label_smoothing, plan.classes, total);
}

// Whether position `p`'s target counts: not ignore_index and in range (a bad
// one is reported and counts as ignored).
inline bool counts(int64_t t, const class_loss_plan& plan) {
  if (t == plan.ignore_index) {
    return false;
  }
  if (t < 0 || t >= plan.classes) {
    record_bad_index(plan.bad_index, t);
    return false;
  }
  return true;
}

// Grain for parallel loops over positions that each read `classes` values.
int64_t position_grain(const class_loss_plan& plan) {
  return std::max<int64_t>(1, k_grain / std::max<int64_t>(1, plan.classes));
}

// The max and log-sum of one contiguous row, and (Smoothed) sum_c w_c (m - x_c).
template <typename T>
struct row_stats {
  acc_t<T> m;
  acc_t<T> log_sum;
  acc_t<T> weighted_m_minus_x;
};

template <typename T>
row_stats<T> stats_of_row(const T* x, const T* weight, int64_t classes, bool smoothed) {
  using A = acc_t<T>;
  const A m = cpu::row_max(x, classes);
  const A s = cpu::lane_sum<A>(classes, [&](int64_t c) { return math::exp_(math::cast_to<A>(x[c]) - m); });
  A wd = 0;
  if (smoothed) {
    wd = cpu::lane_sum<A>(classes, [&](int64_t c) { return class_weight(weight, c) * (m - math::cast_to<A>(x[c])); });
  }
  return {m, math::log_(s), wd};
}

// The same for the `w` positions of a tile starting at x (stride `inner`
// between classes), into m / log_sum / wd.
template <typename T>
void stats_of_tile(const T* x, const T* weight, const class_loss_plan& plan, int64_t w, bool smoothed,
                   acc_t<T>* m, acc_t<T>* log_sum, acc_t<T>* wd) {
  using A = acc_t<T>;
  std::fill(m, m + w, -std::numeric_limits<A>::infinity());
  std::fill(log_sum, log_sum + w, A(0));
  std::fill(wd, wd + w, A(0));
  for (int64_t c = 0; c < plan.classes; ++c) {
    const T* row = x + c * plan.inner;
    for (int64_t j = 0; j < w; ++j) {
      const A v = math::cast_to<A>(row[j]);
      m[j] = v > m[j] ? v : m[j];
    }
  }
  for (int64_t c = 0; c < plan.classes; ++c) {
    const T* row = x + c * plan.inner;
    const A wc = class_weight(weight, c);
    for (int64_t j = 0; j < w; ++j) {
      const A v = math::cast_to<A>(row[j]);
      log_sum[j] += math::exp_(v - m[j]);
      if (smoothed) {
        wd[j] += wc * (m[j] - v);
      }
    }
  }
  for (int64_t j = 0; j < w; ++j) {
    log_sum[j] = math::log_(log_sum[j]);
  }
}

// Runs f(n, s0, w) over tiles of `w` adjacent positions of one batch entry.
template <typename F>
void for_each_tile(const class_loss_plan& plan, F f) {
  const int64_t tiles = (plan.inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, k_grain / std::max<int64_t>(1, plan.classes * k_tile));
  at::parallel_for(0, plan.batch * tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / tiles;
      const int64_t s0 = (task % tiles) * k_tile;
      f(n, s0, std::min(k_tile, plan.inner - s0));
    }
  });
}

}  // namespace

template <typename scalar_t>
void cross_entropy_forward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* self, const int64_t* target,
                               const scalar_t* weight, const class_loss_plan& plan) {
  using A = acc_t<scalar_t>;
  const int64_t classes = plan.classes;
  const auto smoothing = smoothing_of(weight, plan);
  const bool smoothed = smoothing.uniform != A(0);
  const auto write = [&](int64_t p, int64_t t, A m_minus_x_t, A log_sum, A wd) {
    const A w_t = class_weight(weight, t);
    result0[p] = math::cast_to<scalar_t>(smoothing.loss(m_minus_x_t, log_sum, w_t, wd));
    result1[p] = math::cast_to<scalar_t>(w_t);
  };
  const auto skip = [&](int64_t p) {
    result0[p] = scalar_t(0);
    result1[p] = scalar_t(0);
  };
  if (plan.inner == 1) {
    at::parallel_for(0, plan.batch, position_grain(plan), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const int64_t t = target[n];
        if (!counts(t, plan)) {
          skip(n);
          continue;
        }
        const scalar_t* x = self + n * classes;
        const row_stats<scalar_t> st = stats_of_row(x, weight, classes, smoothed);
        write(n, t, st.m - math::cast_to<A>(x[t]), st.log_sum, st.weighted_m_minus_x);
      }
    });
    return;
  }
  for_each_tile(plan, [&](int64_t n, int64_t s0, int64_t w) {
    A m[k_tile];
    A log_sum[k_tile];
    A wd[k_tile];
    const scalar_t* x = self + n * classes * plan.inner + s0;
    stats_of_tile(x, weight, plan, w, smoothed, m, log_sum, wd);
    for (int64_t j = 0; j < w; ++j) {
      const int64_t p = n * plan.inner + s0 + j;
      const int64_t t = target[p];
      if (!counts(t, plan)) {
        skip(p);
        continue;
      }
      write(p, t, m[j] - math::cast_to<A>(x[t * plan.inner + j]), log_sum[j], wd[j]);
    }
  });
}

// grad_c = a softmax_c - u w_c - b [c = t] per position (opforge/classification_loss/math.h):
// one exp per element; the target's element is rewritten after its row. An
// ignored position has a = u = b = 0.
template <typename scalar_t>
void cross_entropy_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* self,
                                const int64_t* target, const scalar_t* weight, const class_loss_plan& plan) {
  using A = acc_t<scalar_t>;
  const int64_t classes = plan.classes;
  const int64_t inner = plan.inner;
  const auto smoothing = smoothing_of(weight, plan);
  struct scales {
    A a = 0;
    A u = 0;
    A b = 0;
  };
  const auto scales_at = [&](int64_t p, int64_t t) {
    if (!counts(t, plan)) {
      return scales{};
    }
    const A g = math::cast_to<A>(grad_output[p]);
    const A w_t = class_weight(weight, t);
    return scales{g * smoothing.softmax_scale(w_t), g * smoothing.uniform, g * smoothing.target_scale(w_t)};
  };
  // The gradient of one element from its softmax value.
  const auto value = [&](const scales& k, A softmax_c, int64_t c) {
    return k.a * softmax_c - k.u * class_weight(weight, c);
  };
  if (inner == 1) {
    at::parallel_for(0, plan.batch, position_grain(plan), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        scalar_t* out = result + n * classes;
        const int64_t t = target[n];
        const scales k = scales_at(n, t);
        if (k.a == A(0) && k.u == A(0) && k.b == A(0)) {
          std::fill(out, out + classes, scalar_t(0));
          continue;
        }
        const scalar_t* x = self + n * classes;
        const row_stats<scalar_t> st = stats_of_row(x, weight, classes, false);
        const A lse = st.m + st.log_sum;
        // The weight's branch out of the loop, so it vectorizes (the exp too).
        if (weight == nullptr) {
          for (int64_t c = 0; c < classes; ++c) {
            out[c] = math::cast_to<scalar_t>(k.a * math::exp_(math::cast_to<A>(x[c]) - lse) - k.u);
          }
        } else {
          for (int64_t c = 0; c < classes; ++c) {
            const A w_c = math::cast_to<A>(weight[c]);
            out[c] = math::cast_to<scalar_t>(k.a * math::exp_(math::cast_to<A>(x[c]) - lse) - k.u * w_c);
          }
        }
        out[t] = math::cast_to<scalar_t>(value(k, math::exp_(math::cast_to<A>(x[t]) - lse), t) - k.b);
      }
    });
    return;
  }
  for_each_tile(plan, [&](int64_t n, int64_t s0, int64_t w) {
    A m[k_tile];
    A log_sum[k_tile];
    A unused[k_tile];
    scales k[k_tile];
    const int64_t base = n * classes * inner + s0;
    stats_of_tile(self + base, weight, plan, w, false, m, log_sum, unused);
    for (int64_t j = 0; j < w; ++j) {
      m[j] += log_sum[j];  // the log-sum-exp
      k[j] = scales_at(n * inner + s0 + j, target[n * inner + s0 + j]);
    }
    for (int64_t c = 0; c < classes; ++c) {
      const scalar_t* x = self + base + c * inner;
      scalar_t* out = result + base + c * inner;
      const A u_c = class_weight(weight, c);
      for (int64_t j = 0; j < w; ++j) {
        out[j] = math::cast_to<scalar_t>(k[j].a * math::exp_(math::cast_to<A>(x[j]) - m[j]) - k[j].u * u_c);
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      const int64_t t = target[n * inner + s0 + j];
      if (k[j].b != A(0)) {
        const int64_t at = base + t * inner + j;
        result[at] = math::cast_to<scalar_t>(value(k[j], math::exp_(math::cast_to<A>(self[at]) - m[j]), t) - k[j].b);
      }
    }
  });
}

template <typename scalar_t>
void nll_loss_forward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* self, const int64_t* target,
                          const scalar_t* weight, const class_loss_plan& plan) {
  using A = acc_t<scalar_t>;
  const int64_t inner = plan.inner;
  at::parallel_for(0, plan.positions, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t t = target[p];
      if (!counts(t, plan)) {
        result0[p] = scalar_t(0);
        result1[p] = scalar_t(0);
        continue;
      }
      const A w_t = class_weight(weight, t);
      result0[p] = math::cast_to<scalar_t>(-w_t * math::cast_to<A>(self[math::class_base(p, plan.classes, inner) + t * inner]));
      result1[p] = math::cast_to<scalar_t>(w_t);
    }
  });
}

template <typename scalar_t>
void nll_loss_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* self,
                           const int64_t* target, const scalar_t* weight, const class_loss_plan& plan) {
  using A = acc_t<scalar_t>;
  (void)self;  // the gradient does not depend on the log-probabilities
  const int64_t inner = plan.inner;
  const int64_t total = plan.positions * plan.classes;
  at::parallel_for(0, total, k_grain, [&](int64_t begin, int64_t end) { std::fill(result + begin, result + end, scalar_t(0)); });
  at::parallel_for(0, plan.positions, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t t = target[p];
      if (!counts(t, plan)) {
        continue;
      }
      result[math::class_base(p, plan.classes, inner) + t * inner] =
          math::cast_to<scalar_t>(-class_weight(weight, t) * math::cast_to<A>(grad_output[p]));
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
