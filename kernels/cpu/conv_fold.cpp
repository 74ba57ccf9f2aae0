// CPU kernel of fold_conv_bn: one pass over the conv weight, a row of weights
// per output channel, scaled by that channel's folded factor. A structured op
// (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_impl.h"

#include <opforge/conv/plan.h>
#include <opforge/conv/math.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {

template <typename scalar_t>
void fold_conv_bn_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* conv_weight, const scalar_t* conv_bias,
                      const scalar_t* bn_weight, const scalar_t* bn_bias, const scalar_t* running_mean,
                      const scalar_t* running_var, const fold_bn_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const int64_t row = plan.row;
  const auto cast = [](scalar_t v) { return math::cast_to<A>(v); };
  at::parallel_for(0, plan.channels, cpu::task_grain(row), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const math::folded_bn<A> f(conv_bias != nullptr ? cast(conv_bias[o]) : A(0), cast(bn_weight[o]),
                                 cast(bn_bias[o]), cast(running_mean[o]), cast(running_var[o]),
                                 static_cast<A>(plan.eps));
      const scalar_t* src = conv_weight + o * row;
      scalar_t* dst = result0 + o * row;
      for (int64_t i = 0; i < row; ++i) {
        dst[i] = math::cast_to<scalar_t>(cast(src[i]) * f.scale);
      }
      result1[o] = math::cast_to<scalar_t>(f.shift);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
