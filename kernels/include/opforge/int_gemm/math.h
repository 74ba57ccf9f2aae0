#pragma once
// Scalar math of the integer matrix products (schemas/int_gemm.yaml), shared by
// the CPU and CUDA kernels.
#include <opforge/int_gemm/plan.h>
#include <opforge/quantize_affine/math.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// A quantized layer's output element from its int32 accumulator, with its
// channel's multiplier input_scale * weight_scale and bias (0 without one). The
// clamps are compares and selects, which vectorize; NaN lands on quant_min, as
// fmin(fmax(q, quant_min), quant_max).
template <typename Q>
C10_HOST_DEVICE inline Q requantize_value(int32_t acc, double multiplier, double bias, const requantization& rq) {
  double q = std::nearbyint((static_cast<double>(acc) * multiplier + bias) / rq.output_scale) + rq.output_zero_point;
  q = q >= rq.quant_min ? q : rq.quant_min;
  q = q > rq.quant_max ? rq.quant_max : q;
  return to_quantized<Q>(q);
}

// The same for output channel j.
template <typename Q>
C10_HOST_DEVICE inline Q requantize(int32_t acc, float weight_scale, const float* bias, int64_t j,
                                    const requantization& rq) {
  const double b = bias != nullptr ? static_cast<double>(bias[j]) : 0.0;
  return requantize_value<Q>(acc, rq.input_scale * static_cast<double>(weight_scale), b, rq);
}

}  // namespace opforge::math
