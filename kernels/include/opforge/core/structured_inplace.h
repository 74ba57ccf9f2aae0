#pragma once
// The in-place variant of a structured op (Note [Structured out=] in
// opforge/core/structured.h), included by the generated code of ops that have one.
#include <opforge/core/structured.h>

namespace opforge::structured {

// An in-place variant (`variants: [inplace]`) writes its result into `self`,
// which it cannot resize or cast: the result must have self's shape and dtype
// (as PyTorch's in-place ops). The kernel then writes as into an out= tensor:
// straight into self only when the kernel reads nothing that overlaps it (a
// `shape_only` self), otherwise into scratch copied into self.
template <typename Int>
void prepare_inplace(const char* op, const char* arg, const at::Tensor& self, const output<Int>& spec,
                     const at::Tensor& like) {
  if (!spec.defined) {
    return;
  }
  check::out_device(op, arg, self, like.device());
  TORCH_CHECK(self.scalar_type() == spec.dtype, op, ": the result has dtype ", c10::toString(spec.dtype),
              ", which cannot be written in place into '", arg, "' of dtype ", c10::toString(self.scalar_type()));
  const c10::ArrayRef<Int> want(spec.sizes);
  TORCH_CHECK(sizes_of<Int>(self).equals(want), op, ": the result has shape ", want,
              ", which cannot be written in place into '", arg, "' of shape ", sizes_of<Int>(self));
}

}  // namespace opforge::structured
