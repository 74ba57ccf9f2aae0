// CPU kernels of the integer matrix products (structured ops, Note [Structured
// ops]), parallel over the rows of the result. The inner loops run over
// contiguous int8 data with int32 accumulators, which the compiler vectorizes
// (widening multiplies) for the selected capability.
#include <opforge/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/int_gemm_plan.h>
#include <opforge/math/int_gemm.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// Rows per task: about this many multiply-adds each.
int64_t row_grain(int64_t k, int64_t n) {
  constexpr int64_t k_work = 1 << 16;
  return std::max<int64_t>(1, k_work / std::max<int64_t>(1, k * n));
}

}  // namespace

// Rows [i, i + R) of self x mat2: each row of mat2 is read once for R rows of the
// result (int32 rows of n, kept in L1), the inner loop a widening multiply-add.
template <int R, typename scalar_t>
void mm_rows(int32_t* result, const scalar_t* self, const scalar_t* mat2, int64_t i, const int8_mm_plan& plan) {
  const int64_t k = plan.k;
  const int64_t n = plan.n;
  int32_t* out[R];
  for (int r = 0; r < R; ++r) {
    out[r] = result + (i + r) * n;
    std::fill(out[r], out[r] + n, 0);
  }
  for (int64_t p = 0; p < k; ++p) {
    int32_t a[R];
    for (int r = 0; r < R; ++r) {
      a[r] = self[(i + r) * k + p];
    }
    const scalar_t* b = mat2 + p * n;
    for (int64_t j = 0; j < n; ++j) {
      const int32_t bj = b[j];
      for (int r = 0; r < R; ++r) {
        out[r][j] += a[r] * bj;
      }
    }
  }
}

template <typename scalar_t>
void int8_mm_cpu(int32_t* result, const scalar_t* self, const scalar_t* mat2, const int8_mm_plan& plan) {
  constexpr int64_t k_rows = 4;
  const int64_t blocks = (plan.m + k_rows - 1) / k_rows;
  at::parallel_for(0, blocks, row_grain(plan.k * k_rows, plan.n), [&](int64_t b0, int64_t b1) {
    for (int64_t block = b0; block < b1; ++block) {
      int64_t i = block * k_rows;
      if (i + k_rows <= plan.m) {
        mm_rows<k_rows>(result, self, mat2, i, plan);
      } else {
        for (; i < plan.m; ++i) {
          mm_rows<1>(result, self, mat2, i, plan);
        }
      }
    }
  });
}

template <typename scalar_t, typename weight_zero_points_t, typename result_t>
void quantized_linear_cpu(result_t* result, const scalar_t* input, const int8_t* weight, const float* weight_scales,
                          const weight_zero_points_t* weight_zero_points, const float* bias,
                          const quantized_linear_plan& plan) {
  const int64_t k = plan.k;
  const int64_t n = plan.n;
  at::parallel_for(0, plan.m, row_grain(k, n), [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> row(static_cast<size_t>(k));
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        row[p] = static_cast<int32_t>(input[i * k + p]) - plan.input_zero_point;
      }
      for (int64_t j = 0; j < n; ++j) {
        const int8_t* w = weight + j * k;
        const auto w_zero = static_cast<int32_t>(weight_zero_points[j]);
        int32_t acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += row[p] * (static_cast<int32_t>(w[p]) - w_zero);
        }
        result[i * n + j] = math::requantize<result_t>(acc, weight_scales[j], bias, j, plan);
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
