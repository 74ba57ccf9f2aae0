// CPU kernel for sum over a list of dims; the plan (opforge/reduction/plan.h)
// views the input as [outer, reduced, inner], or has it gathered into rows
// first. A structured op (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/reduction/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Note [Blocked summation]: values are summed in opmath (float for
// float/half/bf16) over short blocks, with independent lanes so the loop
// vectorizes, and block totals are added in double. The rounding error then
// grows with the block length, not the row length.
constexpr int64_t k_block = 1024;
constexpr int64_t k_lanes = 16;
constexpr int64_t k_tile = 256;

template <typename T>
double sum_contiguous(const T* x, int64_t n) {
  using A = math::opmath_t<T>;
  double total = 0;
  for (int64_t b = 0; b < n; b += k_block) {
    const int64_t e = std::min(n, b + k_block);
    A lanes[k_lanes] = {};
    int64_t i = b;
    for (; i + k_lanes <= e; i += k_lanes) {
      for (int64_t j = 0; j < k_lanes; ++j) {
        lanes[j] += math::cast_to<A>(x[i + j]);
      }
    }
    A block = 0;
    for (; i < e; ++i) {
      block += math::cast_to<A>(x[i]);
    }
    for (int64_t j = 0; j < k_lanes; ++j) {
      block += lanes[j];
    }
    total += static_cast<double>(block);
  }
  return total;
}

// [rows, n] -> [rows]. A single row is split into chunks so it still uses
// every thread; the chunk partials are added in a fixed order.
template <typename T>
void sum_rows(const T* x, T* y, int64_t rows, int64_t n) {
  if (rows == 1) {
    const int64_t chunks = (n + k_grain - 1) / k_grain;
    std::vector<double> partial(static_cast<size_t>(chunks));
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const int64_t lo = c * k_grain;
        partial[c] = sum_contiguous(x + lo, std::min(k_grain, n - lo));
      }
    });
    double total = 0;
    for (const double p : partial) {
      total += p;
    }
    y[0] = math::cast_to<T>(total);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, k_grain / n);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      y[r] = math::cast_to<T>(sum_contiguous(x + r * n, n));
    }
  });
}

// [outer, n, inner] -> [outer, inner], inner > 1: accumulate whole rows of a
// column tile so loads stay unit-stride. See Note [Blocked summation].
template <typename T>
void sum_columns(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = math::opmath_t<T>;
  const int64_t tiles = (inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, k_grain / (n * k_tile));
  at::parallel_for(0, outer * tiles, grain, [&](int64_t begin, int64_t end) {
    double total[k_tile];
    A block[k_tile];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / tiles;
      const int64_t j0 = (task % tiles) * k_tile;
      const int64_t w = std::min(k_tile, inner - j0);
      const T* xb = x + o * n * inner + j0;
      std::fill(total, total + w, 0.0);
      for (int64_t d0 = 0; d0 < n; d0 += k_block) {
        const int64_t d1 = std::min(n, d0 + k_block);
        std::fill(block, block + w, A(0));
        for (int64_t d = d0; d < d1; ++d) {
          const T* row = xb + d * inner;
          for (int64_t j = 0; j < w; ++j) {
            block[j] += math::cast_to<A>(row[j]);
          }
        }
        for (int64_t j = 0; j < w; ++j) {
          total[j] += static_cast<double>(block[j]);
        }
      }
      T* out = y + o * inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        out[j] = math::cast_to<T>(total[j]);
      }
    }
  });
}

// dst[e] = src at the offset of element e of the plan's gather order (kept
// runs, then reduced runs): the input as contiguous [kept, reduced] rows.
template <typename T>
void gather_rows(T* dst, const T* src, const sum_plan& plan) {
  const int64_t total = plan.kept * plan.reduced;
  at::parallel_for(0, total, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      dst[e] = src[plan.gather_offset(e)];
    }
  });
}

} // namespace

template <typename scalar_t>
void sum_cpu(scalar_t* result, const scalar_t* self, const sum_plan& plan) {
  if (plan.reduced == 0) {
    std::fill_n(result, plan.kept, scalar_t(0));
    return;
  }
  if (plan.gather) {
    std::vector<scalar_t> rows(static_cast<size_t>(plan.kept * plan.reduced));
    gather_rows(rows.data(), self, plan);
    sum_rows(rows.data(), result, plan.kept, plan.reduced);
  } else if (plan.inner == 1) {
    sum_rows(self, result, plan.outer, plan.reduced);
  } else {
    sum_columns(self, result, plan.outer, plan.reduced, plan.inner);
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
