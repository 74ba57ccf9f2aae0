// CPU kernels for spatial_pyramid_pool and its backward, structured ops (Note
// [Structured ops]). Each (n, c) plane is pooled at every level in turn while
// it is in cache, writing straight into the level's block of the output row:
// no per-level tensors, no cat.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/spatial_pyramid_pool.h>
#include <opforge/ops/spatial_pyramid_pool_backward.h>

#include "pooling.h"

#include <opforge/pooling/math.h>
#include <opforge/pooling/plan.h>

#include <optional>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// One level's bins, tabulated once per call (see cpu::window_table); adaptive
// bins are their own taps and ranges.
struct level {
  int64_t n;
  int64_t offset;  // where the level's block starts in an output row
  cpu::window_table rows;
  cpu::window_table cols;
  std::optional<math::strided_windows> strided_cols;  // uniform bins, for max_plane
};

std::vector<level> levels_of(const spp_plan& plan) {
  std::vector<level> out;
  for (size_t l = 0; l < plan.levels.size(); ++l) {
    const math::adaptive_windows rows{plan.g.in_h, plan.levels[l]};
    const math::adaptive_windows cols{plan.g.in_w, plan.levels[l]};
    out.push_back({plan.levels[l], plan.offsets[l], cpu::tabulate_taps(rows),
                   cpu::tabulate_taps(cols),
                   cpu::uniform(cols) ? std::optional(cpu::as_strided(cols)) : std::nullopt});
  }
  return out;
}

// Plane p's level-l block in the (N, C * bins) output.
int64_t block(const spp_plan& plan, int64_t p, const level& l) {
  return (p / plan.channels) * plan.row + l.offset + (p % plan.channels) * l.n * l.n;
}

} // namespace

template <typename scalar_t>
void spatial_pyramid_pool_cpu(scalar_t* result, const scalar_t* self, const spp_plan& plan) {
  const math::planes& g = plan.g;
  const std::vector<level> levels = levels_of(plan);
  const auto work = g.in_size() * static_cast<int64_t>(levels.size());
  cpu::plane_ranges(g.count, work, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const scalar_t* plane = self + p * g.in_size();
      for (const level& l : levels) {
        scalar_t* dst = result + block(plan, p, l);
        if (!plan.max) {
          cpu::avg_plane(plane, g.in_w, l.rows, l.cols, math::k_bin_size, dst);
        } else if (l.strided_cols.has_value()) {
          cpu::max_plane(plane, g.in_w, l.rows, *l.strided_cols, dst, nullptr);
        } else {
          cpu::max_plane(plane, g.in_w, l.rows, l.cols, dst, nullptr);
        }
      }
    }
  });
}

template <typename scalar_t>
void spatial_pyramid_pool_backward_cpu(scalar_t* result, const scalar_t* grad_output,
                                       const scalar_t* self, const spp_plan& plan) {
  const math::planes& g = plan.g;
  const std::vector<level> levels = levels_of(plan);
  const auto work = g.in_size() * static_cast<int64_t>(levels.size());
  cpu::accumulate_planes(result, g, work, [&](int64_t p, auto* acc) {
    using A = std::remove_pointer_t<decltype(acc)>;
    const scalar_t* plane = self + p * g.in_size();
    for (const level& l : levels) {
      const scalar_t* gp = grad_output + block(plan, p, l);
      if (!plan.max) {
        cpu::avg_plane_backward(gp, g.in_w, l.rows, l.cols, math::k_bin_size, acc);
        continue;
      }
      // The forward's argmax, recomputed: the first maximum, or the last NaN.
      for (int64_t i = 0; i < l.n; ++i) {
        for (int64_t j = 0; j < l.n; ++j) {
          const auto best = cpu::plane_argmax(plane, g.in_w, l.rows, l.cols, i, j);
          acc[best.index] += math::cast_to<A>(gp[i * l.n + j]);
        }
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
