#pragma once
// The plans of the initialization ops of schemas/init.yaml (Note [Structured
// ops] in opforge/core/structured.h). Torch-free, so the CUDA sources include it.
#include <opforge/core/plan_services.h>

#include <cstdint>

namespace opforge {

// uniform: values in [low, high). normal: mean + std * N(0, 1).
// trunc_normal: mean + std * sqrt(2) erfinv(v) for v uniform in
// [erf_low, erf_high] (the standard normal CDF of the bounds mapped to [-1, 1]),
// clamped to [low, high]. Each element's random words are its own (init/math.h).
struct random_fill_plan {
  int64_t n = 0;
  double low = 0.0;
  double high = 1.0;
  double mean = 0.0;
  double std = 1.0;
  double erf_low = -1.0;
  double erf_high = 1.0;
  philox_request random;
};

// constant: every element `value`.
struct constant_plan {
  int64_t n = 0;
  double value = 0.0;
};

}  // namespace opforge
