#pragma once
// f(i) for every i in [0, n), one thread per index in a grid-stride loop: the
// launch of the elementwise structured kernels whose element needs more than
// the pointwise engine's functor (a channel index, several typed pointers).
#include "common.cuh"

namespace opforge::cuda {

template <typename F>
__global__ void for_each_index_kernel(int64_t n, F f) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    f(i);
  }
}

template <typename F>
cudaError_t for_each_index(int64_t n, F f, cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, for_each_index_kernel<F>)(n, f);
  return cudaGetLastError();
}

}  // namespace opforge::cuda
