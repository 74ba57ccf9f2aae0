// CPU kernels of the per-channel and the learnable fake quantization ops
// (structured ops, Note [Structured ops]): self as [outer, channels, inner]
// (opforge/quantize/plan.h), each contiguous run of `inner` elements sharing
// one scale and zero point; the element math is opforge/quantize/math.h's.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/quantize/math.h>
#include <opforge/quantize/plan.h>

#include "channel_runs.h"

#include <array>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

template <bool per_channel>
void learnable_forward(float* result, const float* self, const float* scale, const float* zero_point,
                       const learnable_quantize_plan& plan) {
  const per_channel_plan& l = plan.layout;
  cpu::for_each_channel_span(l.outer, l.channels, l.inner, k_grain, [&](int64_t begin, int64_t end, int64_t c) {
    const auto z = static_cast<int64_t>(math::learnable_zero_point(zero_point[c], l.quant_min, l.quant_max, false));
    const math::fake_quantize_fn<float, per_channel> fn{scale[c], z, l.quant_min, l.quant_max};
    for (int64_t i = begin; i < end; ++i) {
      result[i] = fn(self[i]);
    }
  });
}

// grad_self element by element, the scale and zero point gradients as
// per-channel sums; the per-tensor backward rounds its zero point half up.
void learnable_backward(float* grad_self, float* grad_scale, float* grad_zero_point, const float* grad,
                        const float* self, const float* scale, const float* zero_point,
                        const learnable_quantize_plan& plan) {
  const per_channel_plan& l = plan.layout;
  std::vector<math::learnable_fake_quantize_grad_fn> fns;  // one per channel
  for (int64_t c = 0; c < l.channels; ++c) {
    const float z = math::learnable_zero_point(zero_point[c], l.quant_min, l.quant_max, !plan.per_channel);
    fns.push_back({scale[c], 1.0f / scale[c], z, static_cast<float>(l.quant_min), static_cast<float>(l.quant_max),
                   plan.grad_factor});
  }
  const std::vector<double> sums =
      cpu::channel_sums<2>(l.outer, l.channels, l.inner, [&](int64_t i, int64_t c, std::array<double, 2>& acc) {
        float d_scale = 0.0f;
        float d_zero_point = 0.0f;
        grad_self[i] = fns[c](grad[i], self[i], d_scale, d_zero_point);
        acc[0] += d_scale;
        acc[1] += d_zero_point;
      });
  for (int64_t c = 0; c < l.channels; ++c) {
    grad_scale[c] = static_cast<float>(sums[c]);
    grad_zero_point[c] = static_cast<float>(sums[l.channels + c]);
  }
}

}  // namespace

template <typename scalar_t>
void fake_quantize_per_channel_affine_cpu(scalar_t* result, const scalar_t* self, const float* scale,
                                          const int32_t* zero_point, const per_channel_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  cpu::for_each_channel_run(plan.outer, plan.channels, plan.inner, k_grain, [&](int64_t run, int64_t c) {
    const math::fake_quantize_fn<scalar_t, true> fn{static_cast<A>(scale[c]), zero_point[c], plan.quant_min,
                                              plan.quant_max};
    for (int64_t i = run * plan.inner; i < (run + 1) * plan.inner; ++i) {
      result[i] = fn(self[i]);
    }
  });
}

template <typename scalar_t>
void fake_quantize_per_channel_affine_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                                                   const scalar_t* self, const float* scale,
                                                   const int32_t* zero_point, const per_channel_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  cpu::for_each_channel_run(plan.outer, plan.channels, plan.inner, k_grain, [&](int64_t run, int64_t c) {
    const math::fake_quantize_backward_fn<scalar_t> fn{static_cast<A>(scale[c]), zero_point[c], plan.quant_min,
                                                       plan.quant_max};
    for (int64_t i = run * plan.inner; i < (run + 1) * plan.inner; ++i) {
      result[i] = fn(grad_output[i], self[i]);
    }
  });
}

template <typename scalar_t>
void fake_quantize_learnable_per_tensor_affine_cpu(scalar_t* result, const scalar_t* self, const float* scale,
                                                   const float* zero_point, const learnable_quantize_plan& plan) {
  learnable_forward<false>(result, self, scale, zero_point, plan);
}

template <typename scalar_t>
void fake_quantize_learnable_per_channel_affine_cpu(scalar_t* result, const scalar_t* self, const float* scale,
                                                    const float* zero_point, const learnable_quantize_plan& plan) {
  learnable_forward<true>(result, self, scale, zero_point, plan);
}

template <typename scalar_t>
void fake_quantize_learnable_per_tensor_affine_backward_cpu(scalar_t* result0, scalar_t* result1, scalar_t* result2,
                                                            const scalar_t* grad, const scalar_t* self,
                                                            const float* scale, const float* zero_point,
                                                            const learnable_quantize_plan& plan) {
  learnable_backward(result0, result1, result2, grad, self, scale, zero_point, plan);
}

template <typename scalar_t>
void fake_quantize_learnable_per_channel_affine_backward_cpu(scalar_t* result0, scalar_t* result1, scalar_t* result2,
                                                             const scalar_t* grad, const scalar_t* self,
                                                             const float* scale, const float* zero_point,
                                                             const learnable_quantize_plan& plan) {
  learnable_backward(result0, result1, result2, grad, self, scale, zero_point, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
