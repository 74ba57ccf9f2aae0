// CUDA kernels for embedding (a row gather) and embedding_backward (a row
// scatter-add with atomics), one thread per (index, column) in grid-stride
// loops; consecutive threads touch consecutive columns of a row (coalesced).
// A bad index goes to the plan's index report (Note [Plan services]). A
// structured op (Note [Structured ops]).
#include "common.cuh"

#include <opforge/layers/plan.h>
#include <opforge/math/opmath.h>

#include <type_traits>

namespace opforge {
namespace {

// `cols` is max(dim, 1), so that with dim == 0 the indices are still checked.
template <typename T, typename I>
__global__ void embedding_kernel(T* out, const T* weight, const I* indices, int64_t total, int64_t cols,
                                 embedding_plan plan) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t idx = cuda::global_thread(); idx < total; idx += stride) {
    const int64_t i = idx / cols;
    const int64_t k = idx - i * cols;
    const int64_t r = static_cast<int64_t>(indices[i]);
    if (r < 0 || r >= plan.rows) {
      cuda::record_bad_index(plan.bad_index, r);
    } else if (k < plan.dim) {
      out[i * plan.dim + k] = weight[r * plan.dim + k];
    }
  }
}

template <typename T, typename A, typename I>
__global__ void embedding_backward_kernel(A* acc, const T* grad, const I* indices, int64_t total, int64_t cols,
                                          embedding_backward_plan plan) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t idx = cuda::global_thread(); idx < total; idx += stride) {
    const int64_t i = idx / cols;
    const int64_t k = idx - i * cols;
    const int64_t r = static_cast<int64_t>(indices[i]);
    if (r < 0 || r >= plan.rows) {
      cuda::record_bad_index(plan.bad_index, r);
    } else if (k < plan.dim && r != plan.padding_idx) {
      atomicAdd(acc + r * plan.dim + k, math::cast_to<A>(grad[i * plan.dim + k]));
    }
  }
}

}  // namespace

template <typename scalar_t, typename indices_t>
cudaError_t embedding_cuda(scalar_t* result, const scalar_t* weight, const indices_t* indices,
                           const embedding_plan& plan, cudaStream_t stream) {
  const int64_t cols = plan.dim > 0 ? plan.dim : 1;
  const int64_t total = plan.n * cols;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, embedding_kernel)(
      result, weight, indices, total, cols, plan);
  return cudaGetLastError();
}

// Zero the accumulator (the output itself, or the float workspace for
// half/bfloat16), scatter-add, then round the workspace into the output.
template <typename scalar_t, typename indices_t>
cudaError_t embedding_backward_cuda(scalar_t* result, const scalar_t* grad_output, const indices_t* indices,
                                    const embedding_backward_plan& plan, cudaStream_t stream) {
  using acc_t = math::opmath_t<scalar_t>;
  const int64_t size = plan.rows * plan.dim;
  acc_t* acc = nullptr;
  if constexpr (std::is_same_v<acc_t, scalar_t>) {
    acc = result;
  } else {
    acc = static_cast<acc_t*>(plan.workspace);
  }
  cudaError_t err = cuda::launch_fill_zero(acc, size, stream);
  if (err != cudaSuccess) {
    return err;
  }
  const int64_t cols = plan.dim > 0 ? plan.dim : 1;
  const int64_t total = plan.n * cols;
  if (total > 0) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, embedding_backward_kernel)(
        acc, grad_output, indices, total, cols, plan);
    err = cudaGetLastError();
  }
  if constexpr (!std::is_same_v<acc_t, scalar_t>) {
    if (err == cudaSuccess) {
      err = cuda::launch_convert(result, acc, size, stream);
    }
  }
  return err;
}

}  // namespace opforge
