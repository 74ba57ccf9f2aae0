// CUDA kernels for relu_backward and gelu_backward: the generic binary map of
// map_kernels.cuh over (grad, saved tensor) pairs, with the shared functors.
#include "activation_backward.cuh"
#include "map_kernels.cuh"

#include <opforge/math/activation.h>

namespace opforge::cuda {

template <typename T>
cudaError_t launch_relu_backward(T* out, const T* grad, const T* result,
                                 int64_t n, cudaStream_t stream) {
  return launch_map_binary(out, grad, result, n, math::relu_backward_fn<T>{},
                           stream);
}

template <typename T>
cudaError_t launch_gelu_backward(T* out, const T* grad, const T* x, int64_t n,
                                 math::gelu_approximation approximate,
                                 cudaStream_t stream) {
  if (approximate == math::gelu_approximation::tanh) {
    return launch_map_binary(out, grad, x, n,
                             math::gelu_tanh_backward_fn<T>{}, stream);
  }
  return launch_map_binary(out, grad, x, n, math::gelu_backward_fn<T>{},
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
