#pragma once
// The CPU building blocks of the conv family, over contiguous buffers in the
// compute type A (float or double; the entry points in conv.cpp upcast half
// and bfloat16 so every product accumulates in float and the result is
// rounded once). Geometry and naming: see opforge/conv/math.h. Each routine
// picks the direct depthwise kernels (conv_depthwise.cpp) or im2col + BLAS
// (conv_gemm.cpp) itself.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/conv/math.h>

#include <algorithm>
#include <cstdint>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

using math::conv2d_geometry;
using math::conv_activation;
using math::with_conv_activation;

// y = act(conv2d(x, w) + bias); bias may be null.
template <typename A>
void conv2d_forward(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                    conv_activation act);

// gx = d conv2d / d x applied to gy (the transposed convolution of gy) plus
// bias[c] on image channel c (bias may be null: conv_transpose2d's bias);
// gx is overwritten.
template <typename A>
void conv2d_grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* bias, A* gx);

// gw = d conv2d / d w applied to gy; gw is overwritten.
template <typename A>
void conv2d_grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw);

// sums[c] = sum of t over the batch and the plane of channel c, for t of
// shape (n, channels, plane): a bias gradient.
template <typename A>
void channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums);

// conv2d_forward for channels_last tensors: x (n, h, w, c), w (oc, kh, kw,
// c / groups), y (n, oh, ow, oc) in memory (conv_nhwc.cpp).
template <typename A>
void conv2d_forward_nhwc(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                         conv_activation act);

// The direct kernels for depthwise geometries (g.depthwise()).
template <typename A>
void depthwise_forward(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                       conv_activation act);
template <typename A>
void depthwise_grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* bias, A* gx);
template <typename A>
void depthwise_grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw);

// Items per parallel task for items of `macs` multiply-adds each: below about
// 2^17 multiply-adds per task, waking the other threads costs more than the
// work (small convolutions stay on the calling thread).
inline int64_t task_grain(int64_t macs) {
  constexpr int64_t k_task_macs = int64_t{1} << 17;
  return std::max<int64_t>(1, k_task_macs / std::max<int64_t>(macs, 1));
}

// y[i] = act(y[i] + bias) over `len` values of one output channel, run on
// each block of output right after it is computed, while it is in cache.
template <conv_activation Act, typename A>
inline void epilogue_row(A* y, int64_t len, A bias) {
  for (int64_t i = 0; i < len; ++i) {
    y[i] = math::activate<Act>(y[i] + bias);
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
