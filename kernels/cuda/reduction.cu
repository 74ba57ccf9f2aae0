// CUDA kernels for sum: rows (a block per row, or per chunk of a long row with
// partial sums in the workspace), columns (a thread per output), and a gather
// into rows for the reductions neither fits (opforge/reduction/plan.h). A
// structured op (Note [Structured ops]).
#include "common.cuh"

#include <opforge/reduction/plan.h>

#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

// Rows this short are summed one thread per row: a block per row would leave
// most of its threads idle.
constexpr int64_t k_short_row = 32;

// Each block sums one chunk of one row (a "task"); with splits == 1 a task is
// a whole row. Out is T for the final result or Acc for partial sums.
template <typename In, typename Acc, typename Out>
__global__ void sum_rows_kernel(Out* out, const In* in, int64_t rows,
                                int64_t n, int64_t splits) {
  __shared__ Acc shared[32];
  const int64_t chunk = (n + splits - 1) / splits;
  for (int64_t task = blockIdx.x; task < rows * splits; task += gridDim.x) {
    const int64_t row = task / splits;
    const int64_t begin = (task - row * splits) * chunk;
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    const In* x = in + row * n;
    Acc acc = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      acc += math::cast_to<Acc>(x[i]);
    }
    acc = block_reduce(acc, sum_op{}, Acc(0), shared);
    if (threadIdx.x == 0) {
      out[task] = math::cast_to<Out>(acc);
    }
  }
}

// One thread per output; adjacent threads read adjacent columns.
template <typename T, typename Acc>
__global__ void sum_columns_kernel(T* out, const T* in, int64_t outer,
                                   int64_t n, int64_t inner) {
  const int64_t stride = grid_threads();
  for (int64_t c = global_thread(); c < outer * inner; c += stride) {
    const int64_t o = c / inner;
    const T* x = in + o * n * inner + (c - o * inner);
    Acc acc = 0;
    for (int64_t r = 0; r < n; ++r) {
      acc += math::cast_to<Acc>(x[r * inner]);
    }
    out[c] = math::cast_to<T>(acc);
  }
}

// dst[e] = src at the offset of element e of the plan's gather order.
template <typename T>
__global__ void gather_rows_kernel(T* dst, const T* src, int64_t total, sum_plan plan) {
  const int64_t stride = grid_threads();
  for (int64_t e = global_thread(); e < total; e += stride) {
    dst[e] = src[plan.gather_offset(e)];
  }
}

unsigned task_blocks(int64_t tasks) {
  return static_cast<unsigned>(tasks < k_max_blocks ? tasks : k_max_blocks);
}

} // namespace

template <typename T>
cudaError_t launch_sum_columns(T* out, const T* in, int64_t outer, int64_t n,
                               int64_t inner, cudaStream_t stream) {
  if (outer == 0 || inner == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(outer * inner), k_threads, 0, stream, sum_columns_kernel<T, math::sum_acc_t<T>>)(
          out, in, outer, n, inner);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_sum_rows(T* out, const T* in, int64_t rows, int64_t n,
                            math::sum_acc_t<T>* workspace, int64_t splits,
                            cudaStream_t stream) {
  using Acc = math::sum_acc_t<T>;
  if (rows == 0) {
    return cudaSuccess;
  }
  if (splits <= 1 && n <= k_short_row) {
    return launch_sum_columns(out, in, rows, n, 1, stream);
  }
  if (splits <= 1) {
    OPFORGE_LAUNCH(task_blocks(rows), row_threads(n, k_threads), 0, stream, sum_rows_kernel<T, Acc, T>)(out, in, rows, n, 1);
    return cudaGetLastError();
  }
  OPFORGE_LAUNCH(task_blocks(rows * splits), k_threads, 0, stream, sum_rows_kernel<T, Acc, Acc>)(workspace, in, rows, n, splits);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  OPFORGE_LAUNCH(task_blocks(rows), row_threads(splits, k_threads), 0, stream, sum_rows_kernel<Acc, Acc, T>)(out, workspace, rows, splits, 1);
  return cudaGetLastError();
}


} // namespace opforge::cuda

namespace opforge {

template <typename scalar_t>
cudaError_t sum_cuda(scalar_t* result, const scalar_t* self, const sum_plan& plan, cudaStream_t stream) {
  using acc_t = math::sum_acc_t<scalar_t>;
  auto* bytes = static_cast<char*>(plan.workspace);
  auto* partials = reinterpret_cast<acc_t*>(bytes);
  if (plan.reduced == 0) {
    return cuda::launch_fill_zero(result, plan.kept, stream);
  }
  if (!plan.cuda_gather && plan.inner > 1) {
    return cuda::launch_sum_columns(result, self, plan.outer, plan.reduced, plan.inner, stream);
  }
  const scalar_t* rows = self;
  if (plan.cuda_gather) {
    auto* gathered = reinterpret_cast<scalar_t*>(bytes + (plan.workspace_bytes - plan.gathered_bytes));
    const int64_t total = plan.kept * plan.reduced;
    OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, cuda::gather_rows_kernel<scalar_t>)(
        gathered, self, total, plan);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      return err;
    }
    rows = gathered;
  }
  return cuda::launch_sum_rows(result, rows, plan.kept, plan.reduced, plan.splits > 1 ? partials : nullptr,
                               plan.splits, stream);
}

}  // namespace opforge
