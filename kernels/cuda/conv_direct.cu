// Direct convolution kernels (see conv.cuh): every output (the depthwise
// forward), image element (input gradient, any grouping) or weight (weight
// gradient, any grouping) is a sum computed by one thread or one block, with no
// GEMM and no atomics. Output channel o of group o / oc_per_group reads that
// group's c_per_group image channels (one for depthwise).
#include "common.cuh"
#include "conv.cuh"

namespace opforge::cuda {
namespace {

template <conv_activation Act, typename A>
__global__ void depthwise_forward_kernel(const conv2d_geometry g, const A* __restrict__ x,
                                         const A* __restrict__ w, const A* __restrict__ bias,
                                         A* __restrict__ y, int64_t total) {
  const int64_t mult = g.oc / g.c;
  const int64_t taps = g.kh * g.kw;
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    const int64_t ox = idx % g.ow;
    const int64_t oy = (idx / g.ow) % g.oh;
    const int64_t plane_idx = idx / (g.ow * g.oh); // img * oc + o
    const int64_t o = plane_idx % g.oc;
    const A* xp = x + (plane_idx / g.oc * g.c + o / mult) * g.h * g.w;
    const A* wo = w + o * taps;
    A acc = A(0);
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      if (iy < 0 || iy >= g.h) {
        continue;
      }
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ix = ox * g.sw - g.pw + j * g.dw;
        if (ix >= 0 && ix < g.w) {
          acc += wo[i * g.kw + j] * xp[iy * g.w + ix];
        }
      }
    }
    y[idx] = math::activate<Act>(acc + (bias != nullptr ? bias[o] : A(0)));
  }
}

// Gathers, for image element (ci, iy, ix), every output that reads it.
template <typename A>
__global__ void grad_input_kernel(const conv2d_geometry g, const A* __restrict__ gy,
                                  const A* __restrict__ w, const A* __restrict__ bias,
                                  A* __restrict__ gx, int64_t total) {
  const int64_t cpg = g.c_per_group();
  const int64_t ocpg = g.oc_per_group();
  const int64_t taps = g.kh * g.kw;
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    const int64_t ix = idx % g.w;
    const int64_t iy = (idx / g.w) % g.h;
    const int64_t plane_idx = idx / (g.w * g.h); // img * c + ci
    const int64_t ci = plane_idx % g.c;
    const int64_t img = plane_idx / g.c;
    const int64_t group = ci / cpg;
    A acc = bias != nullptr ? bias[ci] : A(0);
    for (int64_t m = 0; m < ocpg; ++m) {
      const int64_t o = group * ocpg + m;
      const A* gyp = gy + (img * g.oc + o) * g.oh * g.ow;
      const A* wo = w + (o * cpg + (ci - group * cpg)) * taps;
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ty = iy + g.ph - i * g.dh;
        if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) {
          continue;
        }
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t tx = ix + g.pw - j * g.dw;
          if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) {
            continue;
          }
          acc += wo[i * g.kw + j] * gyp[(ty / g.sh) * g.ow + tx / g.sw];
        }
      }
    }
    gx[idx] = acc;
  }
}

// One block per weight (output channel, image channel of its group, tap),
// reducing over the batch and the output plane.
template <typename A>
__global__ void __launch_bounds__(k_max_block_reduce_threads) grad_weight_kernel(const conv2d_geometry g, const A* __restrict__ gy,
                                             const A* __restrict__ x, A* __restrict__ gw) {
  __shared__ A shared[32];
  const int64_t cpg = g.c_per_group();
  const int64_t ocpg = g.oc_per_group();
  const int64_t taps = g.kh * g.kw;
  const int64_t plane = g.oh * g.ow;
  const int64_t count = g.n * plane;
  for (int64_t b = blockIdx.x; b < g.oc * cpg * taps; b += gridDim.x) {
    const int64_t o = b / (cpg * taps);
    const int64_t ci = (o / ocpg) * cpg + (b / taps) % cpg;
    const int64_t i = (b % taps) / g.kw;
    const int64_t j = b % g.kw;
    A s = A(0);
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const int64_t img = e / plane;
      const int64_t p = e - img * plane;
      const int64_t oy = p / g.ow;
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      const int64_t ix = (p - oy * g.ow) * g.sw - g.pw + j * g.dw;
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) {
        s += gy[(img * g.oc + o) * plane + p] * x[((img * g.c + ci) * g.h + iy) * g.w + ix];
      }
    }
    s = block_reduce(s, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      gw[b] = s;
    }
  }
}

} // namespace

template <typename A>
cudaError_t launch_depthwise_forward(const conv2d_geometry& g, const A* x, const A* w,
                                     const A* bias, A* y, conv_activation act,
                                     cudaStream_t stream) {
  const int64_t total = g.n * g.oc * g.oh * g.ow;
  if (total == 0) {
    return cudaSuccess;
  }
  math::with_conv_activation(act, [&](auto a) {
    OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, depthwise_forward_kernel<decltype(a)::value, A>)(g, x, w, bias, y, total);
  });
  return cudaGetLastError();
}

template <typename A>
cudaError_t launch_conv2d_grad_input(const conv2d_geometry& g, const A* gy, const A* w,
                                     const A* bias, A* gx, cudaStream_t stream) {
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, grad_input_kernel)(g, gy, w, bias,
                                                                                   gx, total);
  return cudaGetLastError();
}

template <typename A>
cudaError_t launch_conv2d_grad_weight(const conv2d_geometry& g, const A* gy, const A* x,
                                      A* gw, cudaStream_t stream) {
  const int64_t weights = g.oc * g.c_per_group() * g.kh * g.kw;
  if (weights == 0) {
    return cudaSuccess;
  }
  // Every weight gets a block even when the batch is empty, so gw is always
  // written (zero then).
  const auto blocks = static_cast<unsigned>(weights < k_max_blocks ? weights : k_max_blocks);
  OPFORGE_LAUNCH(blocks, row_threads(g.n * g.oh * g.ow, k_max_block_reduce_threads), 0, stream, grad_weight_kernel)(g, gy, x, gw);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(A)                                                                  \
  template cudaError_t launch_depthwise_forward<A>(const conv2d_geometry&, const A*, const A*, \
                                                   const A*, A*, conv_activation,              \
                                                   cudaStream_t);                              \
  template cudaError_t launch_conv2d_grad_input<A>(const conv2d_geometry&, const A*,           \
                                                   const A*, const A*, A*, cudaStream_t);      \
  template cudaError_t launch_conv2d_grad_weight<A>(const conv2d_geometry&, const A*,          \
                                                    const A*, A*, cudaStream_t);
OPFORGE_INSTANTIATE(float)
OPFORGE_INSTANTIATE(double)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
