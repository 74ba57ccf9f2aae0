#pragma once
// Reduction planning shared by the CPU and CUDA sum entry points.
#include <opforge/dims.h>

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <cstdint>

namespace opforge {

// The input laid out as a contiguous [outer, reduced, inner] block: the result
// is out[o, i] = sum_r input[o, r, i]. Size-1 dims are ignored and adjacent
// dims of the same kind merged. When the reduced dims are not one run, or
// `inner_ok(outer * inner, reduced)` says the caller's kernel would rather sum
// plain rows, they are permuted to the end first (inner == 1).
struct reduce_plan {
  at::Tensor input;
  int64_t outer = 1;
  int64_t reduced = 1;
  int64_t inner = 1;
};

template <typename InnerOk>
reduce_plan plan_reduction(const at::Tensor& self, const dim_mask& mask,
                           InnerOk inner_ok) {
  reduce_plan plan;
  const int64_t ndim = self.dim();
  // Runs of kept/reduced dims in order, e.g. [K, R, K]; at most 3 are usable.
  struct run {
    bool reduced;
    int64_t size;
  };
  c10::SmallVector<run, 4> runs;
  for (int64_t d = 0; d < ndim; ++d) {
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
  int64_t reduced_runs = 0;
  for (const run& r : runs) {
    reduced_runs += r.reduced ? 1 : 0;
  }
  if (reduced_runs <= 1) {
    bool seen_reduced = false;
    for (const run& r : runs) {
      if (r.reduced) {
        plan.reduced = r.size;
        seen_reduced = true;
      } else if (seen_reduced) {
        plan.inner = r.size;
      } else {
        plan.outer = r.size;
      }
    }
    if (plan.inner == 1 || inner_ok(plan.outer * plan.inner, plan.reduced)) {
      plan.input = self.contiguous();
      return plan;
    }
  }
  c10::SmallVector<int64_t, 8> perm;
  plan.outer = 1;
  plan.reduced = 1;
  plan.inner = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask.test(static_cast<size_t>(d))) {
      perm.push_back(d);
      plan.outer *= self.size(d);
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask.test(static_cast<size_t>(d))) {
      perm.push_back(d);
      plan.reduced *= self.size(d);
    }
  }
  plan.input = self.permute(perm).contiguous();
  return plan;
}

} // namespace opforge
