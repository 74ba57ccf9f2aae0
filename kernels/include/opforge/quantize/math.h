#pragma once
// Scalar math of affine fake quantization (schemas/quantize.yaml), shared by
// the CPU and CUDA kernels. As ATen's fake_quantize kernels: the input times
// the float32 reciprocal of scale, rounded half to even (nearbyint in the
// default rounding mode), plus the zero point, then clamped and scaled back;
// the straight-through mask keeps the gradient where that value is
// inside [quant_min, quant_max].
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace opforge::math {

// round(x / scale) + zero_point, before clamping, in acc_t.
template <typename acc_t>
C10_HOST_DEVICE inline acc_t quantized_unclamped(acc_t x, acc_t scale, int64_t zero_point) {
  const acc_t inv_scale = static_cast<acc_t>(1.0f / static_cast<float>(scale));
  return static_cast<acc_t>(zero_point) + std::nearbyint(x * inv_scale);
}

// The fake-quantized value. ATen clamps and scales back in float32 for every
// dtype in its per-tensor kernel, but in the input's opmath type (float64 for
// float64) in its per-channel one: `per_channel` picks which.
template <typename T, bool per_channel = false>
struct fake_quantize_fn {
  using acc_t = opmath_t<T>;
  using back_t = std::conditional_t<per_channel, acc_t, float>;
  acc_t scale;
  int64_t zero_point;
  int64_t quant_min;
  int64_t quant_max;
  C10_HOST_DEVICE T operator()(T x) const {
    const auto q = static_cast<back_t>(quantized_unclamped(cast_to<acc_t>(x), scale, zero_point));
    // fmax first: a NaN input lands on quant_min, as in ATen.
    const back_t clamped = std::fmin(std::fmax(q, static_cast<back_t>(quant_min)), static_cast<back_t>(quant_max));
    const auto s = static_cast<back_t>(static_cast<float>(scale));
    return cast_to<T>((clamped - static_cast<back_t>(zero_point)) * s);
  }
};

template <typename T>
struct fake_quantize_backward_fn {
  using acc_t = opmath_t<T>;
  acc_t scale;
  int64_t zero_point;
  int64_t quant_min;
  int64_t quant_max;
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    const acc_t q = quantized_unclamped(cast_to<acc_t>(x), scale, zero_point);
    const bool inside = static_cast<acc_t>(quant_min) <= q && q <= static_cast<acc_t>(quant_max);
    // grad times the 0/1 mask, as ATen (an infinite or NaN grad gives NaN where masked).
    return cast_to<T>(cast_to<acc_t>(grad) * select_(inside, acc_t(1), acc_t(0)));
  }
};

// The integer zero point the learnable ops use, from the float one, as ATen:
// the forward rounds half to even, the per-tensor backward adds 0.5 and
// truncates (so x.5 rounds up there), then both clamp to [quant_min, quant_max].
C10_HOST_DEVICE inline float learnable_zero_point(float zero_point, int64_t quant_min, int64_t quant_max,
                                                  bool half_up) {
  const float z = half_up ? zero_point + 0.5f : std::nearbyint(zero_point);
  return std::trunc(std::fmin(std::fmax(z, static_cast<float>(quant_min)), static_cast<float>(quant_max)));
}

// One element's gradients of the learnable fake quantization, in float32 as
// ATen's kernels: x's straight-through gradient (returned) and the
// contributions to the scale's and the zero point's (the LSQ estimator: inside
// the range d/dscale = (fake_quantized - x) / scale, outside it the clamped
// bound's distance from the zero point; d/dzero_point = -scale outside, 0
// inside), each times grad_factor.
struct learnable_fake_quantize_grad_fn {
  float scale;
  float inv_scale;  // 1 / scale in float
  float zero_point;  // learnable_zero_point(..., backward)
  float quant_min;
  float quant_max;
  float grad_factor;
  C10_HOST_DEVICE float operator()(float dy, float x, float& d_scale, float& d_zero_point) const {
    const float q = std::nearbyint(zero_point + x * inv_scale);
    const bool inside = q >= quant_min && q <= quant_max;
    if (inside) {
      const float fake_quantized = (q - zero_point) * scale;
      d_scale = (fake_quantized - x) * inv_scale * grad_factor * dy;
      d_zero_point = 0.0f;
    } else {
      d_scale = ((q < quant_min ? quant_min : quant_max) - zero_point) * grad_factor * dy;
      d_zero_point = -scale * grad_factor * dy;
    }
    return dy * (inside ? 1.0f : 0.0f);
  }
};

}  // namespace opforge::math
