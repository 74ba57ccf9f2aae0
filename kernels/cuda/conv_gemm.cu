// conv2d forward as an implicit GEMM with a fused bias + activation epilogue,
// and the bias gradient's channel sums. See conv.cuh.
#include "common.cuh"
#include "conv.cuh"

namespace opforge::cuda {
namespace {

// Block tile of the implicit GEMM: 64 output channels x 64 output positions
// (over the whole batch), 16 reduction steps per shared-memory stage; 256
// threads as 16 x 16, each accumulating 4 x 4 outputs.
constexpr int k_tile_m = 64;
constexpr int k_tile_n = 64;
constexpr int k_tile_k = 16;
constexpr int k_gemm_threads = 256;
constexpr int k_micro = 4;
constexpr int k_max_grid_z = 65535;

template <conv_activation Act, typename A>
__global__ void __launch_bounds__(k_gemm_threads)
    conv2d_forward_kernel(const conv2d_geometry g, const A* __restrict__ x,
                          const A* __restrict__ w, const A* __restrict__ bias,
                          A* __restrict__ y) {
  // +1: the weight tile is written down columns; the padding spreads a
  // column over all banks.
  __shared__ A ws[k_tile_k][k_tile_m + 1];
  __shared__ A xs[k_tile_k][k_tile_n];
  const int64_t ocg = g.oc_per_group();
  const int64_t cg = g.c_per_group();
  const int64_t k_total = g.col_rows();
  const int taps = static_cast<int>(g.kh * g.kw);
  const int64_t plane = g.oh * g.ow;
  const int64_t positions = g.n * plane;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * k_tile_m;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * k_tile_n;
  const int tid = threadIdx.x;
  const int tx = tid % 16;
  const int ty = tid / 16;

  // The im2col column this thread loads is the same at every k step
  // (k_gemm_threads is a multiple of k_tile_n): decompose it once.
  const int load_n = tid % k_tile_n;
  const int64_t q_load = q0 + load_n;
  const bool q_valid = q_load < positions;
  int64_t img = 0;
  int64_t oy = 0;
  int64_t ox = 0;
  if (q_valid) {
    img = q_load / plane;
    const int64_t p = q_load - img * plane;
    oy = p / g.ow;
    ox = p - oy * g.ow;
  }
  const int64_t iy0 = oy * g.sh - g.ph;
  const int64_t ix0 = ox * g.sw - g.pw;
  // Likewise the weight row (output channel) and k offset of this thread's loads.
  const int load_k = tid % k_tile_k;

  for (int64_t grp = blockIdx.z; grp < g.groups; grp += gridDim.z) {
    const A* wg = w + grp * ocg * k_total;
    const A* xg = x + (img * g.c + grp * cg) * g.h * g.w;
    A acc[k_micro][k_micro];
    for (int r = 0; r < k_micro; ++r) {
      for (int c = 0; c < k_micro; ++c) {
        acc[r][c] = A(0);
      }
    }
    for (int64_t k0 = 0; k0 < k_total; k0 += k_tile_k) {
      for (int e = tid; e < k_tile_k * k_tile_m; e += k_gemm_threads) {
        const int mm = e / k_tile_k;
        const int64_t m = m0 + mm;
        const int64_t k = k0 + load_k;
        ws[load_k][mm] = (m < ocg && k < k_total) ? wg[m * k_total + k] : A(0);
      }
      for (int e = tid; e < k_tile_k * k_tile_n; e += k_gemm_threads) {
        const int kk = e / k_tile_n;
        const int64_t k = k0 + kk;
        A v = A(0);
        if (q_valid && k < k_total) {
          const int64_t ci = k / taps;
          const int t = static_cast<int>(k - ci * taps);
          const int i = t / static_cast<int>(g.kw);
          const int j = t - i * static_cast<int>(g.kw);
          const int64_t iy = iy0 + i * g.dh;
          const int64_t ix = ix0 + j * g.dw;
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) {
            v = xg[(ci * g.h + iy) * g.w + ix];
          }
        }
        xs[kk][load_n] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < k_tile_k; ++kk) {
        A a[k_micro];
        A b[k_micro];
#pragma unroll
        for (int r = 0; r < k_micro; ++r) {
          a[r] = ws[kk][ty * k_micro + r];
          b[r] = xs[kk][tx + 16 * r];
        }
#pragma unroll
        for (int r = 0; r < k_micro; ++r) {
#pragma unroll
          for (int c = 0; c < k_micro; ++c) {
            acc[r][c] += a[r] * b[c];
          }
        }
      }
      __syncthreads();
    }
    // Epilogue on the accumulators: consecutive threads (tx) write
    // consecutive positions of one output channel.
    for (int r = 0; r < k_micro; ++r) {
      const int64_t m = m0 + ty * k_micro + r;
      if (m >= ocg) {
        continue;
      }
      const int64_t o = grp * ocg + m;
      const A bv = bias != nullptr ? bias[o] : A(0);
      for (int c = 0; c < k_micro; ++c) {
        const int64_t q = q0 + tx + 16 * c;
        if (q >= positions) {
          continue;
        }
        const int64_t out_img = q / plane;
        y[(out_img * g.oc + o) * plane + (q - out_img * plane)] =
            math::activate<Act>(acc[r][c] + bv);
      }
    }
  }
}

// One block per channel (grid-stride over channels).
template <typename A>
__global__ void __launch_bounds__(k_max_block_reduce_threads) channel_sums_kernel(int64_t n, int64_t channels, int64_t plane,
                                    const A* __restrict__ t, A* __restrict__ sums) {
  __shared__ A shared[32];
  const int64_t count = n * plane;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    A s = A(0);
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const int64_t img = e / plane;
      s += t[(img * channels + c) * plane + (e - img * plane)];
    }
    s = block_reduce(s, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      sums[c] = s;
    }
  }
}

} // namespace

template <typename A>
cudaError_t launch_conv2d_forward(const conv2d_geometry& g, const A* x, const A* w,
                                  const A* bias, A* y, conv_activation act, cudaStream_t stream) {
  const int64_t positions = g.n * g.oh * g.ow;
  if (positions == 0 || g.oc == 0) {
    return cudaSuccess;
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(positions, k_tile_n)),
                  static_cast<unsigned>(ceil_div(g.oc_per_group(), k_tile_m)),
                  static_cast<unsigned>(g.groups < k_max_grid_z ? g.groups : k_max_grid_z));
  math::with_conv_activation(act, [&](auto a) {
    OPFORGE_LAUNCH(grid, k_gemm_threads, 0, stream, conv2d_forward_kernel<decltype(a)::value, A>)(g, x, w, bias, y);
  });
  return cudaGetLastError();
}

template <typename A>
cudaError_t launch_channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums,
                                cudaStream_t stream) {
  if (channels == 0) {
    return cudaSuccess;
  }
  // Every channel gets a block even for an empty batch, so sums is always written.
  const auto blocks = static_cast<unsigned>(channels < k_max_blocks ? channels : k_max_blocks);
  OPFORGE_LAUNCH(blocks, row_threads(n * plane, k_max_block_reduce_threads), 0, stream, channel_sums_kernel)(
      n, channels, plane, t, sums);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(A)                                                                   \
  template cudaError_t launch_conv2d_forward<A>(const conv2d_geometry&, const A*, const A*,     \
                                                const A*, A*, conv_activation, cudaStream_t);   \
  template cudaError_t launch_channel_sums<A>(int64_t, int64_t, int64_t, const A*, A*,          \
                                              cudaStream_t);
OPFORGE_INSTANTIATE(float)
OPFORGE_INSTANTIATE(double)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
