#pragma once
// The plan of the color ops (schemas/color.yaml) and their per-pixel arithmetic, shared
// by the CPU and CUDA kernels. Torch-free, so the CUDA sources include it.
//
// Note [Color arithmetic]: every formula (grayscale, one RGB <-> HSV for kornia's
// and torchvision's ops alike, XYZ, the blends) is written once, over a number type
// N: the forward kernels run it on values (N = A, the compute type: float, or double
// for double images) and color_backward on jet<A, K>, values with K tangents, seeded
// with the identity, so that one evaluation gives the pixel's Jacobian with the
// forward's own branches, tie rules and clamps (no second copy of any formula).
//
// uint8 images compute in float32 as torchvision does, bit for bit: torch rounds each
// op's result, except that its add with alpha (the grayscale's sums, the blends) is a
// fused multiply-add on the CPU and the GPU. So the formulas spell both out: fma_
// where torch fuses, mul_rn for a product torch rounds before an addition (the
// compilers would otherwise contract it into an fma, GCC on the host included).
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cfloat>
#include <cstdint>

namespace opforge {

// What a color kernel computes: a forward op, or (color_backward's `mode`) whose gradient.
enum class color_mode : int32_t {
  grayscale,
  rgb_to_hsv,
  hsv_to_rgb,
  rgb_to_xyz,
  brightness,
  contrast,
  saturation,
  hue,
  normalize,
};

struct color_plan {
  int64_t images = 0;        // the product of the dims before C
  int64_t channels = 0;      // C of `image`
  int64_t out_channels = 0;  // C of the result (rgb_to_grayscale) or of grad_output (color_backward)
  int64_t pixels = 0;        // H * W
  // The kernels' buffers are NHWC (Note [Structured memory format]; the ops that keep
  // channels_last say `channels_last: [CPU, CUDA]`).
  bool channels_last = false;
  color_mode mode = color_mode::grayscale;
  double factor = 0.0;  // rgb_to_hsv's eps, or the adjustment's factor
  // normalize: 1 or `channels` values each (the call's arguments, alive during the kernel).
  const double* mean = nullptr;
  const double* std = nullptr;
  int64_t mean_size = 0;
  int64_t std_size = 0;
  // CUDA scratch (Note [Plan services]): adjust_contrast's per-image sums (color::reduction_doubles).
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

namespace color {

// Items (pixels, or elements) one block sums in a per-image reduction; a fixed
// split, so the sums' order, and so their rounding, does not depend on the machine.
constexpr int64_t k_chunk = 4096;

inline int64_t chunks(int64_t items) { return (items + k_chunk - 1) / k_chunk; }

// CUDA workspace of adjust_contrast and its gradient, in doubles: `images * chunks(channels *
// pixels)` partial sums, then `images` means, then `images` sums.
inline int64_t reduction_doubles(int64_t images, int64_t channels, int64_t pixels) {
  return images * chunks(channels * pixels) + 2 * images;
}

// Element (n, c, p) of an image tensor of `channels` channels: NCHW, or NHWC.
template <bool ChannelsLast>
C10_HOST_DEVICE C10_ALWAYS_INLINE int64_t at(int64_t n, int64_t c, int64_t p, int64_t channels, int64_t pixels) {
  return ChannelsLast ? (n * pixels + p) * channels + c : (n * channels + c) * pixels + p;
}

// The compute type: math::opmath_t, and float for uint8 (torchvision's float32).
template <typename T>
struct acc {
  using type = math::opmath_t<T>;
};
template <>
struct acc<uint8_t> {
  using type = float;
};
template <typename T>
using acc_t = typename acc<T>::type;

// A value and its derivatives with respect to K inputs (forward-mode AD).
// The functions of this header are C10_ALWAYS_INLINE: in the CPU colour unit
// (every op x dtype x layout) GCC ran out of inlining budget and called the
// jet operators out of line, which kept the backward's pixel loops scalar.
template <typename A, int K>
struct jet {
  A v;
  A d[K];

  C10_HOST_DEVICE C10_ALWAYS_INLINE jet(A value = A(0)) : v(value) {  // a constant
    for (int k = 0; k < K; ++k) {
      d[k] = A(0);
    }
  }
  // Input k of K.
  C10_HOST_DEVICE C10_ALWAYS_INLINE static jet variable(A value, int k) {
    jet r(value);
    r.d[k] = A(1);
    return r;
  }

  friend C10_HOST_DEVICE C10_ALWAYS_INLINE jet operator+(const jet& a, const jet& b) {
    jet r(a.v + b.v);
    for (int k = 0; k < K; ++k) {
      r.d[k] = a.d[k] + b.d[k];
    }
    return r;
  }
  friend C10_HOST_DEVICE C10_ALWAYS_INLINE jet operator-(const jet& a, const jet& b) {
    jet r(a.v - b.v);
    for (int k = 0; k < K; ++k) {
      r.d[k] = a.d[k] - b.d[k];
    }
    return r;
  }
  friend C10_HOST_DEVICE C10_ALWAYS_INLINE jet operator*(const jet& a, const jet& b) {
    jet r(a.v * b.v);
    for (int k = 0; k < K; ++k) {
      r.d[k] = a.d[k] * b.v + a.v * b.d[k];
    }
    return r;
  }
  friend C10_HOST_DEVICE C10_ALWAYS_INLINE jet operator/(const jet& a, const jet& b) {
    jet r(a.v / b.v);
    for (int k = 0; k < K; ++k) {
      r.d[k] = (a.d[k] - r.v * b.d[k]) / b.v;
    }
    return r;
  }
};

template <typename N>
struct scalar_of {
  using type = N;
};
template <typename A, int K>
struct scalar_of<jet<A, K>> {
  using type = A;
};
template <typename N>
using scalar_of_t = typename scalar_of<N>::type;

// The value of a number (what comparisons and branches read).
C10_HOST_DEVICE C10_ALWAYS_INLINE float value(float x) { return x; }
C10_HOST_DEVICE C10_ALWAYS_INLINE double value(double x) { return x; }
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE A value(const jet<A, K>& x) {
  return x.v;
}

// c ? a : b, without a branch on the host (math::select_), and on a jet as a whole
// (torch.where's gradient: the chosen side's).
C10_HOST_DEVICE C10_ALWAYS_INLINE float sel(bool c, float a, float b) { return math::select_(c, a, b); }
C10_HOST_DEVICE C10_ALWAYS_INLINE double sel(bool c, double a, double b) { return math::select_(c, a, b); }
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> sel(bool c, const jet<A, K>& a, const jet<A, K>& b) {
  jet<A, K> r(math::select_(c, a.v, b.v));
  for (int k = 0; k < K; ++k) {
    r.d[k] = math::select_(c, a.d[k], b.d[k]);
  }
  return r;
}

// trunc and floor (no gradient: torch's). On the host float ones go through int32,
// which vectorizes where GCC leaves truncf/floorf scalar (-mavx2); |x| >= 2^23 is
// an integer already, and NaN and inf stay as they are. (A zero may lose its sign,
// which no result here depends on.)
C10_HOST_DEVICE C10_ALWAYS_INLINE float trunc_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::truncf(x);
#else
  const bool small = ::fabsf(x) < 8388608.0f;
  const float t = static_cast<float>(static_cast<int32_t>(math::select_(small, x, 0.0f)));
  return math::select_(small, t, x);
#endif
}
C10_HOST_DEVICE C10_ALWAYS_INLINE float floor_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::floorf(x);
#else
  const float t = trunc_(x);
  return t - math::select_(t > x, 1.0f, 0.0f);
#endif
}
C10_HOST_DEVICE C10_ALWAYS_INLINE double floor_(double x) { return ::floor(x); }
C10_HOST_DEVICE C10_ALWAYS_INLINE double trunc_(double x) { return ::trunc(x); }
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> floor_(const jet<A, K>& x) {
  return jet<A, K>(floor_(x.v));
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> trunc_(const jet<A, K>& x) {
  return jet<A, K>(trunc_(x.v));
}

// a * b rounded on its own, never contracted into an fma with a later addition
// (Note [Color arithmetic]): on the GPU the _rn intrinsics, which nvcc never fuses;
// on the host a blend the compiler cannot see through (it only maps +inf to the
// largest finite value, which no product of these formulas reaches from finite data).
C10_HOST_DEVICE C10_ALWAYS_INLINE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  const float p = a * b;
  return math::select_(p > FLT_MAX, FLT_MAX, p);
#endif
}
C10_HOST_DEVICE C10_ALWAYS_INLINE double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  const double p = a * b;
  return math::select_(p > DBL_MAX, DBL_MAX, p);
#endif
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> mul_rn(const jet<A, K>& a, const jet<A, K>& b) {
  jet<A, K> r(mul_rn(a.v, b.v));
  for (int k = 0; k < K; ++k) {
    r.d[k] = a.d[k] * b.v + a.v * b.d[k];
  }
  return r;
}

// a * b + c with one rounding (torch's add with alpha: c.add_(a, alpha=b)).
C10_HOST_DEVICE C10_ALWAYS_INLINE float fma_(float a, float b, float c) { return ::fmaf(a, b, c); }
C10_HOST_DEVICE C10_ALWAYS_INLINE double fma_(double a, double b, double c) { return ::fma(a, b, c); }
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> fma_(const jet<A, K>& a, A b, const jet<A, K>& c) {
  jet<A, K> r(fma_(a.v, b, c.v));
  for (int k = 0; k < K; ++k) {
    r.d[k] = a.d[k] * b + c.d[k];
  }
  return r;
}

// torch.clamp(x, lo, hi): NaN stays NaN; the gradient passes strictly inside (lo, hi).
template <typename A>
C10_HOST_DEVICE C10_ALWAYS_INLINE A clamp_(A x, A lo, A hi) {
  return sel(x < lo, lo, sel(x > hi, hi, x));
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> clamp_(const jet<A, K>& x, A lo, A hi) {
  const bool inside = (x.v > lo) & (x.v < hi);
  jet<A, K> r(clamp_(x.v, lo, hi));
  for (int k = 0; k < K; ++k) {
    r.d[k] = math::select_(inside, x.d[k], A(0));
  }
  return r;
}

// The largest (smallest) of three, NaN winning as in torch.amax; on jets, a tie
// shares the gradient equally among the tied inputs (torch.amax's and aminmax's rule).
template <typename A>
C10_HOST_DEVICE C10_ALWAYS_INLINE A max3(A a, A b, A c) {
  const A ab = sel((b > a) | (b != b), b, a);
  return sel((c > ab) | (c != c), c, ab);
}
template <typename A>
C10_HOST_DEVICE C10_ALWAYS_INLINE A min3(A a, A b, A c) {
  const A ab = sel((b < a) | (b != b), b, a);
  return sel((c < ab) | (c != c), c, ab);
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> tie_share(A m, const jet<A, K>& a, const jet<A, K>& b, const jet<A, K>& c) {
  const A ta = static_cast<A>(a.v == m), tb = static_cast<A>(b.v == m), tc = static_cast<A>(c.v == m);
  const A count = ta + tb + tc;
  jet<A, K> r(m);
  for (int k = 0; k < K; ++k) {
    r.d[k] = (ta * a.d[k] + tb * b.d[k] + tc * c.d[k]) / count;
  }
  return r;
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> max3(const jet<A, K>& a, const jet<A, K>& b, const jet<A, K>& c) {
  return tie_share(max3(a.v, b.v, c.v), a, b, c);
}
template <typename A, int K>
C10_HOST_DEVICE C10_ALWAYS_INLINE jet<A, K> min3(const jet<A, K>& a, const jet<A, K>& b, const jet<A, K>& c) {
  return tie_share(min3(a.v, b.v, c.v), a, b, c);
}

// Python's x % 1 (torch.remainder: fmod, plus 1 where that is negative), with
// fmod(x, 1) as x - trunc(x), which is exact and vectorizes.
template <typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE N wrap1(N x) {
  const N r = x - trunc_(x);
  return sel(value(r) < A(0), r + A(1), r);
}

// torchvision's grayscale: r * 0.2989, then g * 0.587 and b * 0.114 added with one
// rounding each (add with alpha).
template <typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE N gray(N r, N g, N b) {
  return fma_(b, A(0.114), fma_(g, A(0.587), mul_rn(r, N(A(0.2989)))));
}

// torchvision's _blend: clamp(x * ratio + other * (1 - ratio), 0, bound), the addition fused.
template <typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE N blend(N x, N other, A ratio, A alpha, A bound) {
  return clamp_(fma_(other, alpha, mul_rn(x, N(ratio))), A(0), bound);
}

// torchvision's adjust_brightness: clamp(x * factor, 0, bound).
template <typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE N brightness(N x, A factor, A bound) {
  return clamp_(mul_rn(x, N(factor)), A(0), bound);
}

// RGB to HSV and back, one arithmetic for both libraries' conventions: hue in turns,
// [0, 1) (kornia's ops scale it by 2 pi). torchvision's order of operations, which
// adjust_hue needs bit for bit for uint8 images; kornia's formulas are the same
// functions (the sextant of the first maximal channel: R, then G, then B; ties and
// gray pixels alike), so they agree to rounding.
//
// eps biases the saturation's divisor (kornia's; 0 for torchvision's): s = (max -
// min) / (max + eps), 0 for a gray pixel. (kornia divides by 1 where max == 0: for
// images in [0, 1] a black, so gray, pixel; only a negative minimum tells them apart.)
template <typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE void rgb_to_hsv(N r, N g, N b, A eps, N& turns, N& s, N& v) {
  const N top = max3(r, g, b);
  const N bottom = min3(r, g, b);
  const bool flat = value(top) == value(bottom);
  const N range = top - bottom;
  s = range / sel(flat, N(A(1)), top + eps);
  const N divisor = sel(flat, N(A(1)), range);
  const N rc = (top - r) / divisor, gc = (top - g) / divisor, bc = (top - b) / divisor;
  const bool r_max = value(top) == value(r);
  const bool g_max = value(top) == value(g);
  const N sextants = sel(r_max, bc - gc, sel(g_max, (rc + A(2)) - bc, (gc + A(4)) - rc));
  const N shifted = mul_rn(sextants, N(A(1.0 / 6.0))) + A(1);
  turns = shifted - trunc_(shifted);  // fmod(., 1): shifted > 0 for images
  v = top;
}

// (hue in turns, s, v) to RGB: sextant floor(6 h) mod 6 picks (r, g, b) among v,
// p = v (1 - s), q = v (1 - f s), t = v (1 - (1 - f) s), f the fraction of 6 h (the
// table both libraries use). Clamp: p, q, t clamped to [0, 1] (torchvision's).
template <bool Clamp, typename N, typename A = scalar_of_t<N>>
C10_HOST_DEVICE C10_ALWAYS_INLINE void hsv_to_rgb(N turns, N s, N v, N* y) {
  const N h6 = mul_rn(turns, N(A(6)));
  const N i = floor_(h6);
  const N f = h6 - i;
  // i mod 6, exactly for |i| < 2^24 (float) where floor(i / 6) is.
  const A whole = value(i);
  A k = whole - A(6) * floor_(whole / A(6));
  k = sel(k < A(0), k + A(6), sel(k >= A(6), k - A(6), k));
  const N sxf = mul_rn(s, f);
  const N one_minus_s = A(1) - s;
  N q = (A(1) - sxf) * v;
  N t = (sxf + one_minus_s) * v;
  N p = one_minus_s * v;
  if constexpr (Clamp) {
    q = clamp_(q, A(0), A(1));
    t = clamp_(t, A(0), A(1));
    p = clamp_(p, A(0), A(1));
  }
  y[0] = sel(k == A(0), v, sel(k == A(1), q, sel((k == A(2)) | (k == A(3)), p, sel(k == A(4), t, v))));
  y[1] = sel(k == A(0), t, sel((k == A(1)) | (k == A(2)), v, sel(k == A(3), q, p)));
  y[2] = sel((k == A(0)) | (k == A(1)), p, sel(k == A(2), t, sel((k == A(3)) | (k == A(4)), v, q)));
}

// The per-pixel functors: y[0..out) from x[0..3), over any number type N.

// rgb_to_grayscale: the grayscale, Out times.
template <int Out>
struct grayscale_px {
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    const N l = gray(x[0], x[1], x[2]);
    for (int k = 0; k < Out; ++k) {
      y[k] = l;
    }
  }
};

// kornia.color.rgb_to_xyz.
struct xyz_px {
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    using A = scalar_of_t<N>;
    y[0] = A(0.412453) * x[0] + A(0.357580) * x[1] + A(0.180423) * x[2];
    y[1] = A(0.212671) * x[0] + A(0.715160) * x[1] + A(0.072169) * x[2];
    y[2] = A(0.019334) * x[0] + A(0.119193) * x[1] + A(0.950227) * x[2];
  }
};

constexpr double k_two_pi = 6.283185307179586;

// kornia.color.rgb_to_hsv: hue in radians, [0, 2 pi) (one rounding up to 2 pi folds to 0).
template <typename A>
struct rgb_to_hsv_px {
  A eps;
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    N turns;
    rgb_to_hsv(x[0], x[1], x[2], eps, turns, y[1], y[2]);
    const N h = A(k_two_pi) * turns;
    y[0] = sel(value(h) >= A(k_two_pi), N(A(0)), h);
  }
};

// kornia.color.hsv_to_rgb: hue in radians, any value (taken modulo 2 pi).
struct hsv_to_rgb_px {
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    using A = scalar_of_t<N>;
    hsv_to_rgb<false>(x[0] / A(k_two_pi), x[1], x[2], y);
  }
};

// adjust_hue (C = 3) on an image in [0, 1]: torchvision's hue shift.
template <typename A>
struct hue_px {
  A hue;
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    N turns, s, v;
    rgb_to_hsv(x[0], x[1], x[2], A(0), turns, s, v);
    hsv_to_rgb<true>(wrap1(turns + hue), s, v, y);
  }
};

// adjust_saturation (C = 3): each channel blended with the pixel's grayscale
// (floored for integer images, as torchvision).
template <typename A, bool FloorGray>
struct saturation_px {
  A ratio, alpha, bound;
  template <typename N>
  C10_HOST_DEVICE C10_ALWAYS_INLINE void operator()(const N* x, N* y) const {
    N l = gray(x[0], x[1], x[2]);
    if constexpr (FloorGray) {
      l = floor_(l);
    }
    for (int c = 0; c < 3; ++c) {
      y[c] = blend(x[c], l, ratio, alpha, bound);
    }
  }
};

// The vector-Jacobian product of a pixel functor: gx[k] = sum_i g[i] dy_i / dx_k, the
// Jacobian from one evaluation of px on jets (Note [Color arithmetic]).
template <int Out, typename A, typename Px>
C10_HOST_DEVICE C10_ALWAYS_INLINE void pixel_grad(const Px& px, const A* x, const A* g, A* gx) {
  jet<A, 3> xj[3], yj[Out];
  for (int c = 0; c < 3; ++c) {
    xj[c] = jet<A, 3>::variable(x[c], c);
  }
  px(xj, yj);
  for (int k = 0; k < 3; ++k) {
    A sum = 0;
    for (int i = 0; i < Out; ++i) {
      sum += g[i] * yj[i].d[k];
    }
    gx[k] = sum;
  }
}

// pixel_grad at pixel p of image n (of `pixels` pixels): the 3 channels of the image
// and the Out of grad_output read, the 3 of the image's gradient written (the
// CPU and CUDA kernels' per-pixel body).
template <bool ChannelsLast, int Out, typename A, typename T, typename Px>
C10_HOST_DEVICE C10_ALWAYS_INLINE void pixel_grad_at(T* grad_image, const T* grad_output, const T* image, int64_t n, int64_t p,
                                          int64_t pixels, const Px& px) {
  A x[3], g[Out], gx[3];
  for (int c = 0; c < 3; ++c) {
    x[c] = math::cast_to<A>(image[at<ChannelsLast>(n, c, p, 3, pixels)]);
  }
  for (int c = 0; c < Out; ++c) {
    g[c] = math::cast_to<A>(grad_output[at<ChannelsLast>(n, c, p, Out, pixels)]);
  }
  pixel_grad<Out>(px, x, g, gx);
  for (int c = 0; c < 3; ++c) {
    grad_image[at<ChannelsLast>(n, c, p, 3, pixels)] = math::cast_to<T>(gx[c]);
  }
}

}  // namespace color
}  // namespace opforge
