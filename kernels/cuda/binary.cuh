#pragma once
// Launchers for add (kernels in binary.cu); the at::Tensor entry point is in
// binary.cpp. Torch-free so the .cu compiles fast.
#include <opforge/math/binary.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// Past this many (coalesced) dims the caller materializes the broadcast and
// uses the contiguous launcher.
constexpr int k_max_add_dims = 8;

// Element strides of self ([0]) and other ([1]) against a contiguous output
// of `sizes`, outermost dim first, 0 on broadcast dims. Passed by value as a
// kernel argument.
struct add_geometry {
  int32_t ndim = 0;
  int64_t sizes[k_max_add_dims] = {};
  int64_t strides[2][k_max_add_dims] = {};
};

// float for half/bf16, the type itself otherwise.
template <typename T>
using add_alpha_t = decltype(math::add_fn<T>::alpha);

// out = self + alpha * other, all n elements contiguous.
template <typename T>
cudaError_t launch_add_contiguous(T* out, const T* self, const T* other,
                                  add_alpha_t<T> alpha, int64_t n,
                                  cudaStream_t stream);

// out (contiguous, n elements) = self + alpha * other, inputs read through
// `geometry`.
template <typename T>
cudaError_t launch_add_strided(T* out, const T* self, const T* other,
                               add_alpha_t<T> alpha, int64_t n,
                               const add_geometry& geometry,
                               cudaStream_t stream);

} // namespace opforge::cuda
