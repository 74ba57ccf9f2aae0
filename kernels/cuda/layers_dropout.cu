// CUDA kernels for dropout_forward (one thread per 4-element group: one
// Philox call gives its four random words) and dropout_backward.
#include "common.cuh"
#include "layers_dropout.cuh"

#include <opforge/math/dropout.h>
#include <opforge/math/opmath.h>


namespace opforge::cuda {
namespace {

// at::cuda::philox::unpack without std::tuple (std::get is a host function to
// nvcc unless --expt-relaxed-constexpr): under graph capture the seed and the
// base offset are read from device memory (torch's ATen/cuda/PhiloxUtils.cuh, whose
// unpack this mirrors).
__device__ inline void unpack_philox(const at::PhiloxCudaState& s, uint64_t& seed, uint64_t& offset) {
  if (s.captured_) {
    seed = static_cast<uint64_t>(*s.seed_.ptr);
    offset = static_cast<uint64_t>(*s.offset_.ptr) + s.offset_intragraph_;
  } else {
    seed = s.seed_.val;
    offset = s.offset_.val;
  }
}

template <typename T, typename A>
__global__ void dropout_forward_kernel(T* out, bool* mask, const T* in, int64_t n, at::PhiloxCudaState philox,
                                       uint32_t threshold, A scale) {
  uint64_t seed = 0;
  uint64_t offset = 0;
  unpack_philox(philox, seed, offset);
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = grid_threads();
  for (int64_t g = global_thread(); g < groups; g += stride) {
    const math::philox_words r = math::philox4x32_10(seed, math::dropout_counter(offset, g));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * g + j;
      if (i < n) {
        const bool keep = math::dropout_keep(r.w[j], threshold);
        mask[i] = keep;
        out[i] = keep ? math::cast_to<T>(math::cast_to<A>(in[i]) * scale) : math::cast_to<T>(0.0f);
      }
    }
  }
}

template <typename T, typename A>
__global__ void dropout_backward_kernel(T* out, const T* grad, const bool* mask, int64_t n, A scale) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = mask[i] ? math::cast_to<T>(math::cast_to<A>(grad[i]) * scale) : math::cast_to<T>(0.0f);
  }
}

}  // namespace

template <typename T, typename A>
cudaError_t launch_dropout_forward(T* out, bool* mask, const T* in, int64_t n, at::PhiloxCudaState philox,
                                   uint32_t threshold, A scale, cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks((n + 3) / 4), k_threads, 0, stream, dropout_forward_kernel)(out, mask, in, n, philox,
                                                                                     threshold, scale);
  return cudaGetLastError();
}

template <typename T, typename A>
cudaError_t launch_dropout_backward(T* out, const T* grad, const bool* mask, int64_t n, A scale, cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, dropout_backward_kernel)(out, grad, mask, n, scale);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                                                                 \
  template cudaError_t launch_dropout_forward<T, math::opmath_t<T>>(T*, bool*, const T*, int64_t,              \
                                                                    at::PhiloxCudaState, uint32_t,             \
                                                                    math::opmath_t<T>, cudaStream_t);          \
  template cudaError_t launch_dropout_backward<T, math::opmath_t<T>>(T*, const T*, const bool*, int64_t,       \
                                                                     math::opmath_t<T>, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

}  // namespace opforge::cuda
