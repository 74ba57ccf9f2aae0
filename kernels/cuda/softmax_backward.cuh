#pragma once
// Launchers for softmax_backward and log_softmax_backward (kernels in
// softmax_backward.cu); the at::Tensor entry points are in
// softmax_backward.cpp. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out = output * (grad - sum(grad * output)) over the middle dim of
// contiguous [outer, n, inner] blocks.
template <typename T>
cudaError_t launch_softmax_backward(T* out, const T* grad, const T* output,
                                    int64_t outer, int64_t n, int64_t inner,
                                    cudaStream_t stream);

// out = grad - exp(output) * sum(grad), over the same layout.
template <typename T>
cudaError_t launch_log_softmax_backward(T* out, const T* grad, const T* output,
                                        int64_t outer, int64_t n, int64_t inner,
                                        cudaStream_t stream);

} // namespace opforge::cuda
