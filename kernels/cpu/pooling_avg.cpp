// CPU kernels for avg_pool2d, adaptive_avg_pool2d and their backward ops,
// structured ops (Note [Structured ops]): the plan holds the planes, the
// windows and the divisor. Regular windows and adaptive bins share the plane
// loops of pooling.h.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/adaptive_avg_pool2d.h>
#include <opforge/ops/adaptive_avg_pool2d_backward.h>
#include <opforge/ops/avg_pool2d.h>
#include <opforge/ops/avg_pool2d_backward.h>

#include "pooling.h"
#include "pooling_nhwc.h"

#include <opforge/pooling/math.h>
#include <opforge/pooling/plan.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

template <typename T, typename Win>
void avg_pool(T* y, const T* x, const avg_plan<Win>& plan) {
  const math::planes& g = plan.g;
  const cpu::window_table row_table = cpu::tabulate_ranges(plan.rows);
  const cpu::window_table col_table = cpu::tabulate_ranges(plan.cols);
  if (plan.channels_last) {
    cpu::avg_pool_nhwc(x, g, plan.channels, plan.window, row_table, col_table, plan.divisor, y);
    return;
  }
  const math::avg_range& r = row_table.range(0);
  const math::avg_range& c = col_table.range(0);
  if (g.out_size() == 1 && r.end - r.start == g.in_h && c.end - c.start == g.in_w) {
    // Global pooling: a plain sum per plane, without the per-window set-up.
    using A = math::opmath_t<T>;
    const auto d = static_cast<A>(plan.divisor(r, c));
    cpu::plane_ranges(g.count, g.in_size(), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        y[p] = math::cast_to<T>(cpu::run_sum<A>(x + p * g.in_size(), g.in_size()) / d);
      }
    });
    return;
  }
  cpu::plane_ranges(g.count, g.out_size() * plan.window, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      cpu::avg_plane(x + p * g.in_size(), g.in_w, row_table, col_table, plan.divisor,
                     y + p * g.out_size());
    }
  });
}

template <typename T, typename Win>
void avg_pool_backward(T* grad_input, const T* grad_output, const avg_plan<Win>& plan) {
  const math::planes& g = plan.g;
  const cpu::window_table row_table = cpu::tabulate_ranges(plan.rows);
  const cpu::window_table col_table = cpu::tabulate_ranges(plan.cols);
  if (plan.channels_last) {
    cpu::avg_pool_backward_nhwc(grad_input, grad_output, g, plan.channels, plan.window, row_table,
                                col_table, plan.divisor);
    return;
  }
  cpu::accumulate_planes(grad_input, g, g.out_size() * plan.window, [&](int64_t p, auto* acc) {
    cpu::avg_plane_backward(grad_output + p * g.out_size(), g.in_w, row_table, col_table,
                            plan.divisor, acc);
  });
}

} // namespace

template <typename scalar_t>
void avg_pool2d_cpu(scalar_t* result, const scalar_t* self, const avg_pool_plan& plan) {
  avg_pool(result, self, plan);
}

template <typename scalar_t>
void avg_pool2d_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t*,
                             const avg_pool_plan& plan) {
  avg_pool_backward(result, grad_output, plan);
}

template <typename scalar_t>
void adaptive_avg_pool2d_cpu(scalar_t* result, const scalar_t* self,
                             const adaptive_avg_pool_plan& plan) {
  avg_pool(result, self, plan);
}

template <typename scalar_t>
void adaptive_avg_pool2d_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                                      const scalar_t*, const adaptive_avg_pool_plan& plan) {
  avg_pool_backward(result, grad_output, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
