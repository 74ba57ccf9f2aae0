// CPU kernels of the affine quantize/dequantize ops (structured ops, Note
// [Structured ops]): elementwise over the contiguous input, per tensor or per
// run of a channel ([outer, channels, inner], opforge/quantize/plan.h); the
// element math is opforge/quantize_affine/math.h's, shared with CUDA.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/quantize_affine/math.h>
#include <opforge/quantize/plan.h>

#include <ATen/Parallel.h>

#include "channel_runs.h"

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

}  // namespace

template <typename scalar_t, typename result_t>
void quantize_per_tensor_cpu(result_t* result, const scalar_t* input, const quantize_plan& plan) {
  at::parallel_for(0, plan.numel, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      result[i] = math::quantize_affine<result_t, float>(math::cast_to<float>(input[i]), plan.inv_scale,
                                                         plan.zero_point, plan.quant_min, plan.quant_max);
    }
  });
}

template <typename scalar_t, typename result_t>
void dequantize_per_tensor_cpu(result_t* result, const scalar_t* input, const dequantize_plan& plan) {
  at::parallel_for(0, plan.numel, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      result[i] = math::dequantize_affine<result_t>(input[i], plan.scale, plan.zero_point);
    }
  });
}

template <typename scalar_t, typename scales_t, typename zero_points_t, typename result_t>
void quantize_per_channel_cpu(result_t* result, const scalar_t* input, const scales_t* scales,
                              const zero_points_t* zero_points, const per_channel_plan& plan) {
  cpu::for_each_channel_run(plan.outer, plan.channels, plan.inner, k_grain, [&](int64_t run, int64_t c) {
    const scales_t inv_scale = scales_t(1) / scales[c];
    const zero_points_t zero_point = zero_points[c];
    for (int64_t i = run * plan.inner; i < (run + 1) * plan.inner; ++i) {
      result[i] = math::quantize_channel<result_t>(input[i], inv_scale, zero_point, plan.quant_min, plan.quant_max);
    }
  });
}

template <typename scalar_t, typename scales_t, typename zero_points_t, typename result_t>
void dequantize_per_channel_cpu(result_t* result, const scalar_t* input, const scales_t* scales,
                                const zero_points_t* zero_points, const per_channel_plan& plan) {
  cpu::for_each_channel_run(plan.outer, plan.channels, plan.inner, k_grain, [&](int64_t run, int64_t c) {
    const int64_t zero_point = zero_points == nullptr ? 0 : static_cast<int64_t>(zero_points[c]);
    for (int64_t i = run * plan.inner; i < (run + 1) * plan.inner; ++i) {
      result[i] = math::dequantize_channel<result_t>(input[i], scales[c], zero_point);
    }
  });
}

template <typename scalar_t>
void bfloat16_truncate_cpu(c10::BFloat16* result, const scalar_t* self, const dequantize_plan& plan) {
  at::parallel_for(0, plan.numel, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      result[i] = math::truncate_to_bfloat16(self[i]);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
