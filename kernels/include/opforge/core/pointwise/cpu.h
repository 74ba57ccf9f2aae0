#pragma once
// The CPU executor of a pointwise plan (Note [Pointwise engine] in
// geometry.h): y = f(x_1, ..., x_N), parallel over the flat index; each task
// walks its range one innermost row at a time. Rows where every operand is
// dense, or where an input is one broadcast value, are plain loops over
// pointers that GCC vectorizes once f inlines (functors use select_, not
// branches, see math/functions.h); other rows are strided loops.
#include <opforge/core/pointwise/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace opforge::pointwise {
// Internal linkage: each CPU capability's copy of a kernel unit keeps its own
// instantiations (Note [CPU capabilities] in opforge/core/cpu_capability.h).
namespace {

// Elements per parallel task: below this the thread hand-off costs more than the work.
constexpr int64_t k_cpu_grain = 32768;

namespace cpu_detail {

// n elements of one row; strides of 0 (a broadcast input) or 1 take the fast loops.
// flatten: f is called from several loops here, and GCC's inliner then gives up on a
// functor as large as gelu's backward, leaving a call per element and no vectors.
template <typename T, typename F, size_t... I>
[[gnu::flatten]] void cpu_row(T* y, const std::array<const T*, sizeof...(I)>& x, int64_t n, int64_t sy,
             const std::array<int64_t, sizeof...(I)>& sx, const F& f, std::index_sequence<I...>) {
  const F fn = f;  // local copies: they cannot alias y, so they stay in registers
  const std::array<const T*, sizeof...(I)> in = x;
  if (sy == 1 && ((sx[I] == 1) && ...)) {
    // In place (y is the first input): read through y itself, or GCC's runtime
    // alias check sees the overlap and takes its scalar loop.
    if (y == in[0]) {
      if constexpr (sizeof...(I) == 1) {
        for (int64_t i = 0; i < n; ++i) {
          y[i] = fn(y[i]);
        }
        return;
      } else if constexpr (sizeof...(I) == 2) {
        const T* b = in[1];
        for (int64_t i = 0; i < n; ++i) {
          y[i] = fn(y[i], b[i]);
        }
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      y[i] = fn(in[I][i]...);
    }
    return;
  }
  if constexpr (sizeof...(I) == 2) {
    if (sy == 1 && sx[0] == 1 && sx[1] == 0) {
      const T b = *in[1];
      const T* a = in[0];
      for (int64_t i = 0; i < n; ++i) {
        y[i] = fn(a[i], b);
      }
      return;
    }
    if (sy == 1 && sx[0] == 0 && sx[1] == 1) {
      const T a = *in[0];
      const T* b = in[1];
      for (int64_t i = 0; i < n; ++i) {
        y[i] = fn(a, b[i]);
      }
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    y[i * sy] = fn(in[I][i * sx[I]]...);
  }
}

}  // namespace cpu_detail

template <typename T, typename F, int N>
void run_cpu(const plan<N>& p, const F& f) {
  const int64_t numel = p.numel();
  if (numel == 0) {
    return;
  }
  using seq = std::make_index_sequence<N>;
  if (p.contiguous()) {
    at::parallel_for(0, numel, k_cpu_grain, [&](int64_t begin, int64_t end) {
      std::array<const T*, N> x;
      std::array<int64_t, N> ones;
      for (int k = 0; k < N; ++k) {
        x[k] = reinterpret_cast<const T*>(p.data[k + 1]) + begin;
        ones[k] = 1;
      }
      cpu_detail::cpu_row(reinterpret_cast<T*>(p.data[0]) + begin, x, end - begin, 1, ones, f, seq{});
    });
    return;
  }
  const int inner = p.ndim - 1;
  const int64_t row = p.sizes[inner];
  std::array<int64_t, N> sx;
  for (int k = 0; k < N; ++k) {
    sx[k] = p.strides[k + 1][inner];
  }
  at::parallel_for(0, numel, k_cpu_grain, [&](int64_t begin, int64_t end) {
    int64_t index[k_max_dims];
    int64_t rest = begin;
    for (int d = inner; d >= 0; --d) {
      index[d] = rest % p.sizes[d];
      rest /= p.sizes[d];
    }
    while (begin < end) {
      int64_t offset[N + 1] = {};
      for (int d = 0; d <= inner; ++d) {
        for (int k = 0; k <= N; ++k) {
          offset[k] += index[d] * p.strides[k][d];
        }
      }
      const int64_t n = std::min(row - index[inner], end - begin);
      std::array<const T*, N> x;
      for (int k = 0; k < N; ++k) {
        x[k] = reinterpret_cast<const T*>(p.data[k + 1]) + offset[k + 1];
      }
      cpu_detail::cpu_row(reinterpret_cast<T*>(p.data[0]) + offset[0], x, n, p.strides[0][inner], sx, f, seq{});
      begin += n;
      index[inner] += n;
      for (int d = inner; d > 0 && index[d] == p.sizes[d]; --d) {  // carry into the outer dims
        index[d] = 0;
        ++index[d - 1];
      }
    }
  });
}

}  // namespace
}  // namespace opforge::pointwise
