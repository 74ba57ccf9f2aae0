// CPU kernels of the pruning ops (structured ops, Note [Structured ops]):
// each channel's Lp norm over the other dims (in parallel over the channels,
// accumulated in double for float data), then ln_structured_mask's ranking of
// the norms (opforge/prune/plan.h) and its 0/1 mask; magnitude_prune_mask's
// exact selection of the smallest magnitudes (nth_element on their bits).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/math/vector_norm.h>
#include <opforge/prune/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "channel_runs.h"

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

// sum_i term(|x_i|) over one run, in k_lanes independent accumulators so the
// loop vectorizes without -ffast-math (opforge/cpu/lanes.h's pattern).
template <typename A, typename T, typename Term>
A run_sum(const T* x, int64_t n, Term term) {
  constexpr int64_t k_lanes = 8;
  A lanes[k_lanes] = {};
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      lanes[j] += term(std::abs(math::cast_to<A>(x[i + j])));
    }
  }
  A total = 0;
  for (; i < n; ++i) {
    total += term(std::abs(math::cast_to<A>(x[i])));
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    total += lanes[j];
  }
  return total;
}

// Channel c's norm accumulation over its outer runs, the order's branch hoisted.
template <typename A, typename T>
A channel_total(const T* weight, const channel_norm_plan& plan, int64_t c) {
  A total = 0;
  for (int64_t o = 0; o < plan.outer; ++o) {
    const T* run = weight + (o * plan.channels + c) * plan.inner;
    if (std::isinf(plan.p)) {
      for (int64_t i = 0; i < plan.inner; ++i) {
        const A m = std::abs(math::cast_to<A>(run[i]));
        total = m > total || m != m ? m : total;
      }
    } else if (plan.p == 1.0) {
      total += run_sum<A>(run, plan.inner, [](A m) { return m; });
    } else if (plan.p == 2.0) {
      total += run_sum<A>(run, plan.inner, [](A m) { return m * m; });
    } else {
      const math::vector_norm_fn<A> norm{plan.p};
      total += run_sum<A>(run, plan.inner, [&](A m) { return norm.term(m); });
    }
  }
  return total;
}

// The channels' norms, as Out (the op's dtype, or the accumulation type to rank in).
template <typename T, typename Out>
void channel_norms(Out* norms, const T* weight, const channel_norm_plan& plan) {
  using A = math::sum_acc_t<T>;
  at::parallel_for(0, plan.channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      norms[c] = math::cast_to<Out>(math::vector_norm_fn<A>{plan.p}.finish(channel_total<A>(weight, plan, c)));
    }
  });
}

}  // namespace

template <typename scalar_t>
void channel_norm_cpu(scalar_t* result, const scalar_t* weight, const channel_norm_plan& plan) {
  channel_norms(result, weight, plan);
}

template <typename scalar_t>
void ln_structured_mask_cpu(scalar_t* result, const scalar_t* weight, const channel_norm_plan& plan) {
  // Ranked unrounded (torch ranks the dtype-rounded norms, whose ties it orders arbitrarily).
  std::vector<math::sum_acc_t<scalar_t>> norms(static_cast<size_t>(plan.channels));
  channel_norms(norms.data(), weight, plan);
  std::vector<char> kept(static_cast<size_t>(plan.channels));
  at::parallel_for(0, plan.channels, 64, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      kept[c] = kept_channel(norms.data(), plan.channels, c, plan.keep) ? 1 : 0;
    }
  });
  cpu::for_each_channel_run(plan.outer, plan.channels, plan.inner, k_grain, [&](int64_t run, int64_t c) {
    const auto value = math::cast_to<scalar_t>(kept[c] ? 1.0f : 0.0f);
    for (int64_t i = run * plan.inner; i < (run + 1) * plan.inner; ++i) {
      result[i] = value;
    }
  });
}

namespace {

// The `prune` elements of smallest key(i) get 0, the others 1: the prune-th
// smallest key by nth_element, then the elements below it and, of those equal
// to it, the ones of highest index.
template <typename scalar_t, typename Key>
void smallest_keys_mask(scalar_t* result, const magnitude_prune_plan& plan, Key key) {
  const int64_t n = plan.numel;
  const auto one = math::cast_to<scalar_t>(1.0f);
  const auto zero = math::cast_to<scalar_t>(0.0f);
  if (plan.prune == 0 || plan.prune == n) {
    const scalar_t fill = plan.prune == 0 ? one : zero;
    at::parallel_for(0, n, k_grain, [&](int64_t b, int64_t e) { std::fill(result + b, result + e, fill); });
    return;
  }
  std::vector<unsigned long long> keys(static_cast<size_t>(n));
  at::parallel_for(0, n, k_grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      keys[i] = key(i);
    }
  });
  std::vector<unsigned long long> order(keys);
  std::nth_element(order.begin(), order.begin() + (plan.prune - 1), order.end());
  const unsigned long long kth = order[plan.prune - 1];
  int64_t below = 0;
  for (const unsigned long long k : keys) {
    below += k < kth ? 1 : 0;
  }
  // The ties to prune are the last (prune - below) elements equal to kth.
  int64_t ties = plan.prune - below;
  int64_t first_pruned_tie = n;
  for (int64_t i = n - 1; i >= 0 && ties > 0; --i) {
    if (keys[i] == kth) {
      first_pruned_tie = i;
      --ties;
    }
  }
  at::parallel_for(0, n, k_grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const bool pruned = keys[i] < kth || (keys[i] == kth && i >= first_pruned_tie);
      result[i] = pruned ? zero : one;
    }
  });
}

}  // namespace

// Keys: the magnitudes' bits (exact, NaN the largest).
template <typename scalar_t>
void magnitude_prune_mask_cpu(scalar_t* result, const scalar_t* weight, const magnitude_prune_plan& plan) {
  smallest_keys_mask(result, plan, [&](int64_t i) { return magnitude_bits(weight[i]); });
}

// Keys: one Philox word per element, so `prune` uniformly random elements.
template <typename scalar_t>
void random_prune_mask_cpu(scalar_t* result, const magnitude_prune_plan& plan) {
  const uint64_t seed = plan.random.state.seed;
  const uint64_t offset = plan.random.state.offset;
  smallest_keys_mask(result, plan, [&](int64_t i) { return random_prune_key(seed, offset, i); });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
