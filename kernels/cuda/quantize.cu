// CUDA kernels of the per-channel and the learnable fake quantization ops
// (structured ops, Note [Structured ops]): one thread per element in a
// grid-stride loop, the channel from the element's index in [outer, channels,
// inner]; the element math is opforge/quantize/math.h's, as on the CPU. The
// learnable backward sums each channel's scale and zero point gradients in
// channel_sum_splits() shares, a block each, then adds the shares in order.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/math/opmath.h>
#include <opforge/quantize/math.h>
#include <opforge/quantize/plan.h>

namespace opforge {
namespace {

// The integer zero point of channel c: given (fake_quantize_per_channel_affine),
// or rounded from the learnable float one (the forward's rounding).
__device__ inline int64_t zero_point_of(const int32_t* zero_point, int64_t c, int64_t, int64_t) {
  return zero_point[c];
}
__device__ inline int64_t zero_point_of(const float* zero_point, int64_t c, int64_t quant_min, int64_t quant_max) {
  return static_cast<int64_t>(math::learnable_zero_point(zero_point[c], quant_min, quant_max, false));
}

template <typename T, typename Z, bool per_channel = true>
struct forward_element {
  T* out;
  const T* x;
  const float* scale;
  const Z* zero_point;
  int64_t quant_min;
  int64_t quant_max;
  __device__ void operator()(int64_t c, int64_t i) const {
    const int64_t z = zero_point_of(zero_point, c, quant_min, quant_max);
    const math::fake_quantize_fn<T, per_channel> fn{static_cast<math::opmath_t<T>>(scale[c]), z, quant_min, quant_max};
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

template <bool per_channel>
cudaError_t learnable_forward(float* result, const float* self, const float* scale, const float* zero_point,
                              const learnable_quantize_plan& plan, cudaStream_t stream) {
  const per_channel_plan& l = plan.layout;
  return launch(l, forward_element<float, float, per_channel>{result, self, scale, zero_point, l.quant_min, l.quant_max},
                stream);
}

// Blocks (x, y) take channel x (grid-stride) and share y of its elements:
// grad_self for each, and the share's two sums, in double, into `partial`
// ([2][channels][splits]).
__global__ void __launch_bounds__(cuda::k_max_block_reduce_threads)
    learnable_backward_kernel(float* grad_self, double* partial, const float* grad, const float* x,
                              const float* scale, const float* zero_point, learnable_quantize_plan plan,
                              int64_t chunk) {
  __shared__ double shared[32];
  const per_channel_plan& l = plan.layout;
  const int64_t count = l.outer * l.inner;
  const int64_t begin = blockIdx.y * chunk;
  const int64_t end = begin + chunk < count ? begin + chunk : count;
  for (int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
    const float z = math::learnable_zero_point(zero_point[c], l.quant_min, l.quant_max, !plan.per_channel);
    const math::learnable_fake_quantize_grad_fn fn{scale[c], 1.0f / scale[c], z, static_cast<float>(l.quant_min),
                                                   static_cast<float>(l.quant_max), plan.grad_factor};
    double sums[2] = {0.0, 0.0};
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      const int64_t o = k / l.inner;
      const int64_t i = (o * l.channels + c) * l.inner + (k - o * l.inner);
      float d_scale = 0.0f;
      float d_zero_point = 0.0f;
      grad_self[i] = fn(grad[i], x[i], d_scale, d_zero_point);
      sums[0] += d_scale;
      sums[1] += d_zero_point;
    }
    for (int s = 0; s < 2; ++s) {
      const double total = cuda::block_reduce(sums[s], cuda::sum_op{}, 0.0, shared);
      if (threadIdx.x == 0) {
        partial[(s * l.channels + c) * gridDim.y + blockIdx.y] = total;
      }
    }
  }
}

// Each channel's shares added in order (deterministic).
__global__ void learnable_sum_kernel(float* grad_scale, float* grad_zero_point, const double* partial,
                                     int64_t channels, int64_t splits) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t c = cuda::global_thread(); c < channels; c += stride) {
    double s[2] = {0.0, 0.0};
    for (int k = 0; k < 2; ++k) {
      for (int64_t j = 0; j < splits; ++j) {
        s[k] += partial[(k * channels + c) * splits + j];
      }
    }
    grad_scale[c] = static_cast<float>(s[0]);
    grad_zero_point[c] = static_cast<float>(s[1]);
  }
}

cudaError_t learnable_backward(float* grad_self, float* grad_scale, float* grad_zero_point, const float* grad,
                               const float* self, const float* scale, const float* zero_point,
                               const learnable_quantize_plan& plan, cudaStream_t stream) {
  using namespace cuda;
  const per_channel_plan& l = plan.layout;
  if (l.channels == 0) {
    return cudaSuccess;
  }
  auto* partial = static_cast<double*>(plan.workspace);
  // Every channel gets its blocks even without elements, so its sums are written.
  const int64_t chunk = ceil_div(l.outer * l.inner, plan.splits);
  const dim3 grid(static_cast<unsigned>(l.channels < k_max_blocks ? l.channels : k_max_blocks),
                  static_cast<unsigned>(plan.splits));
  OPFORGE_LAUNCH(grid, row_threads(chunk, k_max_block_reduce_threads), 0, stream, learnable_backward_kernel)(
      grad_self, partial, grad, self, scale, zero_point, plan, chunk);
  OPFORGE_LAUNCH(elementwise_blocks(l.channels), k_threads, 0, stream, learnable_sum_kernel)(
      grad_scale, grad_zero_point, partial, l.channels, plan.splits);
  return cudaGetLastError();
}

}  // namespace

template <typename scalar_t>
cudaError_t fake_quantize_per_channel_affine_cuda(scalar_t* result, const scalar_t* self, const float* scale,
                                                  const int32_t* zero_point, const per_channel_plan& plan,
                                                  cudaStream_t stream) {
  return launch(plan, forward_element<scalar_t, int32_t>{result, self, scale, zero_point, plan.quant_min, plan.quant_max},
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

template <typename scalar_t>
cudaError_t fake_quantize_learnable_per_tensor_affine_cuda(scalar_t* result, const scalar_t* self, const float* scale,
                                                           const float* zero_point,
                                                           const learnable_quantize_plan& plan, cudaStream_t stream) {
  return learnable_forward<false>(result, self, scale, zero_point, plan, stream);
}

template <typename scalar_t>
cudaError_t fake_quantize_learnable_per_channel_affine_cuda(scalar_t* result, const scalar_t* self,
                                                            const float* scale, const float* zero_point,
                                                            const learnable_quantize_plan& plan,
                                                            cudaStream_t stream) {
  return learnable_forward<true>(result, self, scale, zero_point, plan, stream);
}

template <typename scalar_t>
cudaError_t fake_quantize_learnable_per_tensor_affine_backward_cuda(scalar_t* result0, scalar_t* result1,
                                                                    scalar_t* result2, const scalar_t* grad,
                                                                    const scalar_t* self, const float* scale,
                                                                    const float* zero_point,
                                                                    const learnable_quantize_plan& plan,
                                                                    cudaStream_t stream) {
  return learnable_backward(result0, result1, result2, grad, self, scale, zero_point, plan, stream);
}

template <typename scalar_t>
cudaError_t fake_quantize_learnable_per_channel_affine_backward_cuda(scalar_t* result0, scalar_t* result1,
                                                                     scalar_t* result2, const scalar_t* grad,
                                                                     const scalar_t* self, const float* scale,
                                                                     const float* zero_point,
                                                                     const learnable_quantize_plan& plan,
                                                                     cudaStream_t stream) {
  return learnable_backward(result0, result1, result2, grad, self, scale, zero_point, plan, stream);
}

}  // namespace opforge
