// CPU kernels for softmax_backward, y * (g - sum(g * y, dim)), and
// log_softmax_backward, g - exp(y) * sum(g, dim) (`Log`): one reduction over
// dim, then one elementwise pass. Structured ops (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/log_softmax_backward.h>
#include <opforge/ops/softmax_backward.h>

#include "lanes.h"

#include <opforge/core/dims.h>
#include <opforge/math/opmath.h>
#include <opforge/softmax/math.h>

#include <ATen/Parallel.h>

#include <algorithm>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Columns handled together when dim is not innermost (see softmax.cpp).
constexpr int64_t k_tile = 256;

// dim innermost: contiguous rows, a lane-split dot product and one
// vectorizable write loop per row.
template <bool Log, typename T>
void softmax_backward_rows(const T* g, const T* y, T* o, int64_t rows, int64_t n) {
  using A = math::opmath_t<T>;
  const int64_t grain = std::max<int64_t>(1, k_grain / n);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* gr = g + r * n;
      const T* yr = y + r * n;
      T* orow = o + r * n;
      const A dot = cpu::lane_sum<A>(n, [&](int64_t i) {
        return math::softmax_backward_term<Log>(math::cast_to<A>(gr[i]), math::cast_to<A>(yr[i]));
      });
      for (int64_t i = 0; i < n; ++i) {
        orow[i] = math::cast_to<T>(
            math::softmax_backward_grad<Log>(math::cast_to<A>(gr[i]), math::cast_to<A>(yr[i]), dot));
      }
    }
  });
}

// [outer, n, inner], inner > 1: dot products for a tile of adjacent columns
// at a time, so every inner loop is unit-stride.
template <bool Log, typename T>
void softmax_backward_columns(const T* g, const T* y, T* o, const dim_split& s) {
  using A = math::opmath_t<T>;
  const int64_t n = s.size;
  const int64_t inner = s.inner;
  const int64_t tiles = (inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, k_grain / (n * k_tile));
  at::parallel_for(0, s.outer * tiles, grain, [&](int64_t begin, int64_t end) {
    A dot[k_tile];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t off = (task / tiles) * n * inner + (task % tiles) * k_tile;
      const int64_t w = std::min(k_tile, inner - (task % tiles) * k_tile);
      std::fill(dot, dot + w, A(0));
      for (int64_t d = 0; d < n; ++d) {
        const T* gr = g + off + d * inner;
        const T* yr = y + off + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          dot[j] += math::softmax_backward_term<Log>(math::cast_to<A>(gr[j]), math::cast_to<A>(yr[j]));
        }
      }
      for (int64_t d = 0; d < n; ++d) {
        const T* gr = g + off + d * inner;
        const T* yr = y + off + d * inner;
        T* orow = o + off + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          orow[j] = math::cast_to<T>(
              math::softmax_backward_grad<Log>(math::cast_to<A>(gr[j]), math::cast_to<A>(yr[j]), dot[j]));
        }
      }
    }
  });
}

template <bool Log, typename T>
void backward_run(T* grad_input, const T* grad_output, const T* output, const dim_split& plan) {
  if (plan.inner == 1) {
    softmax_backward_rows<Log>(grad_output, output, grad_input, plan.outer, plan.size);
  } else {
    softmax_backward_columns<Log>(grad_output, output, grad_input, plan);
  }
}

} // namespace

template <typename scalar_t>
void softmax_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* output,
                          const dim_split& plan) {
  backward_run<false>(result, grad_output, output, plan);
}

template <typename scalar_t>
void log_softmax_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                              const scalar_t* output, const dim_split& plan) {
  backward_run<true>(result, grad_output, output, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
