// CUDA kernels for sum.
#include "common.cuh"
#include "reduction.cuh"

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

#define OPFORGE_INSTANTIATE(T)                                               \
  template cudaError_t launch_sum_rows<T>(                                   \
      T*, const T*, int64_t, int64_t, math::sum_acc_t<T>*, int64_t,          \
      cudaStream_t);                                                         \
  template cudaError_t launch_sum_columns<T>(T*, const T*, int64_t, int64_t, \
                                             int64_t, cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
