// CUDA kernels of the affine quantize/dequantize ops (structured ops, Note
// [Structured ops]): one thread per element in a grid-stride loop, the channel
// (per-channel ops) from the element's index in [outer, channels, inner]; the
// element math is opforge/quantize_affine/math.h's, as on the CPU.
#include "for_each.cuh"

#include <opforge/math/opmath.h>
#include <opforge/quantize_affine/math.h>
#include <opforge/quantize/plan.h>

namespace opforge {
namespace {

template <typename T, typename Q>
struct quantize_element {
  Q* out;
  const T* x;
  quantize_plan plan;
  __device__ void operator()(int64_t i) const {
    out[i] = math::quantize_affine<Q, float>(math::cast_to<float>(x[i]), plan.inv_scale, plan.zero_point,
                                             plan.quant_min, plan.quant_max);
  }
};

template <typename Q, typename T>
struct dequantize_element {
  T* out;
  const Q* x;
  dequantize_plan plan;
  __device__ void operator()(int64_t i) const {
    out[i] = math::dequantize_affine<T>(x[i], plan.scale, plan.zero_point);
  }
};

template <typename T, typename S, typename Z, typename Q>
struct quantize_channel_element {
  Q* out;
  const T* x;
  const S* scales;
  const Z* zero_points;
  per_channel_plan plan;
  __device__ void operator()(int64_t i) const {
    const int64_t c = (i / plan.inner) % plan.channels;
    out[i] = math::quantize_channel<Q>(x[i], S(1) / scales[c], zero_points[c], plan.quant_min, plan.quant_max);
  }
};

template <typename Q, typename S, typename Z, typename T>
struct dequantize_channel_element {
  T* out;
  const Q* x;
  const S* scales;
  const Z* zero_points;  // null: no zero points
  per_channel_plan plan;
  __device__ void operator()(int64_t i) const {
    const int64_t c = (i / plan.inner) % plan.channels;
    const int64_t zero_point = zero_points == nullptr ? 0 : static_cast<int64_t>(zero_points[c]);
    out[i] = math::dequantize_channel<T>(x[i], scales[c], zero_point);
  }
};

}  // namespace

template <typename scalar_t, typename result_t>
cudaError_t quantize_per_tensor_cuda(result_t* result, const scalar_t* input, const quantize_plan& plan,
                                     cudaStream_t stream) {
  return cuda::for_each_index(plan.numel, quantize_element<scalar_t, result_t>{result, input, plan}, stream);
}

template <typename scalar_t, typename result_t>
cudaError_t dequantize_per_tensor_cuda(result_t* result, const scalar_t* input, const dequantize_plan& plan,
                                       cudaStream_t stream) {
  return cuda::for_each_index(plan.numel, dequantize_element<scalar_t, result_t>{result, input, plan}, stream);
}

template <typename scalar_t, typename scales_t, typename zero_points_t, typename result_t>
cudaError_t quantize_per_channel_cuda(result_t* result, const scalar_t* input, const scales_t* scales,
                                      const zero_points_t* zero_points, const per_channel_plan& plan,
                                      cudaStream_t stream) {
  const quantize_channel_element<scalar_t, scales_t, zero_points_t, result_t> f{result, input, scales,
                                                                                zero_points, plan};
  return cuda::for_each_index(plan.outer * plan.channels * plan.inner, f, stream);
}

template <typename scalar_t, typename scales_t, typename zero_points_t, typename result_t>
cudaError_t dequantize_per_channel_cuda(result_t* result, const scalar_t* input, const scales_t* scales,
                                        const zero_points_t* zero_points, const per_channel_plan& plan,
                                        cudaStream_t stream) {
  const dequantize_channel_element<scalar_t, scales_t, zero_points_t, result_t> f{result, input, scales,
                                                                                  zero_points, plan};
  return cuda::for_each_index(plan.outer * plan.channels * plan.inner, f, stream);
}

namespace {

struct truncate_element {
  c10::BFloat16* out;
  const float* x;
  __device__ void operator()(int64_t i) const { out[i] = math::truncate_to_bfloat16(x[i]); }
};

}  // namespace

template <typename scalar_t>
cudaError_t bfloat16_truncate_cuda(c10::BFloat16* result, const scalar_t* self, const dequantize_plan& plan,
                                   cudaStream_t stream) {
  return cuda::for_each_index(plan.numel, truncate_element{result, self}, stream);
}

}  // namespace opforge
