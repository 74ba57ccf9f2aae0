#pragma once
// Argument checks and plan of prelu and prelu_backward, for their meta
// functions (opforge/activation/meta.h).
#include <opforge/activation/prelu_plan.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace opforge {

// 'weight' must be 0-d or 1-d, with one element or one per channel (dim 1 of
// self), as in torch.nn.functional.prelu. On symbolic sizes too.
inline void prelu_check(const char* op, const at::Tensor& self, const at::Tensor& weight) {
  TORCH_CHECK(weight.dim() <= 1, op, ": expected 'weight' to be a scalar or 1-d tensor, got ",
              weight.dim(), " dims");
  const c10::SymInt w = weight.sym_numel();
  const c10::SymInt channels = self.dim() >= 2 ? self.sym_size(1) : c10::SymInt(1);
  TORCH_CHECK(w == 1 || w == channels, op, ": expected 'weight' to have 1 element or ", channels,
              " (the size of dim 1 of 'self'), got ", w);
}

inline prelu_plan prelu_plan_of(const at::Tensor& self, const at::Tensor& weight) {
  prelu_plan l;
  if (weight.numel() == 1) {
    l.inner = self.numel();
    return l;
  }
  l.outer = self.size(0);
  l.channels = self.size(1);
  l.inner = l.channels == 0 || l.outer == 0 ? 0 : self.numel() / (l.outer * l.channels);
  return l;
}

} // namespace opforge
