// CUDA kernels for cross_entropy and nll_loss with class-index targets and
// their backward ops, structured ops (Note [Structured ops]) over the plan's
// [batch, classes, inner] view. With the classes contiguous (inner == 1) a
// warp takes a row: coalesced reads, warp-shuffle reductions, no shared
// memory. Otherwise a thread takes a position and loops over the classes
// (adjacent threads read adjacent positions, so loads coalesce). The target of
// a row is the same for every lane, so the ignored / out-of-range branch is
// warp-uniform and every shuffle has all 32 lanes. Bad targets go to the index
// report (Note [Plan services]).
#include "common.cuh"

#include <opforge/classification_loss/plan.h>
#include <opforge/classification_loss/math.h>
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <math.h>

namespace opforge {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

template <typename T>
__device__ acc_t<T> class_weight(const T* weight, int64_t c) {
  return weight != nullptr ? math::cast_to<acc_t<T>>(weight[c]) : acc_t<T>(1);
}

// Whether a target counts: not ignore_index and in range. `report` lets one
// lane of a warp report a bad one.
__device__ bool counts(int64_t t, const class_loss_plan& plan, bool report) {
  if (t == plan.ignore_index) {
    return false;
  }
  if (t < 0 || t >= plan.classes) {
    if (report) {
      cuda::record_bad_index(plan.bad_index, t);
    }
    return false;
  }
  return true;
}

// One position's statistics: the max m, log(sum exp(x - m)) and, smoothed,
// sum_c w_c (m - x_c) and sum_c w_c, over `classes` values `stride` apart
// starting at x, this lane's share of them (`first`, every `step`-th).
template <typename T>
struct position_stats {
  acc_t<T> m;
  acc_t<T> sum;  // of exp(x - m); the caller takes the log after combining lanes
  acc_t<T> weighted_m_minus_x;
  acc_t<T> w_total;
};

template <typename T>
__device__ acc_t<T> lane_max(const T* x, int64_t classes, int64_t stride, int64_t first, int64_t step) {
  acc_t<T> m = -INFINITY;
  for (int64_t c = first; c < classes; c += step) {
    m = cuda::max_op{}(m, math::cast_to<acc_t<T>>(x[c * stride]));
  }
  return m;
}

template <typename T>
__device__ position_stats<T> lane_sums(const T* x, const T* weight, int64_t classes, int64_t stride,
                                       int64_t first, int64_t step, acc_t<T> m, bool smoothed) {
  using A = acc_t<T>;
  position_stats<T> st{m, A(0), A(0), A(0)};
  for (int64_t c = first; c < classes; c += step) {
    const A v = math::cast_to<A>(x[c * stride]);
    st.sum += math::exp_(v - m);
    if (smoothed) {
      const A wc = class_weight(weight, c);
      st.weighted_m_minus_x += wc * (m - v);
      st.w_total += wc;
    }
  }
  return st;
}

// The statistics of a contiguous row, reduced over the warp.
template <typename T>
__device__ position_stats<T> warp_row_stats(const T* x, const T* weight, int64_t classes, bool smoothed) {
  const int lane = threadIdx.x & 31;
  acc_t<T> m = lane_max(x, classes, 1, lane, 32);
  m = __shfl_sync(0xffffffffu, cuda::warp_reduce(m, cuda::max_op{}), 0);
  position_stats<T> st = lane_sums(x, weight, classes, 1, lane, 32, m, smoothed);
  st.sum = __shfl_sync(0xffffffffu, cuda::warp_reduce(st.sum, cuda::sum_op{}), 0);
  if (smoothed) {
    st.weighted_m_minus_x = __shfl_sync(0xffffffffu, cuda::warp_reduce(st.weighted_m_minus_x, cuda::sum_op{}), 0);
    st.w_total = __shfl_sync(0xffffffffu, cuda::warp_reduce(st.w_total, cuda::sum_op{}), 0);
  }
  return st;
}

template <typename T>
__device__ position_stats<T> column_stats(const T* x, const T* weight, int64_t classes, int64_t inner,
                                          bool smoothed) {
  return lane_sums(x, weight, classes, inner, 0, 1, lane_max(x, classes, inner, 0, 1), smoothed);
}

template <typename T>
__device__ math::label_smoothing<acc_t<T>> smoothing_for(const class_loss_plan& plan, const position_stats<T>& st) {
  auto s = math::label_smoothing<acc_t<T>>::make(plan.label_smoothing, plan.classes, acc_t<T>(0));
  s.w_total = st.w_total;
  return s;
}

template <typename T>
__device__ void write_loss(T* loss, T* target_weight, int64_t p, const T* x_t, int64_t t, const T* weight,
                           const class_loss_plan& plan, const position_stats<T>& st) {
  using A = acc_t<T>;
  const A w_t = class_weight(weight, t);
  loss[p] = math::cast_to<T>(
      smoothing_for(plan, st).loss(st.m - math::cast_to<A>(*x_t), math::log_(st.sum), w_t, st.weighted_m_minus_x));
  target_weight[p] = math::cast_to<T>(w_t);
}

template <typename T>
__device__ T grad_at(const class_loss_plan& plan, const position_stats<T>& st, acc_t<T> lse, acc_t<T> g,
                     acc_t<T> w_t, const T* weight, int64_t c, int64_t t, T x_c) {
  using A = acc_t<T>;
  const auto s = smoothing_for(plan, st);
  A v = g * (s.softmax_scale(w_t) * math::exp_(math::cast_to<A>(x_c) - lse) - s.uniform * class_weight(weight, c));
  if (c == t) {
    v -= g * s.target_scale(w_t);
  }
  return math::cast_to<T>(v);
}

bool smoothed(const class_loss_plan& plan) { return plan.label_smoothing != 0.0 && plan.classes > 0; }

template <typename T>
__global__ void cross_entropy_rows_kernel(T* loss, T* target_weight, const T* self, const int64_t* target,
                                          const T* weight, class_loss_plan plan, bool smoothed) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = cuda::grid_threads() / 32;
  for (int64_t row = cuda::global_thread() / 32; row < plan.batch; row += warps) {
    const int64_t t = target[row];
    if (!counts(t, plan, lane == 0)) {
      if (lane == 0) {
        loss[row] = T(0);
        target_weight[row] = T(0);
      }
      continue;
    }
    const T* x = self + row * plan.classes;
    const position_stats<T> st = warp_row_stats(x, weight, plan.classes, smoothed);
    if (lane == 0) {
      write_loss(loss, target_weight, row, x + t, t, weight, plan, st);
    }
  }
}

template <typename T>
__global__ void cross_entropy_columns_kernel(T* loss, T* target_weight, const T* self, const int64_t* target,
                                             const T* weight, class_loss_plan plan, bool smoothed) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t p = cuda::global_thread(); p < plan.positions; p += stride) {
    const int64_t t = target[p];
    if (!counts(t, plan, true)) {
      loss[p] = T(0);
      target_weight[p] = T(0);
      continue;
    }
    const T* x = self + math::class_base(p, plan.classes, plan.inner);
    const position_stats<T> st = column_stats(x, weight, plan.classes, plan.inner, smoothed);
    write_loss(loss, target_weight, p, x + t * plan.inner, t, weight, plan, st);
  }
}

template <typename T>
__global__ void cross_entropy_backward_rows_kernel(T* grad_self, const T* grad_output, const T* self,
                                                   const int64_t* target, const T* weight, class_loss_plan plan,
                                                   bool smoothed) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = cuda::grid_threads() / 32;
  for (int64_t row = cuda::global_thread() / 32; row < plan.batch; row += warps) {
    T* out = grad_self + row * plan.classes;
    const int64_t t = target[row];
    if (!counts(t, plan, lane == 0)) {
      for (int64_t c = lane; c < plan.classes; c += 32) {
        out[c] = T(0);
      }
      continue;
    }
    const T* x = self + row * plan.classes;
    const position_stats<T> st = warp_row_stats(x, weight, plan.classes, smoothed);
    const A lse = st.m + math::log_(st.sum);
    const A g = math::cast_to<A>(grad_output[row]);
    const A w_t = class_weight(weight, t);
    for (int64_t c = lane; c < plan.classes; c += 32) {
      out[c] = grad_at(plan, st, lse, g, w_t, weight, c, t, x[c]);
    }
  }
}

template <typename T>
__global__ void cross_entropy_backward_columns_kernel(T* grad_self, const T* grad_output, const T* self,
                                                      const int64_t* target, const T* weight, class_loss_plan plan,
                                                      bool smoothed) {
  using A = acc_t<T>;
  const int64_t stride = cuda::grid_threads();
  for (int64_t p = cuda::global_thread(); p < plan.positions; p += stride) {
    const int64_t base = math::class_base(p, plan.classes, plan.inner);
    T* out = grad_self + base;
    const int64_t t = target[p];
    if (!counts(t, plan, true)) {
      for (int64_t c = 0; c < plan.classes; ++c) {
        out[c * plan.inner] = T(0);
      }
      continue;
    }
    const T* x = self + base;
    const position_stats<T> st = column_stats(x, weight, plan.classes, plan.inner, smoothed);
    const A lse = st.m + math::log_(st.sum);
    const A g = math::cast_to<A>(grad_output[p]);
    const A w_t = class_weight(weight, t);
    for (int64_t c = 0; c < plan.classes; ++c) {
      out[c * plan.inner] = grad_at(plan, st, lse, g, w_t, weight, c, t, x[c * plan.inner]);
    }
  }
}

template <typename T>
__global__ void nll_loss_kernel(T* loss, T* target_weight, const T* self, const int64_t* target, const T* weight,
                                class_loss_plan plan) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t p = cuda::global_thread(); p < plan.positions; p += stride) {
    const int64_t t = target[p];
    if (!counts(t, plan, true)) {
      loss[p] = T(0);
      target_weight[p] = T(0);
      continue;
    }
    const acc_t<T> w_t = class_weight(weight, t);
    loss[p] = math::cast_to<T>(-w_t * math::cast_to<acc_t<T>>(self[math::class_base(p, plan.classes, plan.inner) + t * plan.inner]));
    target_weight[p] = math::cast_to<T>(w_t);
  }
}

// One thread per element of the gradient, (n, c, s) of [batch, cols, inner]
// with cols = max(classes, 1), so that with no classes the targets are still checked.
template <typename T>
__global__ void nll_loss_backward_kernel(T* grad_self, const T* grad_output, const int64_t* target, const T* weight,
                                         class_loss_plan plan, int64_t cols) {
  const int64_t total = plan.positions * cols;
  const int64_t stride = cuda::grid_threads();
  for (int64_t idx = cuda::global_thread(); idx < total; idx += stride) {
    const int64_t n = idx / (cols * plan.inner);
    const int64_t rest = idx - n * cols * plan.inner;
    const int64_t c = rest / plan.inner;
    const int64_t p = n * plan.inner + (rest - c * plan.inner);
    const int64_t t = target[p];
    const bool live = counts(t, plan, c == 0);
    if (c < plan.classes) {
      grad_self[idx] = live && c == t ? math::cast_to<T>(-class_weight(weight, t) * math::cast_to<acc_t<T>>(grad_output[p]))
                                      : T(0);
    }
  }
}

}  // namespace

template <typename scalar_t>
cudaError_t cross_entropy_forward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* self,
                                       const int64_t* target, const scalar_t* weight, const class_loss_plan& plan,
                                       cudaStream_t stream) {
  const int64_t positions = plan.positions;
  if (positions == 0) {
    return cudaSuccess;
  }
  if (plan.inner == 1) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(positions * 32), cuda::k_threads, 0, stream,
                   cross_entropy_rows_kernel<scalar_t>)(result0, result1, self, target, weight, plan, smoothed(plan));
  } else {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(positions), cuda::k_threads, 0, stream,
                   cross_entropy_columns_kernel<scalar_t>)(result0, result1, self, target, weight, plan,
                                                           smoothed(plan));
  }
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t cross_entropy_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* self,
                                        const int64_t* target, const scalar_t* weight, const class_loss_plan& plan,
                                        cudaStream_t stream) {
  const int64_t positions = plan.positions;
  if (positions == 0) {
    return cudaSuccess;
  }
  if (plan.inner == 1) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(positions * 32), cuda::k_threads, 0, stream,
                   cross_entropy_backward_rows_kernel<scalar_t>)(result, grad_output, self, target, weight, plan,
                                                                 smoothed(plan));
  } else {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(positions), cuda::k_threads, 0, stream,
                   cross_entropy_backward_columns_kernel<scalar_t>)(result, grad_output, self, target, weight, plan,
                                                                    smoothed(plan));
  }
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t nll_loss_forward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* self, const int64_t* target,
                                  const scalar_t* weight, const class_loss_plan& plan, cudaStream_t stream) {
  const int64_t positions = plan.positions;
  if (positions == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(positions), cuda::k_threads, 0, stream, nll_loss_kernel<scalar_t>)(
      result0, result1, self, target, weight, plan);
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t nll_loss_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* self,
                                   const int64_t* target, const scalar_t* weight, const class_loss_plan& plan,
                                   cudaStream_t stream) {
  (void)self;  // the gradient does not depend on the log-probabilities
  const int64_t cols = plan.classes > 0 ? plan.classes : 1;
  const int64_t total = plan.positions * cols;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, nll_loss_backward_kernel<scalar_t>)(
      result, grad_output, target, weight, plan, cols);
  return cudaGetLastError();
}

}  // namespace opforge
