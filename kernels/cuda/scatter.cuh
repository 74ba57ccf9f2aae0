#pragma once
// The accumulator of a backward kernel that scatters with atomic adds
// (`nondeterministic: [CUDA]`): the output itself, or for float16/bfloat16 a
// float32 workspace from the plan (atomics on 16-bit types lose the sum's
// low bits), rounded into the output at the end.
#include "common.cuh"

#include <opforge/math/opmath.h>

#include <type_traits>

namespace opforge::cuda {

// Zero the `size` accumulator elements, run `launch(acc)`, convert back.
template <typename T, typename Launch>
cudaError_t scatter_add_into(T* result, int64_t size, void* workspace, cudaStream_t stream, const Launch& launch) {
  using Acc = math::opmath_t<T>;
  Acc* acc = nullptr;
  if constexpr (std::is_same_v<Acc, T>) {
    acc = result;
  } else {
    acc = static_cast<Acc*>(workspace);
  }
  cudaError_t err = launch_fill_zero(acc, size, stream);
  if (err == cudaSuccess) {
    err = launch(acc);
  }
  if constexpr (!std::is_same_v<Acc, T>) {
    if (err == cudaSuccess) {
      err = launch_convert(result, acc, size, stream);
    }
  }
  return err;
}

}  // namespace opforge::cuda
