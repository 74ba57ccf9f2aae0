#pragma once
// Launchers for relu_backward/gelu_backward (kernels in activation_backward.cu).
// Torch-free so the .cu compiles fast; the at::Tensor entry points live in
// activation_backward.cpp.
#include <opforge/math/activation.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out[i] = grad[i] * (result[i] > 0) over n dense elements.
template <typename T>
cudaError_t launch_relu_backward(T* out, const T* grad, const T* result,
                                 int64_t n, cudaStream_t stream);

// out[i] = grad[i] * gelu'(x[i]) over n dense elements.
template <typename T>
cudaError_t launch_gelu_backward(T* out, const T* grad, const T* x, int64_t n,
                                 math::gelu_approximation approximate,
                                 cudaStream_t stream);

} // namespace opforge::cuda
