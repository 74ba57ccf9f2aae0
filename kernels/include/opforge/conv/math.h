#pragma once
// Geometry of a 2-D convolution, shared by the CPU kernels and the CUDA
// launchers (torch-free, so .cu files can take it by value).
//
// Every op of the conv family is phrased in terms of one conv2d: conv2d maps
// an "image" (n, c, h, w) to "outputs" (n, oc, oh, ow) with a weight
// (oc, c / groups, kh, kw). conv_transpose2d is the same map run backwards
// (its input is the outputs side, its result the image side), so it reuses
// conv2d's input-gradient code for its forward and conv2d's forward for its
// input gradient.
#include <opforge/activation/math.h>
#include <opforge/activation/math_ext.h>

#include <c10/macros/Macros.h>

#include <math.h>

#include <cstdint>
#include <type_traits>

namespace opforge::math {

struct conv2d_geometry {
  int64_t n = 0;   // batch
  int64_t c = 0;   // image channels
  int64_t h = 0;   // image height, width
  int64_t w = 0;
  int64_t oc = 0;  // output channels
  int64_t kh = 0;  // kernel height, width
  int64_t kw = 0;
  int64_t oh = 0;  // output height, width
  int64_t ow = 0;
  int64_t sh = 1;  // stride
  int64_t sw = 1;
  int64_t ph = 0;  // padding
  int64_t pw = 0;
  int64_t dh = 1;  // dilation
  int64_t dw = 1;
  int64_t groups = 1;

  C10_HOST_DEVICE int64_t c_per_group() const { return c / groups; }
  C10_HOST_DEVICE int64_t oc_per_group() const { return oc / groups; }
  C10_HOST_DEVICE int64_t taps() const { return kh * kw; }
  // Rows of the im2col matrix of one group: (channel, kernel row, kernel column).
  C10_HOST_DEVICE int64_t col_rows() const { return c_per_group() * kh * kw; }
  C10_HOST_DEVICE int64_t image_plane() const { return h * w; }
  C10_HOST_DEVICE int64_t out_plane() const { return oh * ow; }
  // Each output channel reads a single image channel: the direct kernels
  // beat a GEMM whose inner dimension would only be kh * kw.
  C10_HOST_DEVICE bool depthwise() const { return groups == c && c > 0; }
  // A 1x1, stride-1, unpadded conv is a plain GEMM over the image itself.
  C10_HOST_DEVICE bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

// For a kernel tap whose image coordinate is o * stride + offset (offset =
// k * dilation - padding), the output coordinates o in [lo, hi) that land in
// [0, in_len); hi <= lo when none does.
struct output_range {
  int64_t lo;
  int64_t hi;
};

C10_HOST_DEVICE inline output_range valid_outputs(int64_t out_len, int64_t in_len, int64_t stride,
                                               int64_t offset) {
  // o >= ceil(-offset / stride) and o <= floor((in_len - 1 - offset) / stride).
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = in_len - 1 - offset;
  int64_t hi = last < 0 ? 0 : last / stride + 1;
  hi = hi < out_len ? hi : out_len;
  return {lo, hi < lo ? lo : hi};
}

// The activations conv2d_bias_act fuses into the convolution's epilogue.
enum class conv_activation : int { none = 0, relu, silu, hardswish, gelu };

// act(v) for v in the compute type A (float or double); the functors are the
// ones behind opforge.relu, silu, hardswish and gelu.
template <conv_activation Act, typename A>
C10_HOST_DEVICE inline A activate(A v) {
  if constexpr (Act == conv_activation::relu) {
    return relu_fn<A>{}(v);
  } else if constexpr (Act == conv_activation::silu) {
    return silu_fn<A>{}(v);
  } else if constexpr (Act == conv_activation::hardswish) {
    return hardswish_fn<A>{}(v);
  } else if constexpr (Act == conv_activation::gelu) {
    return gelu_erf_fn<A>{}(v);
  } else {
    return v;
  }
}

C10_HOST_DEVICE inline float sqrt_(float x) {
  return ::sqrtf(x);
}
C10_HOST_DEVICE inline double sqrt_(double x) {
  return ::sqrt(x);
}

// fold_conv_bn for one output channel: the conv weight scales by `scale`, the
// folded bias is `shift` (b = 0 without a conv bias). Same operation order as
// torch.nn.utils.fusion.fuse_conv_bn_weights.
template <typename A>
struct folded_bn {
  A scale;
  A shift;
  C10_HOST_DEVICE folded_bn(A b, A gamma, A beta, A mean, A var, A eps) {
    const A inv_std = A(1) / sqrt_(var + eps);
    scale = gamma * inv_std;
    shift = (b - mean) * inv_std * gamma + beta;
  }
};

// Calls f(std::integral_constant<conv_activation, act>{}) so that a kernel is
// compiled once per activation, with the activation known inside its loops.
template <typename F>
void with_conv_activation(conv_activation act, F&& f) {
  using ca = conv_activation;
  switch (act) {
    case ca::relu:
      f(std::integral_constant<ca, ca::relu>{});
      return;
    case ca::silu:
      f(std::integral_constant<ca, ca::silu>{});
      return;
    case ca::hardswish:
      f(std::integral_constant<ca, ca::hardswish>{});
      return;
    case ca::gelu:
      f(std::integral_constant<ca, ca::gelu>{});
      return;
    case ca::none:
      break;
  }
  f(std::integral_constant<ca, ca::none>{});
}

} // namespace opforge::math
