// CUDA kernels for layer_norm_forward and layer_norm_backward: one block per row
// for the statistics, the output and the input gradient; the weight and bias
// gradients are column sums over rows, split into row chunks and then added up.
// Structured ops (Note [Structured ops]; the plan in opforge/norm/plan.h).
#include "norm_common.cuh"

#include <opforge/norm/math.h>
#include <opforge/norm/plan.h>


namespace opforge::cuda {
namespace {

// The input as [rows, n] contiguous; weight may be null.
template <typename T>
struct layer_norm_args {
  const T* x;
  const T* weight;
  int64_t rows;
  int64_t n;
};

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) forward_kernel(layer_norm_args<T> a, const T* bias, T* y, math::opmath_t<T>* mean, math::opmath_t<T>* rstd, double eps) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* x = a.x + row * a.n;
    const auto st = block_group_stats(x, 1, a.n, a.n, shared);
    const A rs = math::norm_rstd(st.var, eps);
    if (threadIdx.x == 0) {
      mean[row] = math::cast_to<A>(st.mean);
      rstd[row] = rs;
    }
    T* yr = y + row * a.n;
    for (int64_t i = threadIdx.x; i < a.n; i += blockDim.x) {
      A v = (math::cast_to<A>(x[i]) - st.mean) * rs;
      if (a.weight) {
        v *= math::cast_to<A>(a.weight[i]);
      }
      if (bias) {
        v += math::cast_to<A>(bias[i]);
      }
      yr[i] = math::cast_to<T>(v);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) backward_input_kernel(layer_norm_args<T> a, const T* grad, const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd,
                                      const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd, T* dx) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* x = a.x + row * a.n;
    const T* g = grad + row * a.n;
    const A m = math::cast_to<A>(mean[row]);
    const A rs = math::cast_to<A>(rstd[row]);
    const auto ga = [&](int64_t i) {
      const A gi = math::cast_to<A>(g[i]);
      return a.weight ? gi * math::cast_to<A>(a.weight[i]) : gi;
    };
    A sa = 0;
    A sax = 0;
    for (int64_t i = threadIdx.x; i < a.n; i += blockDim.x) {
      const A ai = ga(i);
      sa += ai;
      sax += ai * (math::cast_to<A>(x[i]) - m) * rs;
    }
    sa = block_reduce(sa, sum_op{}, A(0), shared);
    sax = block_reduce(sax, sum_op{}, A(0), shared);
    const A gm = grad_mean ? math::cast_to<A>(grad_mean[row]) : A(0);
    const A gr = grad_rstd ? math::cast_to<A>(grad_rstd[row]) : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(sa, sax, m, rs, static_cast<A>(a.n), gm, gr);
    T* d = dx + row * a.n;
    for (int64_t i = threadIdx.x; i < a.n; i += blockDim.x) {
      d[i] = math::cast_to<T>(k(ga(i), math::cast_to<A>(x[i])));
    }
  }
}

// Weight/bias gradient, stage 1: block (32, k_wy) sums 32 columns over one row
// chunk; threads along y take every k_wy-th row, then combine in shared memory.
constexpr int k_wy = 16;
static_assert(32 * k_wy <= k_max_block_reduce_threads, "weight_partial_kernel's block within its launch bounds");

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) weight_partial_kernel(layer_norm_args<T> a, const T* grad, const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd,
                                      int64_t chunks, norm_acc_t<T>* partial) {
  using A = norm_acc_t<T>;
  __shared__ A sw[k_wy][33];
  __shared__ A sb[k_wy][33];
  const int64_t chunk = blockIdx.y;
  const int64_t begin = a.rows * chunk / chunks;
  const int64_t end = a.rows * (chunk + 1) / chunks;
  // Grid-stride over column tiles: gridDim.x is capped, n is not.
  for (int64_t col0 = static_cast<int64_t>(blockIdx.x) * 32; col0 < a.n; col0 += static_cast<int64_t>(gridDim.x) * 32) {
    const int64_t col = col0 + threadIdx.x;
    A w = 0;
    A b = 0;
    if (col < a.n) {
      for (int64_t r = begin + threadIdx.y; r < end; r += k_wy) {
        const A gi = math::cast_to<A>(grad[r * a.n + col]);
        const A xh =
            (math::cast_to<A>(a.x[r * a.n + col]) - math::cast_to<A>(mean[r])) * math::cast_to<A>(rstd[r]);
        w += gi * xh;
        b += gi;
      }
    }
    sw[threadIdx.y][threadIdx.x] = w;
    sb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y == 0 && col < a.n) {
      for (int y = 1; y < k_wy; ++y) {
        w += sw[y][threadIdx.x];
        b += sb[y][threadIdx.x];
      }
      partial[chunk * 2 * a.n + col] = w;
      partial[chunk * 2 * a.n + a.n + col] = b;
    }
    __syncthreads(); // the tiles are reused by the next column tile
  }
}

// Stage 2: one thread per column adds the chunks' partial sums.
template <typename T>
__global__ void weight_final_kernel(const norm_acc_t<T>* partial, int64_t chunks, int64_t n, T* dw, T* db) {
  using A = norm_acc_t<T>;
  for (int64_t col = global_thread(); col < n; col += grid_threads()) {
    A w = 0;
    A b = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      w += partial[c * 2 * n + col];
      b += partial[c * 2 * n + n + col];
    }
    if (dw) {
      dw[col] = math::cast_to<T>(w);
    }
    if (db) {
      db[col] = math::cast_to<T>(b);
    }
  }
}

template <typename T>
cudaError_t layer_norm_forward(const layer_norm_args<T>& a, const T* bias, T* y, math::opmath_t<T>* mean, math::opmath_t<T>* rstd,
                                      double eps, cudaStream_t stream) {
  if (a.rows == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(a.rows), norm_threads(a.n), 0, stream, forward_kernel)(a, bias, y, mean, rstd, eps);
  return cudaGetLastError();
}

template <typename T>
cudaError_t layer_norm_backward_input(const layer_norm_args<T>& a, const T* grad, const math::opmath_t<T>* mean,
                                             const math::opmath_t<T>* rstd, const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd, T* dx,
                                             cudaStream_t stream) {
  if (a.rows == 0 || a.n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(a.rows), norm_threads(a.n), 0, stream, backward_input_kernel)(a, grad, mean, rstd, grad_mean,
                                                                               grad_rstd, dx);
  return cudaGetLastError();
}

template <typename T>
cudaError_t layer_norm_backward_weight(const layer_norm_args<T>& a, const T* grad, const math::opmath_t<T>* mean,
                                              const math::opmath_t<T>* rstd, T* dw, T* db, math::opmath_t<T>* partial,
                                              cudaStream_t stream) {
  if (a.n == 0) {
    return cudaSuccess;
  }
  const int64_t chunks = layer_norm_weight_chunks(a.rows);
  const int64_t tiles = ceil_div(a.n, 32);
  const dim3 grid(static_cast<unsigned>(tiles < k_max_blocks ? tiles : k_max_blocks), static_cast<unsigned>(chunks));
  OPFORGE_LAUNCH(grid, dim3(32, k_wy), 0, stream, weight_partial_kernel)(a, grad, mean, rstd, chunks, partial);
  OPFORGE_LAUNCH(elementwise_blocks(a.n), k_threads, 0, stream, weight_final_kernel)(partial, chunks, a.n, dw, db);
  return cudaGetLastError();
}

} // namespace
} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t layer_norm_forward_cuda(T* out, math::opmath_t<T>* mean, math::opmath_t<T>* rstd, const T* input, const T* weight,
                                    const T* bias, const layer_norm_plan& plan, cudaStream_t stream) {
  using namespace cuda;
  if (plan.n == 0) {
    return launch_empty_stats(mean, rstd, plan.rows, stream);
  }
  return layer_norm_forward<T>({input, weight, plan.rows, plan.n}, bias, out, mean, rstd, plan.eps,
                               stream);
}

template <typename T>
cudaError_t layer_norm_backward_cuda(T* dx, T* dw, T* db, const T* grad_out, const T* input,
                                     const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd, const T* weight,
                                     const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd,
                                     const layer_norm_plan& plan, cudaStream_t stream) {
  using namespace cuda;
  const layer_norm_args<T> a{input, weight, plan.rows, plan.n};
  if (dx != nullptr) {
    const cudaError_t err =
        layer_norm_backward_input(a, grad_out, mean, rstd, grad_mean, grad_rstd, dx, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  if (dw == nullptr && db == nullptr) {
    return cudaSuccess;
  }
  return layer_norm_backward_weight(a, grad_out, mean, rstd, dw, db,
                                    static_cast<math::opmath_t<T>*>(plan.workspace), stream);
}

} // namespace opforge
