// CUDA kernels for softmax and log_softmax over one dim: the same max and
// sum-of-exp reductions, then the epilogue `Log` picks (opforge/softmax/math.h). A
// structured op's kernels (Note [Structured ops]): the generated host code
// passes the data pointers and the [outer, n, inner] split.
#include "common.cuh"

#include <opforge/core/dim_split.h>

#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>
#include <opforge/softmax/math.h>

#include <math.h>

namespace opforge::cuda {
namespace {

// Rows up to this long get one warp each; longer rows get a block.
constexpr int64_t k_warp_row_max = 1024;

template <typename T>
using acc_t = math::opmath_t<T>;

template <bool Log, typename T>
__device__ void softmax_write(T* y, const T* x, int64_t begin, int64_t n,
                              int64_t step, acc_t<T> max, acc_t<T> sum) {
  const auto e = math::softmax_epilogue<Log, acc_t<T>>::make(max, sum);
  for (int64_t i = begin; i < n; i += step) {
    y[i] = math::cast_to<T>(e(math::cast_to<acc_t<T>>(x[i])));
  }
}

// One warp per contiguous row: no shared memory or block barriers.
template <bool Log, typename T>
__global__ void softmax_warp_rows_kernel(T* out, const T* in, int64_t rows,
                                         int64_t n) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = grid_threads() / 32;
  for (int64_t row = global_thread() / 32; row < rows; row += warps) {
    const T* x = in + row * n;
    A m = -INFINITY;
    for (int64_t i = lane; i < n; i += 32) {
      m = max_op{}(m, math::cast_to<A>(x[i]));
    }
    m = __shfl_sync(0xffffffffu, warp_reduce(m, max_op{}), 0);
    A s = 0;
    for (int64_t i = lane; i < n; i += 32) {
      s += math::exp_(math::cast_to<A>(x[i]) - m);
    }
    s = __shfl_sync(0xffffffffu, warp_reduce(s, sum_op{}), 0);
    softmax_write<Log>(out + row * n, x, lane, n, 32, m, s);
  }
}

// One block per contiguous row, for long rows.
template <bool Log, typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) softmax_block_rows_kernel(T* out, const T* in, int64_t rows,
                                          int64_t n) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    A m = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      m = max_op{}(m, math::cast_to<A>(x[i]));
    }
    m = block_reduce(m, max_op{}, A(-INFINITY), shared);
    A s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      s += math::exp_(math::cast_to<A>(x[i]) - m);
    }
    s = block_reduce(s, sum_op{}, A(0), shared);
    softmax_write<Log>(out + row * n, x, threadIdx.x, n, blockDim.x, m, s);
  }
}

// Softmax dim not innermost: one thread per (outer, inner) column; adjacent
// threads read adjacent columns, so loads coalesce.
template <bool Log, typename T>
__global__ void softmax_columns_kernel(T* out, const T* in, int64_t outer,
                                       int64_t n, int64_t inner) {
  using A = acc_t<T>;
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < outer * inner; c += stride) {
    const int64_t o = c / inner;
    const int64_t base = o * n * inner + (c - o * inner);
    const T* x = in + base;
    A m = -INFINITY;
    for (int64_t d = 0; d < n; ++d) {
      m = max_op{}(m, math::cast_to<A>(x[d * inner]));
    }
    A s = 0;
    for (int64_t d = 0; d < n; ++d) {
      s += math::exp_(math::cast_to<A>(x[d * inner]) - m);
    }
    softmax_write<Log>(out + base, x, 0, n * inner, inner, m, s);
  }
}

template <bool Log, typename T>
cudaError_t launch(T* out, const T* in, int64_t outer, int64_t n, int64_t inner,
                   cudaStream_t stream) {
  if (outer == 0 || n == 0 || inner == 0) {
    return cudaSuccess;
  }
  if (inner > 1) {
    const int64_t columns = outer * inner;
    OPFORGE_LAUNCH(elementwise_blocks(columns), k_threads, 0, stream, softmax_columns_kernel<Log>)(out, in, outer, n, inner);
  } else if (n <= k_warp_row_max) {
    OPFORGE_LAUNCH(elementwise_blocks(outer * 32), k_threads, 0, stream, softmax_warp_rows_kernel<Log>)(out, in, outer, n);
  } else {
    const auto blocks =
        static_cast<unsigned>(outer < k_max_blocks ? outer : k_max_blocks);
    OPFORGE_LAUNCH(blocks, row_threads(n, k_max_block_reduce_threads), 0, stream, softmax_block_rows_kernel<Log>)(out, in, outer, n);
  }
  return cudaGetLastError();
}

} // namespace

} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t softmax_cuda(T* out, const T* self, const dim_split& plan, cudaStream_t stream) {
  return cuda::launch<false>(out, self, plan.outer, plan.size, plan.inner, stream);
}

template <typename T>
cudaError_t log_softmax_cuda(T* out, const T* self, const dim_split& plan, cudaStream_t stream) {
  return cuda::launch<true>(out, self, plan.outer, plan.size, plan.inner, stream);
}

} // namespace opforge
