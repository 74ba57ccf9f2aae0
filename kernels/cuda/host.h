#pragma once
// The CUDA runtime as the .cpp entry points see it: the current stream and the
// launch check. One header, so the entry points compile for a GPU and for the
// simulator (OPFORGE_CUDA_SIM, see Note [CUDA simulation] in sim/runtime.cpp),
// where the stream is ignored and a failed launch raises the same error class
// with the simulator's account of what went wrong.
#include <cuda_runtime_api.h>

#if defined(OPFORGE_CUDA_SIM)
#include "sim/stats.h"

#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <string>

namespace opforge::cuda {

inline cudaStream_t current_stream() { return nullptr; }

// Whether the current stream is being captured into a CUDA graph (the
// simulator can pretend to, see sim::set_capturing, to test the capture paths).
inline bool stream_capturing() { return sim::capturing(); }

// Bad indices: reported (IndexError) on the simulator's CPU tensors, asserted
// on the device under a pretended graph capture (see cuda::key).
inline bool index_checks_on_device() { return stream_capturing(); }

// The simulator's tensors are CPU tensors: the CPU kernels' Philox draw. Under
// a pretended graph capture the kernel reads the seed and offset through
// pointers, as a captured GPU kernel does (philox_seed_and_offset in
// common.cuh); the returned tensor holds them until the kernel has run.
template <typename Plan>
at::Tensor draw_philox(Plan& plan, const std::optional<at::Generator>& generator, const at::Tensor& like) {
  structured::draw_philox(plan, generator, like);
  if constexpr (requires { plan.random; }) {
    if (plan.random.words > 0 && stream_capturing()) {
      philox_state& s = plan.random.state;
      constexpr uint64_t intragraph = 4;  // the part of the offset the graph adds per kernel
      at::Tensor memory = at::empty({2}, at::kLong);
      int64_t* words = memory.mutable_data_ptr<int64_t>();
      words[0] = static_cast<int64_t>(s.seed);
      words[1] = static_cast<int64_t>(s.offset - intragraph);  // modulo 2^64, as the kernel adds
      s = {0, 0, words, words + 1, intragraph};
      return memory;
    }
  }
  return at::Tensor();
}

[[noreturn]] inline void raise_cuda_error(cudaError_t error, const char* func, const char* file, int line) {
  throw c10::AcceleratorError({func, file, static_cast<uint32_t>(line)}, static_cast<int32_t>(error),
                              std::string("CUDA error: ") + cudaGetErrorString(error) +
                                  " (simulated: " + sim::last_error_message() + ")");
}

}  // namespace opforge::cuda

// Variadic: a kernel call with several template arguments has commas in it.
#define OPFORGE_CUDA_CHECK(...)                                                    \
  do {                                                                             \
    const cudaError_t opforge_cuda_error = (__VA_ARGS__);                                 \
    if (opforge_cuda_error != cudaSuccess) {                                       \
      ::opforge::cuda::raise_cuda_error(opforge_cuda_error, __func__, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

#else
#include <opforge/core/structured.h>

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

namespace opforge::cuda {

inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream(); }

// Bad indices are device-side asserts on the GPU (see cuda::key).
inline bool index_checks_on_device() { return true; }

// A plan's philox_request from the CUDA generator's graph-safe state (advanced
// by the words the plan asks for), Note [Plan services].
// Returns no tensor: under capture the pointers are the generator's own.
template <typename Plan>
at::Tensor draw_philox(Plan& plan, const std::optional<at::Generator>& generator, const at::Tensor& like) {
  if constexpr (requires { plan.random; }) {
    if (plan.random.words == 0) {
      return at::Tensor();
    }
    auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
        generator, at::cuda::detail::getDefaultCUDAGenerator(like.device().index()));
    const std::lock_guard<std::mutex> lock(gen->mutex_);
    const at::PhiloxCudaState s = gen->philox_cuda_state(plan.random.words);
    philox_state& out = plan.random.state;
    if (s.captured_) {
      out.seed_ptr = s.seed_.ptr;
      out.offset_ptr = s.offset_.ptr;
      out.offset_intragraph = s.offset_intragraph_;
    } else {
      out.seed = s.seed_.val;
      out.offset = s.offset_.val;
    }
  }
  return at::Tensor();
}

}  // namespace opforge::cuda

#define OPFORGE_CUDA_CHECK(...) C10_CUDA_CHECK((__VA_ARGS__))
#endif

namespace opforge::cuda {

// The CUDA key's traits for the call sequence (Note [Call sequence] in
// opforge/core/structured_call.h): plan workspace from the caching allocator, bad
// indices as device-side asserts (as PyTorch's CUDA kernels: no synchronizing
// readback per call; the simulator reports them unless it pretends a graph
// capture), the CUDA generator's Philox.
struct key {
  static constexpr bool has_workspace = true;
  static constexpr bool (*device_asserts)() = &index_checks_on_device;
  template <typename Plan>
  static at::Tensor draw(Plan& plan, const std::optional<at::Generator>& generator, const at::Tensor& like) {
    return draw_philox(plan, generator, like);
  }
};

}  // namespace opforge::cuda
