#pragma once
// Argument checks shared by the CPU and CUDA entry points of an op.
#include <opforge/math/activation.h>

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <string_view>

namespace opforge {

inline math::gelu_approximation parse_gelu_approximate(std::string_view s) {
  if (s == "none") {
    return math::gelu_approximation::none;
  }
  if (s == "tanh") {
    return math::gelu_approximation::tanh;
  }
  TORCH_CHECK(false, "opforge.gelu: approximate must be 'none' or 'tanh', got '",
              s, "'");
}

// The same rules as at::native::alpha_check, with our op name.
inline void check_add_alpha(const c10::Scalar& alpha, c10::ScalarType dtype) {
  TORCH_CHECK(!alpha.isBoolean(),
              "opforge.add: alpha must be a number, not a boolean");
  TORCH_CHECK(!alpha.isComplex(),
              "opforge.add: alpha must not be a complex number for ", dtype,
              " inputs");
  TORCH_CHECK(c10::isFloatingType(dtype) || alpha.isIntegral(false),
              "opforge.add: alpha must be an integer for integral (", dtype,
              ") inputs, got ", alpha);
}

} // namespace opforge
