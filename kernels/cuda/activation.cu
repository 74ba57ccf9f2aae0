// CUDA kernels for relu and gelu.
#include "activation.cuh"
#include "map_kernels.cuh"

#include <opforge/math/activation.h>

namespace opforge::cuda {

template <typename T>
cudaError_t launch_relu(T* out, const T* in, int64_t n, cudaStream_t stream) {
  return launch_map_unary(out, in, n, math::relu_fn<T>{}, stream);
}

template <typename T>
cudaError_t launch_gelu(T* out, const T* in, int64_t n,
                        math::gelu_approximation approximate,
                        cudaStream_t stream) {
  if (approximate == math::gelu_approximation::tanh) {
    return launch_map_unary(out, in, n, math::gelu_tanh_fn<T>{}, stream);
  }
  return launch_map_unary(out, in, n, math::gelu_fn<T>{}, stream);
}

#define OPFORGE_INSTANTIATE(T)                                              \
  template cudaError_t launch_relu<T>(T*, const T*, int64_t, cudaStream_t); \
  template cudaError_t launch_gelu<T>(                                      \
      T*, const T*, int64_t, math::gelu_approximation, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
