#pragma once
// Launchers for dropout_forward and dropout_backward (kernels in
// layers_dropout.cu); the at::Tensor entry points are in layers_dropout.cpp.
// Only light headers: the Philox state is a plain struct.
#include <ATen/cuda/PhiloxCudaState.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out[i] = keep(i) ? in[i] * scale : 0, mask[i] = keep(i), with keep from
// opforge/math/dropout.h for the (seed, offset) in `philox` (graph-safe).
template <typename T, typename A>
cudaError_t launch_dropout_forward(T* out, bool* mask, const T* in, int64_t n, at::PhiloxCudaState philox,
                                   uint32_t threshold, A scale, cudaStream_t stream);

// out[i] = mask[i] ? grad[i] * scale : 0.
template <typename T, typename A>
cudaError_t launch_dropout_backward(T* out, const T* grad, const bool* mask, int64_t n, A scale, cudaStream_t stream);

}  // namespace opforge::cuda
