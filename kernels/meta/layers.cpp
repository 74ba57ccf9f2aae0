// Meta (fake) kernels for the layer ops whose output shapes a shape rule cannot
// say. The generated Meta wrappers have already checked devices and dtypes; the
// argument checks are the kernels' own (opforge/layers.h).
#include <opforge/ops/linear.h>
#include <opforge/ops/linear_backward.h>

#include <opforge/layers.h>

#include <ATen/ops/empty.h>

#include <array>
#include <tuple>

namespace opforge {

at::Tensor linear_meta(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  linear_check("opforge.linear", input, weight, bias);
  return at::empty_symint(linear_output_sizes(input, weight), input.options());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linear_backward_meta(const at::Tensor& grad_output,
                                                                    const at::Tensor& input,
                                                                    const at::Tensor& weight,
                                                                    std::array<bool, 3> output_mask) {
  linear_backward_check("opforge.linear_backward", grad_output, input, weight);
  at::Tensor grad_input;
  at::Tensor grad_weight;
  at::Tensor grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty_symint(input.sym_sizes(), input.options());
  }
  if (output_mask[1]) {
    grad_weight = at::empty_symint(weight.sym_sizes(), weight.options());
  }
  if (output_mask[2]) {
    grad_bias = at::empty_symint({weight.sym_size(0)}, weight.options());
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace opforge
