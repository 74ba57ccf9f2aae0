#pragma once
// A contiguous tensor viewed as [outer, channels, inner] is outer * channels
// runs of `inner` elements, each in one channel: the loops of the per-channel
// CPU kernels (prelu, fake quantization), parallel over the runs, over spans of
// the flat range, or over the shares of each channel's per-channel sums.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <ATen/Parallel.h>

#include <opforge/core/channel_splits.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

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

// f(begin, end, channel) over spans of the flat range [0, outer * channels *
// inner), each within one run, split at `grain_elements` (so a single channel
// of many elements is parallel too).
template <typename F>
void for_each_channel_span(int64_t outer, int64_t channels, int64_t inner, int64_t grain_elements, F f) {
  if (inner == 0) {
    return;
  }
  at::parallel_for(0, outer * channels * inner, grain_elements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end;) {
      const int64_t run = i / inner;
      const int64_t stop = std::min(end, (run + 1) * inner);
      f(i, stop, run % channels);
      i = stop;
    }
  });
}

// K sums per channel (opforge/core/channel_splits.h): each of the channel's
// channel_sum_splits() shares of elements is one task, f(index, channel, acc)
// adding an element's K contributions to acc, and the shares are added in
// order. Returns sums[k * channels + c], 0 for a channel without elements.
template <int K, typename F>
std::vector<double> channel_sums(int64_t outer, int64_t channels, int64_t inner, F f) {
  const int64_t count = outer * inner;  // elements per channel
  const int64_t splits = channel_sum_splits(outer * inner);
  const int64_t chunk = (count + splits - 1) / splits;
  std::vector<std::array<double, K>> partial(static_cast<size_t>(channels * splits));
  at::parallel_for(0, channels * splits, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t c = t / splits;
      const int64_t k1 = std::min(count, (t % splits + 1) * chunk);
      std::array<double, K> acc{};
      for (int64_t k = t % splits * chunk; k < k1;) {
        const int64_t o = k / inner;
        const int64_t offset = k - o * inner;
        const int64_t len = std::min(k1 - k, inner - offset);
        const int64_t base = (o * channels + c) * inner + offset;
        for (int64_t j = 0; j < len; ++j) {
          f(base + j, c, acc);
        }
        k += len;
      }
      partial[t] = acc;
    }
  });
  std::vector<double> sums(static_cast<size_t>(K * channels), 0.0);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t s = 0; s < splits; ++s) {
      for (int k = 0; k < K; ++k) {
        sums[k * channels + c] += partial[c * splits + s][k];
      }
    }
  }
  return sums;
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
