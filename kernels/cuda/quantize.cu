// CUDA kernels of the per-channel fake quantization ops (structured ops, Note
// [Structured ops]): one thread per element in a grid-stride loop, the channel
// from the element's index in [outer, channels, inner]; the element math is
// the per-tensor functors' (opforge/math/quantize.h), as on the CPU.
#include "for_each.cuh"

#include <opforge/math/opmath.h>
#include <opforge/math/quantize.h>
#include <opforge/quantize_plan.h>

namespace opforge {
namespace {

template <typename T>
struct forward_element {
  T* out;
  const T* x;
  const float* scale;
  const int32_t* zero_point;
  int64_t quant_min;
  int64_t quant_max;
  __device__ void operator()(int64_t c, int64_t i) const {
    const math::fake_quantize_fn<T, true> fn{static_cast<math::opmath_t<T>>(scale[c]), zero_point[c], quant_min, quant_max};
    out[i] = fn(x[i]);
  }
};

template <typename T>
struct backward_element {
  T* out;
  const T* grad;
  const T* x;
  const float* scale;
  const int32_t* zero_point;
  int64_t quant_min;
  int64_t quant_max;
  __device__ void operator()(int64_t c, int64_t i) const {
    const math::fake_quantize_backward_fn<T> fn{static_cast<math::opmath_t<T>>(scale[c]), zero_point[c], quant_min,
                                                quant_max};
    out[i] = fn(grad[i], x[i]);
  }
};

// f(channel of i, i) for index i (no extended __device__ lambdas in this build).
template <typename F>
struct with_channel {
  per_channel_plan plan;
  F f;
  __device__ void operator()(int64_t i) const { f((i / plan.inner) % plan.channels, i); }
};

template <typename F>
cudaError_t launch(const per_channel_plan& plan, F f, cudaStream_t stream) {
  return cuda::for_each_index(plan.outer * plan.channels * plan.inner, with_channel<F>{plan, f}, stream);
}

}  // namespace

template <typename scalar_t>
cudaError_t fake_quantize_per_channel_affine_cuda(scalar_t* result, const scalar_t* self, const float* scale,
                                                  const int32_t* zero_point, const per_channel_plan& plan,
                                                  cudaStream_t stream) {
  return launch(plan, forward_element<scalar_t>{result, self, scale, zero_point, plan.quant_min, plan.quant_max},
                stream);
}

template <typename scalar_t>
cudaError_t fake_quantize_per_channel_affine_backward_cuda(scalar_t* result, const scalar_t* grad_output,
                                                           const scalar_t* self, const float* scale,
                                                           const int32_t* zero_point, const per_channel_plan& plan,
                                                           cudaStream_t stream) {
  return launch(
      plan, backward_element<scalar_t>{result, grad_output, self, scale, zero_point, plan.quant_min, plan.quant_max},
      stream);
}

}  // namespace opforge
