#pragma once
// The plans of roi_align, roi_pool and their backward ops (Note [Structured
// ops]) and the box geometry the CPU and CUDA kernels share, so that both
// devices sample the same points (torchvision.ops' arithmetic, in the
// accumulation type A: float for float/half/bfloat16, double for double).
// Torch-free, so the CUDA sources include it.
#include <opforge/math/opmath.h>
#include <opforge/core/plan_services.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge {

// An (N, C, H, W) input pooled by K boxes to (K, C, out_h, out_w).
struct roi_dims {
  int64_t rois = 0;
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t out_h = 0;
  int64_t out_w = 0;
  C10_HOST_DEVICE int64_t bins() const { return out_h * out_w; }
  C10_HOST_DEVICE int64_t plane() const { return height * width; }
};

struct roi_align_plan {
  roi_dims d;
  double spatial_scale = 1;
  int64_t sampling_ratio = -1;
  bool aligned = false;
  bool max = false;  // pool_mode 'max', else 'avg'
  index_report bad_index;  // batch indices, column 0 of the boxes
  // The CPU kernels always compute over (N, H, W, C) buffers, vectorized over
  // channels (Note [Structured memory format]); the outputs stay contiguous.
  bool channels_last = false;
  // The CUDA backward's float32 accumulator for float16/bfloat16.
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

struct roi_pool_plan {
  roi_dims d;
  double spatial_scale = 1;
  index_report bad_index;
  bool channels_last = false;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

namespace math {

// A box's image: column 0 truncated toward zero (torchvision's int cast); NaN
// and values beyond int64 give -1, so that they are reported as bad indices.
C10_HOST_DEVICE inline int64_t roi_batch_index(double v) {
  return v > -9.0e18 && v < 9.0e18 ? static_cast<int64_t>(v) : -1;
}

// roi_align's box: where its bins start and how large they are, and the
// sampling grid of each bin.
template <typename A>
struct align_box {
  A start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  A count;  // samples averaged per bin, at least 1
};

template <typename A, typename T>
C10_HOST_DEVICE align_box<A> align_geometry(const T* box, const roi_align_plan& p) {
  const A scale = static_cast<A>(p.spatial_scale);
  const A offset = p.aligned ? A(0.5) : A(0);
  const A x1 = cast_to<A>(box[1]) * scale - offset;
  const A y1 = cast_to<A>(box[2]) * scale - offset;
  A w = cast_to<A>(box[3]) * scale - offset - x1;
  A h = cast_to<A>(box[4]) * scale - offset - y1;
  if (!p.aligned) {  // the legacy (Detectron) box: at least 1x1
    w = w > A(1) ? w : A(1);
    h = h > A(1) ? h : A(1);
  }
  const A bin_h = h / static_cast<A>(p.d.out_h);
  const A bin_w = w / static_cast<A>(p.d.out_w);
  const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(bin_h));
  const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(bin_w));
  // (a backwards aligned box gives a grid of 0 or fewer samples: its bins are 0)
  const int64_t n = gh * gw;
  return {y1, x1, bin_h, bin_w, gh, gw, static_cast<A>(n > 1 ? n : 1)};
}

// Sample i of `grid` in bin `b` along one axis.
template <typename A>
C10_HOST_DEVICE inline A sample_at(A start, A bin, int64_t b, int64_t i, int64_t grid) {
  return start + static_cast<A>(b) * bin + (static_cast<A>(i) + A(0.5)) * bin / static_cast<A>(grid);
}

// Bilinear interpolation along one axis of `size` pixels: the two neighbours
// and their weights. A coordinate more than one pixel outside reads nothing
// (valid = false, weights 0); one within clamps to the border.
template <typename A>
struct lerp {
  int64_t lo, hi;
  A w_lo, w_hi;
  bool valid;
};

template <typename A>
C10_HOST_DEVICE inline lerp<A> lerp_at(A y, int64_t size) {
  if (size <= 0 || y < A(-1) || y > static_cast<A>(size)) {
    return {0, 0, A(0), A(0), false};
  }
  y = y > A(0) ? y : A(0);
  int64_t lo = static_cast<int64_t>(y);
  int64_t hi = lo + 1;
  if (lo >= size - 1) {
    lo = hi = size - 1;
    y = static_cast<A>(lo);
  }
  const A l = y - static_cast<A>(lo);
  return {lo, hi, A(1) - l, l, true};
}

// roi_pool's box after rounding its scaled corners, at least 1x1 pixel.
struct pool_box {
  int64_t start_h, start_w, h, w;
};

template <typename A, typename T>
C10_HOST_DEVICE pool_box pool_geometry(const T* box, double spatial_scale) {
  const A s = static_cast<A>(spatial_scale);
  const int64_t x1 = static_cast<int64_t>(std::round(cast_to<A>(box[1]) * s));
  const int64_t y1 = static_cast<int64_t>(std::round(cast_to<A>(box[2]) * s));
  const int64_t x2 = static_cast<int64_t>(std::round(cast_to<A>(box[3]) * s));
  const int64_t y2 = static_cast<int64_t>(std::round(cast_to<A>(box[4]) * s));
  const int64_t w = x2 - x1 + 1;
  const int64_t h = y2 - y1 + 1;
  return {y1, x1, h > 1 ? h : 1, w > 1 ? w : 1};
}

// Bin i of n over a box side of `len` pixels starting at `start`, clipped to
// [0, size): [floor(i * len / n), ceil((i + 1) * len / n)) as torchvision
// computes it (in A).
template <typename A>
C10_HOST_DEVICE inline void pool_bin(int64_t i, int64_t n, int64_t start, int64_t len, int64_t size,
                                     int64_t& begin, int64_t& end) {
  const A bin = static_cast<A>(len) / static_cast<A>(n);
  begin = static_cast<int64_t>(std::floor(static_cast<A>(i) * bin)) + start;
  end = static_cast<int64_t>(std::ceil(static_cast<A>(i + 1) * bin)) + start;
  begin = begin < 0 ? 0 : (begin > size ? size : begin);
  end = end < 0 ? 0 : (end > size ? size : end);
}

}  // namespace math
}  // namespace opforge
