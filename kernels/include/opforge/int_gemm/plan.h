#pragma once
// The plans of the integer matrix products (schemas/int_gemm.yaml). Torch-free,
// so the CUDA sources include it.
#include <opforge/conv/math.h>

#include <cstdint>

namespace opforge {

// int8_mm: [m, k] x [k, n] -> [m, n], int32 accumulation.
struct int8_mm_plan {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
};

// How a quantized layer turns its int32 accumulator for output channel j into
// the output: clamp(round((acc * input_scale * weight_scales[j] + bias[j]) /
// output_scale) + output_zero_point, quant_min, quant_max), in double.
struct requantization {
  int32_t input_zero_point = 0;
  double input_scale = 1.0;
  double output_scale = 1.0;
  double output_zero_point = 0.0;
  double quant_min = 0.0;
  double quant_max = 0.0;
};

// quantized_linear: input [m, k] (zero point input_zero_point) times weight
// [n, k] (per-output-channel zero points), accumulated in int32, requantized.
struct quantized_linear_plan {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  requantization rq;
};

// quantized_conv2d: conv2d's geometry (NCHW input and result, OIHW weight),
// padding reading as the input's zero point, accumulated in int32, requantized.
struct quantized_conv2d_plan {
  math::conv2d_geometry g;
  requantization rq;
};

}  // namespace opforge
