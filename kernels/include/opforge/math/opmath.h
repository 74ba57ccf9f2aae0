#pragma once
// Compute types shared by CPU and CUDA kernels. Kept free of ATen so .cu files
// can include it without paying for torch headers (README.md, "CUDA kernels without a GPU").
#include <c10/macros/Macros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

namespace opforge::math {

// Reduced-precision types compute in float, everything else in itself.
template <typename T>
struct opmath {
  using type = T;
};
template <>
struct opmath<c10::Half> {
  using type = float;
};
template <>
struct opmath<c10::BFloat16> {
  using type = float;
};
template <typename T>
using opmath_t = typename opmath<T>::type;

// Accumulator for long sums: float32 rows can be millions long, so float data
// accumulates in double; half/bf16 results are far coarser than float
// rounding, so float is enough there.
template <typename T>
struct sum_acc {
  using type = double;
};
template <>
struct sum_acc<c10::Half> {
  using type = float;
};
template <>
struct sum_acc<c10::BFloat16> {
  using type = float;
};
template <typename T>
using sum_acc_t = typename sum_acc<T>::type;

// Explicit conversions: implicit ones between Half/BFloat16 and arithmetic
// types are ambiguous in device code. Not named `convert`: argument-dependent
// lookup would also find c10::convert for c10 types and make calls ambiguous.
template <typename To, typename From>
C10_HOST_DEVICE inline To cast_to(From v) {
  return static_cast<To>(v);
}

} // namespace opforge::math
