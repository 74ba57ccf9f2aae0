// CPU kernels of the per-channel fake quantization ops (structured ops, Note
// [Structured ops]): self as [outer, channels, inner] (opforge/quantize_plan.h),
// each contiguous run of `inner` elements sharing one scale and zero point; the
// element math is the per-tensor functors' (opforge/math/quantize.h).
#include <opforge/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/math/quantize.h>
#include <opforge/quantize_plan.h>

#include "channel_runs.h"

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

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

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
