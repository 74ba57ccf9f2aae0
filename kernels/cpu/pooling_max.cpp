// CPU kernels for max_pool2d_with_indices, adaptive_max_pool2d_with_indices
// and their backward ops, structured ops (Note [Structured ops]): the plan
// holds the planes and the windows. One walk serves both: the window policies
// of opforge/pooling/math.h say which input positions each output reads. See
// kernels/cpu/pooling.h.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/adaptive_max_pool2d_backward.h>
#include <opforge/ops/adaptive_max_pool2d_with_indices.h>
#include <opforge/ops/max_pool2d_backward.h>
#include <opforge/ops/max_pool2d_with_indices.h>

#include "pooling.h"
#include "pooling_nhwc.h"

#include <opforge/pooling/math.h>
#include <opforge/pooling/plan.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// Values and flat indices (h * W + w within the plane) of every window.
template <typename T, typename Win>
void max_pool(T* y, int64_t* ind, const T* x, const pool_plan<Win>& plan) {
  const math::planes& g = plan.g;
  if (plan.channels_last) {
    cpu::max_pool_nhwc(x, g, plan.channels, plan.window, plan.rows, plan.cols, y, ind);
    return;
  }
  const cpu::window_table row_table = cpu::tabulate_taps(plan.rows);
  cpu::with_max_cols(plan.cols, [&](const auto& c) {
    cpu::plane_ranges(g.count, g.out_size() * plan.window, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        cpu::max_plane(x + p * g.in_size(), g.in_w, row_table, c, y + p * g.out_size(),
                       ind + p * g.out_size());
      }
    });
  });
}

// Scatters each plane's gradients to the inputs its indices name.
template <typename T, typename Win>
void max_pool_backward(T* grad_input, const T* grad_output, const int64_t* indices,
                       const pool_plan<Win>& plan) {
  const math::planes& g = plan.g;
  const cpu::window_table rows = cpu::tabulate_taps(plan.rows);
  const cpu::window_table cols = cpu::tabulate_taps(plan.cols);
  if (plan.channels_last) {
    cpu::max_pool_backward_nhwc(grad_input, grad_output, indices, g, plan.channels, rows, cols);
    return;
  }
  cpu::accumulate_planes(grad_input, g, g.in_size() + g.out_size(), [&](int64_t p, auto* acc) {
    cpu::max_plane_backward(grad_output + p * g.out_size(), indices + p * g.out_size(), g.in_w,
                            rows, cols, acc);
  });
}

} // namespace

template <typename scalar_t>
void max_pool2d_with_indices_cpu(scalar_t* result0, int64_t* result1, const scalar_t* self,
                                 const max_pool_plan& plan) {
  max_pool(result0, result1, self, plan);
}

template <typename scalar_t>
void adaptive_max_pool2d_with_indices_cpu(scalar_t* result0, int64_t* result1,
                                          const scalar_t* self, const adaptive_pool_plan& plan) {
  max_pool(result0, result1, self, plan);
}

template <typename scalar_t>
void max_pool2d_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t*,
                             const int64_t* indices, const max_pool_plan& plan) {
  max_pool_backward(result, grad_output, indices, plan);
}

template <typename scalar_t>
void adaptive_max_pool2d_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                                      const scalar_t*, const int64_t* indices,
                                      const adaptive_pool_plan& plan) {
  max_pool_backward(result, grad_output, indices, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
