#pragma once
// Launchers for embedding and embedding_backward (kernels in
// layers_embedding.cu); the at::Tensor entry points are in
// layers_embedding.cpp. Torch-free so the .cu compiles fast.
//
// `error` points at two int64 on the device, zeroed by the caller: a kernel
// that meets an index outside [0, rows) touches no memory for it and sets
// error[0] = 1, error[1] = that index, for the caller to raise after reading
// them back (no silent out-of-bounds access, no device assert).
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out[i, :] = weight[indices[i], :] for i < n; weight is (rows, dim). An index
// out of range sets error = {1, index}, or fails a device-side assert where
// `error` is null.
template <typename T, typename I>
cudaError_t launch_embedding(T* out, const T* weight, const I* indices, int64_t n, int64_t rows, int64_t dim,
                             int64_t* error, cudaStream_t stream);

// acc[indices[i], :] += grad[i, :] with atomic adds, skipping padding_idx;
// acc is (rows, dim) of T's compute type (float for half/bfloat16), zeroed.
template <typename T, typename A, typename I>
cudaError_t launch_embedding_backward(A* acc, const T* grad, const I* indices, int64_t n, int64_t rows, int64_t dim,
                                      int64_t padding_idx, int64_t* error, cudaStream_t stream);

}  // namespace opforge::cuda
