#pragma once
// Definition of launch_pointwise (pointwise.cuh): grid-stride kernels over a
// plan, a flat one when every operand is dense and a strided one otherwise.
// Offsets are computed in 32 bits: plans that do not fit are split first
// (for_each_32bit_part). Device code; included by the generated .cu files.
#include "common.cuh"
#include "pointwise.cuh"

#include <utility>

namespace opforge::cuda {
namespace detail {

template <typename T, typename F, int N, size_t... I>
__device__ __forceinline__ void pointwise_store(const pointwise::plan<N>& p, const F& f,
                                                const int32_t (&offset)[N + 1], std::index_sequence<I...>) {
  reinterpret_cast<T*>(p.data[0])[offset[0]] =
      f(reinterpret_cast<const T*>(p.data[I + 1])[offset[I + 1]]...);
}

template <typename T, typename F, int N>
__global__ void pointwise_dense_kernel(pointwise::plan<N> p, F f, int32_t n) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    int32_t offset[N + 1];
    for (int k = 0; k <= N; ++k) {
      offset[k] = static_cast<int32_t>(i);
    }
    pointwise_store<T>(p, f, offset, std::make_index_sequence<N>{});
  }
}

template <typename T, typename F, int N>
__global__ void pointwise_strided_kernel(pointwise::plan<N> p, F f, int32_t n) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    int32_t rest = static_cast<int32_t>(i);
    int32_t offset[N + 1] = {};
    for (int d = p.ndim - 1; d >= 0; --d) {
      const auto size = static_cast<int32_t>(p.sizes[d]);
      const int32_t index = rest % size;
      rest /= size;
      for (int k = 0; k <= N; ++k) {
        offset[k] += index * static_cast<int32_t>(p.strides[k][d]);
      }
    }
    pointwise_store<T>(p, f, offset, std::make_index_sequence<N>{});
  }
}

}  // namespace detail

template <typename T, typename F, int N>
cudaError_t launch_pointwise(const pointwise::plan<N>& p, F f, cudaStream_t stream) {
  int64_t element_size[N + 1];
  for (int k = 0; k <= N; ++k) {
    element_size[k] = sizeof(T);
  }
  cudaError_t status = cudaSuccess;
  pointwise::for_each_32bit_part(p, element_size, [&](const pointwise::plan<N>& part) {
    const int64_t n = part.numel();
    if (status != cudaSuccess || n == 0) {
      return;
    }
    if (part.contiguous()) {
      OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, detail::pointwise_dense_kernel<T, F, N>)(
          part, f, static_cast<int32_t>(n));
    } else {
      OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, detail::pointwise_strided_kernel<T, F, N>)(
          part, f, static_cast<int32_t>(n));
    }
    status = cudaGetLastError();
  });
  return status;
}

}  // namespace opforge::cuda

// The explicit instantiation a generated .cu ends with.
#define OPFORGE_INSTANTIATE_POINTWISE(T, F, N) \
  template cudaError_t opforge::cuda::launch_pointwise<T, F, N>(const opforge::pointwise::plan<N>&, F, cudaStream_t);
