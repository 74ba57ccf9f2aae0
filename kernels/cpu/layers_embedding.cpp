// CPU kernels for embedding and embedding_backward, templated on the weight's
// and the indices' dtypes (int64 or int32). Every index is range-checked before
// a row is read or written; a bad one goes to the plan's index report (Note
// [Plan services]) and the generated code raises. A structured op (Note
// [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/layers/plan.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <type_traits>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

}  // namespace

template <typename scalar_t, typename indices_t>
void embedding_cpu(scalar_t* result, const scalar_t* weight, const indices_t* indices, const embedding_plan& plan) {
  const int64_t dim = plan.dim;
  at::parallel_for(0, plan.n, std::max<int64_t>(1, k_grain / std::max<int64_t>(1, dim)), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = static_cast<int64_t>(indices[i]);
      if (r < 0 || r >= plan.rows) {
        record_bad_index(plan.bad_index, r);
        continue;
      }
      std::copy_n(weight + r * dim, dim, result + i * dim);
    }
  });
}

// Deterministic: each task owns a range of weight rows and scans every index in
// order, so a row's sum always runs in index order whatever the thread count
// (ATen's CPU embedding backward does the same). Half/bfloat16 sum in a float
// buffer.
template <typename scalar_t, typename indices_t>
void embedding_backward_cpu(scalar_t* result, const scalar_t* grad_output, const indices_t* indices,
                            const embedding_backward_plan& plan) {
  using acc_t = math::opmath_t<scalar_t>;
  const int64_t n = plan.n;
  const int64_t rows = plan.rows;
  const int64_t dim = plan.dim;
  at::parallel_for(0, n, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (indices[i] < 0 || indices[i] >= rows) {
        record_bad_index(plan.bad_index, static_cast<int64_t>(indices[i]));
      }
    }
  });
  if (plan.bad_index.found[0] != 0) {
    return;
  }
  // Half/bfloat16 accumulate in a float buffer, float/double in the output.
  std::unique_ptr<acc_t[]> buffer;
  acc_t* acc = nullptr;
  if constexpr (std::is_same_v<acc_t, scalar_t>) {
    acc = result;
  } else {
    buffer.reset(new acc_t[static_cast<size_t>(rows * dim)]);
    acc = buffer.get();
  }
  // Small problems stay on one thread; otherwise every thread takes a row range,
  // which it zeroes first (in parallel, and while it is about to be used).
  const int64_t grain = n * dim < k_grain ? std::max<int64_t>(rows, 1) : 1;
  at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    std::fill(acc + r0 * dim, acc + r1 * dim, acc_t(0));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = static_cast<int64_t>(indices[i]);
      if (r < r0 || r >= r1 || r == plan.padding_idx) {
        continue;
      }
      acc_t* ar = acc + r * dim;
      const scalar_t* gr = grad_output + i * dim;
      for (int64_t k = 0; k < dim; ++k) {
        ar[k] += math::cast_to<acc_t>(gr[k]);
      }
    }
    if constexpr (!std::is_same_v<acc_t, scalar_t>) {
      for (int64_t k = r0 * dim; k < r1 * dim; ++k) {
        result[k] = math::cast_to<scalar_t>(acc[k]);
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
