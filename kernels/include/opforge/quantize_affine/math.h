#pragma once
// Scalar math of affine quantize/dequantize (schemas/quantize_affine.yaml),
// shared by the CPU and CUDA kernels. Each step rounds where
// quantized_decomposed's tensor expression rounds, so results agree exactly.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace opforge::math {

// The range of a quantized integer type (no std::numeric_limits: device code
// would need --expt-relaxed-constexpr).
template <typename Q>
struct quantized_bounds;
template <>
struct quantized_bounds<uint8_t> {
  static constexpr int64_t low = 0, high = 255;
};
template <>
struct quantized_bounds<int8_t> {
  static constexpr int64_t low = -128, high = 127;
};
template <>
struct quantized_bounds<int16_t> {
  static constexpr int64_t low = -32768, high = 32767;
};
template <>
struct quantized_bounds<int32_t> {
  static constexpr int64_t low = -2147483648LL, high = 2147483647LL;
};

// An integral value already clamped to the quantized range, as Q. Rounded to
// float, int32's upper bound becomes 2^31, one past: saturate there.
template <typename Q, typename A>
C10_HOST_DEVICE inline Q to_quantized(A v) {
  if (v >= static_cast<A>(quantized_bounds<Q>::high)) {
    return static_cast<Q>(quantized_bounds<Q>::high);
  }
  return static_cast<Q>(v);
}

// clamp(round(x * inv_scale) + zero_point, quant_min, quant_max) in A, then as
// Q; NaN lands on quant_min (as fmin(fmax(q, quant_min), quant_max), but in
// compares and selects, which vectorize).
template <typename Q, typename A>
C10_HOST_DEVICE inline Q quantize_affine(A x, A inv_scale, A zero_point, A quant_min, A quant_max) {
  A q = std::nearbyint(x * inv_scale) + zero_point;
  q = q >= quant_min ? q : quant_min;
  q = q > quant_max ? quant_max : q;
  return to_quantized<Q>(q);
}

// (x.to(T) - zero_point) * scale with T's rounding after each step (ATen
// computes a reduced type's scalar ops in float and rounds each result).
template <typename T, typename Q>
C10_HOST_DEVICE inline T dequantize_affine(Q x, double scale, int64_t zero_point) {
  using A = opmath_t<T>;
  const T shifted = cast_to<T>(cast_to<A>(cast_to<T>(static_cast<A>(x))) - static_cast<A>(zero_point));
  return cast_to<T>(cast_to<A>(shifted) * static_cast<A>(scale));
}

// quantized_decomposed.quantize_per_channel's element: the scales' type S
// (float32 or float64) is the compute type, inv_scale = S(1) / scale.
template <typename Q, typename T, typename S, typename Z>
C10_HOST_DEVICE inline Q quantize_channel(T x, S inv_scale, Z zero_point, int64_t quant_min, int64_t quant_max) {
  return quantize_affine<Q, S>(static_cast<S>(cast_to<float>(x)), inv_scale, static_cast<S>(zero_point),
                               static_cast<S>(quant_min), static_cast<S>(quant_max));
}

// quantized_decomposed.dequantize_per_channel's element: the difference exact
// in int64, the product in S, then T.
template <typename T, typename Q, typename S>
C10_HOST_DEVICE inline T dequantize_channel(Q x, S scale, int64_t zero_point) {
  return cast_to<T>(static_cast<S>(static_cast<int64_t>(x) - zero_point) * scale);
}

// bfloat16_truncate: the upper 16 bits of x, NaN kept a (quiet) NaN.
C10_HOST_DEVICE inline c10::BFloat16 truncate_to_bfloat16(float x) {
  uint32_t bits = 0;
  memcpy(&bits, &x, sizeof(bits));
  const auto upper = static_cast<uint16_t>(x != x ? 0x7fc0u : bits >> 16);
  return c10::BFloat16(upper, c10::BFloat16::from_bits());
}

}  // namespace opforge::math
