#pragma once
// Definitions of the launchers in map.cuh: grid-stride elementwise kernels
// with 64-bit indexing. Device code; include from .cu files only.
#include "common.cuh"
#include "map.cuh"

namespace opforge::cuda {
namespace detail {

template <typename T, typename F>
__global__ void map_unary_kernel(T* out, const T* in, int64_t n, F f) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = f(in[i]);
  }
}

template <typename T, typename F>
__global__ void map_binary_kernel(T* out, const T* a, const T* b, int64_t n,
                                  F f) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = f(a[i], b[i]);
  }
}

} // namespace detail

template <typename T, typename F>
cudaError_t launch_map_unary(T* out, const T* in, int64_t n, F f,
                             cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, detail::map_unary_kernel)(
      out, in, n, f);
  return cudaGetLastError();
}

template <typename T, typename F>
cudaError_t launch_map_binary(T* out, const T* a, const T* b, int64_t n, F f,
                              cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, detail::map_binary_kernel)(
      out, a, b, n, f);
  return cudaGetLastError();
}

} // namespace opforge::cuda

// Explicit instantiations for a .cu: OPFORGE_INSTANTIATE_MAP_UNARY(float,
// math::sigmoid_fn<float>) and likewise for binary maps.
#define OPFORGE_INSTANTIATE_MAP_UNARY(T, F)                                 \
  template cudaError_t opforge::cuda::launch_map_unary<T, F>(              \
      T*, const T*, int64_t, F, cudaStream_t);
#define OPFORGE_INSTANTIATE_MAP_BINARY(T, F)                                \
  template cudaError_t opforge::cuda::launch_map_binary<T, F>(             \
      T*, const T*, const T*, int64_t, F, cudaStream_t);
