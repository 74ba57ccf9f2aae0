// CUDA kernels for prelu and prelu_backward over contiguous
// [outer, channels, inner] (see opforge/prelu.h).
#include "common.cuh"
#include "prelu.cuh"

#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

template <typename T>
__global__ void prelu_kernel(T* out, const T* in, const T* weight, int64_t n,
                             int64_t channels, int64_t inner) {
  using A = acc_t<T>;
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    const A v = math::cast_to<A>(in[i]);
    const A a = math::cast_to<A>(weight[(i / inner) % channels]);
    out[i] = math::cast_to<T>(v > A(0) ? v : a * v);
  }
}

// One block per channel: the block writes grad_self for the channel's
// elements and reduces its grad_weight.
template <typename T>
__global__ void prelu_backward_kernel(T* grad_self, T* grad_weight,
                                      const T* grad, const T* in,
                                      const T* weight, int64_t outer,
                                      int64_t channels, int64_t inner) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t count = outer * inner;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const A a = math::cast_to<A>(weight[c]);
    A s = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t o = k / inner;
      const int64_t i = (o * channels + c) * inner + (k - o * inner);
      const A v = math::cast_to<A>(in[i]);
      const A g = math::cast_to<A>(grad[i]);
      if (v > A(0)) {
        grad_self[i] = math::cast_to<T>(g);
      } else {
        grad_self[i] = math::cast_to<T>(a * g);
        s += v * g;
      }
    }
    s = block_reduce(s, sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      grad_weight[c] = math::cast_to<T>(s);
    }
  }
}

constexpr int k_reduce_threads = 512;

} // namespace

template <typename T>
cudaError_t launch_prelu(T* out, const T* in, const T* weight, int64_t outer,
                         int64_t channels, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * channels * inner;
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, prelu_kernel)(
      out, in, weight, n, channels, inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_prelu_backward(T* grad_self, T* grad_weight, const T* grad,
                                  const T* in, const T* weight, int64_t outer,
                                  int64_t channels, int64_t inner,
                                  cudaStream_t stream) {
  if (channels == 0) {
    return cudaSuccess;
  }
  // Every channel gets a block even when it has no elements, so grad_weight
  // is always written (zero for an empty channel).
  const auto blocks = static_cast<unsigned>(
      channels < k_max_blocks ? channels : k_max_blocks);
  OPFORGE_LAUNCH(blocks, row_threads(outer * inner, k_reduce_threads), 0, stream, prelu_backward_kernel)(grad_self, grad_weight, grad, in, weight,
                                       outer, channels, inner);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                                \
  template cudaError_t launch_prelu<T>(T*, const T*, const T*, int64_t,       \
                                       int64_t, int64_t, cudaStream_t);       \
  template cudaError_t launch_prelu_backward<T>(                              \
      T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t,        \
      cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
