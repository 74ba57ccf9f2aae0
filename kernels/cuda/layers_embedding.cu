// CUDA kernels for embedding (a row gather) and embedding_backward (a row
// scatter-add with atomics), one thread per (index, column) in grid-stride
// loops; consecutive threads touch consecutive columns of a row (coalesced).
#include "common.cuh"
#include "layers_embedding.cuh"

#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

// A bad index goes to the error flag the host reads back, or, with no flag
// (CUDA-graph capture, where the host cannot read back), to a device-side assert.
__device__ inline void record_bad_index(int64_t* error, int64_t index, int64_t rows) {
  if (error == nullptr) {
    OPFORGE_KERNEL_ASSERT(index >= 0 && index < rows);
    return;
  }
  // The first thread to raise the flag reports its index; the others leave both alone.
  auto* flag = reinterpret_cast<unsigned long long*>(error);
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) {
    error[1] = index;
  }
}

// `cols` is max(dim, 1), so that with dim == 0 the indices are still checked.
template <typename T, typename I>
__global__ void embedding_kernel(T* out, const T* weight, const I* indices, int64_t total, int64_t rows, int64_t dim,
                                 int64_t cols, int64_t* error) {
  const int64_t stride = grid_threads();
  for (int64_t idx = global_thread(); idx < total; idx += stride) {
    const int64_t i = idx / cols;
    const int64_t k = idx - i * cols;
    const int64_t r = static_cast<int64_t>(indices[i]);
    if (r < 0 || r >= rows) {
      record_bad_index(error, r, rows);
    } else if (k < dim) {
      out[i * dim + k] = weight[r * dim + k];
    }
  }
}

template <typename T, typename A, typename I>
__global__ void embedding_backward_kernel(A* acc, const T* grad, const I* indices, int64_t total, int64_t rows,
                                          int64_t dim, int64_t cols, int64_t padding_idx, int64_t* error) {
  const int64_t stride = grid_threads();
  for (int64_t idx = global_thread(); idx < total; idx += stride) {
    const int64_t i = idx / cols;
    const int64_t k = idx - i * cols;
    const int64_t r = static_cast<int64_t>(indices[i]);
    if (r < 0 || r >= rows) {
      record_bad_index(error, r, rows);
    } else if (k < dim && r != padding_idx) {
      atomicAdd(acc + r * dim + k, math::cast_to<A>(grad[i * dim + k]));
    }
  }
}

}  // namespace

template <typename T, typename I>
cudaError_t launch_embedding(T* out, const T* weight, const I* indices, int64_t n, int64_t rows, int64_t dim,
                             int64_t* error, cudaStream_t stream) {
  const int64_t cols = dim > 0 ? dim : 1;
  const int64_t total = n * cols;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, embedding_kernel)(out, weight, indices, total, rows, dim, cols,
                                                                        error);
  return cudaGetLastError();
}

template <typename T, typename A, typename I>
cudaError_t launch_embedding_backward(A* acc, const T* grad, const I* indices, int64_t n, int64_t rows, int64_t dim,
                                      int64_t padding_idx, int64_t* error, cudaStream_t stream) {
  const int64_t cols = dim > 0 ? dim : 1;
  const int64_t total = n * cols;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, embedding_backward_kernel)(acc, grad, indices, total, rows, dim,
                                                                                 cols, padding_idx, error);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE_INDEX(T, I)                                                                       \
  template cudaError_t launch_embedding<T, I>(T*, const T*, const I*, int64_t, int64_t, int64_t, int64_t*,     \
                                              cudaStream_t);                                                    \
  template cudaError_t launch_embedding_backward<T, math::opmath_t<T>, I>(                                     \
      math::opmath_t<T>*, const T*, const I*, int64_t, int64_t, int64_t, int64_t, int64_t*, cudaStream_t);
#define OPFORGE_INSTANTIATE(T) OPFORGE_INSTANTIATE_INDEX(T, int64_t) OPFORGE_INSTANTIATE_INDEX(T, int32_t)
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE
#undef OPFORGE_INSTANTIATE_INDEX

}  // namespace opforge::cuda
