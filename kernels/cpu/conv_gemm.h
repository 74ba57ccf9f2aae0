#pragma once
// What the im2col + BLAS routines (conv_gemm.cpp, conv_nhwc.cpp) share: block
// sizes and views of raw buffers as matrices for at::mm_out.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

// One block of the im2col matrix stays in L2 next to the group's weights.
constexpr int64_t k_block_bytes = 256 * 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Columns per block for a matrix of `rows` rows: within k_block_bytes, a
// multiple of 16, at least 64, at most the whole plane.
template <typename A>
int64_t block_columns(int64_t rows, int64_t plane) {
  const int64_t fit = k_block_bytes / static_cast<int64_t>(sizeof(A)) / std::max<int64_t>(rows, 1);
  return std::min(plane, std::max<int64_t>(64, fit / 16 * 16));
}

// A row-major rows x cols matrix with leading dimension ld, as a tensor view
// for at::mm_out (no copy; MKL takes the leading dimension as is).
template <typename A>
at::Tensor matrix(const A* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(const_cast<A*>(p), {rows, cols}, {ld, 1},
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<A>::value));
}

template <typename A>
std::unique_ptr<A[]> buffer(int64_t n) {
  return std::unique_ptr<A[]>(new A[static_cast<size_t>(std::max<int64_t>(n, 1))]);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
