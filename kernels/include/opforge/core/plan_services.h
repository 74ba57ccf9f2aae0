#pragma once
// Note [Plan services]: what a structured op's plan may ask the generated code
// for, by having a member of one of these types (found with a requires
// expression, so a plan without them costs nothing):
//
//   index_report bad_index;  the kernel reports the first index outside
//                            [0, limit); the generated code raises IndexError
//                            after the kernel (embedding, target indices); on
//                            the GPU a device-side assert.
//   philox_request random;   `words` 32-bit random words: the generated code
//                            draws a Philox (seed, offset) for them from the
//                            op's `Generator?` argument (dropout).
//   int64_t workspace_bytes; void* workspace;   CUDA scratch memory from the
//                            caching allocator (CPU kernels keep their own).
//
// Torch-free, so plans and the CUDA sources include it.
#include <atomic>
#include <cstdint>

namespace opforge {

// Where a kernel reports an out-of-range index: `found` points at two int64
// {1, index} the kernel sets for the first bad index it meets (host memory on
// CPU and in the CUDA simulator, zeroed before the kernel); a kernel touches
// no memory for a bad index. `found` is null on the GPU (and in the simulator
// under a pretended graph capture): the device code asserts instead, as
// PyTorch's CUDA kernels do, with no synchronizing readback per call.
struct index_report {
  int64_t* found = nullptr;
  int64_t limit = 0;
  const char* argument = "indices";  // named in the error
  const char* range = "";            // what [0, limit) is, e.g. "the rows of the weight"
};

// For CPU kernels (the CUDA ones use cuda::record_bad_index in common.cuh):
// the first thread to report wins, the others leave the report alone.
inline void record_bad_index(const index_report& report, int64_t index) {
  int64_t expected = 0;
  if (std::atomic_ref<int64_t>(report.found[0]).compare_exchange_strong(expected, 1)) {
    report.found[1] = index;
  }
}

// A Philox (seed, offset), in PyTorch's CUDA convention: `offset` counts 32-bit
// words. Under CUDA-graph capture the seed and the base offset are read on the
// device from `seed_ptr` / `offset_ptr` (plus `offset_intragraph`), as
// at::PhiloxCudaState does; see philox_seed_and_offset.
struct philox_state {
  uint64_t seed = 0;
  uint64_t offset = 0;
  const int64_t* seed_ptr = nullptr;
  const int64_t* offset_ptr = nullptr;
  uint64_t offset_intragraph = 0;
};

struct philox_request {
  uint64_t words = 0;  // 0: no random numbers needed, nothing is drawn
  philox_state state;
};

}  // namespace opforge
