#pragma once
// Launchers for sum (kernels in reduction.cu); the at::Tensor entry point is
// in reduction.cpp. Torch-free so the .cu compiles fast.
#include <opforge/math/opmath.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// Number of blocks to split each row of a [rows, n] sum across. Few long rows
// would otherwise leave most SMs idle; the partial sums go to a workspace of
// rows * splits sum_acc_t<T> values that the caller allocates.
inline int64_t sum_row_splits(int64_t rows, int64_t n) {
  constexpr int64_t k_min_chunk = 16384;
  constexpr int64_t k_target_blocks = 1024;
  if (rows >= k_target_blocks || n <= k_min_chunk) {
    return 1;
  }
  const int64_t by_size = (n + k_min_chunk - 1) / k_min_chunk;
  const int64_t by_blocks = k_target_blocks / rows;
  return by_size < by_blocks ? by_size : by_blocks;
}

// The column kernel runs one thread per output with a serial loop over n: fine
// with many outputs, too little parallelism with few outputs and long columns
// (then the caller permutes the reduced dims innermost and sums rows).
inline bool sum_columns_ok(int64_t outputs, int64_t n) {
  return outputs >= 8192 || n <= 1024;
}

// [rows, n] contiguous -> out[rows]. `workspace` may be null when splits == 1.
template <typename T>
cudaError_t launch_sum_rows(T* out, const T* in, int64_t rows, int64_t n,
                            math::sum_acc_t<T>* workspace, int64_t splits,
                            cudaStream_t stream);

// [outer, n, inner] contiguous -> out[outer, inner].
template <typename T>
cudaError_t launch_sum_columns(T* out, const T* in, int64_t outer, int64_t n,
                               int64_t inner, cudaStream_t stream);

} // namespace opforge::cuda
