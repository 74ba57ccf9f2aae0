#pragma once
// The CUDA runtime as the .cpp entry points see it: the current stream and the
// launch check. One header, so the entry points compile for a GPU and for the
// simulator (OPFORGE_CUDA_SIM, see Note [CUDA simulation] in sim/runtime.cpp),
// where the stream is ignored and a failed launch raises the same error class
// with the simulator's account of what went wrong.
#include <cuda_runtime_api.h>

#if defined(OPFORGE_CUDA_SIM)
#include "sim/stats.h"

#include <c10/util/Exception.h>

#include <string>

namespace opforge::cuda {

inline cudaStream_t current_stream() { return nullptr; }

// Whether the current stream is being captured into a CUDA graph (the
// simulator can pretend to, see sim::set_capturing, to test the capture paths).
inline bool stream_capturing() { return sim::capturing(); }

[[noreturn]] inline void raise_cuda_error(cudaError_t error, const char* func, const char* file, int line) {
  throw c10::AcceleratorError({func, file, static_cast<uint32_t>(line)}, static_cast<int32_t>(error),
                              std::string("CUDA error: ") + cudaGetErrorString(error) +
                                  " (simulated: " + sim::last_error_message() + ")");
}

}  // namespace opforge::cuda

#define OPFORGE_CUDA_CHECK(expr)                                                   \
  do {                                                                             \
    const cudaError_t opforge_cuda_error = (expr);                                 \
    if (opforge_cuda_error != cudaSuccess) {                                       \
      ::opforge::cuda::raise_cuda_error(opforge_cuda_error, __func__, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

#else
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAStream.h>

namespace opforge::cuda {

inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream(); }

// Whether the current stream is being captured into a CUDA graph: no
// synchronizing copies then.
inline bool stream_capturing() {
  return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
}

}  // namespace opforge::cuda

#define OPFORGE_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#endif
