#pragma once
// The meta function of the structured sum (Note [Structured ops] in
// opforge/core/structured.h): torch.sum's output shape and dim checks, and for
// concrete sizes the plan of opforge/reduction/plan.h.
#include <opforge/core/dims.h>
#include <opforge/reduction/plan.h>
#include <opforge/core/shape_rules.h>
#include <opforge/core/structured.h>

#include <c10/util/SmallVector.h>

namespace opforge {

namespace detail {

// The runs of kept / reduced dims of a contiguous input (size-1 dims dropped).
inline sum_plan plan_sum(const at::Tensor& self, const dim_mask& mask, const char* op) {
  sum_plan plan;
  struct run {
    bool reduced;
    int64_t size;
  };
  c10::SmallVector<run, 8> runs;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool red = mask.test(static_cast<size_t>(d));
    const int64_t size = self.size(d);
    if (size == 1) {
      continue;
    }
    if (!runs.empty() && runs.back().reduced == red) {
      runs.back().size *= size;
    } else {
      runs.push_back({red, size});
    }
  }
  TORCH_CHECK(runs.size() <= sum_plan::k_max_runs, op, ": at most ", sum_plan::k_max_runs,
              " alternating runs of reduced and kept dims are supported, got ", runs.size());
  int reduced_runs = 0;
  bool seen_reduced = false;
  for (const run& r : runs) {
    if (r.reduced) {
      ++reduced_runs;
      plan.reduced *= r.size;
      seen_reduced = true;
    } else if (seen_reduced) {
      plan.inner *= r.size;
    } else {
      plan.outer *= r.size;
    }
  }
  plan.kept = plan.outer * plan.inner;
  plan.gather = reduced_runs > 1;
  plan.cuda_gather = plan.gather || (plan.inner > 1 && !sum_columns_ok(plan.kept, plan.reduced));
  // Kept runs then reduced runs, each with its stride in the contiguous input.
  int64_t stride = 1;
  c10::SmallVector<int64_t, 8> strides(runs.size());
  for (size_t i = runs.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= runs[i].size;
  }
  for (const bool reduced : {false, true}) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].reduced == reduced) {
        plan.gather_sizes[plan.gather_dims] = runs[i].size;
        plan.gather_strides[plan.gather_dims] = strides[i];
        ++plan.gather_dims;
      }
    }
  }
  return plan;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, sum_plan> sum_meta(const char* op, const at::Tensor& self, at::OptionalIntArrayRef dim,
                                              bool keepdim) {
  const auto sizes = shape::reduce<Int>(op, "dim", structured::sizes_of<Int>(self), dim, keepdim);
  structured::result<Int, 1, sum_plan> r{
      {structured::output<Int>{structured::sizes_vector<Int>(sizes.begin(), sizes.end()), self.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = detail::plan_sum(self, reduced_dims(op, "dim", dim, self.dim()), op);
    sum_plan& p = r.plan;
    const bool rows = p.cuda_gather || p.inner == 1;
    p.splits = rows ? sum_row_splits(p.kept, p.reduced) : 1;
    p.gathered_bytes = p.cuda_gather ? self.numel() * static_cast<int64_t>(self.element_size()) : 0;
    // The row splits' partial sums, in math::sum_acc_t: float for half/bfloat16, else double.
    const bool reduced_float = self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16;
    const int64_t partials = p.splits > 1 ? p.kept * p.splits * (reduced_float ? 4 : 8) : 0;
    // Partials first: 8-byte aligned whatever the gathered dtype's size.
    p.workspace_bytes = partials + p.gathered_bytes;
  }
  return r;
}

}  // namespace opforge
