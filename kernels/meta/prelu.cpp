// Meta (fake) kernel for prelu_backward: its two outputs have the shapes of
// 'self' and 'weight', which a single-output shape rule cannot say. The
// generated Meta wrapper has already checked devices and dtypes.
#include <opforge/ops/prelu_backward.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {

std::tuple<at::Tensor, at::Tensor> prelu_backward_meta(const at::Tensor& grad_output,
                                                       const at::Tensor& self,
                                                       const at::Tensor& weight) {
  return {at::empty_symint(self.sym_sizes(), self.options()),
          at::empty_symint(weight.sym_sizes(), weight.options())};
}

} // namespace opforge
