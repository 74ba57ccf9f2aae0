#pragma once
// Device helpers shared by the norm kernels (norm_*.cu): one block reduces one
// normalization group, a group being `blocks` runs of `len` contiguous elements
// `stride` apart (a row, a [C/G, HxW] slab, or one channel across the batch).
// Device code only; no torch headers.
#include "common.cuh"

#include <opforge/math/opmath.h>

#include <cstdint>
#include <math.h>

namespace opforge::cuda {

// float for float/half/bfloat16, double for double.
template <typename T>
using norm_acc_t = math::opmath_t<T>;

// Calls f(run, offset) for every element of the group (offset = run * stride +
// position in the run), spread over the block's threads, adjacent threads on
// adjacent elements. Short runs are flattened so that every thread has work.
template <typename F>
__device__ void group_for_each(int64_t blocks, int64_t len, int64_t stride, F f) {
  if (len >= blockDim.x || blocks == 1) {
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t s = threadIdx.x; s < len; s += blockDim.x) {
        f(b, b * stride + s);
      }
    }
  } else {
    const int64_t total = blocks * len;
    for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
      const int64_t b = i / len;
      f(b, b * stride + (i - b * len));
    }
  }
}

template <typename A>
struct group_stats {
  A mean;
  A var; // biased
};

// Mean and variance of the group at x, in two passes (the second reads the
// group again, from cache): var = E[(x - mean)^2] does not cancel like
// E[x^2] - mean^2. `shared` holds 32 values.
template <typename T, typename A = norm_acc_t<T>>
__device__ group_stats<A> block_group_stats(const T* x, int64_t blocks, int64_t len, int64_t stride, A* shared) {
  const A n = static_cast<A>(blocks * len);
  A s = 0;
  group_for_each(blocks, len, stride, [&](int64_t, int64_t o) { s += math::cast_to<A>(x[o]); });
  const A mean = block_reduce(s, sum_op{}, A(0), shared) / n;
  A q = 0;
  group_for_each(blocks, len, stride, [&](int64_t, int64_t o) {
    const A d = math::cast_to<A>(x[o]) - mean;
    q += d * d;
  });
  return {mean, block_reduce(q, sum_op{}, A(0), shared) / n};
}

// Threads for a block reducing a group of n elements.
inline int norm_threads(int64_t n) {
  return row_threads(n, k_max_block_reduce_threads);
}

inline unsigned norm_blocks(int64_t groups) {
  return static_cast<unsigned>(groups < k_max_blocks ? groups : k_max_blocks);
}

// Statistics of groups with no elements: torch's mean 0 and rstd (invstd)
// 1/sqrt(0/0 + eps) = NaN.
template <typename T>
__global__ void empty_stats_kernel(T* mean, T* rstd, int64_t count) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) {
    mean[i] = math::cast_to<T>(0.0f);
    rstd[i] = math::cast_to<T>(nanf(""));
  }
}

template <typename T>
cudaError_t launch_empty_stats(T* mean, T* rstd, int64_t count, cudaStream_t stream) {
  if (count == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(count), k_threads, 0, stream, empty_stats_kernel<T>)(mean, rstd, count);
  return cudaGetLastError();
}

} // namespace opforge::cuda
