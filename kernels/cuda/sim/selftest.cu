// Kernels that check the CUDA simulator itself (tests/cuda_sim/test_simulator.py):
// correct uses of barriers, shuffles, votes and atomics, and the misuses the
// simulator must reject. Compiled into opforge._cuda_sim only.
#include "../launch.cuh"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace opforge::sim::selftest {
namespace {

// Block sum through shared memory and a tree of barriers.
__global__ void block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float partial[1024];
  const unsigned t = threadIdx.x;
  partial[t] = t < static_cast<unsigned>(n) ? in[blockIdx.x * n + t] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      partial[t] += partial[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    out[blockIdx.x] = partial[0];
  }
}

// Warp sum with __shfl_down_sync, ballot of odd lanes, xor butterfly.
__global__ void warp_ops_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  int v = lane;
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  int x = lane;
  for (int mask = 1; mask < 32; mask *= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, mask);
  }
  const unsigned ballot = __ballot_sync(0xffffffffu, lane % 2);
  const int up = __shfl_up_sync(0xffffffffu, lane, 1);
  const int bcast = __shfl_sync(0xffffffffu, lane * 10, 7);
  const int votes = __all_sync(0xffffffffu, 1) + 2 * __any_sync(0xffffffffu, lane == 5);
  if (lane == 0) {
    out[0] = v;
    out[1] = x;
    out[2] = static_cast<int>(ballot);
    out[3] = votes;
  }
  if (lane == 3) {
    out[4] = up;
    out[5] = bcast;
  }
}

__global__ void atomic_kernel(float* total, int* count) {
  atomicAdd(total, 0.5f);
  atomicAdd(count, 1);
}

// Misuses.
__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x >= 16) {
    return;
  }
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void divergent_shuffle_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 16) {
    v = __shfl_down_sync(0xffffffffu, v, 1);
  }
  out[threadIdx.x] = v;
}

__global__ void partial_warp_kernel(int* out) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 0);
}

__global__ void assert_kernel(const int* in) { OPFORGE_KERNEL_ASSERT(in[threadIdx.x] >= 0); }

__global__ void empty_kernel() {}

cudaError_t run(const std::string& name, void* buffer) {
  auto* f = static_cast<float*>(buffer);
  auto* i = static_cast<int*>(buffer);
  if (name == "block_sum") {  // buffer: 4 x 100 inputs, then 4 outputs
    OPFORGE_LAUNCH(4, 128, 0, nullptr, block_sum_kernel)(f, f + 400, 100);
  } else if (name == "warp_ops") {
    OPFORGE_LAUNCH(1, 32, 0, nullptr, warp_ops_kernel)(i);
  } else if (name == "atomic") {
    OPFORGE_LAUNCH(7, 64, 0, nullptr, atomic_kernel)(f, i + 1);
  } else if (name == "divergent_barrier") {
    OPFORGE_LAUNCH(1, 32, 0, nullptr, divergent_barrier_kernel)(i);
  } else if (name == "divergent_shuffle") {
    OPFORGE_LAUNCH(1, 32, 0, nullptr, divergent_shuffle_kernel)(i);
  } else if (name == "partial_warp") {
    OPFORGE_LAUNCH(1, 48, 0, nullptr, partial_warp_kernel)(i);
  } else if (name == "assert") {
    OPFORGE_LAUNCH(1, 32, 0, nullptr, assert_kernel)(i);
  } else if (name == "empty_grid") {
    OPFORGE_LAUNCH(dim3(0, 1, 1), 32, 0, nullptr, empty_kernel)();
  } else if (name == "grid_y_too_big") {
    OPFORGE_LAUNCH(dim3(1, 65536, 1), 32, 0, nullptr, empty_kernel)();
  } else if (name == "block_too_big") {
    OPFORGE_LAUNCH(1, 1025, 0, nullptr, empty_kernel)();
  } else if (name == "shared_too_big") {
    OPFORGE_LAUNCH(1, 32, 49153, nullptr, empty_kernel)();
  } else {
    throw std::invalid_argument("unknown simulator self-test " + name);
  }
  return cudaGetLastError();
}

}  // namespace

// Runs self-test `name` over `buffer`; returns the launch's error code.
int run_selftest(const std::string& name, void* buffer) { return static_cast<int>(run(name, buffer)); }

}  // namespace opforge::sim::selftest
