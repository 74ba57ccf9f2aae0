// CUDA kernels for batch_norm_forward and batch_norm_backward as split
// reductions: blocks (channel, split) reduce a share of a channel each, one
// thread per channel merges the shares in order (deterministic), and an
// elementwise pass writes the output (or input gradient). A channel of a large
// batch is spread over up to 64 blocks instead of one. Structured ops (Note
// [Structured ops]; the plan in opforge/norm/plan.h).
#include "norm_common.cuh"

#include <opforge/norm/math.h>
#include <opforge/norm/plan.h>

namespace opforge::cuda {
namespace {

// The input as [n, channels, hw] contiguous; weight may be null.
template <typename T>
struct batch_norm_args {
  const T* x;
  const T* weight;
  int64_t n;
  int64_t channels;
  int64_t hw;
};

// Channel c's elements, k over [0, n * hw): image k / hw, position k % hw.
__device__ inline int64_t channel_offset(int64_t k, int64_t c, int64_t channels, int64_t hw) {
  const int64_t img = k / hw;
  return (img * channels + c) * hw + (k - img * hw);
}

// Per (channel, split): count, mean and sum of squared deviations of the
// split's share of the channel (two passes, the second from cache).
template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) stats_partial_kernel(batch_norm_args<T> a, int64_t chunk, norm_acc_t<T>* partial) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t count = a.n * a.hw;
  const int64_t begin = blockIdx.y * chunk;
  const int64_t end = begin + chunk < count ? begin + chunk : count;
  const A len = static_cast<A>(end > begin ? end - begin : 0);
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    A s = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      s += math::cast_to<A>(a.x[channel_offset(k, c, a.channels, a.hw)]);
    }
    const A sum = block_reduce(s, sum_op{}, A(0), shared);
    const A mean = len > A(0) ? sum / len : A(0);
    A q = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const A d = math::cast_to<A>(a.x[channel_offset(k, c, a.channels, a.hw)]) - mean;
      q += d * d;
    }
    q = block_reduce(q, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      A* p = partial + 3 * (c * gridDim.y + blockIdx.y);
      p[0] = len;
      p[1] = mean;
      p[2] = q;
    }
  }
}

// Per channel: the splits merged in order (Chan et al.), or the running
// statistics in eval mode; writes the saved statistics, the running ones, and
// (mean, invstd) in the compute type for the apply kernel.
template <typename T>
__global__ void stats_final_kernel(batch_norm_args<T> a, const norm_acc_t<T>* partial, int64_t splits,
                                   bool training, double momentum, double eps, T* running_mean, T* running_var,
                                   math::opmath_t<T>* save_mean, math::opmath_t<T>* save_invstd, norm_acc_t<T>* stats) {
  using A = norm_acc_t<T>;
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < a.channels; c += stride) {
    A mean;
    A invstd;
    if (training) {
      A n = 0;
      A m = 0;
      A m2 = 0;
      for (int64_t j = 0; j < splits; ++j) {
        const A* p = partial + 3 * (c * splits + j);
        if (p[0] == A(0)) {
          continue;
        }
        const A total = n + p[0];
        const A delta = p[1] - m;
        m += delta * p[0] / total;
        m2 += p[2] + delta * delta * n * p[0] / total;
        n = total;
      }
      const A var = m2 / n;
      mean = m;
      invstd = math::norm_rstd(var, eps);
      const auto mom = static_cast<A>(momentum);
      if (running_mean) {
        running_mean[c] = math::cast_to<T>((A(1) - mom) * math::cast_to<A>(running_mean[c]) + mom * mean);
      }
      if (running_var) {
        const A unbiased = m2 / (n - A(1));
        running_var[c] = math::cast_to<T>((A(1) - mom) * math::cast_to<A>(running_var[c]) + mom * unbiased);
      }
    } else {
      mean = math::cast_to<A>(running_mean[c]);
      invstd = math::norm_rstd(math::cast_to<A>(running_var[c]), eps);
    }
    save_mean[c] = mean;
    save_invstd[c] = invstd;
    stats[2 * c] = mean;
    stats[2 * c + 1] = invstd;
  }
}

// y = (x - mean) * invstd * weight + bias, elementwise over [n, channels, hw].
template <typename T>
__global__ void apply_kernel(batch_norm_args<T> a, const T* bias, const norm_acc_t<T>* stats, T* y) {
  using A = norm_acc_t<T>;
  const int64_t total = a.n * a.channels * a.hw;
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < total; i += stride) {
    const int64_t c = (i / a.hw) % a.channels;
    const A scale = a.weight ? stats[2 * c + 1] * math::cast_to<A>(a.weight[c]) : stats[2 * c + 1];
    const A shift = bias ? math::cast_to<A>(bias[c]) : A(0);
    y[i] = math::cast_to<T>((math::cast_to<A>(a.x[i]) - stats[2 * c]) * scale + shift);
  }
}

// Per (channel, split): sum of g and of g * (x - mean) over the split's share.
template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) grad_partial_kernel(batch_norm_args<T> a, const T* grad, const math::opmath_t<T>* save_mean, int64_t chunk,
                                    norm_acc_t<T>* partial) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t count = a.n * a.hw;
  const int64_t begin = blockIdx.y * chunk;
  const int64_t end = begin + chunk < count ? begin + chunk : count;
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    const A m = math::cast_to<A>(save_mean[c]);
    A sg = 0;
    A sgx = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const int64_t o = channel_offset(k, c, a.channels, a.hw);
      const A gi = math::cast_to<A>(grad[o]);
      sg += gi;
      sgx += gi * (math::cast_to<A>(a.x[o]) - m);
    }
    sg = block_reduce(sg, sum_op{}, A(0), shared);
    sgx = block_reduce(sgx, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      A* p = partial + 2 * (c * gridDim.y + blockIdx.y);
      p[0] = sg;
      p[1] = sgx;
    }
  }
}

// Per channel: the splits' sums in order; dw, db, and the sums for dx.
template <typename T>
__global__ void grad_final_kernel(batch_norm_args<T> a, const norm_acc_t<T>* partial, int64_t splits,
                                  const math::opmath_t<T>* save_invstd, T* dw, T* db, norm_acc_t<T>* sums) {
  using A = norm_acc_t<T>;
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < a.channels; c += stride) {
    A sg = 0;
    A sgx = 0;
    for (int64_t j = 0; j < splits; ++j) {
      sg += partial[2 * (c * splits + j)];
      sgx += partial[2 * (c * splits + j) + 1];
    }
    if (dw) {
      dw[c] = math::cast_to<T>(sgx * math::cast_to<A>(save_invstd[c]));
    }
    if (db) {
      db[c] = math::cast_to<T>(sg);
    }
    sums[2 * c] = sg;
    sums[2 * c + 1] = sgx;
  }
}

// dx elementwise: g * w * invstd in eval mode, else the batch statistics'
// coefficients (see Note [Norm backward coefficients]).
template <typename T>
__global__ void grad_input_kernel(batch_norm_args<T> a, const T* grad, const math::opmath_t<T>* save_mean, const math::opmath_t<T>* save_invstd,
                                  const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_invstd, bool training,
                                  const norm_acc_t<T>* sums, T* dx) {
  using A = norm_acc_t<T>;
  const int64_t total = a.n * a.channels * a.hw;
  const A count = static_cast<A>(a.n * a.hw);
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < total; i += stride) {
    const int64_t c = (i / a.hw) % a.channels;
    const A r = math::cast_to<A>(save_invstd[c]);
    const A w = a.weight ? math::cast_to<A>(a.weight[c]) : A(1);
    const A gi = math::cast_to<A>(grad[i]);
    if (!training) {
      dx[i] = math::cast_to<T>(gi * w * r);
      continue;
    }
    const A m = math::cast_to<A>(save_mean[c]);
    const A gm = grad_mean ? math::cast_to<A>(grad_mean[c]) : A(0);
    const A gr = grad_invstd ? math::cast_to<A>(grad_invstd[c]) : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(w * sums[2 * c], w * sums[2 * c + 1] * r, m, r, count, gm, gr);
    dx[i] = math::cast_to<T>(k(gi * w, math::cast_to<A>(a.x[i])));
  }
}

dim3 split_grid(int64_t channels, int64_t splits) {
  return {static_cast<unsigned>(channels < k_max_blocks ? channels : k_max_blocks), static_cast<unsigned>(splits)};
}

template <typename T>
cudaError_t batch_norm_forward(const batch_norm_args<T>& a, const T* bias, T* running_mean, T* running_var,
                                      bool training, double momentum, double eps, T* y, math::opmath_t<T>* save_mean,
                                      math::opmath_t<T>* save_invstd, norm_acc_t<T>* workspace, cudaStream_t stream) {
  if (a.channels == 0) {
    return cudaSuccess;
  }
  const int64_t splits = batch_norm_splits(a.n * a.hw);
  const int64_t chunk = ceil_div(a.n * a.hw, splits);
  norm_acc_t<T>* stats = workspace + 3 * a.channels * splits;
  if (training) {
    OPFORGE_LAUNCH(split_grid(a.channels, splits), norm_threads(chunk), 0, stream, stats_partial_kernel)(
        a, chunk, workspace);
  }
  OPFORGE_LAUNCH(elementwise_blocks(a.channels), k_threads, 0, stream, stats_final_kernel)(
      a, workspace, splits, training, momentum, eps, running_mean, running_var, save_mean, save_invstd, stats);
  const int64_t total = a.n * a.channels * a.hw;
  if (total > 0) {
    OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, apply_kernel)(a, bias, stats, y);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t batch_norm_backward(const batch_norm_args<T>& a, const T* grad, const math::opmath_t<T>* save_mean,
                                       const math::opmath_t<T>* save_invstd, const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_invstd,
                                       bool training, T* dx, T* dw, T* db, norm_acc_t<T>* workspace,
                                       cudaStream_t stream) {
  if (a.channels == 0) {
    return cudaSuccess;
  }
  const int64_t splits = batch_norm_splits(a.n * a.hw);
  const int64_t chunk = ceil_div(a.n * a.hw, splits);
  norm_acc_t<T>* sums = workspace + 2 * a.channels * splits;
  if ((dx && training) || dw || db) {
    OPFORGE_LAUNCH(split_grid(a.channels, splits), norm_threads(chunk), 0, stream, grad_partial_kernel)(
        a, grad, save_mean, chunk, workspace);
    OPFORGE_LAUNCH(elementwise_blocks(a.channels), k_threads, 0, stream, grad_final_kernel)(
        a, workspace, splits, save_invstd, dw, db, sums);
  }
  const int64_t total = a.n * a.channels * a.hw;
  if (dx && total > 0) {
    OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, grad_input_kernel)(
        a, grad, save_mean, save_invstd, grad_mean, grad_invstd, training, sums, dx);
  }
  return cudaGetLastError();
}

} // namespace
} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t batch_norm_forward_cuda(T* out, math::opmath_t<T>* save_mean, math::opmath_t<T>* save_invstd, const T* input,
                                    const T* weight, const T* bias, T* running_mean,
                                    T* running_var, const batch_norm_plan& l,
                                    cudaStream_t stream) {
  using namespace cuda;
  if (l.training && l.n * l.hw == 0) {
    // An empty batch has no statistics; the running ones stay as they are (as in torch).
    return launch_empty_stats(save_mean, save_invstd, l.channels, stream);
  }
  return batch_norm_forward<T>({input, weight, l.n, l.channels, l.hw}, bias, running_mean,
                               running_var, l.training, l.momentum, l.eps, out, save_mean,
                               save_invstd, static_cast<norm_acc_t<T>*>(l.workspace), stream);
}

template <typename T>
cudaError_t batch_norm_backward_cuda(T* dx, T* dw, T* db, const T* grad_out, const T* input,
                                     const math::opmath_t<T>* save_mean, const math::opmath_t<T>* save_invstd, const T* weight,
                                     const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_invstd,
                                     const batch_norm_plan& l, cudaStream_t stream) {
  using namespace cuda;
  return batch_norm_backward<T>({input, weight, l.n, l.channels, l.hw}, grad_out, save_mean,
                                save_invstd, grad_mean, grad_invstd, l.training, dx, dw, db,
                                static_cast<norm_acc_t<T>*>(l.workspace), stream);
}

} // namespace opforge
