#pragma once
// The plan of filter2d and its backward op (schemas/filter.yaml), and the border
// arithmetic and effective taps both devices share. Torch-free, so the CUDA sources
// include it.
//
// Both kernels see the image through a padded grid of (out_height + kernel_h - 1) x
// (out_width + kernel_w - 1) positions: padded row p reads image row
// source(p - pad_top, height, mode), or zeros where that is -1 ('constant'). With
// padding 'valid' the pads are 0 and every position lies inside the image.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

namespace filter {

// torch.nn.functional.pad's modes, as filter2d's border_type names them.
enum class border : int32_t { constant, reflect, replicate, circular };

// The image index that index t of an axis of n pixels reads (t < 0 or t >= n: a
// padded position), or -1 for a zero. The meta function has bounded the pads so that
// one reflection or wrap suffices: 'reflect' pads less than n, 'circular' at most n.
C10_HOST_DEVICE inline int64_t source(int64_t t, int64_t n, border mode) {
  if (t >= 0 && t < n) {
    return t;
  }
  switch (mode) {
    case border::reflect:
      return t < 0 ? -t : 2 * (n - 1) - t;
    case border::replicate:
      return t < 0 ? 0 : n - 1;
    case border::circular:
      return t < 0 ? t + n : t - n;
    default:
      return -1;
  }
}

}  // namespace filter

struct filter2d_plan {
  int64_t planes = 0;    // batch * channels [H, W] planes
  int64_t channels = 0;  // per sample: plane q uses kernel q / channels when kernels > 1
  int64_t height = 0;    // the image's
  int64_t width = 0;
  int64_t out_height = 0;
  int64_t out_width = 0;
  int64_t kernel_h = 0;
  int64_t kernel_w = 0;
  int64_t kernels = 1;  // kernel.size(0): 1 (shared by the batch) or the batch
  int64_t pad_top = 0;  // 'same': the anchor (k - 1) // 2; 'valid': 0
  int64_t pad_left = 0;
  filter::border mode = filter::border::constant;
  bool normalized = false;
  bool convolve = false;
  // CUDA (the kernels in opmath): the effective taps, then (backward) the kernel
  // gradient's per-chunk partial sums and totals; `grad_chunks` chunks per tap.
  int64_t grad_chunks = 1;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;

  C10_HOST_DEVICE int64_t taps() const { return kernel_h * kernel_w; }
  C10_HOST_DEVICE int64_t padded_height() const { return out_height + kernel_h - 1; }
  C10_HOST_DEVICE int64_t padded_width() const { return out_width + kernel_w - 1; }
  C10_HOST_DEVICE int64_t kernel_of(int64_t plane) const { return kernels == 1 ? 0 : plane / channels; }
  // The planes kernel b filters: [first_plane(b), first_plane(b) + planes_of_kernel()).
  C10_HOST_DEVICE int64_t first_plane(int64_t b) const { return kernels == 1 ? 0 : b * channels; }
  C10_HOST_DEVICE int64_t planes_of_kernel() const { return kernels == 1 ? planes : channels; }
  C10_HOST_DEVICE int64_t row_source(int64_t p) const { return filter::source(p - pad_top, height, mode); }
  C10_HOST_DEVICE int64_t col_source(int64_t t) const { return filter::source(t - pad_left, width, mode); }
};

namespace filter {

// Tap (i, j) of kernel b as the correlation applies it: the kernel flipped by 180
// degrees when convolving, then divided by `scale` (the sum of |taps| when
// normalized, else 1).
template <typename A, typename T>
C10_HOST_DEVICE inline A effective_tap(const T* kernel, int64_t b, int64_t i, int64_t j, A scale,
                                       const filter2d_plan& plan) {
  const int64_t ii = plan.convolve ? plan.kernel_h - 1 - i : i;
  const int64_t jj = plan.convolve ? plan.kernel_w - 1 - j : j;
  return math::cast_to<A>(kernel[(b * plan.kernel_h + ii) * plan.kernel_w + jj]) / scale;
}

// The gradient of raw tap (i, j) of kernel b from g_taps, the gradient of the
// effective taps `taps` (both row-major, kernel_h x kernel_w): with normalization
// E = K / s, s = sum |K|, it is (G - sign(K) * sum(G * E)) / s (torch.abs's gradient
// is 0 at 0); `dot` is that sum(G * E). The flip maps (i, j) to its tap.
template <typename A, typename T>
C10_HOST_DEVICE inline A raw_tap_grad(const T* kernel, int64_t b, int64_t i, int64_t j, const A* g_taps, A dot,
                                      A scale, const filter2d_plan& plan) {
  const int64_t ei = plan.convolve ? plan.kernel_h - 1 - i : i;
  const int64_t ej = plan.convolve ? plan.kernel_w - 1 - j : j;
  const A g = g_taps[ei * plan.kernel_w + ej];
  if (!plan.normalized) {
    return g;
  }
  const A k = math::cast_to<A>(kernel[(b * plan.kernel_h + i) * plan.kernel_w + j]);
  const A sign = static_cast<A>(k > A(0)) - static_cast<A>(k < A(0));
  return (g - sign * dot) / scale;
}

}  // namespace filter

}  // namespace opforge
