#pragma once
// Meta functions of the structured pruning ops (schemas/prune.yaml; Note
// [Structured ops] in opforge/core/structured.h): torch.nn.utils.prune.ln_structured's
// checks and rounding, the outputs and the plan.
#include <opforge/core/checks.h>
#include <opforge/core/dims.h>
#include <opforge/prune/plan.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <cmath>

namespace opforge {

namespace detail {

template <typename Int>
channel_norm_plan channel_norm_check(const char* op, const at::Tensor& weight, double p, int64_t& dim) {
  dim = channel_dim(op, "dim", dim, weight.dim());
  TORCH_CHECK(p > 0.0, op, ": expected the norm's order > 0 (or inf), got ", p);
  channel_norm_plan plan;
  if constexpr (structured::concrete<Int>) {
    const dim_split split = split_at_dim(weight.sizes(), dim);
    plan.outer = split.outer;
    plan.channels = split.size;
    plan.inner = split.inner;
    plan.p = p;
    // CUDA: the norms (8 bytes each: the accumulation type), then a keep flag per channel.
    plan.workspace_bytes = plan.channels * 9;
  }
  return plan;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, channel_norm_plan> channel_norm_meta(const char* op, const at::Tensor& weight, double p,
                                                                int64_t dim) {
  structured::result<Int, 1, channel_norm_plan> r{};
  r.plan = detail::channel_norm_check<Int>(op, weight, p, dim);
  r.outputs[0] = {{structured::sizes_of<Int>(weight)[dim]}, weight.scalar_type()};
  return r;
}

template <typename Int>
structured::result<Int, 1, channel_norm_plan> ln_structured_mask_meta(const char* op, const at::Tensor& weight,
                                                                      double amount, double n, int64_t dim) {
  TORCH_CHECK(amount >= 0.0 && amount <= 1.0, op, ": expected 'amount' in [0, 1] (the fraction of channels to prune), got ",
              amount);
  // As torch.nn.utils.prune.ln_structured: a slice of a 1-D tensor is one element.
  TORCH_CHECK(weight.dim() >= 2, op, ": structured pruning needs 'weight' of at least 2 dims, got ", weight.dim());
  structured::result<Int, 1, channel_norm_plan> r{{structured::like<Int>(weight)}};
  r.plan = detail::channel_norm_check<Int>(op, weight, n, dim);
  if constexpr (structured::concrete<Int>) {
    // Python's round (half to even), as torch's _compute_nparams_toprune.
    const auto pruned = static_cast<int64_t>(std::nearbyint(amount * static_cast<double>(r.plan.channels)));
    r.plan.keep = r.plan.channels - pruned;
  }
  structured::follow_layout(r, structured::layout_of(weight));
  return r;
}

// torch.nn.utils.prune's amount: a float is the fraction of the elements
// (Python's round, half to even), an integer their count.
template <typename Int>
structured::result<Int, 1, magnitude_prune_plan> magnitude_prune_mask_meta(const char* op, const at::Tensor& weight,
                                                                            const c10::Scalar& amount) {
  if (amount.isIntegral(false)) {
    TORCH_CHECK(amount.toLong() >= 0, op, ": expected 'amount' to be a non-negative integer (a count) or a float in "
                "[0, 1] (a fraction), got ", amount.toLong());
  } else {
    TORCH_CHECK(amount.isFloatingPoint() && amount.toDouble() >= 0.0 && amount.toDouble() <= 1.0, op,
                ": expected 'amount' to be a float in [0, 1] (a fraction) or a non-negative integer (a count), got ",
                amount);
  }
  structured::result<Int, 1, magnitude_prune_plan> r{{structured::like<Int>(weight)}};
  // (contiguous: ties are ranked in the logical order of the elements)
  if constexpr (structured::concrete<Int>) {
    const int64_t n = weight.numel();
    const int64_t prune = amount.isIntegral(false)
                              ? amount.toLong()
                              : static_cast<int64_t>(std::nearbyint(amount.toDouble() * static_cast<double>(n)));
    TORCH_CHECK(prune <= n, op, ": 'amount' = ", prune, " should be smaller than the number of elements to prune (",
                n, ")");
    r.plan.numel = n;
    r.plan.prune = prune;
    int bits = 0;
    while (bits < 63 && (int64_t{1} << bits) < n) {
      ++bits;
    }
    r.plan.index_bits = bits;
    r.plan.workspace_bytes = 256 * 8 + 2 * static_cast<int64_t>(sizeof(magnitude_select_state));
  }
  return r;
}

// magnitude_prune_mask's checks and plan, with one random word per element
// (none when the amount prunes nothing or everything).
template <typename Int>
structured::result<Int, 1, magnitude_prune_plan> random_prune_mask_meta(
    const char* op, const at::Tensor& weight, const c10::Scalar& amount,
    const std::optional<at::Generator>& /*generator*/) {
  auto r = magnitude_prune_mask_meta<Int>(op, weight, amount);
  if constexpr (structured::concrete<Int>) {
    const bool random = r.plan.prune > 0 && r.plan.prune < r.plan.numel;
    r.plan.random.words = random ? static_cast<uint64_t>(r.plan.numel) : 0;
  }
  return r;
}

}  // namespace opforge
