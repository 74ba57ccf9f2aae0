#pragma once
// The plan of the structured sum (Note [Structured ops]). Torch-free, so the
// CUDA sources include it.
#include <opforge/core/plan_services.h>

#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

// The CUDA column kernel runs one thread per output with a serial loop over n:
// fine with many outputs, too little parallelism with few outputs and long
// columns (then the input is gathered into rows first).
inline bool sum_columns_ok(int64_t outputs, int64_t n) {
  return outputs >= 8192 || n <= 1024;
}

// Blocks to split each row of a CUDA [rows, n] sum across. Few long rows would
// otherwise leave most SMs idle; the partial sums go to the workspace.
inline int64_t sum_row_splits(int64_t rows, int64_t n) {
  constexpr int64_t k_min_chunk = 16384;
  constexpr int64_t k_target_blocks = 1024;
  if (rows >= k_target_blocks || n <= k_min_chunk) {
    return 1;
  }
  const int64_t by_size = (n + k_min_chunk - 1) / k_min_chunk;
  const int64_t by_blocks = k_target_blocks / rows;
  return by_size < by_blocks ? by_size : by_blocks;
}

// The contiguous input viewed as [outer, reduced, inner] (size-1 dims dropped,
// adjacent dims of one kind merged): out[o, i] = sum_r in[o, r, i]. When the
// reduced dims are not one run (`gather`; on CUDA also when the column kernel
// would be slow, `cuda_gather`), the kernel first gathers the input into
// [kept, reduced] rows: element e of that order reads the input at
// sum_d index_d(e) * gather_strides[d] over the `gather_dims` runs.
struct sum_plan {
  static constexpr int k_max_runs = 16;
  int64_t outer = 1;
  int64_t reduced = 1;
  int64_t inner = 1;
  int64_t kept = 1;  // outputs: outer * inner
  bool gather = false;
  bool cuda_gather = false;
  int gather_dims = 0;
  int64_t gather_sizes[k_max_runs] = {};
  int64_t gather_strides[k_max_runs] = {};
  int64_t splits = 1;  // CUDA row splits (sum_row_splits)
  int64_t gathered_bytes = 0;  // the CUDA workspace's first part: the gathered input
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;

  // The input offset of element e of the gather order (CPU and CUDA).
  C10_HOST_DEVICE int64_t gather_offset(int64_t e) const {
    int64_t offset = 0;
    for (int d = gather_dims - 1; d >= 0; --d) {
      offset += (e % gather_sizes[d]) * gather_strides[d];
      e /= gather_sizes[d];
    }
    return offset;
  }
};

}  // namespace opforge
