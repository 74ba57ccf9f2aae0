// CUDA kernel of fold_conv_bn: one thread per weight, the threads of the first
// `channels` indices also write the folded bias. A structured op (Note
// [Structured ops]).
#include "common.cuh"

#include <opforge/conv/plan.h>
#include <opforge/conv/math.h>
#include <opforge/math/opmath.h>

namespace opforge {
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
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    if (idx < channels * row) {
      out_w[idx] = math::cast_to<T>(math::cast_to<A>(w[idx]) * folded(idx / row).scale);
    }
    if (idx < channels) {
      out_b[idx] = math::cast_to<T>(folded(idx).shift);
    }
  }
}

}  // namespace

template <typename scalar_t>
cudaError_t fold_conv_bn_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* conv_weight,
                              const scalar_t* conv_bias, const scalar_t* bn_weight, const scalar_t* bn_bias,
                              const scalar_t* running_mean, const scalar_t* running_var, const fold_bn_plan& plan,
                              cudaStream_t stream) {
  const int64_t weights = plan.channels * plan.row;
  const int64_t total = weights > plan.channels ? weights : plan.channels;
  if (total == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, fold_conv_bn_kernel)(
      conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var,
      static_cast<math::opmath_t<scalar_t>>(plan.eps), plan.channels, plan.row, result0, result1, total);
  return cudaGetLastError();
}

}  // namespace opforge
