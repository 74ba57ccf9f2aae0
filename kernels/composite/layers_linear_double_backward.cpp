// linear_double_backward: linear_backward is bilinear in (grad_output, input,
// weight), so its own gradients are linear / linear_backward calls again. Built
// from opforge ops (and ATen views), it is differentiable any number of times.
#include <opforge/ops/linear.h>
#include <opforge/ops/linear_backward.h>
#include <opforge/ops/linear_double_backward.h>

#include <opforge/core/checks.h>
#include <opforge/core/widen.h>
#include <opforge/layers/checks.h>

#include <ATen/ops/zeros_like.h>

#include <array>
#include <tuple>

namespace opforge {

// linear_backward gives (G W, G^T X, rows of G summed); against the gradients
// (A, B, c) of those outputs:
//   d/dG = A W^T + X B^T + c = linear(A, W) + linear(X, B, c)
//   d/dX = G B              = linear(G, B^T)
//   d/dW = G^T A            = linear_backward(G, A, W)'s weight gradient
std::tuple<at::Tensor, at::Tensor, at::Tensor> linear_double_backward_composite(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    std::array<bool, 3> output_mask, const std::optional<at::Tensor>& grad_grad_input,
    const std::optional<at::Tensor>& grad_grad_weight, const std::optional<at::Tensor>& grad_grad_bias) {
  // A composite gets no generated checks: name this op, not the linear call that would fail.
  constexpr const char* op = "opforge.linear_double_backward";
  check::same_device(op, "input", input, "grad_output", grad_output);
  check::same_device(op, "weight", weight, "grad_output", grad_output);
  check::same_device(op, "grad_grad_input", grad_grad_input, "grad_output", grad_output);
  check::same_device(op, "grad_grad_weight", grad_grad_weight, "grad_output", grad_output);
  check::same_device(op, "grad_grad_bias", grad_grad_bias, "grad_output", grad_output);
  linear_backward_check(op, grad_output, input, weight);
  // Checked whatever output_mask says (a masked-off output's arguments too), as the op's other checks.
  check::dtype(op, "grad_output", grad_output, {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}, "a floating dtype");
  check::same_dtype(op, "input", input, "grad_output", grad_output);
  check::same_dtype(op, "weight", weight, "grad_output", grad_output);
  check::same_dtype(op, "grad_grad_input", grad_grad_input, "grad_output", grad_output);
  check::same_dtype(op, "grad_grad_weight", grad_grad_weight, "grad_output", grad_output);
  check::same_dtype(op, "grad_grad_bias", grad_grad_bias, "grad_output", grad_output);
  if (has_tensor(grad_grad_input)) {
    check::same_shape(op, "grad_grad_input", *grad_grad_input, "input", input);
  }
  if (has_tensor(grad_grad_weight)) {
    check::same_shape(op, "grad_grad_weight", *grad_grad_weight, "weight", weight);
  }
  TORCH_CHECK(!has_tensor(grad_grad_bias) || grad_grad_bias->sym_sizes() == weight.sym_sizes().slice(0, 1), op,
              ": expected 'grad_grad_bias' of shape [", weight.sym_size(0), "], got ", grad_grad_bias->sym_sizes());
  const at::ScalarType dtype = grad_output.scalar_type();
  if (at::isReducedFloatingType(dtype)) {  // Note [Composites in half precision]
    const auto [x, y, z] = linear_double_backward_composite(widened(grad_output), widened(input), widened(weight),
                                                            output_mask, widened(grad_grad_input),
                                                            widened(grad_grad_weight), widened(grad_grad_bias));
    return {narrowed(x, dtype), narrowed(y, dtype), narrowed(z, dtype)};
  }
  const bool a = has_tensor(grad_grad_input);
  const bool b = has_tensor(grad_grad_weight);
  const bool c = has_tensor(grad_grad_bias);
  at::Tensor d_grad_output;
  at::Tensor d_input;
  at::Tensor d_weight;
  if (output_mask[0]) {
    if (b) {
      d_grad_output = ops::linear(input, *grad_grad_weight, c ? grad_grad_bias : std::nullopt);
    } else if (c) {
      // A fresh tensor: a view of an input must not escape an op without an alias annotation.
      d_grad_output = grad_grad_bias->expand_symint(grad_output.sym_sizes()).clone(at::MemoryFormat::Contiguous);
    }
    if (a) {
      const at::Tensor from_input = ops::linear(*grad_grad_input, weight, std::nullopt);
      d_grad_output = d_grad_output.defined() ? d_grad_output + from_input : from_input;
    }
    if (!d_grad_output.defined()) {
      d_grad_output = at::zeros_like(grad_output);
    }
  }
  if (output_mask[1]) {
    d_input = b ? ops::linear(grad_output, grad_grad_weight->t(), std::nullopt) : at::zeros_like(input);
  }
  if (output_mask[2]) {
    d_weight = a ? std::get<1>(ops::linear_backward(grad_output, *grad_grad_input, weight, {false, true, false}))
                 : at::zeros_like(weight);
  }
  return {d_grad_output, d_input, d_weight};
}

}  // namespace opforge
