// CPU kernel of grid_anchors (a structured op, Note [Structured ops]): one
// element per step of a parallel loop (opforge/anchors/plan.h).
#include <opforge/anchors/plan.h>
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <ATen/Parallel.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {

template <typename scalar_t>
void grid_anchors_cpu(scalar_t* result, const scalar_t* base_anchors, const grid_anchors_plan& plan) {
  at::parallel_for(0, plan.numel, 32768, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      result[e] = grid_anchor(base_anchors, plan, e);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
