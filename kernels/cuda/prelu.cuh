#pragma once
// Launchers for prelu and prelu_backward (kernels in prelu.cu); the at::Tensor
// entry points are in prelu.cpp. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <opforge/math/opmath.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// y = x > 0 ? x : w[c] * x over contiguous [outer, channels, inner].
template <typename T>
cudaError_t launch_prelu(T* out, const T* in, const T* weight, int64_t outer,
                         int64_t channels, int64_t inner, cudaStream_t stream);

// grad_self = x > 0 ? g : w[c] * g; grad_weight[c] = sum over the channel of
// (x > 0 ? 0 : x * g), as a split reduction: `partial` holds channels x
// prelu_backward_splits(outer, inner) values of the compute type.
template <typename T>
cudaError_t launch_prelu_backward(T* grad_self, T* grad_weight, math::opmath_t<T>* partial, const T* grad,
                                  const T* in, const T* weight, int64_t outer, int64_t channels, int64_t inner,
                                  cudaStream_t stream);
int64_t prelu_backward_splits(int64_t outer, int64_t inner);

} // namespace opforge::cuda
