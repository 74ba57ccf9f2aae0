// CUDA kernels of the per-channel fake quantization ops (structured ops, Note
// [Structured ops]): one thread per element in a grid-stride loop, the channel
// from the element's index in [outer, channels, inner]; the element math is
// the per-tensor functors' (opforge/math/quantize.h), as on the CPU.
#include "common.cuh"

#include <opforge/math/opmath.h>
#include <opforge/math/quantize.h>
#include <opforge/quantize_plan.h>

namespace opforge {
namespace {

// out[i] = f(channel of i, i) for the plan's elements.
template <typename F>
__global__ void per_channel_kernel(per_channel_plan plan, F f) {
  const int64_t n = plan.outer * plan.channels * plan.inner;
  const int64_t stride = cuda::grid_threads();
  for (int64_t i = cuda::global_thread(); i < n; i += stride) {
    f((i / plan.inner) % plan.channels, i);
  }
}

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

template <typename F>
cudaError_t launch(const per_channel_plan& plan, F f, cudaStream_t stream) {
  const int64_t n = plan.outer * plan.channels * plan.inner;
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream, per_channel_kernel<F>)(plan, f);
  return cudaGetLastError();
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
