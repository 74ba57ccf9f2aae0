// CPU kernel of repvgg_fuse: one row of the fused 3x3 weight per output
// channel. The 3x3 branch scales the whole row (a loop that vectorizes); the
// 1x1 and identity branches touch only the kernel centres, which are then
// recomputed as the full sum so that every weight is rounded once. A
// structured op (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_impl.h"

#include <opforge/conv/math.h>
#include <opforge/conv/plan.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {

template <typename scalar_t>
void repvgg_fuse_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* weight3x3, const scalar_t* bn3_weight,
                     const scalar_t* bn3_bias, const scalar_t* bn3_mean, const scalar_t* bn3_var,
                     const scalar_t* weight1x1, const scalar_t* bn1_weight, const scalar_t* bn1_bias,
                     const scalar_t* bn1_mean, const scalar_t* bn1_var, const scalar_t* bnid_weight,
                     const scalar_t* bnid_bias, const scalar_t* bnid_mean, const scalar_t* bnid_var,
                     const repvgg_fuse_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  constexpr int64_t area = repvgg_fuse_plan::k_area;
  constexpr int64_t centre = repvgg_fuse_plan::k_centre;
  const int64_t in_per_group = plan.in_per_group;
  const int64_t row = plan.row();
  const A eps = static_cast<A>(plan.eps);
  const auto cast = [](scalar_t v) { return math::cast_to<A>(v); };
  // One branch's BN as a scale of its kernel and a bias (no conv bias).
  const auto fold = [&](const scalar_t* gamma, const scalar_t* beta, const scalar_t* mean, const scalar_t* var,
                        int64_t o) {
    return math::folded_bn<A>(A(0), cast(gamma[o]), cast(beta[o]), cast(mean[o]), cast(var[o]), eps);
  };
  // (the BN says whether a branch is there: an empty weight1x1 may come as a null pointer)
  const bool has_1x1 = bn1_weight != nullptr;
  const bool has_identity = bnid_weight != nullptr;
  at::parallel_for(0, plan.out_channels, cpu::task_grain(row), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const math::folded_bn<A> f3 = fold(bn3_weight, bn3_bias, bn3_mean, bn3_var, o);
      const scalar_t* w3 = weight3x3 + o * row;
      scalar_t* dst = result0 + o * row;
      for (int64_t i = 0; i < row; ++i) {
        dst[i] = math::cast_to<scalar_t>(cast(w3[i]) * f3.scale);
      }
      A bias = f3.shift;
      if (has_1x1 || has_identity) {
        A scale1 = A(0);
        const scalar_t* w1 = nullptr;
        if (has_1x1) {
          const math::folded_bn<A> f1 = fold(bn1_weight, bn1_bias, bn1_mean, bn1_var, o);
          scale1 = f1.scale;
          bias += f1.shift;
          w1 = weight1x1 + o * in_per_group;
        }
        A scale_id = A(0);
        int64_t id_channel = -1;  // none
        if (has_identity) {
          const math::folded_bn<A> fid = fold(bnid_weight, bnid_bias, bnid_mean, bnid_var, o);
          scale_id = fid.scale;
          bias += fid.shift;
          // Output channel o sees input channel o, which is o % in_per_group within its group.
          id_channel = o % in_per_group;
        }
        for (int64_t i = 0; i < in_per_group; ++i) {
          A v = cast(w3[i * area + centre]) * f3.scale;
          if (w1 != nullptr) {
            v += cast(w1[i]) * scale1;
          }
          if (i == id_channel) {
            v += scale_id;
          }
          dst[i * area + centre] = math::cast_to<scalar_t>(v);
        }
      }
      result1[o] = math::cast_to<scalar_t>(bias);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
