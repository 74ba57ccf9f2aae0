#pragma once
// A contiguous tensor viewed as [outer, channels, inner] is outer * channels
// runs of `inner` elements, each in one channel: the loop of the per-channel
// CPU kernels (prelu, per-channel fake quantization), parallel over the runs.
#include <opforge/cpu_capability.h>  // Note [CPU capabilities]

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

// f(run, channel) for every run, `grain_elements` elements per task at least.
template <typename F>
void for_each_channel_run(int64_t outer, int64_t channels, int64_t inner, int64_t grain_elements, F f) {
  const int64_t runs = outer * channels;
  const int64_t grain = std::max<int64_t>(1, grain_elements / std::max<int64_t>(1, inner));
  at::parallel_for(0, runs, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      f(r, r % channels);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
