// CUDA kernels for group_norm_forward and group_norm_backward: one block per
// (n, group) slab for the statistics, the output and the input gradient; one
// block per channel, across the batch, for the weight and bias gradients.
// Structured ops (Note [Structured ops]; the plan in opforge/norm/plan.h).
#include "norm_common.cuh"

#include <opforge/norm/math.h>
#include <opforge/norm/plan.h>

#include <algorithm>

namespace opforge::cuda {
namespace {

// The input as [N, C, HxW] contiguous; weight may be null.
template <typename T>
struct group_norm_args {
  const T* x;
  const T* weight;
  int64_t n;
  int64_t channels;
  int64_t hw;
  int64_t groups;
  norm_acc_t<T> inv_count = 0; // 1 / the elements of one group (the backward's coefficients)
};

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) forward_kernel(group_norm_args<T> a, const T* bias, T* y, math::opmath_t<T>* mean, math::opmath_t<T>* rstd, double eps) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t d = a.channels / a.groups;
  const int64_t slab = d * a.hw;
  for (int64_t t = blockIdx.x; t < a.n * a.groups; t += gridDim.x) {
    const int64_t c0 = (t % a.groups) * d;
    const T* x = a.x + t * slab;
    const auto st = block_group_stats(x, 1, slab, slab, shared);
    const A rs = math::norm_rstd(st.var, eps);
    if (threadIdx.x == 0) {
      mean[t] = math::cast_to<A>(st.mean);
      rstd[t] = rs;
    }
    T* ys = y + t * slab;
    group_for_each(d, a.hw, a.hw, [&](int64_t c, int64_t o) {
      A v = (math::cast_to<A>(x[o]) - st.mean) * rs;
      if (a.weight) {
        v *= math::cast_to<A>(a.weight[c0 + c]);
      }
      if (bias) {
        v += math::cast_to<A>(bias[c0 + c]);
      }
      ys[o] = math::cast_to<T>(v);
    });
  }
}

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) backward_input_kernel(group_norm_args<T> a, const T* grad, const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd,
                                      const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd, T* dx) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t d = a.channels / a.groups;
  const int64_t slab = d * a.hw;
  for (int64_t t = blockIdx.x; t < a.n * a.groups; t += gridDim.x) {
    const int64_t c0 = (t % a.groups) * d;
    const T* x = a.x + t * slab;
    const T* g = grad + t * slab;
    const A m = mean[t];
    const A rs = rstd[t];
    const auto ga = [&](int64_t c, int64_t o) {
      const A gi = math::cast_to<A>(g[o]);
      return a.weight ? gi * math::cast_to<A>(a.weight[c0 + c]) : gi;
    };
    A sa = 0;
    A sax = 0;
    group_for_each(d, a.hw, a.hw, [&](int64_t c, int64_t o) {
      const A ai = ga(c, o);
      sa += ai;
      sax += ai * (math::cast_to<A>(x[o]) - m) * rs;
    });
    sa = block_reduce(sa, sum_op{}, A(0), shared);
    sax = block_reduce(sax, sum_op{}, A(0), shared);
    const A gm = grad_mean ? grad_mean[t] : A(0);
    const A gr = grad_rstd ? grad_rstd[t] : A(0);
    const auto k = math::norm_backward_coeffs<A>::with_inverse_count(sa, sax, m, rs, a.inv_count, gm, gr);
    T* dxs = dx + t * slab;
    group_for_each(d, a.hw, a.hw,
                   [&](int64_t c, int64_t o) { dxs[o] = math::cast_to<T>(k(ga(c, o), math::cast_to<A>(x[o]))); });
  }
}

template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) backward_weight_kernel(group_norm_args<T> a, const T* grad, const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd, T* dw,
                                       T* db) {
  using A = norm_acc_t<T>;
  __shared__ A shared[32];
  const int64_t d = a.channels / a.groups;
  for (int64_t ch = blockIdx.x; ch < a.channels; ch += gridDim.x) {
    const int64_t base = ch * a.hw;
    const int64_t grp = ch / d;
    A sw = 0;
    A sb = 0;
    group_for_each(a.n, a.hw, a.channels * a.hw, [&](int64_t n, int64_t o) {
      const A gi = math::cast_to<A>(grad[base + o]);
      const int64_t s = n * a.groups + grp;
      sw += gi * (math::cast_to<A>(a.x[base + o]) - math::cast_to<A>(mean[s])) * math::cast_to<A>(rstd[s]);
      sb += gi;
    });
    sw = block_reduce(sw, sum_op{}, A(0), shared);
    sb = block_reduce(sb, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      if (dw) {
        dw[ch] = math::cast_to<T>(sw);
      }
      if (db) {
        db[ch] = math::cast_to<T>(sb);
      }
    }
  }
}

template <typename T>
cudaError_t group_norm_forward(const group_norm_args<T>& a, const T* bias, T* y, math::opmath_t<T>* mean, math::opmath_t<T>* rstd,
                                      double eps, cudaStream_t stream) {
  const int64_t groups = a.n * a.groups;
  if (groups == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(groups), norm_threads(a.channels / a.groups * a.hw), 0, stream, forward_kernel)(a, bias, y, mean,
                                                                                                  rstd, eps);
  return cudaGetLastError();
}

template <typename T>
cudaError_t group_norm_backward_input(const group_norm_args<T>& a, const T* grad, const math::opmath_t<T>* mean,
                                             const math::opmath_t<T>* rstd, const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd, T* dx,
                                             cudaStream_t stream) {
  const int64_t groups = a.n * a.groups;
  const int64_t slab = a.channels / a.groups * a.hw;
  if (groups == 0 || slab == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(groups), norm_threads(slab), 0, stream, backward_input_kernel)(a, grad, mean, rstd, grad_mean,
                                                                                grad_rstd, dx);
  return cudaGetLastError();
}

template <typename T>
cudaError_t group_norm_backward_weight(const group_norm_args<T>& a, const T* grad, const math::opmath_t<T>* mean,
                                              const math::opmath_t<T>* rstd, T* dw, T* db, cudaStream_t stream) {
  if (a.channels == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(norm_blocks(a.channels), norm_threads(a.n * a.hw), 0, stream, backward_weight_kernel)(a, grad, mean, rstd,
                                                                                          dw, db);
  return cudaGetLastError();
}

} // namespace
} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t group_norm_forward_cuda(T* out, math::opmath_t<T>* mean, math::opmath_t<T>* rstd, const T* input, const T* weight,
                                    const T* bias, const group_norm_plan& l, cudaStream_t stream) {
  using namespace cuda;
  if (l.group_channels() * l.hw == 0) {
    return launch_empty_stats(mean, rstd, l.n * l.groups, stream);
  }
  return group_norm_forward<T>({input, weight, l.n, l.channels, l.hw, l.groups}, bias, out, mean,
                               rstd, l.eps, stream);
}

template <typename T>
cudaError_t group_norm_backward_cuda(T* dx, T* dw, T* db, const T* grad_out, const T* input,
                                     const math::opmath_t<T>* mean, const math::opmath_t<T>* rstd, const T* weight,
                                     const math::opmath_t<T>* grad_mean, const math::opmath_t<T>* grad_rstd, const group_norm_plan& l,
                                     cudaStream_t stream) {
  using namespace cuda;
  using A = norm_acc_t<T>;
  const int64_t count = l.channels / std::max<int64_t>(1, l.groups) * l.hw;
  const group_norm_args<T> a{input, weight, l.n, l.channels, l.hw, l.groups, count > 0 ? A(1) / static_cast<A>(count) : A(0)};
  if (dx != nullptr) {
    const cudaError_t err =
        group_norm_backward_input(a, grad_out, mean, rstd, grad_mean, grad_rstd, dx, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  if (dw == nullptr && db == nullptr) {
    return cudaSuccess;
  }
  return group_norm_backward_weight(a, grad_out, mean, rstd, dw, db, stream);
}

} // namespace opforge
