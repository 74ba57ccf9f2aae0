#pragma once
// The subset of CUDA that kernels/cuda uses, executed on the CPU. See
// Note [CUDA simulation] in kernels/cuda/sim/runtime.cpp.
//
// A .cu file compiled as C++ with OPFORGE_CUDA_SIM gets this header through
// the <cuda_runtime.h> / <cuda_runtime_api.h> shims in sim/include/, so the
// device code itself is unchanged: every CUDA thread of a block runs as a
// fiber, __syncthreads() is a real barrier, warp shuffles and votes exchange
// values between the 32 fibers of a warp, and launches are validated against
// CUDA's limits before they run.
#ifndef OPFORGE_CUDA_SIM
#error "cuda_sim.h is for the simulated CUDA build (OPFORGE_CUDA_SIM)"
#endif

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Function and variable qualifiers. Block-shared memory is per OS thread:
// one OS thread runs one block at a time, all of its CUDA threads as fibers.
// Under AddressSanitizer blocks run one at a time in the whole process and
// shared memory is a plain static, which ASan surrounds with redzones (it
// leaves thread_local variables unchecked).
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#if defined(__SANITIZE_ADDRESS__)
#define __shared__ static
#else
#define __shared__ static thread_local
#endif

struct uint3 {
  unsigned int x, y, z;
};

// Vector types with CUDA's alignment (kernels move 8- and 16-byte words).
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// The error codes of the CUDA runtime that a launch can produce (same values).
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNotYetImplemented = 31,  // what a `codegen new` stub returns
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorAssert = 710,
  cudaErrorIllegalInstruction = 715,
  cudaErrorLaunchFailure = 719,
};
using cudaError_t = cudaError;
struct CUstream_st;
using cudaStream_t = CUstream_st*;

// Launches run synchronously; the last error is per host thread, as in CUDA.
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

namespace opforge::sim {

// Built-in variables of the CUDA thread running on this fiber.
uint3 thread_idx();
uint3 block_idx();
dim3 block_dim();
dim3 grid_dim();

void syncthreads();
void syncwarp(unsigned mask);
[[noreturn]] void trap(const char* what);
[[noreturn]] void assert_fail(const char* condition, const char* file, int line);

// Warp exchange: lane publishes `bytes` of `value` and waits until every lane
// of `mask` has published in the same operation; then reads lane `src`'s value
// into `result` (src < 0: no read). Checks that the mask names existing lanes,
// includes the caller, agrees across lanes, and that `src` is in it.
enum class warp_op : int { shfl, shfl_up, shfl_down, shfl_xor, vote, sync };
void warp_exchange(warp_op op, unsigned mask, const void* value, std::size_t bytes, int src,
                   void* result);
// Ballot over the lanes of `mask` after an exchange of predicates.
unsigned warp_ballot(unsigned mask, bool predicate);
unsigned lane_id();

template <typename T>
T shuffle(warp_op op, unsigned mask, T var, int src) {
  static_assert(sizeof(T) <= 16 && std::is_trivially_copyable_v<T>, "shuffled values are 16 bytes at most");
  T result = var;
  warp_exchange(op, mask, &var, sizeof(T), src, &result);
  return result;
}

// Source lane of a shuffle within segments of `width` lanes; -1: keep own value.
inline int shfl_source(warp_op op, int lane, int arg, int width) {
  const int segment = lane & ~(width - 1);
  switch (op) {
    case warp_op::shfl:
      return segment + (arg & (width - 1));
    case warp_op::shfl_up:
      return lane - arg >= segment ? lane - arg : -1;
    case warp_op::shfl_down:
      return lane + arg < segment + width ? lane + arg : -1;
    case warp_op::shfl_xor: {
      const int src = lane ^ arg;
      return src < segment + width ? src : -1;
    }
    default:
      return -1;
  }
}

template <typename T>
T shuffle_at(warp_op op, unsigned mask, T var, int arg, int width) {
  return shuffle(op, mask, var, shfl_source(op, static_cast<int>(lane_id()), arg, width));
}

// One kernel launch: where it was written, its configuration, and the kernel
// called with the arguments, once per simulated CUDA thread.
struct launch_site {
  const char* kernel;  // the kernel expression as written, e.g. "sum_rows_kernel<T, Acc, T>"
  const char* file;
  int line;
};

cudaError_t launch(const launch_site& site, dim3 grid, dim3 block, std::size_t shared_bytes,
                   cudaStream_t stream, void (*body)(void*), void* context);

template <typename Kernel>
struct pending_launch {
  launch_site site;
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes;
  cudaStream_t stream;
  Kernel kernel;

  // Arguments by value, as CUDA copies them into the parameter space.
  template <typename... Args>
  void operator()(Args... args) {
    auto run = [&] { kernel(args...); };
    launch(site, grid, block, shared_bytes, stream,
           [](void* c) { (*static_cast<decltype(run)*>(c))(); }, &run);
  }
};

template <typename Kernel>
pending_launch<Kernel> make_launch(launch_site site, dim3 grid, dim3 block, std::size_t shared_bytes,
                                   cudaStream_t stream, Kernel kernel) {
  return {site, grid, block, shared_bytes, stream, kernel};
}

// Atomics: blocks run on several OS threads at once.
template <typename T>
T atomic_add(T* address, T value) {
  if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
  } else {
    // Reduced-precision types: compare-and-swap over their bits.
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    static_assert(sizeof(T) == sizeof(Bits));
    std::atomic_ref<Bits> bits(*reinterpret_cast<Bits*>(address));
    Bits old = bits.load(std::memory_order_relaxed);
    for (;;) {
      T current;
      std::memcpy(&current, &old, sizeof(T));
      const T next = static_cast<T>(static_cast<float>(current) + static_cast<float>(value));
      Bits next_bits;
      std::memcpy(&next_bits, &next, sizeof(T));
      if (bits.compare_exchange_weak(old, next_bits, std::memory_order_relaxed)) {
        return current;
      }
    }
  }
}

}  // namespace opforge::sim

#define threadIdx (::opforge::sim::thread_idx())
#define blockIdx (::opforge::sim::block_idx())
#define blockDim (::opforge::sim::block_dim())
#define gridDim (::opforge::sim::grid_dim())
constexpr int warpSize = 32;

inline void __syncthreads() { ::opforge::sim::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::opforge::sim::syncwarp(mask); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
[[noreturn]] inline void __trap() { ::opforge::sim::trap("__trap()"); }

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  return ::opforge::sim::shuffle_at(::opforge::sim::warp_op::shfl, mask, var, src_lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::opforge::sim::shuffle_at(::opforge::sim::warp_op::shfl_up, mask, var, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::opforge::sim::shuffle_at(::opforge::sim::warp_op::shfl_down, mask, var, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return ::opforge::sim::shuffle_at(::opforge::sim::warp_op::shfl_xor, mask, var, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::opforge::sim::warp_ballot(mask, predicate != 0);
}
inline int __any_sync(unsigned mask, int predicate) {
  return ::opforge::sim::warp_ballot(mask, predicate != 0) != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  return ::opforge::sim::warp_ballot(mask, predicate != 0) == mask;
}

inline float atomicAdd(float* address, float value) { return ::opforge::sim::atomic_add(address, value); }
inline double atomicAdd(double* address, double value) { return ::opforge::sim::atomic_add(address, value); }
inline int atomicAdd(int* address, int value) { return ::opforge::sim::atomic_add(address, value); }
inline unsigned atomicAdd(unsigned* address, unsigned value) { return ::opforge::sim::atomic_add(address, value); }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return ::opforge::sim::atomic_add(address, value);
}
template <typename T>
T atomicAdd(T* address, T value) {
  return ::opforge::sim::atomic_add(address, value);
}
namespace opforge::sim {
// Stores `value` while `better(value, current)`; returns the old value.
template <typename T, typename Better>
T atomic_replace_if(T* address, T value, Better better) {
  std::atomic_ref<T> a(*address);
  T old = a.load(std::memory_order_relaxed);
  while (better(value, old) && !a.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}
}  // namespace opforge::sim
template <typename T>
T atomicMax(T* address, T value) {
  return ::opforge::sim::atomic_replace_if(address, value, [](T v, T old) { return old < v; });
}
template <typename T>
T atomicMin(T* address, T value) {
  return ::opforge::sim::atomic_replace_if(address, value, [](T v, T old) { return v < old; });
}
template <typename T>
T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}
template <typename T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value, std::memory_order_relaxed);
  return compare;
}

// Launch through the simulator; see OPFORGE_LAUNCH in kernels/cuda/launch.cuh.
#define OPFORGE_SIM_LAUNCH(grid, block, shared_bytes, stream, ...)                                   \
  ::opforge::sim::make_launch(::opforge::sim::launch_site{#__VA_ARGS__, __FILE__, __LINE__}, grid, \
                              block, shared_bytes, stream,                                          \
                              [&](auto&&... opforge_sim_args) { __VA_ARGS__(opforge_sim_args...); })
