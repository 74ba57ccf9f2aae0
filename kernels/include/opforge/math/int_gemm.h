#pragma once
// Scalar math of the integer matrix products (schemas/int_gemm.yaml), shared by
// the CPU and CUDA kernels.
#include <opforge/int_gemm_plan.h>
#include <opforge/math/quantize_affine.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// quantized_linear's output element from its int32 accumulator.
template <typename Q>
C10_HOST_DEVICE inline Q requantize(int32_t acc, float weight_scale, const float* bias, int64_t j,
                                    const quantized_linear_plan& plan) {
  double v = static_cast<double>(acc) * (plan.input_scale * static_cast<double>(weight_scale));
  if (bias != nullptr) {
    v += static_cast<double>(bias[j]);
  }
  const double q = std::nearbyint(v / plan.output_scale) + plan.output_zero_point;
  return to_quantized<Q>(std::fmin(std::fmax(q, plan.quant_min), plan.quant_max));
}

}  // namespace opforge::math
