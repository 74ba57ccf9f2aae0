#pragma once
// Row reductions written so GCC vectorizes them without -ffast-math: a float
// sum or max over one accumulator is a serial dependency chain the compiler
// may not reorder, so these keep k_lanes independent accumulators (two AVX2
// registers of float) and combine them at the end. Shared by the CPU softmax
// kernels; CPU-only, device code reduces with warp shuffles instead.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>

#include <cstdint>
#include <limits>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

constexpr int64_t k_lanes = 16;

// max over x[0, n) in opmath; NaN inputs may be dropped here, callers rely on
// exp(NaN - m) turning the row to NaN afterwards (as torch's softmax does).
template <typename T, typename A = math::opmath_t<T>>
A row_max(const T* x, int64_t n) {
  A lanes[k_lanes];
  for (int64_t j = 0; j < k_lanes; ++j) {
    lanes[j] = -std::numeric_limits<A>::infinity();
  }
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      const A v = math::cast_to<A>(x[i + j]);
      lanes[j] = v > lanes[j] ? v : lanes[j];
    }
  }
  A m = -std::numeric_limits<A>::infinity();
  for (; i < n; ++i) {
    const A v = math::cast_to<A>(x[i]);
    m = v > m ? v : m;
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    m = lanes[j] > m ? lanes[j] : m;
  }
  return m;
}

// sum over i in [0, n) of f(i), in A, with k_lanes partial sums.
template <typename A, typename F>
A lane_sum(int64_t n, F f) {
  A lanes[k_lanes] = {};
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      lanes[j] += f(i + j);
    }
  }
  A s = 0;
  for (; i < n; ++i) {
    s += f(i);
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    s += lanes[j];
  }
  return s;
}

// (min, max) over x[0, n) in float, NaN if any element is NaN (as torch.aminmax):
// compares and selects per lane (NaN never wins one) plus a NaN flag per lane.
template <typename T>
void row_min_max(const T* x, int64_t n, float& low, float& high) {
  float lo[k_lanes];
  float hi[k_lanes];
  int32_t nan[k_lanes];  // int32 lanes (not bool) so the flag vectorizes beside the floats
  for (int64_t j = 0; j < k_lanes; ++j) {
    lo[j] = std::numeric_limits<float>::infinity();
    hi[j] = -std::numeric_limits<float>::infinity();
    nan[j] = 0;
  }
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      const float v = math::cast_to<float>(x[i + j]);
      lo[j] = v < lo[j] ? v : lo[j];
      hi[j] = v > hi[j] ? v : hi[j];
      nan[j] |= v != v ? -1 : 0;
    }
  }
  bool any_nan = false;
  for (; i < n; ++i) {
    const float v = math::cast_to<float>(x[i]);
    low = v < low ? v : low;
    high = v > high ? v : high;
    any_nan = any_nan || v != v;
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    low = lo[j] < low ? lo[j] : low;
    high = hi[j] > high ? hi[j] : high;
    any_nan = any_nan || nan[j] != 0;
  }
  if (any_nan) {
    low = high = std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
