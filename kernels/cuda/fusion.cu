// CUDA kernel for fold_conv_bn: a grid-stride pass over the conv weight; the
// threads of the first `channels` indices also write the folded bias.
#include "common.cuh"
#include "fusion.cuh"

#include <opforge/math/fusion.h>
#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

template <typename T>
__global__ void fold_conv_bn_kernel(T* w_out, T* b_out, const T* w, const T* bias, const T* gamma,
                                    const T* beta, const T* mean, const T* var,
                                    math::opmath_t<T> eps, int64_t channels, int64_t per_channel) {
  using A = math::opmath_t<T>;
  const auto scale = [&](int64_t c) {
    return math::bn_fold_scale(math::cast_to<A>(gamma[c]), math::cast_to<A>(var[c]), eps);
  };
  const int64_t n = channels * per_channel;
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n || i < channels; i += stride) {
    if (i < n) {
      w_out[i] = math::cast_to<T>(math::cast_to<A>(w[i]) * scale(i / per_channel));
    }
    if (i < channels) {
      const A b = bias != nullptr ? math::cast_to<A>(bias[i]) : A(0);
      b_out[i] = math::cast_to<T>(
          math::bn_fold_bias(b, math::cast_to<A>(mean[i]), scale(i), math::cast_to<A>(beta[i])));
    }
  }
}

} // namespace

template <typename T>
cudaError_t launch_fold_conv_bn(T* w_out, T* b_out, const T* w, const T* bias, const T* gamma,
                                const T* beta, const T* mean, const T* var, double eps,
                                int64_t channels, int64_t per_channel, cudaStream_t stream) {
  const int64_t n = channels * per_channel > channels ? channels * per_channel : channels;
  fold_conv_bn_kernel<<<elementwise_blocks(n), k_threads, 0, stream>>>(
      w_out, b_out, w, bias, gamma, beta, mean, var, static_cast<math::opmath_t<T>>(eps), channels,
      per_channel);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                                                    \
  template cudaError_t launch_fold_conv_bn<T>(T*, T*, const T*, const T*, const T*, const T*,    \
                                              const T*, const T*, double, int64_t, int64_t,       \
                                              cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)

} // namespace opforge::cuda
