// CUDA kernel of fold_conv_bn (see conv.cuh): one thread per weight, the
// threads of the first `channels` indices also write the folded bias.
#include "common.cuh"
#include "conv.cuh"

#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

template <typename T>
__global__ void fold_conv_bn_kernel(const T* __restrict__ w, const T* __restrict__ conv_bias,
                                    const T* __restrict__ gamma, const T* __restrict__ beta,
                                    const T* __restrict__ mean, const T* __restrict__ var,
                                    math::opmath_t<T> eps, int64_t channels, int64_t row,
                                    T* __restrict__ out_w, T* __restrict__ out_b, int64_t total) {
  using A = math::opmath_t<T>;
  const auto folded = [&](int64_t o) {
    const auto c = [](T v) { return math::cast_to<A>(v); };
    return math::folded_bn<A>(conv_bias != nullptr ? c(conv_bias[o]) : A(0), c(gamma[o]),
                              c(beta[o]), c(mean[o]), c(var[o]), eps);
  };
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    if (idx < channels * row) {
      out_w[idx] = math::cast_to<T>(math::cast_to<A>(w[idx]) * folded(idx / row).scale);
    }
    if (idx < channels) {
      out_b[idx] = math::cast_to<T>(folded(idx).shift);
    }
  }
}

} // namespace

template <typename T>
cudaError_t launch_fold_conv_bn(const T* w, const T* conv_bias, const T* gamma, const T* beta,
                                const T* mean, const T* var, double eps, int64_t channels,
                                int64_t row, T* out_w, T* out_b, cudaStream_t stream) {
  const int64_t weights = channels * row;
  const int64_t total = weights > channels ? weights : channels;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, fold_conv_bn_kernel)(
      w, conv_bias, gamma, beta, mean, var, static_cast<math::opmath_t<T>>(eps), channels, row,
      out_w, out_b, total);
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                                                  \
  template cudaError_t launch_fold_conv_bn<T>(const T*, const T*, const T*, const T*,          \
                                              const T*, const T*, double, int64_t, int64_t,    \
                                              T*, T*, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
