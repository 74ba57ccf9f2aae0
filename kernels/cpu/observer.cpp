// CPU kernels of the quantization observer ops (structured ops, Note
// [Structured ops]); the element math is opforge/observer/math.h's, shared with
// CUDA. The statistics' reduction runs in parallel over channels when there are
// at least as many as threads, else over chunks of each channel's elements.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/observer/math.h>
#include <opforge/math/opmath.h>
#include <opforge/observer/plan.h>

#include <ATen/Parallel.h>

#include "lanes.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

// (min, max) of channel c's elements j in [begin, end) of its outer * inner,
// one contiguous run of `inner` at a time.
template <typename T>
std::pair<float, float> extremes(const T* x, const observer_plan& plan, int64_t c, int64_t begin, int64_t end) {
  float low = INFINITY;
  float high = -INFINITY;
  for (int64_t j = begin; j < end;) {
    const int64_t o = j / plan.inner;
    const int64_t i = j - o * plan.inner;
    const int64_t len = std::min(end - j, plan.inner - i);
    float l = INFINITY;
    float h = -INFINITY;
    cpu::row_min_max(x + (o * plan.channels + c) * plan.inner + i, len, l, h);
    low = math::nan_min(low, l);
    high = math::nan_max(high, h);
    j += len;
  }
  return {low, high};
}

}  // namespace

template <typename scalar_t>
void choose_qparams_cpu(scalar_t* result0, int32_t* result1, const scalar_t* min_val, const scalar_t* max_val,
                        const qparams_plan& plan) {
  for (int64_t i = 0; i < plan.numel; ++i) {
    math::choose_qparams_of(min_val[i], max_val[i], plan, result0[i], result1[i]);
  }
}

template <typename scalar_t, typename x_t>
void minmax_observer_update_cpu(scalar_t* min_val, scalar_t* max_val, const x_t* x, const observer_plan& plan) {
  const int64_t n = plan.outer * plan.inner;
  if (n == 0) {
    return;  // an empty batch changes nothing
  }
  if (plan.channels >= at::get_num_threads()) {
    at::parallel_for(0, plan.channels, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const auto [low, high] = extremes(x, plan, c, 0, n);
        math::observe(min_val[c], max_val[c], low, high, plan);
      }
    });
    return;
  }
  for (int64_t c = 0; c < plan.channels; ++c) {
    std::mutex merge;
    float low = INFINITY;
    float high = -INFINITY;
    at::parallel_for(0, n, k_grain, [&](int64_t begin, int64_t end) {
      const auto [l, h] = extremes(x, plan, c, begin, end);
      const std::lock_guard<std::mutex> lock(merge);
      low = math::nan_min(low, l);
      high = math::nan_max(high, h);
    });
    math::observe(min_val[c], max_val[c], low, high, plan);
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
