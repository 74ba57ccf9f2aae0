#pragma once
// Note [Composites in half precision]: a composite of ATen/opforge ops run in
// float16 or bfloat16 rounds after every op, and where terms cancel (a
// translation c - R S c, a softmax gradient p g - p sum(p g)) the result is
// off by far more than one rounding. Such composites widen their floating
// inputs to float32, run, and round each result once.
#include <ATen/core/Tensor.h>

#include <optional>

namespace opforge {

inline bool is_half_precision(const at::Tensor& t) {
  return t.defined() && at::isReducedFloatingType(t.scalar_type());
}

// t in float32 if it is float16/bfloat16, else t (undefined stays undefined).
inline at::Tensor widened(const at::Tensor& t) {
  return is_half_precision(t) ? t.to(at::kFloat) : t;
}

inline std::optional<at::Tensor> widened(const std::optional<at::Tensor>& t) {
  return t.has_value() ? std::optional<at::Tensor>(widened(*t)) : std::nullopt;
}

// A widened result rounded back to `dtype` (undefined stays undefined).
inline at::Tensor narrowed(const at::Tensor& t, at::ScalarType dtype) {
  return t.defined() ? t.to(dtype) : t;
}

}  // namespace opforge
