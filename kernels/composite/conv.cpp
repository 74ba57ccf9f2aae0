// Composites of the conv family, differentiable through the ops they call:
// conv2d.padding (padding given as 'valid' or 'same') and
// conv2d_double_backward (conv2d_backward's derivative).
#include <opforge/ops/conv2d.h>
#include <opforge/ops/conv2d_backward.h>
#include <opforge/ops/conv2d_double_backward.h>

#include <opforge/conv/checks.h>
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>
#include <opforge/core/widen.h>

#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>

#include <array>
#include <tuple>
#include <utility>

namespace opforge {

at::Tensor conv2d_padding(const at::Tensor& input, const at::Tensor& weight,
                          const std::optional<at::Tensor>& bias, c10::SymIntArrayRef stride,
                          c10::string_view padding, c10::SymIntArrayRef dilation, c10::SymInt groups) {
  constexpr const char* op = "opforge.conv2d";
  const std::array<c10::SymInt, 2> zero{c10::SymInt(0), c10::SymInt(0)};
  if (padding == "valid") {
    return ops::conv2d(input, weight, bias, stride, zero, dilation, groups);
  }
  TORCH_CHECK(padding == "same", op, ": 'padding' must be 'valid', 'same' or a pair of ints, got '",
              padding, "'");
  TORCH_CHECK(stride.size() == 2 && stride[0] == 1 && stride[1] == 1, op,
              ": padding='same' requires a stride of 1, got ", stride);
  TORCH_CHECK(weight.dim() == 4, op, ": expected 'weight' to be 4-D, got ", weight.dim(), "-D");
  TORCH_CHECK(dilation.size() == 2, op, ": expected 'dilation' to have 2 elements, got ",
              dilation.size());
  // Total padding d * (k - 1) per dim, half on each side; an odd total puts
  // the extra element after the input (right, bottom), as PyTorch does.
  const auto d = structured::static_ints(dilation);
  std::array<c10::SymInt, 2> before{};
  std::array<int64_t, 4> extra{}; // constant_pad_nd order: (left, right, top, bottom)
  for (int i = 0; i < 2; ++i) {
    const int64_t k = weight.sym_size(2 + i).guard_int(__FILE__, __LINE__);
    const int64_t total = d[i] * (k - 1);
    before[i] = c10::SymInt(total / 2);
    extra[2 * (1 - i) + 1] = total - 2 * (total / 2);
  }
  const bool symmetric = extra[1] == 0 && extra[3] == 0;
  const at::Tensor x = symmetric ? input : at::constant_pad_nd(input, extra, 0);
  return ops::conv2d(x, weight, bias, stride, before, dilation, groups);
}

namespace {

at::Tensor sum_or_first(const at::Tensor& acc, const at::Tensor& t) {
  return acc.defined() ? acc + t : t;
}

} // namespace

// conv2d_backward's results are bilinear: grad_input gI(gO, W), grad_weight
// gW(gO, I), grad_bias gb(gO). With ggI, ggW, ggb their incoming gradients:
//   d/dgO = conv2d(ggI, W) + conv2d(I, ggW) + ggb per channel
//   d/dI  = gI(gO, ggW)     (<ggW, gW(gO, I)> = <I, gI(gO, ggW)>)
//   d/dW  = gW(gO, ggI)     (<ggI, gI(gO, W)> = <W, gW(gO, ggI)>)
// An undefined incoming gradient (a result conv2d_backward did not compute)
// contributes nothing. Half and bfloat16 run in float, so that the sum of
// the d/dgO terms is rounded once.
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_double_backward(const std::optional<at::Tensor>& grad_grad_input_opt,
                       const std::optional<at::Tensor>& grad_grad_weight_opt,
                       const std::optional<at::Tensor>& grad_grad_bias_opt,
                       const at::Tensor& grad_output, const at::Tensor& input,
                       const at::Tensor& weight, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                       c10::SymIntArrayRef dilation, c10::SymInt groups, std::array<bool, 3> output_mask) {
  // The generated autograd passes an undefined tensor, Python passes None.
  const at::Tensor grad_grad_input = grad_grad_input_opt.value_or(at::Tensor());
  const at::Tensor grad_grad_weight = grad_grad_weight_opt.value_or(at::Tensor());
  const at::Tensor grad_grad_bias = grad_grad_bias_opt.value_or(at::Tensor());
  constexpr const char* op = "opforge.conv2d_double_backward";
  const std::pair<const char*, const at::Tensor*> others[] = {
      {"grad_grad_input", &grad_grad_input}, {"grad_grad_weight", &grad_grad_weight},
      {"grad_grad_bias", &grad_grad_bias},   {"input", &input},
      {"weight", &weight}};
  for (const auto& [name, t] : others) {
    if (t->defined()) {
      check::same_device(op, name, *t, "grad_output", grad_output);
    }
  }
  // Checked whatever output_mask says: a masked-off result's arguments too.
  check_grad_output(op, grad_output,
                    conv2d_output_sizes(op, input, weight, std::nullopt, conv_params_of(stride, padding, dilation, groups)));
  check::same_dtype(op, "input", input, "grad_output", grad_output);
  check::same_dtype(op, "weight", weight, "grad_output", grad_output);
  if (grad_grad_input.defined()) {
    check::same_shape(op, "grad_grad_input", grad_grad_input, "input", input);
    check::same_dtype(op, "grad_grad_input", grad_grad_input, "grad_output", grad_output);
  }
  if (grad_grad_weight.defined()) {
    check::same_shape(op, "grad_grad_weight", grad_grad_weight, "weight", weight);
    check::same_dtype(op, "grad_grad_weight", grad_grad_weight, "grad_output", grad_output);
  }
  if (grad_grad_bias.defined()) {
    TORCH_CHECK(grad_grad_bias.sym_sizes() == weight.sym_sizes().slice(0, 1), op, ": expected 'grad_grad_bias' of shape [",
                weight.sym_size(0), "] (out_channels), got ", grad_grad_bias.sym_sizes());
    check::same_dtype(op, "grad_grad_bias", grad_grad_bias, "grad_output", grad_output);
  }
  const at::ScalarType dtype = grad_output.scalar_type();
  if (at::isReducedFloatingType(dtype)) {  // Note [Composites in half precision]
    const auto [a, b, c] = conv2d_double_backward(
        widened(grad_grad_input), widened(grad_grad_weight), widened(grad_grad_bias), widened(grad_output),
        widened(input), widened(weight), stride, padding, dilation, groups, output_mask);
    return {narrowed(a, dtype), narrowed(b, dtype), narrowed(c, dtype)};
  }
  at::Tensor d_grad_output;
  at::Tensor d_input;
  at::Tensor d_weight;
  if (output_mask[0]) {
    if (grad_grad_input.defined()) {
      d_grad_output = ops::conv2d(grad_grad_input, weight, std::nullopt, stride, padding,
                                  dilation, groups);
    }
    if (grad_grad_weight.defined()) {
      d_grad_output = sum_or_first(d_grad_output, ops::conv2d(input, grad_grad_weight,
                                                              std::nullopt, stride, padding,
                                                              dilation, groups));
    }
    if (grad_grad_bias.defined()) {
      const std::array<int64_t, 4> per_channel{1, -1, 1, 1};
      const at::IntArrayRef shape =
          at::IntArrayRef(per_channel).slice(grad_output.dim() == 4 ? 0 : 1);
      const at::Tensor b = grad_grad_bias.view(shape);
      d_grad_output = d_grad_output.defined() ? d_grad_output + b
                                              : b.expand(grad_output.sizes()).contiguous();
    }
    if (!d_grad_output.defined()) {
      d_grad_output = at::zeros_like(grad_output);
    }
  }
  if (output_mask[1]) {
    d_input = grad_grad_weight.defined()
                  ? std::get<0>(ops::conv2d_backward(grad_output, input, grad_grad_weight,
                                                     stride, padding, dilation, groups,
                                                     {true, false, false}))
                  : at::zeros_like(input);
  }
  if (output_mask[2]) {
    d_weight = grad_grad_input.defined()
                   ? std::get<1>(ops::conv2d_backward(grad_output, grad_grad_input, weight,
                                                      stride, padding, dilation, groups,
                                                      {false, true, false}))
                   : at::zeros_like(weight);
  }
  return {d_grad_output, d_input, d_weight};
}

} // namespace opforge
