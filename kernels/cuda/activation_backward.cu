// CUDA kernels for the activation backward ops: one elementwise kernel over
// (grad, saved tensor) pairs, instantiated with the shared math functors.
#include "activation_backward.cuh"
#include "common.cuh"

#include <opforge/math/activation.h>

namespace opforge::cuda {
namespace {

template <typename T, typename F>
__global__ void binary_map_kernel(T* out, const T* a, const T* b, int64_t n,
                                  F f) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = f(a[i], b[i]);
  }
}

template <typename T, typename F>
cudaError_t launch_binary_map(T* out, const T* a, const T* b, int64_t n, F f,
                              cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  binary_map_kernel<<<elementwise_blocks(n), k_threads, 0, stream>>>(out, a, b,
                                                                     n, f);
  return cudaGetLastError();
}

} // namespace

template <typename T>
cudaError_t launch_relu_backward(T* out, const T* grad, const T* result,
                                 int64_t n, cudaStream_t stream) {
  return launch_binary_map(out, grad, result, n, math::relu_backward_fn<T>{},
                           stream);
}

template <typename T>
cudaError_t launch_gelu_backward(T* out, const T* grad, const T* x, int64_t n,
                                 math::gelu_approximation approximate,
                                 cudaStream_t stream) {
  if (approximate == math::gelu_approximation::tanh) {
    return launch_binary_map(out, grad, x, n,
                             math::gelu_tanh_backward_fn<T>{}, stream);
  }
  return launch_binary_map(out, grad, x, n, math::gelu_backward_fn<T>{},
                           stream);
}

#define OPFORGE_INSTANTIATE(T)                                                \
  template cudaError_t launch_relu_backward<T>(T*, const T*, const T*,        \
                                               int64_t, cudaStream_t);        \
  template cudaError_t launch_gelu_backward<T>(                               \
      T*, const T*, const T*, int64_t, math::gelu_approximation,              \
      cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
