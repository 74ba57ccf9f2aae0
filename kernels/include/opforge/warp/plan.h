#pragma once
// The plan of warp_affine, warp_perspective and warp_image_backward (Note
// [Structured ops]) and the sampling both devices share. Output pixel (x, y)
// reads the image at M^-1 (x, y, 1) in pixel coordinates (pixel centres at
// integers, OpenCV's and kornia's convention: M maps the source to the
// destination), sampled as F.grid_sample: bilinear or nearest, with padding
// 'zeros', 'border' or 'reflection' (about the centres of the edge pixels when
// align_corners, else about their outer edges). Torch-free, so the CUDA sources
// include it.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge {

enum class warp_padding : int32_t { zeros, border, reflection };

struct warp_plan {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t in_h = 0;
  int64_t in_w = 0;
  int64_t out_h = 0;
  int64_t out_w = 0;
  bool perspective = false;  // M is [B, 3, 3], else [B, 2, 3]
  bool matrix_per_image = true;  // M has B rows, else one shared by every image
  bool nearest = false;  // mode 'nearest', else 'bilinear'
  warp_padding padding = warp_padding::zeros;
  bool align_corners = true;
  // The CUDA backward's float32 accumulator for float16/bfloat16.
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

namespace warp {

// The inverse of image b's matrix as a 3x3 homography in double (a few dozen
// flops: recomputed per thread on CUDA, per image on CPU).
template <typename T>
C10_HOST_DEVICE inline void inverse(const warp_plan& p, const T* m_all, int64_t b, double inv[9]) {
  const int64_t rows = p.perspective ? 3 : 2;
  const T* m = m_all + (p.matrix_per_image ? b : 0) * rows * 3;
  double a[9] = {0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (int k = 0; k < rows * 3; ++k) {
    a[k] = static_cast<double>(math::cast_to<math::opmath_t<T>>(m[k]));
  }
  const double c0 = a[4] * a[8] - a[5] * a[7];
  const double c1 = a[5] * a[6] - a[3] * a[8];
  const double c2 = a[3] * a[7] - a[4] * a[6];
  const double det = a[0] * c0 + a[1] * c1 + a[2] * c2;
  const double r = det != 0.0 ? 1.0 / det : NAN;  // a singular matrix samples nothing (NaN points)
  inv[0] = c0 * r;
  inv[1] = (a[2] * a[7] - a[1] * a[8]) * r;
  inv[2] = (a[1] * a[5] - a[2] * a[4]) * r;
  inv[3] = c1 * r;
  inv[4] = (a[0] * a[8] - a[2] * a[6]) * r;
  inv[5] = (a[2] * a[3] - a[0] * a[5]) * r;
  inv[6] = c2 * r;
  inv[7] = (a[1] * a[6] - a[0] * a[7]) * r;
  inv[8] = (a[0] * a[4] - a[1] * a[3]) * r;
}

// grid_sample's reflection of a coordinate into [twice_low / 2, twice_high / 2].
template <typename A>
C10_HOST_DEVICE inline A reflect(A x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) {
    return A(0);
  }
  const A lo = static_cast<A>(twice_low) / A(2);
  const A span = static_cast<A>(twice_high - twice_low) / A(2);
  x = x < lo ? lo - x : x - lo;
  const A extra = fmod(x, span);
  const int64_t flips = static_cast<int64_t>(floor(x / span));
  return (flips % 2 == 0 ? extra : span - extra) + lo;
}

// A source coordinate after padding: 'border' and 'reflection' bring it into [0, size - 1].
template <typename A>
C10_HOST_DEVICE inline A pad_coordinate(const warp_plan& p, A x, int64_t size) {
  if (p.padding == warp_padding::zeros) {
    return x;
  }
  if (p.padding == warp_padding::reflection) {
    x = p.align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
  }
  return x < A(0) ? A(0) : (x > static_cast<A>(size - 1) ? static_cast<A>(size - 1) : x);
}

// Calls f(offset, weight) for each in-bounds tap (offset y * in_w + x in the image
// plane) of output pixel (ox, oy) under the inverse matrix `inv`.
template <typename A, typename F>
C10_HOST_DEVICE inline void for_each_tap(const warp_plan& p, const double inv[9], int64_t ox, int64_t oy, F&& f) {
  const double x = static_cast<double>(ox), y = static_cast<double>(oy);
  const double w = inv[6] * x + inv[7] * y + inv[8];
  A sx = static_cast<A>((inv[0] * x + inv[1] * y + inv[2]) / w);
  A sy = static_cast<A>((inv[3] * x + inv[4] * y + inv[5]) / w);
  if (!(sx - sx == A(0) && sy - sy == A(0))) {
    return;  // not finite: a point at infinity (or a singular matrix) reads nothing
  }
  sx = pad_coordinate(p, sx, p.in_w);
  sy = pad_coordinate(p, sy, p.in_h);
  // Far outside: no tap, and no float -> int64 conversion out of range.
  if (sx < A(-2) || sy < A(-2) || sx > static_cast<A>(p.in_w + 1) || sy > static_cast<A>(p.in_h + 1)) {
    return;
  }
  const auto inside = [&](int64_t ix, int64_t iy) { return ix >= 0 && iy >= 0 && ix < p.in_w && iy < p.in_h; };
  if (p.nearest) {
    const int64_t ix = static_cast<int64_t>(nearbyint(sx)), iy = static_cast<int64_t>(nearbyint(sy));
    if (inside(ix, iy)) {
      f(iy * p.in_w + ix, A(1));
    }
    return;
  }
  const A fx = floor(sx), fy = floor(sy);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const A tx = sx - fx, ty = sy - fy;
  const A wx[2] = {A(1) - tx, tx}, wy[2] = {A(1) - ty, ty};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 2; ++i) {
      if (inside(x0 + i, y0 + j)) {
        f((y0 + j) * p.in_w + x0 + i, wy[j] * wx[i]);
      }
    }
  }
}

}  // namespace warp
}  // namespace opforge
