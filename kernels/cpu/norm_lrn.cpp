// CPU kernels for local_response_norm and its backward, structured ops (Note
// [Structured ops]; the plan in opforge/norm/plan.h). The input is viewed as
// [N, C, S]; one task handles one sample and a tile of S positions across every
// channel, so the window sums over neighbouring channels read rows in L1 and
// every inner loop runs along S.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/local_response_norm.h>
#include <opforge/ops/local_response_norm_backward.h>

#include "norm_stats.h"

#include <opforge/norm/math.h>
#include <opforge/math/opmath.h>
#include <opforge/norm/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

// Positions of S per task.
constexpr int64_t k_tile = 64;

// acc[0, w) = sum of x^2 over the window of channel c, at positions [s0, s0 + w).
template <typename T>
void window_sum_sq(const T* x, const lrn_plan& p, int64_t c, int64_t s0, int64_t w, acc_t<T>* acc) {
  using A = acc_t<T>;
  std::fill(acc, acc + w, A(0));
  const auto win = math::lrn_window::of(c, p.size, p.channels);
  for (int64_t c2 = win.lo; c2 < win.hi; ++c2) {
    const T* xr = x + c2 * p.inner + s0;
    for (int64_t j = 0; j < w; ++j) {
      const A v = math::cast_to<A>(xr[j]);
      acc[j] += v * v;
    }
  }
}

// Calls f(x_n_offset, s0, w) for every (sample, tile) in parallel.
template <typename F>
void for_each_tile(int64_t n, const lrn_plan& p, F f) {
  const int64_t tiles = (p.inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, p.channels * k_tile));
  at::parallel_for(0, n * tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s0 = (t % tiles) * k_tile;
      f((t / tiles) * p.channels * p.inner, s0, std::min(k_tile, p.inner - s0));
    }
  });
}

template <typename T, bool Fast>
void forward(const T* x, T* y, int64_t n, const lrn_plan& p) {
  using A = acc_t<T>;
  for_each_tile(n, p, [&](int64_t base, int64_t s0, int64_t w) {
    A acc[k_tile];
    for (int64_t c = 0; c < p.channels; ++c) {
      window_sum_sq(x + base, p, c, s0, w, acc);
      const T* xc = x + base + c * p.inner + s0;
      T* yc = y + base + c * p.inner + s0;
      for (int64_t j = 0; j < w; ++j) {
        const A d = math::lrn_denominator(acc[j], p.alpha, p.k, p.size);
        yc[j] = math::cast_to<T>(math::cast_to<A>(xc[j]) * math::lrn_pow_neg<Fast>(d, p.beta));
      }
    }
  });
}

// dx_j = g_j d_j^-beta - 2 alpha beta / size * x_j * sum over the channels c whose window
// holds j of t_c, t_c = g_c x_c d_c^-beta / d_c.
template <typename T, bool Fast>
void backward(const T* g, const T* x, T* dx, int64_t n, const lrn_plan& p) {
  using A = acc_t<T>;
  const A coef = static_cast<A>(2.0 * p.alpha * p.beta / static_cast<double>(p.size));
  for_each_tile(n, p, [&](int64_t base, int64_t s0, int64_t w) {
    // d^-beta and t for every channel of the tile.
    std::vector<A> scratch(static_cast<size_t>(2 * p.channels * k_tile));
    A* sd = scratch.data();
    A* t = sd + p.channels * k_tile;
    for (int64_t c = 0; c < p.channels; ++c) {
      A* sdc = sd + c * k_tile;
      A* tc = t + c * k_tile;
      window_sum_sq(x + base, p, c, s0, w, tc);
      const T* xc = x + base + c * p.inner + s0;
      const T* gc = g + base + c * p.inner + s0;
      for (int64_t j = 0; j < w; ++j) {
        const A d = math::lrn_denominator(tc[j], p.alpha, p.k, p.size);
        const A s = math::lrn_pow_neg<Fast>(d, p.beta);
        sdc[j] = s;
        tc[j] = math::cast_to<A>(gc[j]) * math::cast_to<A>(xc[j]) * s / d;
      }
    }
    A acc[k_tile];
    for (int64_t c = 0; c < p.channels; ++c) {
      std::fill(acc, acc + w, A(0));
      const auto win = math::lrn_window::containing(c, p.size, p.channels);
      for (int64_t c2 = win.lo; c2 < win.hi; ++c2) {
        const A* tc = t + c2 * k_tile;
        for (int64_t j = 0; j < w; ++j) {
          acc[j] += tc[j];
        }
      }
      const A* sdc = sd + c * k_tile;
      const T* xc = x + base + c * p.inner + s0;
      const T* gc = g + base + c * p.inner + s0;
      T* dc = dx + base + c * p.inner + s0;
      for (int64_t j = 0; j < w; ++j) {
        dc[j] = math::cast_to<T>(math::cast_to<A>(gc[j]) * sdc[j] - coef * math::cast_to<A>(xc[j]) * acc[j]);
      }
    }
  });
}

} // namespace

template <typename scalar_t>
void local_response_norm_cpu(scalar_t* result, const scalar_t* input, const lrn_plan& plan) {
  cpu::with_flag(math::lrn_fast_pow_ok(plan.alpha, plan.k), [&](auto fast) {
    forward<scalar_t, fast.value>(input, result, plan.n, plan);
  });
}

template <typename scalar_t>
void local_response_norm_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                                      const scalar_t* input, const lrn_plan& plan) {
  cpu::with_flag(math::lrn_fast_pow_ok(plan.alpha, plan.k), [&](auto fast) {
    backward<scalar_t, fast.value>(grad_output, input, result, plan.n, plan);
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
