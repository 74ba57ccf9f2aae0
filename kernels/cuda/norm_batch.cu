// CUDA kernels for batch_norm_forward and batch_norm_backward: one block per
// channel reduces it over the batch and spatial positions, then writes the
// channel's outputs (or input gradient) in a second pass over the same data.
#include "norm_batch.cuh"
#include "norm_common.cuh"

#include <opforge/math/norm.h>

namespace opforge::cuda {
namespace {

template <typename T>
__global__ void forward_kernel(batch_norm_args<T> a, const T* bias, T* running_mean, T* running_var, bool training,
                               double momentum, double eps, T* y, T* save_mean, T* save_invstd) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t stride = a.channels * a.hw;
  const int64_t count = a.n * a.hw;
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    const T* x = a.x + c * a.hw;
    A mean;
    A invstd;
    if (training) {
      const auto st = block_group_stats(x, a.n, a.hw, stride, shared);
      mean = st.mean;
      invstd = math::norm_rstd(st.var, eps);
      if (threadIdx.x == 0) {
        const auto mom = static_cast<A>(momentum);
        if (running_mean) {
          running_mean[c] = math::cast_to<T>((A(1) - mom) * math::cast_to<A>(running_mean[c]) + mom * mean);
        }
        if (running_var) {
          const A unbiased = st.var * static_cast<A>(count) / static_cast<A>(count - 1);
          running_var[c] = math::cast_to<T>((A(1) - mom) * math::cast_to<A>(running_var[c]) + mom * unbiased);
        }
      }
    } else {
      mean = math::cast_to<A>(running_mean[c]);
      invstd = math::norm_rstd(math::cast_to<A>(running_var[c]), eps);
    }
    if (threadIdx.x == 0) {
      save_mean[c] = math::cast_to<T>(mean);
      save_invstd[c] = math::cast_to<T>(invstd);
    }
    const A scale = a.weight ? invstd * math::cast_to<A>(a.weight[c]) : invstd;
    const A shift = bias ? math::cast_to<A>(bias[c]) : A(0);
    T* yc = y + c * a.hw;
    group_for_each(a.n, a.hw, stride,
                   [&](int64_t, int64_t o) { yc[o] = math::cast_to<T>((math::cast_to<A>(x[o]) - mean) * scale + shift); });
  }
}

template <typename T>
__global__ void backward_kernel(batch_norm_args<T> a, const T* grad, const T* save_mean, const T* save_invstd,
                                const T* grad_mean, const T* grad_invstd, bool training, T* dx, T* dw, T* db) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t stride = a.channels * a.hw;
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    const T* x = a.x + c * a.hw;
    const T* g = grad + c * a.hw;
    const A m = math::cast_to<A>(save_mean[c]);
    const A r = math::cast_to<A>(save_invstd[c]);
    const A w = a.weight ? math::cast_to<A>(a.weight[c]) : A(1);
    A sg = 0;
    A sgx = 0;
    if ((dx && training) || dw || db) {
      group_for_each(a.n, a.hw, stride, [&](int64_t, int64_t o) {
        const A gi = math::cast_to<A>(g[o]);
        sg += gi;
        sgx += gi * (math::cast_to<A>(x[o]) - m);
      });
      sg = block_reduce(sg, sum_op{}, A(0), shared);
      sgx = block_reduce(sgx, sum_op{}, A(0), shared);
    }
    if (threadIdx.x == 0) {
      if (dw) {
        dw[c] = math::cast_to<T>(sgx * r);
      }
      if (db) {
        db[c] = math::cast_to<T>(sg);
      }
    }
    if (!dx) {
      continue;
    }
    T* d = dx + c * a.hw;
    if (!training) {
      group_for_each(a.n, a.hw, stride, [&](int64_t, int64_t o) { d[o] = math::cast_to<T>(math::cast_to<A>(g[o]) * w * r); });
      continue;
    }
    const A gm = grad_mean ? math::cast_to<A>(grad_mean[c]) : A(0);
    const A gr = grad_invstd ? math::cast_to<A>(grad_invstd[c]) : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(w * sg, w * sgx * r, m, r, static_cast<A>(a.n * a.hw), gm, gr);
    group_for_each(a.n, a.hw, stride, [&](int64_t, int64_t o) {
      d[o] = math::cast_to<T>(k(math::cast_to<A>(g[o]) * w, math::cast_to<A>(x[o])));
    });
  }
}

} // namespace

template <typename T>
cudaError_t launch_batch_norm_forward(const batch_norm_args<T>& a, const T* bias, T* running_mean, T* running_var,
                                      bool training, double momentum, double eps, T* y, T* save_mean,
                                      T* save_invstd, cudaStream_t stream) {
  if (a.channels == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(a.channels), norm_threads(a.n * a.hw), 0, stream, forward_kernel)(
      a, bias, running_mean, running_var, training, momentum, eps, y, save_mean, save_invstd);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_batch_norm_backward(const batch_norm_args<T>& a, const T* grad, const T* save_mean,
                                       const T* save_invstd, const T* grad_mean, const T* grad_invstd,
                                       bool training, T* dx, T* dw, T* db, cudaStream_t stream) {
  if (a.channels == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(a.channels), norm_threads(a.n * a.hw), 0, stream, backward_kernel)(
      a, grad, save_mean, save_invstd, grad_mean, grad_invstd, training, dx, dw, db);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                                                               \
  template cudaError_t launch_batch_norm_forward<T>(const batch_norm_args<T>&, const T*, T*, T*, bool,     \
                                                    double, double, T*, T*, T*, cudaStream_t);               \
  template cudaError_t launch_batch_norm_backward<T>(const batch_norm_args<T>&, const T*, const T*, const T*, \
                                                     const T*, const T*, bool, T*, T*, T*, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
