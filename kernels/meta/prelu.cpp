// Meta (fake) kernel for prelu_backward: its two outputs have the shapes of
// 'self' and 'weight', which a single-output shape rule cannot say. The
// device checks the generated Meta wrapper runs for rule-based shapes are
// repeated here (a meta tensor mixed with real ones lands in this kernel).
#include <opforge/ops/prelu_backward.h>

#include <opforge/checks.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {

std::tuple<at::Tensor, at::Tensor> prelu_backward_meta(const at::Tensor& grad_output,
                                                       const at::Tensor& self,
                                                       const at::Tensor& weight) {
  constexpr const char* op = "opforge.prelu_backward";
  check::same_device(op, "self", self, "grad_output", grad_output);
  check::same_device(op, "weight", weight, "grad_output", grad_output);
  return {at::empty_symint(self.sym_sizes(), self.options()),
          at::empty_symint(weight.sym_sizes(), weight.options())};
}

} // namespace opforge
