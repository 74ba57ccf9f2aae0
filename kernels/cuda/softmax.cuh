#pragma once
// Launchers for softmax and log_softmax (kernels in softmax.cu); the
// at::Tensor entry points are in softmax.cpp. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// Softmax over the middle dim of a contiguous [outer, n, inner] block.
template <typename T>
cudaError_t launch_softmax(T* out, const T* in, int64_t outer, int64_t n,
                           int64_t inner, cudaStream_t stream);

// Log-softmax, x - max - log(sum(exp(x - max))), over the same layout.
template <typename T>
cudaError_t launch_log_softmax(T* out, const T* in, int64_t outer, int64_t n,
                               int64_t inner, cudaStream_t stream);

} // namespace opforge::cuda
