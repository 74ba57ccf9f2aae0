// CPU kernels for softmax and log_softmax over one dim, structured ops (Note
// [Structured ops]): the generated code checks, allocates and passes the data
// and the [outer, n, inner] split. Both share the max and sum-of-exp passes
// and differ only in the epilogue (`Log`).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/log_softmax.h>
#include <opforge/ops/softmax.h>

#include "lanes.h"

#include <opforge/core/dims.h>
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>
#include <opforge/softmax/math.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <type_traits>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Columns handled together when the softmax dim is not innermost: wide enough
// for unit-stride inner loops, small enough for the buffers to stay in L1.
constexpr int64_t k_tile = 256;

template <typename T>
using acc_t = math::opmath_t<T>;

template <bool Log, typename A>
using epilogue = math::softmax_epilogue<Log, A>;

// Softmax dim innermost: each row is contiguous. Three passes over the row
// (max, exp + sum, epilogue), each a plain loop the compiler vectorizes; a row
// of a few thousand elements stays in L1 between them.
template <bool Log, typename T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n) {
  using A = acc_t<T>;
  const int64_t grain = std::max<int64_t>(1, k_grain / n);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const A m = cpu::row_max(xr, n);
      if constexpr (!Log && std::is_same_v<T, A>) {
        // The output holds exp(x - m) until it is scaled: no scratch buffer.
        for (int64_t i = 0; i < n; ++i) {
          yr[i] = math::exp_(xr[i] - m);
        }
        const A inv = A(1) / cpu::lane_sum<A>(n, [&](int64_t i) { return yr[i]; });
        for (int64_t i = 0; i < n; ++i) {
          yr[i] *= inv;
        }
      } else {
        // log_softmax, and half/bf16 softmax: the epilogue reads x again so
        // the result is rounded to T once.
        const A s = cpu::lane_sum<A>(
            n, [&](int64_t i) { return math::exp_(math::cast_to<A>(xr[i]) - m); });
        const auto e = epilogue<Log, A>::make(m, s);
        for (int64_t i = 0; i < n; ++i) {
          yr[i] = math::cast_to<T>(e(math::cast_to<A>(xr[i])));
        }
      }
    }
  });
}

// Input viewed as [outer, n, inner] with inner > 1: reduce over n for a tile
// of adjacent columns at a time so every inner loop is unit-stride.
template <bool Log, typename T>
void softmax_columns(const T* x, T* y, const dim_split& s) {
  using A = acc_t<T>;
  const int64_t n = s.size;
  const int64_t inner = s.inner;
  const int64_t tiles = (inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, k_grain / (n * k_tile));
  at::parallel_for(0, s.outer * tiles, grain, [&](int64_t begin, int64_t end) {
    A m[k_tile];
    A sum[k_tile];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / tiles;
      const int64_t j0 = (task % tiles) * k_tile;
      const int64_t w = std::min(k_tile, inner - j0);
      const T* xb = x + o * n * inner + j0;
      T* yb = y + o * n * inner + j0;
      std::fill(m, m + w, -std::numeric_limits<A>::infinity());
      std::fill(sum, sum + w, A(0));
      for (int64_t d = 0; d < n; ++d) {
        const T* row = xb + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          const A v = math::cast_to<A>(row[j]);
          m[j] = v > m[j] ? v : m[j];
        }
      }
      for (int64_t d = 0; d < n; ++d) {
        const T* row = xb + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          sum[j] += math::exp_(math::cast_to<A>(row[j]) - m[j]);
        }
      }
      // sum[j] becomes the epilogue's k: 1 / sum, or log(sum).
      for (int64_t j = 0; j < w; ++j) {
        sum[j] = epilogue<Log, A>::make(m[j], sum[j]).k;
      }
      for (int64_t d = 0; d < n; ++d) {
        const T* row = xb + d * inner;
        T* out = yb + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          out[j] = math::cast_to<T>(
              epilogue<Log, A>{m[j], sum[j]}(math::cast_to<A>(row[j])));
        }
      }
    }
  });
}

template <bool Log, typename T>
void softmax_run(T* out, const T* self, const dim_split& plan) {
  if (plan.inner == 1) {
    softmax_rows<Log>(self, out, plan.outer, plan.size);
  } else {
    softmax_columns<Log>(self, out, plan);
  }
}

} // namespace

template <typename scalar_t>
void softmax_cpu(scalar_t* result, const scalar_t* self, const dim_split& plan) {
  softmax_run<false>(result, self, plan);
}

template <typename scalar_t>
void log_softmax_cpu(scalar_t* result, const scalar_t* self, const dim_split& plan) {
  softmax_run<true>(result, self, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
