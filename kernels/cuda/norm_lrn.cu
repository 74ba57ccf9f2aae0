// CUDA kernels for local_response_norm and its backward: one thread per element,
// summing over its channel window (adjacent threads read adjacent positions, so
// the loads coalesce). The backward first stores t = g x d^-beta / d per
// element, then sums t over the transposed window.
#include "norm_common.cuh"

#include <opforge/norm/plan.h>

#include <opforge/norm/math.h>

namespace opforge::cuda {
namespace {

// Element e = (n, c, s): sum of x^2 over the window of channel c.
template <typename T, typename A = norm_acc_t<T>>
__device__ A window_sum_sq(const T* x, const lrn_plan& a, int64_t e) {
  const int64_t plane = a.channels * a.inner;
  const int64_t n = e / plane;
  const int64_t c = (e - n * plane) / a.inner;
  const T* base = x + e - c * a.inner;
  const auto win = math::lrn_window::of(c, a.size, a.channels);
  A acc = 0;
  for (int64_t c2 = win.lo; c2 < win.hi; ++c2) {
    const A v = math::cast_to<A>(base[c2 * a.inner]);
    acc += v * v;
  }
  return acc;
}

template <typename T>
__global__ void forward_kernel(const T* x, T* y, lrn_plan a, int64_t total) {
  using A = norm_acc_t<T>;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const A d = math::lrn_denominator(window_sum_sq(x, a, e), a.alpha, a.k, a.size);
    y[e] = math::cast_to<T>(math::cast_to<A>(x[e]) * math::lrn_pow_neg<false>(d, a.beta));
  }
}

template <typename T>
__global__ void backward_t_kernel(const T* g, const T* x, norm_acc_t<T>* t, lrn_plan a, int64_t total) {
  using A = norm_acc_t<T>;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const A d = math::lrn_denominator(window_sum_sq(x, a, e), a.alpha, a.k, a.size);
    t[e] = math::cast_to<A>(g[e]) * math::cast_to<A>(x[e]) * math::lrn_pow_neg<false>(d, a.beta) / d;
  }
}

template <typename T>
__global__ void backward_dx_kernel(const T* g, const T* x, const norm_acc_t<T>* t, T* dx, lrn_plan a,
                                   int64_t total) {
  using A = norm_acc_t<T>;
  const A coef = static_cast<A>(2.0 * a.alpha * a.beta / static_cast<double>(a.size));
  const int64_t plane = a.channels * a.inner;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t n = e / plane;
    const int64_t c = (e - n * plane) / a.inner;
    const auto win = math::lrn_window::containing(c, a.size, a.channels);
    const A* base = t + e - c * a.inner;
    A acc = 0;
    for (int64_t c2 = win.lo; c2 < win.hi; ++c2) {
      acc += base[c2 * a.inner];
    }
    const A d = math::lrn_denominator(window_sum_sq(x, a, e), a.alpha, a.k, a.size);
    dx[e] = math::cast_to<T>(math::cast_to<A>(g[e]) * math::lrn_pow_neg<false>(d, a.beta) -
                             coef * math::cast_to<A>(x[e]) * acc);
  }
}

} // namespace

} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t local_response_norm_cuda(T* y, const T* x, const lrn_plan& a, cudaStream_t stream) {
  const int64_t total = a.n * a.channels * a.inner;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, cuda::forward_kernel)(x, y, a, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t local_response_norm_backward_cuda(T* dx, const T* grad, const T* x, const lrn_plan& a,
                                              cudaStream_t stream) {
  using cuda::backward_dx_kernel;
  using cuda::backward_t_kernel;
  auto* t = static_cast<cuda::norm_acc_t<T>*>(a.workspace);
  const int64_t total = a.n * a.channels * a.inner;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, backward_t_kernel)(grad, x, t, a, total);
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, backward_dx_kernel)(grad, x, t, dx, a, total);
  return cudaGetLastError();
}

} // namespace opforge
