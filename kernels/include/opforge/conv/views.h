#pragma once
// A convolution buffer as a tensor (no copy), for the code that hands the
// plan's buffers to ATen: the oneDNN calls (kernels/runtime/onednn_conv.cpp)
// and the channels_last backward's fallback (kernels/cpu/conv.cpp).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>

#include <cstdint>

namespace opforge::OPFORGE_CPU_CAPABILITY {

// The (a, b, c, d) tensor of T at p: contiguous, or channels_last (a, c, d, b
// in memory).
template <typename T>
at::Tensor tensor_view(const T* p, int64_t a, int64_t b, int64_t c, int64_t d, bool channels_last) {
  const int64_t sizes[] = {a, b, c, d};
  const int64_t contiguous[] = {b * c * d, c * d, d, 1};
  const int64_t last[] = {c * d * b, 1, d * b, b};
  return at::from_blob(const_cast<T*>(p), sizes, channels_last ? c10::IntArrayRef(last) : c10::IntArrayRef(contiguous),
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value));
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
