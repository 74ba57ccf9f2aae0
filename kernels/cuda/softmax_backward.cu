// CUDA kernels for softmax_backward, out = y * (g - sum(g * y, dim)), and
// log_softmax_backward, out = g - exp(y) * sum(g, dim) (`Log`, opforge/softmax/math.h);
// the sum accumulated in opmath (float for half/bf16). Same row/column split as
// the forward kernels in softmax.cu.
#include "common.cuh"

#include <opforge/core/dim_split.h>

#include <opforge/math/opmath.h>
#include <opforge/softmax/math.h>

namespace opforge::cuda {
namespace {

// Rows up to this long get one warp each; longer rows get a block.
constexpr int64_t k_warp_row_max = 1024;

template <typename T>
using acc_t = math::opmath_t<T>;

template <bool Log, typename T>
__device__ acc_t<T> partial_sum(const T* g, const T* y, int64_t begin,
                                int64_t n, int64_t step) {
  acc_t<T> s = 0;
  for (int64_t i = begin; i < n; i += step) {
    s += math::softmax_backward_term<Log>(math::cast_to<acc_t<T>>(g[i]),
                                          math::cast_to<acc_t<T>>(y[i]));
  }
  return s;
}

template <bool Log, typename T>
__device__ void write_grad(T* out, const T* g, const T* y, int64_t begin,
                           int64_t n, int64_t step, acc_t<T> dot) {
  using A = acc_t<T>;
  for (int64_t i = begin; i < n; i += step) {
    out[i] = math::cast_to<T>(math::softmax_backward_grad<Log>(
        math::cast_to<A>(g[i]), math::cast_to<A>(y[i]), dot));
  }
}

// One warp per contiguous row: no shared memory or block barriers.
template <bool Log, typename T>
__global__ void softmax_backward_warp_rows_kernel(T* out, const T* grad,
                                                  const T* output, int64_t rows,
                                                  int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = grid_threads() / 32;
  for (int64_t row = global_thread() / 32; row < rows; row += warps) {
    const int64_t base = row * n;
    acc_t<T> dot = partial_sum<Log>(grad + base, output + base, lane, n, 32);
    dot = __shfl_sync(0xffffffffu, warp_reduce(dot, sum_op{}), 0);
    write_grad<Log>(out + base, grad + base, output + base, lane, n, 32, dot);
  }
}

// One block per contiguous row, for long rows.
template <bool Log, typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) softmax_backward_block_rows_kernel(T* out, const T* grad,
                                                   const T* output,
                                                   int64_t rows, int64_t n) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * n;
    A dot = partial_sum<Log>(grad + base, output + base, threadIdx.x, n, blockDim.x);
    dot = block_reduce(dot, sum_op{}, A(0), shared);
    write_grad<Log>(out + base, grad + base, output + base, threadIdx.x, n,
               blockDim.x, dot);
  }
}

// Softmax dim not innermost: one thread per (outer, inner) column; adjacent
// threads read adjacent columns, so loads coalesce.
template <bool Log, typename T>
__global__ void softmax_backward_columns_kernel(T* out, const T* grad,
                                                const T* output, int64_t outer,
                                                int64_t n, int64_t inner) {
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < outer * inner; c += stride) {
    const int64_t o = c / inner;
    const int64_t base = o * n * inner + (c - o * inner);
    const acc_t<T> dot =
        partial_sum<Log>(grad + base, output + base, 0, n * inner, inner);
    write_grad<Log>(out + base, grad + base, output + base, 0, n * inner, inner,
               dot);
  }
}

template <bool Log, typename T>
cudaError_t launch(T* out, const T* grad, const T* output, int64_t outer,
                   int64_t n, int64_t inner, cudaStream_t stream) {
  if (outer == 0 || n == 0 || inner == 0) {
    return cudaSuccess;
  }
  if (inner > 1) {
    OPFORGE_LAUNCH(elementwise_blocks(outer * inner), k_threads, 0, stream, softmax_backward_columns_kernel<Log>)(
        out, grad, output, outer, n, inner);
  } else if (n <= k_warp_row_max) {
    OPFORGE_LAUNCH(elementwise_blocks(outer * 32), k_threads, 0, stream, softmax_backward_warp_rows_kernel<Log>)(
        out, grad, output, outer, n);
  } else {
    const auto blocks =
        static_cast<unsigned>(outer < k_max_blocks ? outer : k_max_blocks);
    OPFORGE_LAUNCH(blocks, row_threads(n, k_max_block_reduce_threads), 0, stream, softmax_backward_block_rows_kernel<Log>)(out, grad, output, outer, n);
  }
  return cudaGetLastError();
}

} // namespace

} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t softmax_backward_cuda(T* grad_input, const T* grad_output, const T* output,
                                  const dim_split& plan, cudaStream_t stream) {
  return cuda::launch<false>(grad_input, grad_output, output, plan.outer, plan.size, plan.inner,
                             stream);
}

template <typename T>
cudaError_t log_softmax_backward_cuda(T* grad_input, const T* grad_output, const T* output,
                                      const dim_split& plan, cudaStream_t stream) {
  return cuda::launch<true>(grad_input, grad_output, output, plan.outer, plan.size, plan.inner,
                            stream);
}

} // namespace opforge
