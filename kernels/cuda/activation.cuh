#pragma once
// Launchers for relu/gelu (kernels in activation.cu). Torch-free so the
// .cu compiles fast; the at::Tensor entry points live in activation.cpp.
#include <opforge/math/activation.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out[i] = f(in[i]) over n dense elements. Returns the launch status.
template <typename T>
cudaError_t launch_relu(T* out, const T* in, int64_t n, cudaStream_t stream);

template <typename T>
cudaError_t launch_gelu(T* out, const T* in, int64_t n,
                        math::gelu_approximation approximate,
                        cudaStream_t stream);

} // namespace opforge::cuda
