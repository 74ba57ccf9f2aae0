#pragma once
// Launch configuration and block reductions shared by the .cu files. Device
// code only; no torch headers (README.md, "CUDA kernels without a GPU").
#include "launch.cuh"

#include <opforge/math/opmath.h>
#include <opforge/core/plan_services.h>

#include <cstdint>

namespace opforge::cuda {

constexpr int k_threads = 256;
// Grid-stride loops cover the rest; more blocks than this only add launch
// overhead. The simulated build lowers the cap (OPFORGE_CUDA_MAX_BLOCKS) so
// that small test inputs take several trips round every grid-stride loop.
#ifndef OPFORGE_CUDA_MAX_BLOCKS
#define OPFORGE_CUDA_MAX_BLOCKS (int64_t{1} << 16)
#endif
constexpr int64_t k_max_blocks = OPFORGE_CUDA_MAX_BLOCKS;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline unsigned elementwise_blocks(int64_t n) {
  const int64_t b = ceil_div(n, k_threads);
  return static_cast<unsigned>(b < k_max_blocks ? b : k_max_blocks);
}

// The largest block a reduction kernel is launched with (row_threads(n, 512),
// norm_threads): such kernels declare __launch_bounds__(k_max_block_reduce_threads)
// so that nvcc keeps their registers within what 512 threads may use
// (scripts/check_cuda_objects.py checks it against the launches).
constexpr int k_max_block_reduce_threads = 512;

// Threads for one-block-per-row kernels: a multiple of the warp size, no more
// than the row needs.
inline int row_threads(int64_t n, int max_threads) {
  int t = 32;
  while (t < max_threads && t < n) {
    t *= 2;
  }
  return t;
}

// Index of this thread in a grid-stride loop, and the stride, in 64 bits.
__device__ inline int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// A bad index goes to the plan's index report (the first thread to report
// wins: the simulator), or, with none (the GPU), to a device-side assert.
// Note [Plan services].
__device__ inline void record_bad_index(const index_report& report, int64_t index) {
  if (report.found == nullptr) {
    OPFORGE_KERNEL_ASSERT(index >= 0 && index < report.limit);
    return;
  }
  auto* flag = reinterpret_cast<unsigned long long*>(report.found);
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) {
    report.found[1] = index;
  }
}

// A plan's Philox (seed, offset): read from device memory under CUDA-graph
// capture (as torch's philox::unpack, without std::tuple, which nvcc treats as
// host code).
__device__ inline void philox_seed_and_offset(const philox_state& s, uint64_t& seed, uint64_t& offset) {
  if (s.seed_ptr != nullptr) {
    seed = static_cast<uint64_t>(*s.seed_ptr);
    offset = static_cast<uint64_t>(*s.offset_ptr) + s.offset_intragraph;
  } else {
    seed = s.seed;
    offset = s.offset;
  }
}

template <typename T>
__global__ void fill_zero_kernel(T* out, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = math::cast_to<T>(0.0f);
  }
}

template <typename To, typename From>
__global__ void convert_kernel(To* out, const From* in, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = math::cast_to<To>(in[i]);
  }
}

// out[0, n) = 0, e.g. an accumulator before a scatter-add.
template <typename T>
cudaError_t launch_fill_zero(T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, fill_zero_kernel<T>)(out, n);
  return cudaGetLastError();
}

// out[i] = in[i] in another dtype: half/bfloat16 to and from their float compute copies.
template <typename To, typename From>
cudaError_t launch_convert(To* out, const From* in, int64_t n, cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, convert_kernel<To, From>)(out, in, n);
  return cudaGetLastError();
}

struct sum_op {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

struct max_op {
  // NaN in `a` wins; NaN in `b` is dropped, but the caller's later sum of
  // exp(x - max) still turns the row to NaN, as in torch.
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Reduces one value per thread over the block and returns the result to every
// thread. blockDim.x must be a multiple of 32; `shared` holds 32 values. Ends
// with a barrier so `shared` can be reused by the next call.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, T* shared) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  v = warp_reduce(v, op);
  if (lane == 0) {
    shared[warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
    v = threadIdx.x < (blockDim.x >> 5) ? shared[lane] : identity;
    v = warp_reduce(v, op);
    if (lane == 0) {
      shared[0] = v;
    }
  }
  __syncthreads();
  const T result = shared[0];
  __syncthreads();
  return result;
}

} // namespace opforge::cuda
