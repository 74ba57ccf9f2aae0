// CUDA kernels for prelu and prelu_backward over contiguous
// [outer, channels, inner] (opforge/activation/prelu_plan.h), structured ops (Note
// [Structured ops]).
#include "common.cuh"

#include <opforge/activation/prelu_plan.h>

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

// grad_self for every element, and per (channel, split) the partial sum of
// v * g over the split's share of the channel's elements: blocks (x, y) take
// channel x (grid-stride) and split y, so a single shared weight is reduced by
// gridDim.y blocks rather than one.
template <typename T>
__global__ void __launch_bounds__(k_max_block_reduce_threads) prelu_backward_kernel(T* grad_self, acc_t<T>* partial, const T* grad, const T* in,
                                      const T* weight, int64_t outer, int64_t channels, int64_t inner,
                                      int64_t chunk) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const int64_t count = outer * inner;
  const int64_t begin = blockIdx.y * chunk;
  const int64_t end = begin + chunk < count ? begin + chunk : count;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const A a = math::cast_to<A>(weight[c]);
    A s = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
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
      partial[c * gridDim.y + blockIdx.y] = s;
    }
  }
}

// grad_weight[c] = the sum of channel c's partials, in split order (deterministic).
template <typename T>
__global__ void prelu_weight_sum_kernel(T* grad_weight, const acc_t<T>* partial, int64_t channels, int64_t splits) {
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < channels; c += stride) {
    acc_t<T> s = 0;
    for (int64_t j = 0; j < splits; ++j) {
      s += partial[c * splits + j];
    }
    grad_weight[c] = math::cast_to<T>(s);
  }
}

} // namespace

} // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t prelu_cuda(T* out, const T* in, const T* weight, const prelu_plan& l,
                       cudaStream_t stream) {
  using namespace cuda;
  const int64_t n = l.outer * l.channels * l.inner;
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, prelu_kernel)(
      out, in, weight, n, l.channels, l.inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t prelu_backward_cuda(T* grad_self, T* grad_weight, const T* grad, const T* in,
                                const T* weight, const prelu_plan& l, cudaStream_t stream) {
  using namespace cuda;
  if (l.channels == 0) {
    return cudaSuccess;
  }
  auto* partial = static_cast<acc_t<T>*>(l.workspace);
  // Every channel gets its blocks even when it has no elements, so grad_weight
  // is always written (zero for an empty channel).
  const int64_t splits = channel_sum_splits(l.outer * l.inner);
  const int64_t chunk = ceil_div(l.outer * l.inner, splits);
  const dim3 grid(static_cast<unsigned>(l.channels < k_max_blocks ? l.channels : k_max_blocks),
                  static_cast<unsigned>(splits));
  OPFORGE_LAUNCH(grid, row_threads(chunk, k_max_block_reduce_threads), 0, stream, prelu_backward_kernel)(
      grad_self, partial, grad, in, weight, l.outer, l.channels, l.inner, chunk);
  OPFORGE_LAUNCH(elementwise_blocks(l.channels), k_threads, 0, stream, prelu_weight_sum_kernel)(
      grad_weight, partial, l.channels, splits);
  return cudaGetLastError();
}

} // namespace opforge
