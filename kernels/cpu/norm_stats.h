#pragma once
// Group statistics for the CPU norm kernels (norm_layer.cpp, norm_group.cpp,
// norm_batch.cpp). A group is `blocks` runs of `len` contiguous elements, run b
// at x + b * stride: a row (layer norm), a [C/G, HxW] slab (group norm) or one
// channel across the batch (batch norm). Mean and variance take two passes (the
// second over cached data) rather than one: var = E[(x - mean)^2] keeps full
// precision where E[x^2] - mean^2 cancels.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "lanes.h"

#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

// Elements summed in opmath (k_lanes partial sums) before the partial joins a
// sum_acc_t total: float rows of millions keep their precision.
constexpr int64_t k_norm_chunk = 4096;
// Elements per parallel task.
constexpr int64_t k_norm_grain = 32768;

// Note [Row sums stay out of line]: the lane sums below are never inlined. Inside
// a caller's loop over channels or groups GCC 12 otherwise vectorizes that outer
// loop (gathers across channels, measured 3-4x slower) instead of the sum's own.

// lane_sum (lanes.h), out of line.
template <typename A, typename F>
[[gnu::noinline]] A lane_sum_out_of_line(int64_t n, F f) {
  return lane_sum<A>(n, f);
}

// sum of f(v) over the group's elements v (converted to opmath).
template <typename T, typename F>
math::sum_acc_t<T> group_sum(const T* x, int64_t blocks, int64_t len, int64_t stride, F f) {
  using A = math::opmath_t<T>;
  math::sum_acc_t<T> total = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const T* xb = x + b * stride;
    for (int64_t c0 = 0; c0 < len; c0 += k_norm_chunk) {
      const T* xc = xb + c0;
      total += lane_sum_out_of_line<A>(std::min(k_norm_chunk, len - c0),
                                       [&](int64_t i) { return f(math::cast_to<A>(xc[i])); });
    }
  }
  return total;
}

template <typename A>
struct sum2 {
  A first = 0;
  A second = 0;
};

// sum of f1(i) and sum of f2(i) over [0, n) in one pass, k_lanes partial sums
// each. See Note [Row sums stay out of line].
template <typename A, typename F1, typename F2>
[[gnu::noinline]] sum2<A> lane_sum2(int64_t n, F1 f1, F2 f2) {
  A l1[k_lanes] = {};
  A l2[k_lanes] = {};
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      l1[j] += f1(i + j);
      l2[j] += f2(i + j);
    }
  }
  sum2<A> s;
  for (; i < n; ++i) {
    s.first += f1(i);
    s.second += f2(i);
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    s.first += l1[j];
    s.second += l2[j];
  }
  return s;
}

template <typename A>
struct moments {
  A mean;
  A var; // biased
};

template <typename T>
moments<math::opmath_t<T>> group_moments(const T* x, int64_t blocks, int64_t len, int64_t stride) {
  using A = math::opmath_t<T>;
  using S = math::sum_acc_t<T>;
  const auto n = static_cast<S>(blocks * len);
  const A mean = static_cast<A>(group_sum(x, blocks, len, stride, [](A v) { return v; }) / n);
  const S sq = group_sum(x, blocks, len, stride, [mean](A v) {
    const A d = v - mean;
    return d * d;
  });
  return {mean, static_cast<A>(sq / n)};
}

// Calls f(std::bool_constant<a>{}): a run-time flag as a template argument.
template <typename F>
decltype(auto) with_flag(bool a, F&& f) {
  return a ? f(std::true_type{}) : f(std::false_type{});
}

// Calls f(std::bool_constant<a>{}, std::bool_constant<b>{}): turns run-time
// flags (weight present, ...) into template arguments, so each loop is compiled
// without the tests.
template <typename F>
decltype(auto) with_flags(bool a, bool b, F&& f) {
  if (a) {
    return b ? f(std::true_type{}, std::true_type{}) : f(std::true_type{}, std::false_type{});
  }
  return b ? f(std::false_type{}, std::true_type{}) : f(std::false_type{}, std::false_type{});
}

// dw[i] = sw and db[i] = sb, for the outputs wanted (non-null).
template <typename T, typename A>
void store_weight_grads(T* dw, T* db, int64_t i, A sw, A sb) {
  if (dw) {
    dw[i] = math::cast_to<T>(sw);
  }
  if (db) {
    db[i] = math::cast_to<T>(sb);
  }
}

// Splits [0, n) into chunk_count(n) contiguous chunks run in parallel:
// f(chunk, begin, end). A fixed split (unlike parallel_for's) lets each chunk
// own a partial-sum buffer; its count does not depend on the thread count, so
// the sums, added chunk by chunk in order, are the same bits on any number of
// threads (tests/ops/test_determinism.py). 32 chunks keep up to 32 threads busy
// for the cost of 32 partial rows.
constexpr int64_t k_sum_chunks = 32;

inline int64_t chunk_count(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(n, k_sum_chunks));
}

template <typename F>
void for_each_chunk(int64_t n, int64_t chunks, F f) {
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      f(c, n * c / chunks, n * (c + 1) / chunks);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
