// CPU kernel for channel_shuffle: whole contiguous spatial planes move, so each
// output plane is one unit-stride copy. Output planes are walked in order with
// running (batch, i, j) indices rather than a division per plane, which matters
// when planes are a single element ((N, C, 1, 1) after global pooling).
// A structured op (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/channel_shuffle.h>

#include <opforge/layers/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>

namespace opforge::OPFORGE_CPU_CAPABILITY {

template <typename scalar_t>
void channel_shuffle_cpu(scalar_t* dst, const scalar_t* src, const channel_shuffle_plan& plan) {
  const int64_t g = plan.groups;
  const int64_t channels = plan.channels;
  const int64_t per_group = channels / g;
  const int64_t planes = plan.batch * channels;
  const int64_t inner = plan.inner;
  at::parallel_for(0, planes, std::max<int64_t>(1, 32768 / inner), [&](int64_t p0, int64_t p1) {
    // Output plane p = (b, i, j) over (batch, per_group, g) reads input plane (b, j, i) over (batch, g, per_group).
    int64_t b = p0 / channels;
    int64_t i = (p0 % channels) / g;
    int64_t j = p0 % g;
    for (int64_t p = p0; p < p1; ++p) {
      const scalar_t* s = src + (b * channels + j * per_group + i) * inner;
      scalar_t* d = dst + p * inner;
      for (int64_t k = 0; k < inner; ++k) {
        d[k] = s[k];
      }
      if (++j == g) {
        j = 0;
        if (++i == per_group) {
          i = 0;
          ++b;
        }
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
