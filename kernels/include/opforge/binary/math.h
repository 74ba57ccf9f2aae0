#pragma once
// Scalar binary math shared by the CPU and CUDA kernels: the functors of the
// `pointwise:` entries in schemas/binary.yaml.
#include <opforge/math/opmath.h>

#include <cstdint>

namespace opforge::math {

// self + alpha * other, computed in opmath_t<T> like at::add.
template <typename T>
struct add_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  C10_HOST_DEVICE T operator()(T a, T b) const {
    return cast_to<T>(cast_to<acc_t>(a) + alpha * cast_to<acc_t>(b));
  }
};

// Integer add wraps on overflow like torch; signed overflow is undefined
// behaviour in C++, so compute in uint64_t.
template <>
struct add_fn<int64_t> {
  int64_t alpha;
  C10_HOST_DEVICE int64_t operator()(int64_t a, int64_t b) const {
    const uint64_t r = static_cast<uint64_t>(a) +
        static_cast<uint64_t>(alpha) * static_cast<uint64_t>(b);
    return static_cast<int64_t>(r);
  }
};

// relu(self + alpha * other) in one pass, the epilogue of a residual block;
// NaN propagates as in relu.
template <typename T>
struct add_relu_fn {
  using acc_t = opmath_t<T>;
  acc_t alpha;
  C10_HOST_DEVICE T operator()(T a, T b) const {
    const acc_t v = cast_to<acc_t>(a) + alpha * cast_to<acc_t>(b);
    return cast_to<T>(v < acc_t(0) ? acc_t(0) : v);
  }
};

} // namespace opforge::math
