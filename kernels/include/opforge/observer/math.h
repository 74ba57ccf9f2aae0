#pragma once
// Scalar math of the quantization observers (schemas/observer.yaml), shared by
// the CPU and CUDA kernels, in float32 with torch.ao.quantization's roundings.
#include <opforge/observer/plan.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// NaN-propagating min and max, as torch.aminmax / torch.min.
C10_HOST_DEVICE inline float nan_min(float a, float b) {
  return (a < b || a != a) ? a : b;
}
C10_HOST_DEVICE inline float nan_max(float a, float b) {
  return (a > b || a != a) ? a : b;
}

// The statistic after a batch whose extremes are (low, high).
C10_HOST_DEVICE inline void observe(float& min_val, float& max_val, float low, float high,
                                    const observer_plan& plan) {
  const bool unobserved = min_val == INFINITY && max_val == -INFINITY;
  if (!plan.moving_average) {
    min_val = nan_min(low, min_val);
    max_val = nan_max(high, max_val);
  } else if (unobserved) {
    min_val = low;
    max_val = high;
  } else {
    // (compilers may fuse this into an fma: within an ulp of torch's two roundings)
    min_val = min_val + plan.averaging_constant * (low - min_val);
    max_val = max_val + plan.averaging_constant * (high - max_val);
  }
}

// MinMaxObserver.calculate_qparams for one (min, max) pair.
C10_HOST_DEVICE inline void choose_qparams_of(float min_val, float max_val, const qparams_plan& plan, float& scale,
                                              int32_t& zero_point) {
  if (min_val == INFINITY && max_val == -INFINITY) {  // nothing observed
    scale = 1.0f;
    zero_point = 0;
    return;
  }
  const float min_neg = std::fmin(min_val, 0.0f);
  float max_pos = std::fmax(max_val, 0.0f);
  const double levels = static_cast<double>(plan.quant_max - plan.quant_min);
  if (plan.symmetric) {
    max_pos = std::fmax(-min_neg, max_pos);
    scale = std::fmax(max_pos / static_cast<float>(levels / 2), plan.eps);
    zero_point = plan.symmetric_zero_point;
    return;
  }
  scale = std::fmax((max_pos - min_neg) / static_cast<float>(levels), plan.eps);
  const int64_t zp = plan.quant_min - static_cast<int64_t>(static_cast<int32_t>(std::nearbyint(min_neg / scale)));
  zero_point = static_cast<int32_t>(zp < plan.quant_min ? plan.quant_min : zp > plan.quant_max ? plan.quant_max : zp);
}

}  // namespace opforge::math
