#pragma once
// The one way kernels are launched in kernels/cuda:
//
//   OPFORGE_LAUNCH(grid, block, shared_bytes, stream, kernel<T>)(args...);
//   return cudaGetLastError();
//
// Under nvcc it is `kernel<<<grid, block, shared_bytes, stream>>>(args...)`;
// in the simulated build (OPFORGE_CUDA_SIM, see Note [CUDA simulation] in
// sim/runtime.cpp) the same line validates the configuration and runs the
// kernel on the CPU. The kernel comes last so template arguments with commas
// need no parentheses.
#include <cuda_runtime.h>

// c10 declares __assert_fail for device code (OPFORGE_KERNEL_ASSERT).
#include <c10/macros/Macros.h>

#if defined(OPFORGE_CUDA_SIM)
#define OPFORGE_LAUNCH(grid, block, shared_bytes, stream, ...) \
  OPFORGE_SIM_LAUNCH(grid, block, shared_bytes, stream, __VA_ARGS__)
#define OPFORGE_KERNEL_ASSERT(cond)                            \
  do {                                                         \
    if (!(cond)) {                                             \
      ::opforge::sim::assert_fail(#cond, __FILE__, __LINE__);  \
    }                                                          \
  } while (0)
#else
#define OPFORGE_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
// Kept in release builds (NDEBUG), like torch's CUDA_KERNEL_ASSERT.
#define OPFORGE_KERNEL_ASSERT(cond)                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      __assert_fail(#cond, __FILE__, static_cast<unsigned>(__LINE__), __func__); \
    }                                                                     \
  } while (0)
#endif
