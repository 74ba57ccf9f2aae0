#pragma once
// The plan of resize and resize_backward (Note [Structured ops]) and the
// sampling arithmetic both devices share: for one output coordinate along one
// axis, the input taps (index, weight) of F.interpolate's modes. A 2-D resize is
// the product of its two axes' taps (every mode here is separable), so the CPU
// kernels resample one axis at a time and the CUDA kernels nest the two loops.
// Torch-free, so the CUDA sources include it.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace opforge {

enum class resize_mode : int32_t { nearest, nearest_exact, bilinear, bicubic };

// One axis: `in` input and `out` output samples, and the scale of
// aten/src/ATen/native/UpSample.h's area_pixel_compute_scale (nearest modes:
// in / out in float, as ATen's nearest index).
struct resize_axis {
  int64_t in = 0;
  int64_t out = 0;
  double scale = 0;
  float nearest_scale = 0;
};

struct resize_plan {
  int64_t planes = 0;  // the product of the leading dims: (..., H, W) as (planes, H, W)
  resize_axis h;
  resize_axis w;
  resize_mode mode = resize_mode::bilinear;
  bool align_corners = false;
  bool antialias = false;
  // The CUDA backward's float32 accumulator for float16/bfloat16.
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

namespace resize {

// The compute type: opmath's, and float for uint8 images (as ATen).
template <typename T>
using acc_t = std::conditional_t<std::is_integral_v<T>, float, math::opmath_t<T>>;

// Keys' cubic convolution kernel with parameter a (-0.75 for bicubic, -0.5, PIL's,
// for the antialiased filter), at distance |x|.
template <typename A>
C10_HOST_DEVICE inline A cubic(A x, A a) {
  x = x < A(0) ? -x : x;
  if (x < A(1)) {
    return ((a + A(2)) * x - (a + A(3))) * x * x + A(1);
  }
  if (x < A(2)) {
    return (((x - A(5)) * x + A(8)) * x - A(4)) * a;
  }
  return A(0);
}

template <typename A>
C10_HOST_DEVICE inline int64_t clamp_index(int64_t i, int64_t n) {
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// Calls f(index, weight) for each input tap of output coordinate `o`; the weights
// sum to 1. Antialiasing (downscaling only changes anything) widens the filter
// by the scale, so that every input sample contributes, as PIL and ATen's
// _upsample_*_aa: the window is centred at scale * (o + 0.5) and normalized.
template <typename A, typename F>
C10_HOST_DEVICE inline void for_each_tap(const resize_plan& p, const resize_axis& ax, int64_t o, F&& f) {
  const A scale = static_cast<A>(ax.scale);
  if (p.mode == resize_mode::nearest || p.mode == resize_mode::nearest_exact) {
    int64_t i = 0;
    if (ax.in == ax.out) {
      i = o;
    } else if (p.mode == resize_mode::nearest) {
      i = ax.out == 2 * ax.in ? o >> 1 : static_cast<int64_t>(floorf(static_cast<float>(o) * ax.nearest_scale));
    } else {
      i = static_cast<int64_t>(floor((static_cast<double>(o) + 0.5) * static_cast<double>(ax.nearest_scale)));
    }
    f(i < ax.in ? i : ax.in - 1, A(1));
    return;
  }
  const bool cubic_mode = p.mode == resize_mode::bicubic;
  if (p.antialias) {
    const A support = (cubic_mode ? A(2) : A(1)) * (scale >= A(1) ? scale : A(1));
    const A inv = scale >= A(1) ? A(1) / scale : A(1);
    const A center = scale * (static_cast<A>(o) + A(0.5));
    const int64_t lo_raw = static_cast<int64_t>(center - support + A(0.5));
    const int64_t lo = lo_raw > 0 ? lo_raw : 0;
    const int64_t hi_raw = static_cast<int64_t>(center + support + A(0.5));
    const int64_t hi = hi_raw < ax.in ? hi_raw : ax.in;
    const auto weight = [&](int64_t i) {
      const A t = (static_cast<A>(i) - center + A(0.5)) * inv;
      if (cubic_mode) {
        return cubic(t, A(-0.5));
      }
      const A a = t < A(0) ? -t : t;
      return a < A(1) ? A(1) - a : A(0);
    };
    A total = 0;
    for (int64_t i = lo; i < hi; ++i) {
      total += weight(i);
    }
    const A norm = total != A(0) ? A(1) / total : A(0);
    for (int64_t i = lo; i < hi; ++i) {
      f(i, weight(i) * norm);
    }
    return;
  }
  const A centered = scale * (static_cast<A>(o) + A(0.5)) - A(0.5);
  if (cubic_mode) {
    const A src = p.align_corners ? scale * static_cast<A>(o) : centered;
    const A fl = floor(src);
    const int64_t i = static_cast<int64_t>(fl);
    const A t = src - fl;
    const A a = A(-0.75);
    const A w[4] = {cubic(t + A(1), a), cubic(t, a), cubic(A(1) - t, a), cubic(A(2) - t, a)};
    for (int k = 0; k < 4; ++k) {
      f(clamp_index<A>(i - 1 + k, ax.in), w[k]);
    }
    return;
  }
  // bilinear: ATen clamps the source coordinate at 0 (not at the far edge: the
  // second tap repeats the last sample there).
  A src = p.align_corners ? scale * static_cast<A>(o) : (centered > A(0) ? centered : A(0));
  int64_t i0 = static_cast<int64_t>(floor(src));
  i0 = i0 < ax.in - 1 ? i0 : ax.in - 1;
  A lambda = src - static_cast<A>(i0);
  lambda = lambda < A(0) ? A(0) : (lambda > A(1) ? A(1) : lambda);
  const int64_t i1 = i0 + (i0 < ax.in - 1 ? 1 : 0);
  f(i0, A(1) - lambda);
  f(i1, lambda);
}

// The most taps one output coordinate can have along an axis (buffer sizes).
inline int64_t max_taps(const resize_plan& p, const resize_axis& ax) {
  if (p.mode == resize_mode::nearest || p.mode == resize_mode::nearest_exact) {
    return 1;
  }
  const int64_t base = p.mode == resize_mode::bicubic ? 4 : 2;
  if (!p.antialias) {
    return base;
  }
  const double scale = ax.scale >= 1.0 ? ax.scale : 1.0;
  return static_cast<int64_t>(std::ceil(base * 0.5 * scale)) * 2 + 2;
}

// Rounds a value into the image's type: uint8 images round to nearest and saturate.
template <typename T, typename A>
C10_HOST_DEVICE inline T store(A v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    v = nearbyint(v);
    return static_cast<uint8_t>(v < A(0) ? A(0) : (v > A(255) ? A(255) : v));
  } else {
    return math::cast_to<T>(v);
  }
}

}  // namespace resize
}  // namespace opforge
