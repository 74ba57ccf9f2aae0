// CUDA kernels for relu and gelu.
#include "activation.cuh"
#include "common.cuh"

#include <opforge/math/activation.h>

namespace opforge::cuda {
namespace {

template <typename T, typename F>
__global__ void unary_kernel(T* out, const T* in, int64_t n, F f) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = f(in[i]);
  }
}

template <typename T, typename F>
cudaError_t launch_unary(T* out, const T* in, int64_t n, F f,
                         cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  unary_kernel<<<elementwise_blocks(n), k_threads, 0, stream>>>(out, in, n, f);
  return cudaGetLastError();
}

} // namespace

template <typename T>
cudaError_t launch_relu(T* out, const T* in, int64_t n, cudaStream_t stream) {
  return launch_unary(out, in, n, math::relu_fn<T>{}, stream);
}

template <typename T>
cudaError_t launch_gelu(T* out, const T* in, int64_t n,
                        math::gelu_approximation approximate,
                        cudaStream_t stream) {
  if (approximate == math::gelu_approximation::tanh) {
    return launch_unary(out, in, n, math::gelu_tanh_fn<T>{}, stream);
  }
  return launch_unary(out, in, n, math::gelu_fn<T>{}, stream);
}

#define OPFORGE_INSTANTIATE(T)                                              \
  template cudaError_t launch_relu<T>(T*, const T*, int64_t, cudaStream_t); \
  template cudaError_t launch_gelu<T>(                                      \
      T*, const T*, int64_t, math::gelu_approximation, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
